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
// (Tensor.IsView): Reshape, Flatten, Squeeze, Unsqueeze and Identity
// give their output the bytes of their input, so the view costs nothing and
// keeps its root alive instead.
//
// # Pieces
//
// A Concat, Split or Slice step may list its pieces (Step.Pieces): the runs
// of bytes it copies whole between a part and a whole. SharePieces turns
// them into views where it is safe and does not raise LOAD: a Concat's
// inputs become views of its output at the offsets it writes them to, so
// their producers write straight into the output and the Concat's copy is
// one onto itself; a Split's or Slice's outputs become views of its input.
// A Concat's input that already lives inside an earlier Concat's output
// moves that whole output along when its bytes land exactly on their own
// again, so that DenseNet's chain of Concats, each of all the features so
// far, becomes one buffer. Such views are written before their root's own
// step; a root's slot is reserved from the first write of any tensor in it
// on, so nothing else takes those bytes meanwhile.
//
// # Lifetimes
//
// Steps are numbered by their position in the schedule (Plan.Order). A
// root's slot is reserved from the first step that writes the root or one of
// its views (step 0 for graph inputs) to the last step that reads it or one
// of its views (the last step for graph outputs). A step's inputs and
// outputs are live at that step together, so an output shares no bytes with
// an input of its own step, except in place or as a shared piece.
//
// # In place
//
// A step marked InPlace (an elementwise or normalising operator: Relu,
// Add, Where, Softmax, LayerNormalization …) may write its first output
// over an input that dies at its step: same element type and byte size, an
// input that owns its bytes or views all of them (as does any other input
// of the step in the same bytes), and that no later step reads and no
// graph input or output shares. One predicate, inPlace, states the rule.
// Which steps are InPlace is the device's word: it marks those whose
// kernels are correct when the output is exactly an input (the CPU backend
// tests each of its operators so). A step that is not may name, in
// Step.Overwrite, inputs
// it reads element by element before it writes the same elements of its
// first output (a producer whose fused epilogue adds a residual, computing
// each tile aside first); the same rule then lets the output take those
// over. The output then lives in the input's slot, which lives on as long
// as the output does (Plan.InPlace records each takeover).
//
// # State
//
// Problem.State lists graph inputs whose values outlive a run: a language
// model's cache of keys and values, which each run reads and extends.
// They are live from before the first step until after the last, and take
// the first bytes of the arena, one after the other in their order, each
// slot aligned, before any other slot; every plan of problems with the
// same state therefore puts it at the same offsets, so that the plans of
// one model (a prompt's, a single token's) can share one arena and its
// state. A step's Updates are outputs it writes over inputs of its, state
// tensors, in place: each output is a view of all of its state's bytes
// and holds its new value. The old value may be read only up
// to that step; Verify checks that, and that the state sits where it must.
//
// # Schedules
//
// Unless Options fixes the order, Build tries several schedules: the
// file's own order; a depth-first post-order from the graph outputs, which
// finishes one branch before it starts the next; and a greedy list schedule
// that runs next the ready step that adds the fewest live bytes. It places
// them in order of LOAD and keeps the one with the smallest arena, the
// file's order on ties (Plan.Schedule names the winner). FileOrderLoadBytes
// stays LOAD of the file order with nothing shared, the baseline a runtime
// without these passes would need.
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
// the arena, that every piece sharing its whole's slot sits exactly where
// its step copies it and that no two steps write the same bytes of a slot,
// and sweeps the steps with the live slots kept sorted by offset
// to prove that no two of them share a byte, but for an output that takes
// over exactly the slot of an input under the in-place rule, whose
// schedule-dependent part (the input dies there, no graph input or output
// shares it) it establishes from its own replay.
//
// Plan.PeakStep and PeakTensors say where LOAD is reached and what is live
// there; the root package names them when a model does not fit a memory
// limit.
//
// Plan.Report and WriteSVG show a plan to people: a table of every tensor's
// offset and lifetime, and a picture of the arena over time.
package plan
