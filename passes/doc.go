// Package passes transforms an imported graph into the form that the
// planner and the backends expect.
//
// Prepare runs, in order:
//
//   - Fold: shape inference for every node (ir.Infer), recording each
//     output's type and shape, and constant folding. Shape nodes always
//     fold (their value depends only on a static shape); the view
//     operators Reshape, Flatten, Squeeze, Unsqueeze and Identity fold on a
//     constant input by sharing its bytes; any other node whose inputs are
//     all constant folds through an Evaluator, which the CPU backend
//     provides, as long as its outputs total at most MaxFoldBytes.
//     Control flow: an If whose condition is a constant is replaced by the
//     nodes of the branch it takes; a Loop all of whose inputs are
//     constants (at most MaxUnrolledTrips iterations) is computed by
//     folding a copy of its body per iteration; any other If, Loop or Scan
//     has its subgraphs typed from its inputs (ir.BindSubgraphs) and
//     prepared like a main graph (inferred, folded, pruned) before its own
//     outputs are inferred. A Loop that only its condition bounds never
//     runs at load time.
//   - MergePointwiseSums: a sum of two 1×1 convolutions of unit stride
//     (ResNet's first bottleneck block adds its projection shortcut to its
//     last convolution so) becomes one convolution over the two inputs
//     concatenated along the channels, with the weights side by side and
//     the biases summed: one product of depth C1+C2 instead of two
//     products and an Add, and no intermediate output. The planner lets
//     the inputs' producers write straight into the Concat's output.
//   - EliminateDeadCode: drops folded nodes and nodes that no graph output
//     depends on, and compacts the tensor table to what remains in use.
//   - MaterializeOutputs: makes every graph output a distinct tensor
//     written by a node, inserting an Identity where an output is a
//     constant, a graph input or listed twice.
//   - ir.Verify.
//
// PyTorch exports compute reshape targets at run time from the input's
// shape (Shape → Gather → Unsqueeze → Concat → Reshape); with static input
// shapes Fold turns every such chain into a constant.
//
// Along the way Fold marks the constants it computes from the shapes of
// the graph's inputs and the decisions it takes on them (see generic.go):
// a graph Prepare left with neither is shape-generic (ShapeGeneric), the
// graph preparing gives at any input shapes but for the shapes, and
// Reinfer infers its shapes anew for others instead of preparing again.
//
// Outside Prepare: LowerRecurrent writes LSTM, GRU and RNN nodes out as
// products and elementwise nodes for a backend without recurrent kernels
// (the CUDA backend), and Clone copies a graph deeply enough that
// preparing the copy leaves the original as it was.
package passes
