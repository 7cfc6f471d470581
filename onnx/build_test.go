package onnx

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Helpers that build ONNX protobufs for tests.

func model(opset int64, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	return &onnxpb.ModelProto{
		IrVersion:    proto.Int64(8),
		ProducerName: proto.String("test"),
		OpsetImport:  []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}},
		Graph:        g,
	}
}

func valueInfo(name string, et onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{
		Name: proto.String(name),
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: proto.Int32(int32(et)),
			Shape:    shape,
		}}},
	}
}

func output(name string) *onnxpb.ValueInfoProto {
	return &onnxpb.ValueInfoProto{Name: proto.String(name)}
}

func node(op, name string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(name), Input: inputs, Output: outputs, Attribute: attrs}
}

func attrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

func attrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
}

func attrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_TENSOR.Enum(), T: t}
}

// rawF32 is a float32 tensor stored as raw_data.
func rawF32(name string, dims []int64, v ...float32) *onnxpb.TensorProto {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: dims, RawData: b}
}

func external(name string, dims []int64, kv ...string) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{
		Name:         proto.String(name),
		DataType:     proto.Int32(int32(onnxpb.TensorProto_FLOAT)),
		Dims:         dims,
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum(),
	}
	for i := 0; i+1 < len(kv); i += 2 {
		t.ExternalData = append(t.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
	}
	return t
}

// reluGraph is x[2,3] → Relu → y, plus the given initializers.
func reluGraph(inits ...*onnxpb.TensorProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{
		Name:        proto.String("g"),
		Node:        []*onnxpb.NodeProto{node("Relu", "relu", []string{"x"}, []string{"y"})},
		Input:       []*onnxpb.ValueInfoProto{valueInfo("x", onnxpb.TensorProto_FLOAT, 2, 3)},
		Output:      []*onnxpb.ValueInfoProto{output("y")},
		Initializer: inits,
	}
}

func marshal(t testing.TB, m *onnxpb.ModelProto) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// write saves m as dir/model.onnx and returns the path.
func write(t testing.TB, dir string, m *onnxpb.ModelProto) string {
	t.Helper()
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, marshal(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
