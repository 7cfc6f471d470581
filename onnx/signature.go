package onnx

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Kind is what a graph input or output holds.
type Kind int

// The kinds of values.
const (
	TensorValue   Kind = iota
	SequenceValue      // a sequence of tensors
	OptionalValue      // an optional tensor or sequence
	OtherValue         // a map, a sparse tensor or no type at all
)

func (k Kind) String() string {
	switch k {
	case TensorValue:
		return "tensor"
	case SequenceValue:
		return "sequence"
	case OptionalValue:
		return "optional"
	}
	return "other"
}

// Value describes a graph input or output as the file declares it: a
// tensor's element type and shape, or a sequence's element type and the
// shape of its elements.
type Value struct {
	Name  string
	Kind  Kind
	DType ir.DType // Undefined when the file gives none or berth has none
	// Shape is the declared shape, its open dimensions named by their
	// symbols; Ranked is false when the file declares no shape at all.
	Shape  ir.DeclaredShape
	Ranked bool
}

// Signature is the graph's inputs (initializers excluded) and outputs as
// the file declares them.
type Signature struct {
	Inputs, Outputs []Value
}

// Symbols lists every symbol the inputs' shapes name, in order of first
// appearance.
func (s *Signature) Symbols() []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range s.Inputs {
		for _, sym := range v.Shape.Symbols() {
			if !seen[sym] {
				seen[sym] = true
				out = append(out, sym)
			}
		}
	}
	return out
}

// Static reports whether every input is a tensor of a fully known shape:
// the model then imports as it is.
func (s *Signature) Static() bool {
	for _, v := range s.Inputs {
		if v.Kind != TensorValue || !v.Ranked {
			return false
		}
		if _, ok := v.Shape.Static(); !ok {
			return false
		}
	}
	return true
}

// ReadSignature decodes the declared inputs and outputs of a serialized
// ONNX model without importing it.
func ReadSignature(b []byte) (*Signature, error) {
	stripped, _, err := stripRawData(b)
	if err != nil {
		return nil, notONNX("%v", err)
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(stripped, &mp); err != nil {
		return nil, notONNX("%v", err)
	}
	gp := mp.GetGraph()
	if gp == nil {
		return nil, notONNX("no graph")
	}
	inits := make(map[string]bool)
	for _, tp := range gp.GetInitializer() {
		inits[tp.GetName()] = true
	}
	sig := &Signature{}
	for _, vi := range gp.GetInput() {
		if !inits[vi.GetName()] {
			v := valueOf(vi)
			if err := v.check(vi); err != nil {
				return nil, err
			}
			sig.Inputs = append(sig.Inputs, v)
		}
	}
	for _, vi := range gp.GetOutput() {
		sig.Outputs = append(sig.Outputs, valueOf(vi))
	}
	return sig, nil
}

func valueOf(vi *onnxpb.ValueInfoProto) Value {
	v := Value{Name: vi.GetName(), Kind: OtherValue}
	tp := vi.GetType()
	switch {
	case tp.GetTensorType() != nil:
		v.Kind = TensorValue
	case tp.GetSequenceType() != nil:
		v.Kind = SequenceValue
		tp = tp.GetSequenceType().GetElemType()
	case tp.GetOptionalType() != nil:
		v.Kind = OptionalValue
		return v
	default:
		return v
	}
	tt := tp.GetTensorType()
	if tt == nil {
		v.Kind = OtherValue
		return v
	}
	if dt, err := dtypeOf(tt.GetElemType()); err == nil {
		v.DType = dt
	}
	sp := tt.GetShape()
	if sp == nil {
		return v
	}
	v.Ranked = true
	v.Shape = make(ir.DeclaredShape, len(sp.GetDim()))
	for i, d := range sp.GetDim() {
		v.Shape[i] = ir.Dim{Size: -1}
		switch x := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if x.DimValue >= 0 {
				v.Shape[i].Size = x.DimValue
			}
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			v.Shape[i].Symbol = x.DimParam
		}
	}
	return v
}

// check refuses declared sizes no tensor has.
func (v Value) check(vi *onnxpb.ValueInfoProto) error {
	tp := vi.GetType()
	if st := tp.GetSequenceType(); st != nil {
		tp = st.GetElemType()
	}
	for i, d := range tp.GetTensorType().GetShape().GetDim() {
		if x, ok := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); ok && x.DimValue < 0 {
			return fmt.Errorf("graph input %q: dimension %d is negative (%d)", v.Name, i, x.DimValue)
		}
	}
	return nil
}

// String prints the value as berth info shows it.
func (v Value) String() string {
	shape := "(no shape)"
	if v.Ranked {
		shape = v.Shape.String()
	}
	switch v.Kind {
	case TensorValue:
		return fmt.Sprintf("%s%s", v.DType, shape)
	case SequenceValue:
		return fmt.Sprintf("sequence of %s%s", v.DType, shape)
	}
	return v.Kind.String()
}
