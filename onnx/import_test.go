package onnx

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
	"github.com/berth-ml/berth/onnx/onnxtest"
	"github.com/berth-ml/berth/passes"
)

// inside reports whether b lies within buf's memory.
func inside(b, buf []byte) bool {
	if len(b) == 0 || len(buf) == 0 {
		return false
	}
	p, lo := uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(buf))
}

func tensorByName(g *ir.Graph, name string) *ir.Tensor {
	for i := range g.Tensors {
		if g.Tensors[i].Name == name {
			return &g.Tensors[i]
		}
	}
	return nil
}

func TestImportMixed(t *testing.T) {
	m, err := Import("testdata/mixed.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g := m.Graph
	if m.ProducerName != "gen_onnx_testdata" || m.IRVersion != 6 || m.Opsets[""] != 11 || g.Opset() != 11 {
		t.Errorf("metadata: producer %q, IR %d, opsets %v", m.ProducerName, m.IRVersion, m.Opsets)
	}
	if m.Producer() != "gen_onnx_testdata" {
		t.Errorf("Producer() = %q", m.Producer())
	}
	if m.Metadata["purpose"] != "test" {
		t.Errorf("metadata_props: %v", m.Metadata)
	}

	// The initializer listed as an input is a constant, not an input.
	if len(g.Inputs) != 1 || g.Tensor(g.Inputs[0]).Name != "image" {
		t.Fatalf("inputs: %v", g.Inputs)
	}
	if x := g.Tensor(g.Inputs[0]); x.DType != ir.Float32 || !x.Shape.Equal(ir.Shape{1, 3, 8, 8}) {
		t.Errorf("input image is %s%v", x.DType, x.Shape)
	}

	// raw_data is used in place, inside the mapped file.
	w := tensorByName(g, "conv.w")
	if w == nil || !w.Shape.Equal(ir.Shape{4, 3, 3, 3}) || len(w.Data) != 4*108 {
		t.Fatalf("conv.w: %+v", w)
	}
	if !inside(w.Data, m.files[0].Bytes()) {
		t.Error("conv.w's bytes are not a window into the mapped model file")
	}

	checks := []struct {
		name  string
		dt    ir.DType
		shape ir.Shape
		want  []byte
	}{
		{"conv.b", ir.Float32, ir.Shape{4}, f32le(0.5, -0.5, 1, 2)},
		{"shape", ir.Int64, ir.Shape{2}, ir.Int64Bytes([]int64{1, -1})},
		{"half", ir.Float16, ir.Shape{2}, []byte{0x00, 0x3e, 0x00, 0xc0}},
		{"small", ir.Int8, ir.Shape{3}, []byte{0xff, 0, 127}},
		{"flags", ir.Bool, ir.Shape{2}, []byte{1, 0}},
		{"wide", ir.Float64, ir.Shape{2}, f64le(0.25, -8)},
		{"big", ir.Uint64, ir.Shape{1}, binary.LittleEndian.AppendUint64(nil, 1<<63+5)},
		{"empty", ir.Float32, ir.Shape{0, 3}, []byte{}},
		{"six", ir.Float32, ir.Shape{}, f32le(6)},
		{"alpha", ir.Float32, ir.Shape{}, f32le(0.5)},
		{"alphas", ir.Float32, ir.Shape{2}, f32le(1, 2)},
		{"k", ir.Int64, ir.Shape{}, ir.Int64Bytes([]int64{3})},
		{"ks", ir.Int64, ir.Shape{3}, ir.Int64Bytes([]int64{4, 5, 6})},
	}
	for _, c := range checks {
		tt := tensorByName(g, c.name)
		if tt == nil {
			t.Errorf("no tensor %q", c.name)
			continue
		}
		if tt.DType != c.dt || !tt.Shape.Equal(c.shape) || !tt.IsConst() || !bytes.Equal(tt.Data, c.want) || tt.Producer != -1 {
			t.Errorf("%s: %s%v data %v producer %d, want %s%v %v", c.name, tt.DType, tt.Shape, tt.Data, tt.Producer, c.dt, c.shape, c.want)
		}
	}

	// Constant nodes are gone; the rest is sorted.
	var opsSeen []string
	for i, n := range g.Nodes {
		opsSeen = append(opsSeen, n.Op)
		for _, out := range n.Outputs {
			if out != ir.NoTensor && g.Tensor(out).Producer != i {
				t.Errorf("output %q of node %d records producer %d", g.Tensor(out).Name, i, g.Tensor(out).Producer)
			}
		}
	}
	if want := []string{"Conv", "Clip", "MaxPool", "Reshape", "Mul"}; !slices.Equal(opsSeen, want) {
		t.Errorf("nodes %v, want %v", opsSeen, want)
	}
	clip := g.Nodes[1]
	if len(clip.Inputs) != 3 || clip.Inputs[1] != ir.NoTensor {
		t.Errorf("Clip inputs %v: the omitted min should be NoTensor", clip.Inputs)
	}
	pool := g.Nodes[2]
	if len(pool.Outputs) != 2 || pool.Outputs[1] != ir.NoTensor {
		t.Errorf("MaxPool outputs %v: the omitted indices should be NoTensor", pool.Outputs)
	}
	if pool.Attrs.Ints("kernel_shape", nil)[0] != 2 || g.Nodes[0].Attrs.Ints("pads", nil)[3] != 1 {
		t.Errorf("attributes: %v %v", pool.Attrs, g.Nodes[0].Attrs)
	}
	for _, n := range g.Nodes {
		if g.Tensor(n.Outputs[0]).DType != ir.Undefined || g.Tensor(n.Outputs[0]).Shape != nil {
			t.Errorf("node %s output already has a type", n.Name)
		}
	}
	if len(g.Outputs) != 2 || g.Tensor(g.Outputs[0]).Name != "logits" || g.Tensor(g.Outputs[1]).Name != "ks" {
		t.Errorf("outputs %v", g.Outputs)
	}

	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func f32le(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func f64le(v ...float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

func TestImportExternal(t *testing.T) {
	m, err := Import("testdata/external/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(m.files) != 2 {
		t.Fatalf("%d files mapped, want the model and one data file", len(m.files))
	}
	data := m.files[1].Bytes()
	w1, w2 := tensorByName(m.Graph, "w1"), tensorByName(m.Graph, "w2")
	if !w1.Shape.Equal(ir.Shape{8, 4}) || !w2.Shape.Equal(ir.Shape{2, 8}) {
		t.Fatalf("shapes %v %v", w1.Shape, w2.Shape)
	}
	if !inside(w1.Data, data) || !inside(w2.Data, data) {
		t.Error("external tensors are not windows into the mapped data file")
	}
	if !bytes.Equal(w2.Data, data[128:192]) {
		t.Error("w2 does not hold bytes 128..192 of weights.bin")
	}
}

func TestImportEncodings(t *testing.T) {
	i32 := func(name string, dt onnxpb.TensorProto_DataType, dims []int64, v ...int32) *onnxpb.TensorProto {
		return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(dt)), Dims: dims, Int32Data: v}
	}
	inits := []*onnxpb.TensorProto{
		i32("i32", onnxpb.TensorProto_INT32, []int64{2}, -2, 7),
		i32("i16", onnxpb.TensorProto_INT16, []int64{2}, -2, 7),
		i32("u16", onnxpb.TensorProto_UINT16, []int64{1}, 65535),
		i32("u8", onnxpb.TensorProto_UINT8, []int64{2}, 255, 1),
		i32("bf16", onnxpb.TensorProto_BFLOAT16, []int64{1}, 0x3f80),
		{Name: proto.String("u32"), DataType: proto.Int32(int32(onnxpb.TensorProto_UINT32)), Dims: []int64{1}, Uint64Data: []uint64{0xdeadbeef}},
		{Name: proto.String("scalar"), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Int64Data: []int64{-9}},
		{Name: proto.String("rawzero"), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: []int64{2, 0}, RawData: []byte{}},
	}
	m, err := ImportBytes(marshal(t, model(13, reluGraph(inits...))), "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{
		"i32":     {0xfe, 0xff, 0xff, 0xff, 7, 0, 0, 0},
		"i16":     {0xfe, 0xff, 7, 0},
		"u16":     {0xff, 0xff},
		"u8":      {255, 1},
		"bf16":    {0x80, 0x3f},
		"u32":     {0xef, 0xbe, 0xad, 0xde},
		"scalar":  ir.Int64Bytes([]int64{-9}),
		"rawzero": {},
	}
	for name, b := range want {
		tt := tensorByName(m.Graph, name)
		if tt == nil || !tt.IsConst() || !bytes.Equal(tt.Data, b) {
			t.Errorf("%s: %+v, want data %v", name, tt, b)
		}
	}
	if s := tensorByName(m.Graph, "scalar").Shape; s == nil || len(s) != 0 {
		t.Errorf("scalar shape %#v", s)
	}
}

func TestImportRawDataWindows(t *testing.T) {
	// Two initializers with raw_data, one given twice (the last one wins, as
	// protobuf merges repeated scalar fields).
	w := rawF32("w", []int64{2}, 1, 2)
	v := rawF32("v", []int64{3}, 3, 4, 5)
	b := marshal(t, model(13, reluGraph(w, v)))
	m, err := ImportBytes(b, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"w", "v"} {
		tt := tensorByName(m.Graph, name)
		if !inside(tt.Data, b) {
			t.Errorf("%s is not a window into the model bytes", name)
		}
	}
	if got := tensorByName(m.Graph, "v").Data; !bytes.Equal(got, f32le(3, 4, 5)) {
		t.Errorf("v = %v", got)
	}
}

func TestImportErrors(t *testing.T) {
	ok := func() *onnxpb.ModelProto { return model(13, reluGraph()) }
	with := func(f func(m *onnxpb.ModelProto)) *onnxpb.ModelProto { m := ok(); f(m); return m }
	strTensor := &onnxpb.TensorProto{Name: proto.String("names"), DataType: proto.Int32(int32(onnxpb.TensorProto_STRING)), Dims: []int64{1}, StringData: [][]byte{[]byte("a")}}
	cplx := &onnxpb.TensorProto{Name: proto.String("c"), DataType: proto.Int32(int32(onnxpb.TensorProto_COMPLEX64)), Dims: []int64{1}, FloatData: []float32{1, 2}}
	tests := []struct {
		name string
		m    *onnxpb.ModelProto
		want string
	}{
		{"no graph", with(func(m *onnxpb.ModelProto) { m.Graph = nil }), "not an ONNX model: no graph"},
		{"no IR version", with(func(m *onnxpb.ModelProto) { m.IrVersion = nil }), "not an ONNX model: no IR version"},
		{"opset 0", model(0, reluGraph()), "opset 0 of the default domain"},
		{"new opset", model(MaxOpset+1, reluGraph()), fmt.Sprintf("opset %d of the default domain", MaxOpset+1)},
		{"no default opset", with(func(m *onnxpb.ModelProto) { m.OpsetImport[0].Domain = proto.String("com.example") }), "no opset of the default domain"},
		{"foreign domain node", with(func(m *onnxpb.ModelProto) {
			m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String("com.microsoft"), Version: proto.Int64(1)})
			m.Graph.Node[0].Domain = proto.String("com.microsoft")
			m.Graph.Node[0].OpType = proto.String("FusedGemm")
		}), `node "relu": operator FusedGemm of domain "com.microsoft" is not supported`},
		{"string initializer", model(13, reluGraph(strTensor)), `initializer "names": unsupported element type string`},
		{"complex initializer", model(13, reluGraph(cplx)), `initializer "c": unsupported element type complex64`},
		{"dims larger than raw data", model(13, reluGraph(rawF32("w", []int64{2, 3}, 1, 2))), `initializer "w": raw_data holds 8 bytes, but float32[2,3] needs 24`},
		{"dims larger than float_data", model(13, reluGraph(&onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(1), Dims: []int64{1 << 20}, FloatData: []float32{1}})),
			`initializer "w": float_data holds 1 values, but float32[1048576] has 1048576 elements`},
		{"no data", model(13, reluGraph(&onnxpb.TensorProto{Name: proto.String("w"), DataType: proto.Int32(1), Dims: []int64{4}})), `initializer "w": float32[4] has no data`},
		{"huge dims", model(13, reluGraph(rawF32("w", []int64{1 << 40, 1 << 40}, 1))), `initializer "w": shape [1099511627776,1099511627776] has more than`},
		{"negative dim", model(13, reluGraph(rawF32("w", []int64{-1}, 1))), `initializer "w": dimension 0 is negative`},
		{"unnamed initializer", model(13, reluGraph(rawF32("", []int64{1}, 1))), "initializer 0 has no name"},
		{"duplicate initializer", model(13, reluGraph(rawF32("w", []int64{1}, 1), rawF32("w", []int64{1}, 1))), `initializer "w" is defined twice`},
		{"symbolic dim", with(func(m *onnxpb.ModelProto) {
			m.Graph.Input[0].Type.GetTensorType().Shape.Dim[0].Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}
		}), `graph input "x": dimension 0 is symbolic ("batch")`},
		{"unknown dim", with(func(m *onnxpb.ModelProto) {
			m.Graph.Input[0].Type.GetTensorType().Shape.Dim[1].Value = nil
		}), `graph input "x": dimension 1 has no size`},
		{"no input shape", with(func(m *onnxpb.ModelProto) { m.Graph.Input[0].Type.GetTensorType().Shape = nil }), `graph input "x" has no shape`},
		{"string input", with(func(m *onnxpb.ModelProto) { m.Graph.Input[0].Type.GetTensorType().ElemType = proto.Int32(8) }), `graph input "x": unsupported element type string`},
		{"sequence input", with(func(m *onnxpb.ModelProto) { m.Graph.Input[0].Type = &onnxpb.TypeProto{} }), `graph input "x" is not a tensor`},
		{"undefined node input", with(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Input[0] = "nope" }), `node "relu" (Relu): input "nope" is not produced`},
		{"undefined graph output", with(func(m *onnxpb.ModelProto) { m.Graph.Output[0].Name = proto.String("nope") }), `graph output "nope" is not produced`},
		{"output redefines input", with(func(m *onnxpb.ModelProto) { m.Graph.Node[0].Output[0] = "x" }), `output "x" is already defined as a graph input`},
		{"cycle", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node = []*onnxpb.NodeProto{
				node("Add", "a", []string{"x", "c"}, []string{"b"}),
				node("Relu", "b", []string{"b"}, []string{"c"}),
				node("Relu", "y", []string{"x"}, []string{"y"}),
			}
		}), "the graph has a cycle through node"},
		{"empty subgraph", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[0].Attribute = []*onnxpb.AttributeProto{{Name: proto.String("body"), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: &onnxpb.GraphProto{}}}
		}), `node "relu" (Relu): attribute "body": subgraph "" has no outputs`},
		{"subgraph lists", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[0].Attribute = []*onnxpb.AttributeProto{{Name: proto.String("bodies"), Type: onnxpb.AttributeProto_GRAPHS.Enum(), Graphs: []*onnxpb.GraphProto{{}}}}
		}), `attribute "bodies": lists of subgraphs are not supported`},
		{"duplicate attribute", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node[0].Attribute = []*onnxpb.AttributeProto{attrInt("a", 1), attrInt("a", 2)}
		}), `attribute "a": given twice`},
		{"bad constant", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node = append(m.Graph.Node, node("Constant", "k", nil, []string{"k"}, attrInt("value", 1)))
		}), `attribute "value" is a int, want a tensor`},
		{"constant with two values", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node = append(m.Graph.Node, node("Constant", "k", nil, []string{"k"}, attrInt("value_int", 1), attrInts("value_ints", 1)))
		}), "exactly one value attribute"},
		{"sparse constant", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node = append(m.Graph.Node, node("Constant", "k", nil, []string{"k"}, &onnxpb.AttributeProto{Name: proto.String("sparse_value"), Type: onnxpb.AttributeProto_SPARSE_TENSOR.Enum()}))
		}), `attribute "sparse_value": attributes of type SPARSE_TENSOR are not supported`},
		{"bad constant tensor", with(func(m *onnxpb.ModelProto) {
			m.Graph.Node = append(m.Graph.Node, node("Constant", "k", nil, []string{"k"}, attrTensor("value", rawF32("", []int64{3}, 1))))
		}), `node "k" (Constant): attribute "value": raw_data holds 4 bytes`},
		{"external data without a folder", model(13, reluGraph(external("w", []int64{1}, "location", "w.bin"))), `initializer "w": external data "w.bin": the model was not loaded from a folder`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ImportBytes(marshal(t, tt.m), "")
			wantImportError(t, m, err, tt.want)
		})
	}
}

// wantImportError fails t unless the import that returned m and err
// failed with an error containing want.
func wantImportError(t *testing.T, m *Model, err error, want string) {
	t.Helper()
	if err == nil {
		m.Close()
		t.Fatalf("import succeeded, want an error containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func TestImportExternalErrors(t *testing.T) {
	dir := t.TempDir()
	modelDir := filepath.Join(dir, "model")
	if err := os.Mkdir(modelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	payload := f32le(1, 2, 3, 4)
	for _, p := range []string{filepath.Join(dir, "outside.bin"), filepath.Join(modelDir, "w.bin")} {
		if err := os.WriteFile(p, payload, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "outside.bin"), filepath.Join(modelDir, "link.bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("w.bin", filepath.Join(modelDir, "inlink.bin")); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "outside.bin")
	tests := []struct {
		name string
		t    *onnxpb.TensorProto
		want string // "" for success
	}{
		{"whole file", external("w", []int64{4}, "location", "w.bin"), ""},
		{"window", external("w", []int64{2}, "location", "w.bin", "offset", "8", "length", "8"), ""},
		{"symlink inside", external("w", []int64{4}, "location", "inlink.bin"), ""},
		{"parent", external("w", []int64{4}, "location", "../outside.bin"), `initializer "w": external data "../outside.bin": the path leaves the model's folder`},
		{"absolute", external("w", []int64{4}, "location", abs), `initializer "w": external data "` + abs + `": absolute paths are not allowed`},
		{"symlink outside", external("w", []int64{4}, "location", "link.bin"), `initializer "w": external data "link.bin": the path leaves the model's folder`},
		{"missing file", external("w", []int64{4}, "location", "nope.bin"), `initializer "w": external data "nope.bin"`},
		{"no location", external("w", []int64{4}, "offset", "0"), `initializer "w": external data has no location`},
		{"past the end", external("w", []int64{4}, "location", "w.bin", "offset", "8", "length", "16"), `initializer "w": external data [8, 8+16) runs past the end`},
		{"offset past the end", external("w", []int64{1}, "location", "w.bin", "offset", "100"), `initializer "w": external data offset 100 is past the end`},
		{"size mismatch", external("w", []int64{3}, "location", "w.bin"), `initializer "w": external data holds 16 bytes, but its type and shape need 12`},
		{"negative offset", external("w", []int64{1}, "location", "w.bin", "offset", "-4"), `initializer "w": external data offset: negative value`},
		{"bad length", external("w", []int64{1}, "location", "w.bin", "length", "many"), `initializer "w": external data length: not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := write(t, modelDir, model(13, reluGraph(tt.t)))
			m, err := Import(path)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				w := tensorByName(m.Graph, "w")
				if !bytes.Contains(payload, w.Data) || len(w.Data) != int(w.Bytes()) {
					t.Errorf("w = %v", w.Data)
				}
				return
			}
			wantImportError(t, m, err, tt.want)
		})
	}
}

func TestImportNotONNX(t *testing.T) {
	good, err := os.ReadFile("testdata/mixed.onnx")
	if err != nil {
		t.Fatal(err)
	}
	random := make([]byte, 4096)
	x := uint32(12345)
	for i := range random {
		x = x*1664525 + 1013904223
		random[i] = byte(x >> 24)
	}
	inputs := map[string][]byte{
		"empty":  {},
		"text":   []byte("this is not a model\n"),
		"random": random,
	}
	for _, n := range []int{1, 2, 10, 100, len(good) / 2, len(good) - 1} {
		inputs[fmt.Sprintf("truncated to %d bytes", n)] = good[:n]
	}
	dir := t.TempDir()
	for name, b := range inputs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "model.onnx")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := Import(path)
			if err == nil {
				m.Close()
				t.Fatal("import succeeded")
			}
			if !errors.Is(err, ErrNotONNX) || !strings.HasPrefix(err.Error(), path+": not an ONNX model: ") {
				t.Errorf("error %q is not a not-ONNX error naming the file", err)
			}
		})
	}
	if _, err := Import(filepath.Join(dir, "missing.onnx")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestImportTopologicalOrder(t *testing.T) {
	// Stored backwards: c = Relu(b), b = Relu(a), a = Relu(x); plus an
	// independent node that must keep its place relative to the others.
	g := &onnxpb.GraphProto{
		Node: []*onnxpb.NodeProto{
			node("Relu", "n0", []string{"b"}, []string{"c"}),
			node("Neg", "n1", []string{"x"}, []string{"d"}),
			node("Relu", "n2", []string{"a"}, []string{"b"}),
			node("Relu", "n3", []string{"x"}, []string{"a"}),
			node("Add", "", []string{"c", "d"}, []string{"y"}),
		},
		Input:  []*onnxpb.ValueInfoProto{valueInfo("x", onnxpb.TensorProto_FLOAT, 2)},
		Output: []*onnxpb.ValueInfoProto{output("y")},
	}
	m, err := ImportBytes(marshal(t, model(13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range m.Graph.Nodes {
		names = append(names, n.Name)
	}
	if want := []string{"n1", "n3", "n2", "n0", "Add_4"}; !slices.Equal(names, want) {
		t.Errorf("order %v, want %v", names, want)
	}
}

func TestImportAttributes(t *testing.T) {
	g := reluGraph()
	g.Node[0].Attribute = []*onnxpb.AttributeProto{
		attrInt("i", -3),
		{Name: proto.String("f"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(0.5)},
		{Name: proto.String("s"), Type: onnxpb.AttributeProto_STRING.Enum(), S: []byte("SAME_UPPER")},
		attrInts("is", 1, 2),
		{Name: proto.String("fs"), Type: onnxpb.AttributeProto_FLOATS.Enum(), Floats: []float32{1, 2}},
		{Name: proto.String("ss"), Type: onnxpb.AttributeProto_STRINGS.Enum(), Strings: [][]byte{[]byte("a"), []byte("b")}},
		attrTensor("t", rawF32("", []int64{1}, 7)),
		{Name: proto.String("untyped"), I: proto.Int64(9)}, // files too old to record the type
		{Name: proto.String("empty_ints"), Type: onnxpb.AttributeProto_INTS.Enum()},
	}
	m, err := ImportBytes(marshal(t, model(13, g)), "")
	if err != nil {
		t.Fatal(err)
	}
	a := m.Graph.Nodes[0].Attrs
	if a.Int("i", 0) != -3 || a.Float("f", 0) != 0.5 || a.String("s", "") != "SAME_UPPER" ||
		!slices.Equal(a.Ints("is", nil), []int64{1, 2}) || !slices.Equal(a.Floats("fs", nil), []float32{1, 2}) ||
		!slices.Equal(a["ss"].Strings, []string{"a", "b"}) || a.Int("untyped", 0) != 9 {
		t.Errorf("attrs: %+v", a)
	}
	if tt := a.Tensor("t"); tt == nil || !bytes.Equal(tt.Data, f32le(7)) || tt.Name != "relu.t" {
		t.Errorf("tensor attribute: %+v", tt)
	}
	if v := a.Ints("empty_ints", nil); v == nil || len(v) != 0 {
		t.Errorf("empty ints attribute: %#v", v)
	}
}

// TestImportFixtures imports the exported models under testdata/models
// (when present) and checks their structure.
func TestImportFixtures(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/models/*/model.onnx")
	paths = append(paths, "../internal/demo/data/model.onnx")
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		name := filepath.Base(filepath.Dir(path))
		if strings.Contains(path, "demo") {
			name = "demo"
		}
		t.Run(name, func(t *testing.T) {
			m, err := Import(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			g := m.Graph
			if len(g.Inputs) == 0 || len(g.Outputs) == 0 || len(g.Nodes) == 0 {
				t.Fatalf("%d inputs, %d outputs, %d nodes", len(g.Inputs), len(g.Outputs), len(g.Nodes))
			}
			file := m.files[0].Bytes()
			for _, id := range g.Inputs {
				if x := g.Tensor(id); !x.DType.Valid() || x.Shape.Validate() != nil || x.IsConst() {
					t.Errorf("input %s", g.Describe(id))
				}
			}
			defined := make([]bool, len(g.Tensors))
			for i := range g.Tensors {
				tt := &g.Tensors[i]
				if tt.IsConst() {
					defined[i] = true
					if int64(len(tt.Data)) != tt.Bytes() {
						t.Errorf("constant %s holds %d bytes", g.Describe(ir.TensorID(i)), len(tt.Data))
					}
					if tt.Bytes() >= 1024 && !inside(tt.Data, file) {
						t.Errorf("weight %s is not a window into the mapped file", tt.Name)
					}
				}
			}
			for _, id := range g.Inputs {
				defined[id] = true
			}
			for i, n := range g.Nodes {
				if n.Op == "Constant" {
					t.Errorf("Constant node %s survived", n.Name)
				}
				for _, in := range n.Inputs {
					if in != ir.NoTensor && !defined[in] {
						t.Errorf("node %s reads %q before it is defined", n.Name, g.Tensor(in).Name)
					}
				}
				for _, out := range n.Outputs {
					if out != ir.NoTensor {
						defined[out] = true
						if g.Tensor(out).Producer != i {
							t.Errorf("node %s: output producer %d", n.Name, g.Tensor(out).Producer)
						}
					}
				}
			}
		})
	}
}

func FuzzImportBytes(f *testing.F) {
	for _, p := range []string{"testdata/mixed.onnx", "testdata/external/model.onnx"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x07, 0x3a, 0x00})
	f.Add(onnxtest.NestedIfModel(3))
	f.Add(onnxtest.LoopModel(2))
	f.Add(onnxtest.ScanModel(false))
	f.Add(onnxtest.SequenceModel())
	f.Add(onnxtest.AdagradModel())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ImportBytes(b, "")
		if err != nil {
			return
		}
		defer m.Close()
		// Whatever imports must also go through inference without a panic.
		passes.Prepare(m.Graph, nil)
	})
}

func TestReadTensor(t *testing.T) {
	tp := rawF32("x", []int64{2, 2}, 1, 2, 3, 4)
	enc, err := proto.Marshal(tp)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "input_0.pb")
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := ReadTensorFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if x.Name != "x" || x.DType != ir.Float32 || !x.Shape.Equal(ir.Shape{2, 2}) || !bytes.Equal(x.Data, f32le(1, 2, 3, 4)) {
		t.Errorf("ReadTensorFile = %+v", x)
	}
	if inside(x.Data, enc) {
		t.Error("Data aliases the input bytes")
	}
	bad := map[string][]byte{
		"empty":    {},
		"garbage":  []byte("\xff\xff\xff"),
		"short":    marshalTensor(t, rawF32("x", []int64{3}, 1)),
		"external": marshalTensor(t, external("x", []int64{1}, "location", "x.bin")),
		"string":   marshalTensor(t, &onnxpb.TensorProto{Name: proto.String("s"), DataType: proto.Int32(8), Dims: []int64{1}}),
	}
	for name, b := range bad {
		if _, err := ReadTensor(b); err == nil {
			t.Errorf("%s: ReadTensor succeeded", name)
		}
	}
	if _, err := ReadTensorFile(filepath.Join(t.TempDir(), "missing.pb")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func marshalTensor(t *testing.T, tp *onnxpb.TensorProto) []byte {
	t.Helper()
	b, err := proto.Marshal(tp)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParsedSharesExternalData: the imports of one Parsed read external
// data from one mapping, which outlives each import and goes with the
// Parsed.
func TestParsedSharesExternalData(t *testing.T) {
	f, err := device.MapFile("testdata/external/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := ParseMapped(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.Files()); n != 1 {
		t.Fatalf("%d files before any import, want the model alone", n)
	}
	m1, err := p.Import(ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := p.Import(ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := p.Files()
	if len(files) != 2 {
		t.Fatalf("%d files after importing, want the model and its data file", len(files))
	}
	for _, name := range []string{"w1", "w2"} {
		a, b := tensorByName(m1.Graph, name), tensorByName(m2.Graph, name)
		if unsafe.SliceData(a.Data) != unsafe.SliceData(b.Data) {
			t.Errorf("%s: the two imports read it from different mappings", name)
		}
		if !inside(a.Data, files[1]) {
			t.Errorf("%s: not in the data file Files lists", name)
		}
	}
	if !m1.Detached() {
		t.Error("an import of a Parsed owns a file")
	}
	// Closing one import leaves the other's data readable.
	m1.Close()
	w2 := tensorByName(m2.Graph, "w2")
	want := append([]byte(nil), files[1][128:192]...)
	if !bytes.Equal(w2.Data, want) {
		t.Error("w2 changed when the other import closed")
	}
	dst := make([]byte, len(w2.Data))
	if !m2.ReadInto(dst, w2.Data) || !bytes.Equal(dst, want) {
		t.Error("ReadInto does not read the shared data file")
	}
	m2.Close()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(p.Files()); n != 1 {
		t.Errorf("%d files after Close, want the model alone", n)
	}
	if _, err := p.Import(ImportOptions{}); err == nil {
		t.Error("an import after Close read the unmapped data file")
	}
}
