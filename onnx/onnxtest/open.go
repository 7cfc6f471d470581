package onnxtest

import (
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Graph describes a small model for tests of open shapes: inputs whose
// dimensions may be symbols, nodes with integer attributes, int64
// initializers. Bytes writes it as an ONNX model.
type Graph struct {
	Opset   int64 // 0: 13
	Inputs  []Input
	Nodes   []Node
	Consts  []Const
	Outputs []string
}

// Input declares a graph input. Each of Dims is a size ("3") or a symbol
// ("batch"); "?" leaves the dimension open without a name. Elem is the
// element type as ONNX names it ("float", "int64", "int32", "bool",
// "uint8", "double"; "" is float). A Sequence input is a sequence of such
// tensors. Unranked leaves the shape out.
type Input struct {
	Name     string
	Elem     string
	Dims     []string
	Sequence bool
	Unranked bool
}

// Node is one node. Ints sets integer attributes, IntLists list ones;
// Value, when set, is ConstantOfShape's value attribute (a float32
// scalar); Body, when set, is a Loop's body, and Then and Else an If's
// branches (their Opsets unused).
type Node struct {
	Op         string
	Inputs     []string
	Outputs    []string
	Ints       map[string]int64
	IntLists   map[string][]int64
	Value      *float32
	Body       *Graph
	Then, Else *Graph
}

// Const is an int64 initializer; Dims nil makes it a scalar.
type Const struct {
	Name   string
	Dims   []int64
	Values []int64
}

// Bytes returns the model as ONNX bytes. Its outputs are declared by
// name only.
func (g Graph) Bytes() []byte {
	opset := g.Opset
	if opset == 0 {
		opset = 13
	}
	return marshal(opset, g.proto("open"))
}

func (g Graph) proto(name string) *onnxpb.GraphProto {
	gp := &onnxpb.GraphProto{Name: proto.String(name)}
	for _, in := range g.Inputs {
		gp.Input = append(gp.Input, in.valueInfo())
	}
	for _, n := range g.Nodes {
		np := node(n.Op, n.Inputs, n.Outputs)
		for k, v := range n.Ints {
			np.Attribute = append(np.Attribute, intAttr(k, v))
		}
		for k, v := range n.IntLists {
			np.Attribute = append(np.Attribute, &onnxpb.AttributeProto{Name: proto.String(k), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v})
		}
		if n.Value != nil {
			v := f32("value", []int64{1}, 1)
			v.RawData = f32le1(*n.Value)
			np.Attribute = append(np.Attribute, &onnxpb.AttributeProto{Name: proto.String("value"), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: v})
		}
		if n.Body != nil {
			np.Attribute = append(np.Attribute, graphAttr("body", n.Body.proto("body")))
		}
		if n.Then != nil {
			np.Attribute = append(np.Attribute, graphAttr("then_branch", n.Then.proto("then")))
		}
		if n.Else != nil {
			np.Attribute = append(np.Attribute, graphAttr("else_branch", n.Else.proto("else")))
		}
		gp.Node = append(gp.Node, np)
	}
	for _, c := range g.Consts {
		t := i64(c.Name, c.Values...)
		t.Dims = c.Dims
		gp.Initializer = append(gp.Initializer, t)
	}
	for _, out := range g.Outputs {
		gp.Output = append(gp.Output, untyped(out))
	}
	return gp
}

var elemTypes = map[string]onnxpb.TensorProto_DataType{
	"": onnxpb.TensorProto_FLOAT, "float": onnxpb.TensorProto_FLOAT, "double": onnxpb.TensorProto_DOUBLE,
	"int64": onnxpb.TensorProto_INT64, "int32": onnxpb.TensorProto_INT32, "bool": onnxpb.TensorProto_BOOL,
	"uint8": onnxpb.TensorProto_UINT8,
}

func (in Input) valueInfo() *onnxpb.ValueInfoProto {
	et, ok := elemTypes[in.Elem]
	if !ok {
		panic("onnxtest: unknown element type " + strconv.Quote(in.Elem))
	}
	tt := &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(et))}
	if !in.Unranked {
		tt.Shape = &onnxpb.TensorShapeProto{}
		for _, d := range in.Dims {
			dim := &onnxpb.TensorShapeProto_Dimension{}
			if n, err := strconv.ParseInt(d, 10, 64); err == nil {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: n}
			} else if d != "?" {
				dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d}
			}
			tt.Shape.Dim = append(tt.Shape.Dim, dim)
		}
	}
	tp := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: tt}}
	if in.Sequence {
		tp = &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{ElemType: tp}}}
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(in.Name), Type: tp}
}
