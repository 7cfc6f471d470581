package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// attrs converts the attributes of a node.
func (im *importer) attrs(node, op string, aps []*onnxpb.AttributeProto) (ir.Attrs, error) {
	if len(aps) == 0 {
		return nil, nil
	}
	attrs := make(ir.Attrs, len(aps))
	for _, ap := range aps {
		name := ap.GetName()
		fail := func(format string, args ...any) error {
			return fmt.Errorf("node %q (%s): attribute %q: %s", node, op, name, fmt.Sprintf(format, args...))
		}
		if name == "" {
			return nil, fmt.Errorf("node %q (%s): an attribute has no name", node, op)
		}
		if _, dup := attrs[name]; dup {
			return nil, fail("given twice")
		}
		if ap.GetRefAttrName() != "" {
			return nil, fail("refers to a function attribute; model functions are not supported")
		}
		var a ir.Attr
		switch attrType(ap) {
		case onnxpb.AttributeProto_INT:
			a = ir.Attr{Kind: ir.AttrInt, Int: ap.GetI()}
		case onnxpb.AttributeProto_FLOAT:
			a = ir.Attr{Kind: ir.AttrFloat, Float: ap.GetF()}
		case onnxpb.AttributeProto_STRING:
			a = ir.Attr{Kind: ir.AttrString, String: string(ap.GetS())}
		case onnxpb.AttributeProto_INTS:
			a = ir.Attr{Kind: ir.AttrInts, Ints: ap.GetInts()}
			if a.Ints == nil {
				a.Ints = []int64{}
			}
		case onnxpb.AttributeProto_FLOATS:
			a = ir.Attr{Kind: ir.AttrFloats, Floats: ap.GetFloats()}
			if a.Floats == nil {
				a.Floats = []float32{}
			}
		case onnxpb.AttributeProto_STRINGS:
			ss := make([]string, len(ap.GetStrings()))
			for i, s := range ap.GetStrings() {
				ss[i] = string(s)
			}
			a = ir.Attr{Kind: ir.AttrStrings, Strings: ss}
		case onnxpb.AttributeProto_TENSOR:
			t, err := im.tensor(fmt.Sprintf("node %q (%s): attribute %q", node, op, name), ap.GetT(), tensorData{raw: im.attrData[ap.GetT()]})
			if err != nil {
				return nil, err
			}
			if t.Name == "" {
				t.Name = node + "." + name
			}
			a = ir.Attr{Kind: ir.AttrTensor, Tensor: &t}
		case onnxpb.AttributeProto_GRAPH:
			if ap.GetG() == nil {
				return nil, fail("has no graph")
			}
			sub, free, err := im.subgraph(ap.GetG())
			if err != nil {
				return nil, fmt.Errorf("node %q (%s): attribute %q: %w", node, op, name, err)
			}
			a = ir.Attr{Kind: ir.AttrGraph, Graph: sub}
			im.implicit = append(im.implicit, free...)
		case onnxpb.AttributeProto_GRAPHS:
			return nil, fail("lists of subgraphs are not supported")
		case onnxpb.AttributeProto_UNDEFINED:
			return nil, fail("has no value")
		default:
			return nil, fail("attributes of type %s are not supported", attrType(ap))
		}
		attrs[name] = a
	}
	return attrs, nil
}

// attrType returns the attribute's declared type or, for files too old to
// declare it, the type its populated field implies.
func attrType(ap *onnxpb.AttributeProto) onnxpb.AttributeProto_AttributeType {
	if ap.Type != nil {
		return ap.GetType()
	}
	switch {
	case len(ap.Floats) > 0:
		return onnxpb.AttributeProto_FLOATS
	case len(ap.Ints) > 0:
		return onnxpb.AttributeProto_INTS
	case len(ap.Strings) > 0:
		return onnxpb.AttributeProto_STRINGS
	case len(ap.Tensors) > 0:
		return onnxpb.AttributeProto_TENSORS
	case len(ap.Graphs) > 0:
		return onnxpb.AttributeProto_GRAPHS
	case ap.T != nil:
		return onnxpb.AttributeProto_TENSOR
	case ap.G != nil:
		return onnxpb.AttributeProto_GRAPH
	case ap.S != nil:
		return onnxpb.AttributeProto_STRING
	case ap.I != nil:
		return onnxpb.AttributeProto_INT
	case ap.F != nil:
		return onnxpb.AttributeProto_FLOAT
	}
	return onnxpb.AttributeProto_UNDEFINED
}

// constant turns a Constant node into a constant tensor named after its
// output; no ir node is made for it.
func (im *importer) constant(node string, np *onnxpb.NodeProto, attrs ir.Attrs) error {
	if len(np.GetOutput()) != 1 || np.GetOutput()[0] == "" {
		return fmt.Errorf("node %q (Constant): needs exactly one named output", node)
	}
	if len(np.GetInput()) != 0 {
		return fmt.Errorf("node %q (Constant): takes no inputs, has %d", node, len(np.GetInput()))
	}
	out := np.GetOutput()[0]
	if err := im.checkNew(node, "Constant", out); err != nil {
		return err
	}
	if len(attrs) != 1 {
		return fmt.Errorf("node %q (Constant): needs exactly one value attribute, has %d", node, len(attrs))
	}
	var t ir.Tensor
	for name, a := range attrs {
		if want, ok := constantKinds[name]; ok && a.Kind != want {
			return fmt.Errorf("node %q (Constant): attribute %q is a %s, want a %s", node, name, a.Kind, want)
		}
		switch name {
		case "value":
			t = *a.Tensor
		case "value_float":
			t = ir.Tensor{DType: ir.Float32, Shape: ir.Shape{}, Data: float32Bytes([]float32{a.Float})}
		case "value_floats":
			t = ir.Tensor{DType: ir.Float32, Shape: ir.Shape{int64(len(a.Floats))}, Data: float32Bytes(a.Floats)}
		case "value_int":
			t = ir.Tensor{DType: ir.Int64, Shape: ir.Shape{}, Data: ir.Int64Bytes([]int64{a.Int})}
		case "value_ints":
			t = ir.Tensor{DType: ir.Int64, Shape: ir.Shape{int64(len(a.Ints))}, Data: ir.Int64Bytes(a.Ints)}
		default:
			return fmt.Errorf("node %q (Constant): attribute %q is not supported", node, name)
		}
	}
	t.Name, t.Producer = out, -1
	if t.Data == nil {
		t.Data = []byte{}
	}
	im.ids[out] = im.g.AddTensor(t)
	return nil
}

var constantKinds = map[string]ir.AttrKind{
	"value":        ir.AttrTensor,
	"value_float":  ir.AttrFloat,
	"value_floats": ir.AttrFloats,
	"value_int":    ir.AttrInt,
	"value_ints":   ir.AttrInts,
}

func float32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
