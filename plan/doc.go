// Package plan gives every activation tensor of a model its berth: a fixed
// byte offset in one arena that is sized once, when the model is compiled,
// and reused by every run.
//
// # The problem
//
// A Problem lists the steps of a graph (one per operator, in the order the
// model file gave them) and the tensors they read and write, each with its
// byte size. Weights are not part of it; they live in their own region.
// FromGraph builds the Problem of an ir.Graph.
//
// A tensor is either a root, which owns a slot of its own, or a view
// (Tensor.Alias >= 0): Reshape, Flatten, Squeeze, Unsqueeze and Identity
// give their output the bytes of their input, so the view costs nothing and
// keeps its root alive instead.
//
// # Lifetimes
//
// Steps are numbered by their position in the schedule (Plan.Order). A
// root's slot is reserved from the first step that writes the root or one of
// its views (step 0 for graph inputs) to the last step that reads it or one
// of its views (the last step for graph outputs). A step's inputs and
// outputs are live at that step together, so an output never shares bytes
// with an input of its own step. Whether an output may instead take over the
// slot of an input that dies at its step (in-place execution) is decided by
// one predicate, inPlace, which so far allows nothing.
//
// LOAD is the largest number of slot bytes live at any one step. No arena
// for the schedule can be smaller, so every plan reports it as its lower
// bound.
//
// # Placement
//
// Each root is a rectangle, lifetime × slot bytes, and placement packs the
// rectangles into the arena so that two that meet in time never meet in
// bytes. A heuristic takes the rectangles in some order and puts each into
// the best-fitting gap (the smallest that holds it) among the rectangles
// placed before it that meet it in time, or on top of them all. Build tries
// the orders largest first (the TFLite and XLA baseline), largest breadth
// (bytes × steps) first, longest-lived first and earliest first; then
// two-sided variants of them, which fill the arena from both ends up to LOAD
// and put each rectangle against the neighbour that dies nearest its own
// death. It stops at the first that reaches LOAD, or once it has looked at
// 10⁸ runs of bytes (about a second, which only graphs with thousands of
// tensors live at once come near), and keeps the smallest arena. The tests
// hold chains of any sizes, residual blocks, attention layers and
// convolutional networks to LOAD exactly.
//
// A segment tree over the steps finds the bytes taken during a lifetime in
// O(log T) nodes: each node keeps what is stored at it, and the union of
// what is stored below it, as sorted runs of bytes. A plan costs O(n log n)
// plus, per rectangle, the runs of bytes taken during its lifetime.
//
// # Verification
//
// Verify checks a plan against its problem without using any of the code
// that made it: it replays the schedule to prove that every read follows its
// write, checks that every view lies inside its root and every slot inside
// the arena, and sweeps the steps with the live slots kept sorted by offset
// to prove that no two of them share a byte.
//
// Plan.Report and WriteSVG show a plan to people: a table of every tensor's
// offset and lifetime, and a picture of the arena over time.
package plan
