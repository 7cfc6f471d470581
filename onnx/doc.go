// Package onnx imports ONNX models into berth's intermediate representation.
//
// Import maps the model file read-only and converts its main graph into an
// ir.Graph:
//
//   - Initializers become constant tensors. Their raw_data bytes are not
//     copied: the importer walks the protobuf wire format, records where
//     each initializer's raw_data lies in the mapped file, decodes the rest
//     of the model without those bytes, and points Tensor.Data at the
//     mapped windows. (Such windows have the alignment the file gives
//     them, which may be less than the element size.) Values stored in
//     typed fields (float_data, int64_data, …) are decoded into fresh
//     slices, after their counts are checked against the declared shape.
//   - External data (data_location EXTERNAL) is read from files in the
//     model's folder only: absolute paths and paths that leave the folder,
//     also through symbolic links, are refused. Each data file is mapped
//     once (once for all the imports of one Parsed) and the tensors are
//     windows into it.
//   - Graph inputs that are also initializers are constants, not inputs.
//     Every other input must have a fully static shape.
//   - Constant nodes become constant tensors and produce no node. The
//     raw_data of the main graph's tensor attributes (such as a Constant's
//     value) is left in the mapped file the same way as an initializer's;
//     tensors inside subgraphs are decoded into fresh slices.
//   - Nodes are sorted topologically (file order is kept where it is
//     already valid). Node output tensors have no type yet: package passes
//     infers them. An empty output name marks an omitted optional output
//     and is recorded as ir.NoTensor at its position, as an empty input
//     name is.
//   - Unnamed nodes are named OpType_index (index in the file).
//
// Opsets 1 to 20 of the default domain are accepted (before opset 7, the
// binary operators' legacy broadcasting only where it agrees with numpy's,
// which package ir checks; from opset 18, the versions of the operators
// that opsets 18 to 20 define, where berth implements them, and an error
// naming the operator and the opset where it does not). Graph inputs
// with symbolic dimensions need their shapes fixed by
// ImportOptions.InputShapes. Of other domains, only the optimizers
// Adagrad, Momentum and Adam of ai.onnx.preview.training import (see
// ir.TrainingDomain); other operators of other domains, lists of
// subgraphs, sparse tensors, and string or complex tensors are refused
// with an error naming the node or tensor.
//
// Sequences never reach the ir.Graph: the importer resolves each sequence
// value of the main graph to a fixed tuple of tensors and lowers the
// sequence operators to ordinary nodes (see sequence.go). That needs the
// structure static: positions and split sizes constant, SplitToSequence's
// input shape declared, sequence graph inputs of a length given in
// ImportOptions.SequenceLengths (one tensor input per element, named by
// SequenceElement); sequence graph outputs become one output per element.
// SequenceMap is unrolled. Sequences inside subgraphs and optionals are
// refused.
//
// Control-flow bodies (If's then_branch and else_branch, Loop's and Scan's
// body) import as attributes of kind ir.AttrGraph. A body's inputs may
// leave out their types (the parent node's shape inference sets them). A
// name a body reads but does not define is an outer-scope value: the body
// gets a capture tensor of that name (ir.Graph.Captures) and the parent
// node reads the outer tensor as an implicit input (ir.Node.Implicit), so
// the planner keeps it alive across the node; a body nested in a body
// passes such names up level by level. Subgraphs may nest at most
// ir.MaxSubgraphDepth levels deep.
// Every size the file declares is checked against the bytes present before
// anything is allocated, and malformed input is an error, never a panic.
//
// The protobuf code lives in internal/onnxpb and is generated from ONNX's
// onnx.proto with protoc (libprotoc 3.21) and protoc-gen-go v1.36.12:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	cd onnx/internal/onnxpb && go generate
package onnx
