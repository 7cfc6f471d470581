// Package cpu runs berth graphs on the host CPU in pure Go.
//
// Build compiles one node of an ir.Graph, whose tensor types and shapes are
// already known, into a Kernel: an immutable object holding everything that
// can be decided ahead of time (broadcast plans, packed weights, index
// tables, loop bounds). At run time the executor hands a kernel the exact
// bytes of the node's input and output tensors (windows of the arena and of
// the weight region) and a scratch window whose size Build reported; the
// kernel computes without allocating. Evaluate runs a node whose inputs
// are all constants and stores its results in the graph, so constant
// folding and execution share one implementation of every operator.
//
// Parallel work goes through Workers, a persistent pool of goroutines owned
// by one session. A kernel splits its work into items and hands each
// goroutine a contiguous range of them; small loops stay on the caller.
//
// MatMul, Gemm, Conv and ConvTranspose share one single-precision GEMM:
// operands are packed into panels (constant weights once, at build time),
// C is cut into tiles that the workers share, and a 4×8 register-blocked
// micro-kernel in plain Go accumulates over 256-deep slices of k.
// Convolutions write im2col straight into packed panels; a depthwise
// convolution runs directly.
//
// Elementwise operators broadcast like numpy through a loop nest planned at
// build time: adjacent dimensions with the same broadcast pattern merge, and
// the innermost run has a dedicated loop for equal shapes, a scalar on
// either side, or any mix, so no element needs index arithmetic. They are
// correct when an output occupies exactly the memory of an input, so the
// planner may run them in place.
//
// If, Loop and Scan compile their subgraphs at Build into kernels of their
// own; the subgraph's tensors live in the parent node's scratch, which the
// plan places in the session's arena with a lifetime spanning the node,
// so control flow allocates nothing per run (see control.go).
//
// Operators follow the ONNX specification for opsets 11 to 17 (and the
// older forms of Softmax, Clip, Slice, Pad, Split and Reduce*).
// Transcendental functions go through float64 math; normalisations and
// reductions accumulate in float64; Softmax subtracts the maximum.
package cpu
