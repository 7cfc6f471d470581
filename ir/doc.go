// Package ir is berth's intermediate representation: a static dataflow graph
// of operator nodes over typed tensors with fixed shapes.
//
// A Graph owns a flat table of tensors indexed by TensorID and a list of
// nodes in the order the model file gave them. Constant tensors (weights and
// folded values) carry their bytes in Tensor.Data; every other tensor is an
// activation that the planner gives a slot in the arena.
//
// The package also holds the per-operator shape inference (Infer) and the
// structural verifier (Verify) that runs on every imported graph.
package ir
