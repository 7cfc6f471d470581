package onnx

import (
	"fmt"
	"os"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// ImportOptions tune an import. The zero value imports the file as it is.
type ImportOptions struct {
	// InputShapes fixes the shapes of graph inputs, by name. berth plans
	// with static shapes, so an input whose declared shape has symbolic
	// (or unknown) dimensions needs one here. A bound shape must agree
	// with the declaration: the same rank (when the file gives one) and
	// the same size in every dimension the file fixes. An input declared
	// a scalar takes any shape, as ONNX Runtime lets it.
	InputShapes map[string][]int64
	// Constants binds graph inputs, by name, to fixed values (DType, Shape
	// and Data set): each becomes a constant of the graph instead of an
	// input, before the nodes are read, so that structure which must be
	// static at import (a sequence's split sizes) may depend on it.
	Constants map[string]ir.Tensor
	// SequenceLengths gives the length of sequence-typed graph inputs, by
	// name. Such an input becomes that many tensor inputs, named by
	// SequenceElement (their shapes declared by the sequence's element
	// type or given in InputShapes under the element names).
	SequenceLengths map[string]int
	// Values binds tensors that nodes of the main graph compute, by name,
	// to values computed elsewhere (DType, Shape and Data set): each
	// becomes a constant, and the node that computed it computes a tensor
	// nobody reads in its place. A graph whose shapes follow from a
	// computed value (a NonMaxSuppression's boxes, a Loop's trip count) is
	// specialised on it this way once a first part of the graph has
	// computed it.
	Values map[string]ir.Tensor
	// Outputs, when set, replaces the graph's outputs by the tensors of
	// the main graph so named: the graph is cut down to what computes
	// them.
	Outputs []string
	// Open imports a model whose inputs leave dimensions open without
	// fixing them: such an input gets a nil Shape, and a sequence input
	// without a length in SequenceLengths one element. The graph is for
	// reading its structure (operators, names, which tensors depend on
	// which inputs), not for shape inference or compiling.
	Open bool
}

// boundInput builds a graph input whose shape the caller fixed, checking
// it against the declared shape sp (nil when the file declares none).
func boundInput(name string, dt ir.DType, sp *onnxpb.TensorShapeProto, bind []int64) (ir.Tensor, error) {
	shape := ir.Shape(append([]int64{}, bind...))
	if err := shape.Validate(); err != nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q: bound shape: %w", name, err)
	}
	if sp != nil && len(sp.GetDim()) > 0 {
		// A declared scalar takes any shape, as ONNX Runtime lets it
		// (a sample rate fed as [1]).
		dims := sp.GetDim()
		if len(dims) != len(shape) {
			return ir.Tensor{}, fmt.Errorf("graph input %q: bound shape %v has rank %d, the model declares rank %d", name, shape, len(shape), len(dims))
		}
		for i, d := range dims {
			if v, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && v.DimValue != shape[i] {
				return ir.Tensor{}, fmt.Errorf("graph input %q: bound shape %v differs from the declared size %d of dimension %d", name, shape, v.DimValue, i)
			}
		}
	}
	return ir.Tensor{Name: name, DType: dt, Shape: shape, Producer: -1}, nil
}

// InputNames lists the graph inputs of the ONNX model at path that are fed
// at run time (initializers listed as inputs excluded), in order, without
// importing the model: a caller can then fix their shapes with
// ImportOptions.InputShapes.
func InputNames(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	stripped, _, err := stripRawData(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, notONNX("%v", err))
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(stripped, &mp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, notONNX("%v", err))
	}
	inits := make(map[string]bool)
	for _, tp := range mp.GetGraph().GetInitializer() {
		inits[tp.GetName()] = true
	}
	var names []string
	for _, vi := range mp.GetGraph().GetInput() {
		if !inits[vi.GetName()] {
			names = append(names, vi.GetName())
		}
	}
	return names, nil
}
