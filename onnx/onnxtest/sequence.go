package onnxtest

import (
	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// SequenceModel exercises the sequence operators berth resolves
// statically, at opset 13. Inputs: a and b, float32[2,3]; seq, a sequence
// of float32[2,3] (its length is given at load time). Outputs:
//
//	stacked = ConcatFromSequence(Erase(Insert(Construct(a, b), a, 0)), axis 0, new_axis) → [2,2,3]: a, a
//	count   = SequenceLength(SplitToSequence(a, axis 1, keepdims 0)) → 3
//	last    = SequenceAt(SplitToSequence(a, axis 1, keepdims 0), -1) → a[:, 2]
//	mapped  = SequenceMap(seq, body: x ↦ x + b), a sequence output
func SequenceModel() []byte {
	seqType := &onnxpb.TypeProto{Value: &onnxpb.TypeProto_SequenceType{SequenceType: &onnxpb.TypeProto_Sequence{
		ElemType: vi("", onnxpb.TensorProto_FLOAT, 2, 3).GetType()}}}
	seq := &onnxpb.ValueInfoProto{Name: proto.String("seq"), Type: seqType}
	mapped := &onnxpb.ValueInfoProto{Name: proto.String("mapped"), Type: seqType}
	at := func(n *onnxpb.NodeProto, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		n.Attribute = attrs
		return n
	}
	body := &onnxpb.GraphProto{Name: proto.String("body"),
		Input:  []*onnxpb.ValueInfoProto{untyped("x")},
		Output: []*onnxpb.ValueInfoProto{untyped("y")},
		Node:   []*onnxpb.NodeProto{node("Add", []string{"x", "b"}, []string{"y"})},
	}
	zero := i64("zero", 0)
	zero.Dims = nil
	last := i64("minus_one", -1)
	last.Dims = nil
	g := &onnxpb.GraphProto{Name: proto.String("sequences"),
		Input: []*onnxpb.ValueInfoProto{vi("a", onnxpb.TensorProto_FLOAT, 2, 3), vi("b", onnxpb.TensorProto_FLOAT, 2, 3), seq},
		Output: []*onnxpb.ValueInfoProto{vi("stacked", onnxpb.TensorProto_FLOAT, 2, 2, 3), vi("count", onnxpb.TensorProto_INT64),
			vi("last", onnxpb.TensorProto_FLOAT, 2), mapped},
		Initializer: []*onnxpb.TensorProto{zero, last},
		Node: []*onnxpb.NodeProto{
			node("SequenceConstruct", []string{"a", "b"}, []string{"s1"}),
			node("SequenceInsert", []string{"s1", "a", "zero"}, []string{"s2"}),
			node("SequenceErase", []string{"s2"}, []string{"s3"}),
			at(node("ConcatFromSequence", []string{"s3"}, []string{"stacked"}), intAttr("axis", 0), intAttr("new_axis", 1)),
			at(node("SplitToSequence", []string{"a"}, []string{"cols"}), intAttr("axis", 1), intAttr("keepdims", 0)),
			node("SequenceLength", []string{"cols"}, []string{"count"}),
			node("SequenceAt", []string{"cols", "minus_one"}, []string{"last"}),
			at(node("SequenceMap", []string{"seq"}, []string{"mapped"}), graphAttr("body", body)),
		},
	}
	return marshal(13, g)
}

// AdagradModel is one Adagrad step (domain ai.onnx.preview.training) over
// inputs R (float32 scalar), T (int64 scalar), X, G, H (float32[3]) with
// decay_factor 0.1, epsilon 1e-5 and norm_coefficient 0.01; outputs
// X_new, H_new. The model imports only the training domain.
func AdagradModel() []byte {
	const domain = "ai.onnx.preview.training"
	floatAttr := func(name string, v float32) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(v)}
	}
	n := node("Adagrad", []string{"R", "T", "X", "G", "H"}, []string{"X_new", "H_new"})
	n.Domain = proto.String(domain)
	n.Attribute = []*onnxpb.AttributeProto{floatAttr("decay_factor", 0.1), floatAttr("epsilon", 1e-5), floatAttr("norm_coefficient", 0.01)}
	g := &onnxpb.GraphProto{Name: proto.String("adagrad"),
		Input: []*onnxpb.ValueInfoProto{vi("R", onnxpb.TensorProto_FLOAT), vi("T", onnxpb.TensorProto_INT64),
			vi("X", onnxpb.TensorProto_FLOAT, 3), vi("G", onnxpb.TensorProto_FLOAT, 3), vi("H", onnxpb.TensorProto_FLOAT, 3)},
		Output: []*onnxpb.ValueInfoProto{vi("X_new", onnxpb.TensorProto_FLOAT, 3), vi("H_new", onnxpb.TensorProto_FLOAT, 3)},
		Node:   []*onnxpb.NodeProto{n},
	}
	m := model(13, domain, g)
	m.OpsetImport = m.OpsetImport[1:]
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
