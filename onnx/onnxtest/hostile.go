package onnxtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Case is one hostile input: a model file and, for run-time cases, the
// input files to feed it (in graph-input order).
type Case struct {
	Name   string
	Model  string   // path to the model file
	Inputs []string // .npy input files; empty for load-time cases
	// Loads is true when the model itself is valid and the error comes
	// only when it is compiled or run.
	Loads bool
	// Want is a substring the error must contain ("" when any clear
	// error will do).
	Want string
}

func vi(name string, et onnxpb.TensorProto_DataType, dims ...int64) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		shape.Dim = append(shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d}})
	}
	return &onnxpb.ValueInfoProto{Name: proto.String(name), Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
		TensorType: &onnxpb.TypeProto_Tensor{ElemType: proto.Int32(int32(et)), Shape: shape}}}}
}

// viSym is vi with every dimension a symbol.
func viSym(name string, et onnxpb.TensorProto_DataType, syms ...string) *onnxpb.ValueInfoProto {
	v := vi(name, et)
	for _, s := range syms {
		v.Type.GetTensorType().Shape.Dim = append(v.Type.GetTensorType().Shape.Dim, &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: s}})
	}
	return v
}

func node(op string, in, out []string) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(op + "_" + out[0]), Input: in, Output: out}
}

func f32(name string, dims []int64, n int) *onnxpb.TensorProto {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(i)))
	}
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: dims, RawData: b}
}

func i64(name string, v ...int64) *onnxpb.TensorProto {
	return &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_INT64)), Dims: []int64{int64(len(v))}, Int64Data: v}
}

func external(name string, dims []int64, location, offset, length string) *onnxpb.TensorProto {
	t := &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: dims,
		DataLocation: onnxpb.TensorProto_EXTERNAL.Enum()}
	for _, kv := range [][2]string{{"location", location}, {"offset", offset}, {"length", length}} {
		if kv[1] != "" {
			t.ExternalData = append(t.ExternalData, &onnxpb.StringStringEntryProto{Key: proto.String(kv[0]), Value: proto.String(kv[1])})
		}
	}
	return t
}

func model(opset int64, domain string, g *onnxpb.GraphProto) *onnxpb.ModelProto {
	m := &onnxpb.ModelProto{IrVersion: proto.Int64(8), ProducerName: proto.String("onnxtest"), Graph: g,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Domain: proto.String(""), Version: proto.Int64(opset)}}}
	if domain != "" {
		m.OpsetImport = append(m.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: proto.String(domain), Version: proto.Int64(1)})
	}
	return m
}

// addGraph is x[2,3] + w → y, the base most cases corrupt.
func addGraph(w *onnxpb.TensorProto) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{
		Name:        proto.String("g"),
		Node:        []*onnxpb.NodeProto{node("Add", []string{"x", "w"}, []string{"y"})},
		Input:       []*onnxpb.ValueInfoProto{vi("x", onnxpb.TensorProto_FLOAT, 2, 3)},
		Output:      []*onnxpb.ValueInfoProto{{Name: proto.String("y")}},
		Initializer: []*onnxpb.TensorProto{w},
	}
}

// Valid returns a small valid model, x[2,3] + w → y, as ONNX bytes.
func Valid() []byte {
	b, _ := proto.Marshal(model(13, "", addGraph(f32("w", []int64{2, 3}, 6))))
	return b
}

// npyHeader writes a .npy file whose header is h and whose data is data.
func npyFile(h string, data []byte) []byte {
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(h)))
	b = append(b, h...)
	return append(b, data...)
}

// Write creates every hostile case under dir (which must be empty and
// writable) and returns them. secret is a file outside dir that external
// data tries to reach; it is created in dir's parent.
func Write(dir string) ([]Case, error) {
	var cases []Case
	var firstErr error
	file := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil && firstErr == nil {
			firstErr = err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil && firstErr == nil {
			firstErr = err
		}
		return p
	}
	add := func(name string, m *onnxpb.ModelProto, want string) {
		b, err := proto.Marshal(m)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", name, err)
		}
		cases = append(cases, Case{Name: name, Model: file(name+"/model.onnx", b), Want: want})
	}
	raw := func(name string, b []byte, want string) {
		cases = append(cases, Case{Name: name, Model: file(name+"/model.onnx", b), Want: want})
	}

	r := rand.New(rand.NewPCG(7, 11))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	valid := Valid()
	raw("random-bytes", random, "")
	raw("random-bytes-small", random[:3], "")
	raw("empty-file", nil, "")
	raw("text-file", []byte("name: not a model\nlayers: 3\n"), "")
	raw("truncated-half", valid[:len(valid)/2], "")
	raw("truncated-last-byte", valid[:len(valid)-1], "")
	// A huge length prefix at the start of the graph field.
	raw("huge-length-prefix", append([]byte{0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f}, valid...), "")

	g := addGraph(f32("w", []int64{2, 3}, 6))
	g.Input[0] = vi("x", onnxpb.TensorProto_FLOAT, 1<<31, 1<<31, 1<<31)
	add("huge-input-dims", model(13, "", g), "")
	add("huge-initializer-dims", model(13, "", addGraph(f32("w", []int64{1 << 40, 1 << 40}, 6))), `"w"`)
	add("initializer-short-data", model(13, "", addGraph(f32("w", []int64{1000, 1000}, 6))), `"w"`)
	add("negative-initializer-dims", model(13, "", addGraph(f32("w", []int64{-2, 3}, 6))), `"w"`)
	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Input[0] = vi("x", onnxpb.TensorProto_FLOAT, 2, -3)
	add("negative-input-dims", model(13, "", g), `"x"`)

	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node = []*onnxpb.NodeProto{
		node("Add", []string{"x", "b"}, []string{"a"}),
		node("Relu", []string{"a"}, []string{"b"}),
		node("Relu", []string{"a"}, []string{"y"}),
	}
	add("cycle", model(13, "", g), "cycle")

	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node = []*onnxpb.NodeProto{node("Add", []string{"x", "nowhere"}, []string{"y"})}
	add("undefined-input", model(13, "", g), "nowhere")

	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Output[0].Name = proto.String("never")
	add("undefined-output", model(13, "", g), "never")

	for _, ext := range []struct{ name, loc, want string }{
		{"external-relative-escape", "../secret.bin", `"w"`},
		{"external-absolute-path", "/etc/passwd", `"w"`},
		{"external-symlink-escape", "link.bin", `"w"`},
		{"external-past-end", "weights.bin", `"w"`},
		{"external-missing-file", "absent.bin", `"w"`},
	} {
		off, length := "", ""
		if ext.name == "external-past-end" {
			off, length = "16", "24"
		}
		add(ext.name, model(13, "", addGraph(external("w", []int64{2, 3}, ext.loc, off, length))), ext.want)
	}
	file("secret.bin", make([]byte, 24))
	file("external-past-end/weights.bin", make([]byte, 24))
	if err := os.Symlink(filepath.Join(dir, "secret.bin"), filepath.Join(dir, "external-symlink-escape", "link.bin")); err != nil && firstErr == nil {
		firstErr = err
	}

	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node[0].OpType = proto.String("FrobnicateTensor")
	add("unknown-op", model(13, "", g), "FrobnicateTensor")
	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node[0].Domain = proto.String("com.example.evil")
	add("unknown-domain", model(13, "com.example.evil", g), "com.example.evil")
	add("opset-too-new", model(99, "", addGraph(f32("w", []int64{2, 3}, 6))), "99")

	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node = []*onnxpb.NodeProto{node("Reshape", []string{"x", "s"}, []string{"y"})}
	g.Initializer = []*onnxpb.TensorProto{i64("s", 4, 5)}
	add("reshape-impossible", model(13, "", g), "Reshape")

	// A graph whose activations would need far more memory than any
	// machine has: the plan must be refused before anything is allocated.
	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node = []*onnxpb.NodeProto{
		node("Expand", []string{"x", "s"}, []string{"big"}),
		node("ReduceSum", []string{"big"}, []string{"y"}),
	}
	g.Initializer = []*onnxpb.TensorProto{i64("s", 1<<20, 1<<12, 2, 3)}
	add("activation-bomb", model(13, "", g), "memory limit")
	cases[len(cases)-1].Loads = true
	// A Tile whose kernel would index every output position along an
	// axis of 3·2³³: refused before the kernel builds its tables.
	g = addGraph(f32("w", []int64{2, 3}, 6))
	g.Node = []*onnxpb.NodeProto{node("Tile", []string{"x", "s"}, []string{"y"})}
	g.Initializer = []*onnxpb.TensorProto{i64("s", 1, 1<<33)}
	add("tile-bomb", model(13, "", g), "memory limit")
	cases[len(cases)-1].Loads = true

	// Run-time cases on the valid model.
	ok := file("valid/model.onnx", valid)
	for _, in := range []struct {
		name string
		b    []byte
		want string
	}{
		{"input-wrong-shape", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", make([]byte, 24)), "expected float32[2,3], got float32[3,2]"},
		{"input-wrong-dtype", npyFile("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", make([]byte, 48)), "expected float32[2,3], got float64[2,3]"},
		{"input-npy-bad-magic", []byte("\x93NUMPX\x01\x00\x00\x00"), "npy"},
		{"input-npy-truncated-header", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", nil)[:20], "npy"},
		{"input-npy-claims-more-data", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }", make([]byte, 24)), "npy"},
		{"input-npy-huge-dims", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", nil), "npy"},
		{"input-npy-negative-dims", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", make([]byte, 24)), "npy"},
		{"input-npy-fortran", npyFile("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", make([]byte, 24)), "npy"},
		{"input-npy-random", random[:200], "npy"},
	} {
		cases = append(cases, Case{Name: in.name, Model: ok, Inputs: []string{file("inputs/"+in.name+".npy", in.b)}, Loads: true, Want: in.want})
	}

	// Open shapes: the inputs of a run settle them, and may not agree or
	// may ask for more than any plan can hold.
	f32npy := func(dims ...int64) []byte {
		n := int64(4)
		shape := ""
		for _, d := range dims {
			n *= d
			shape += fmt.Sprintf("%d, ", d)
		}
		return npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': ("+shape+"), }", make([]byte, n))
	}
	i64npy := func(v ...int64) []byte {
		var data []byte
		for _, x := range v {
			data = binary.LittleEndian.AppendUint64(data, uint64(x))
		}
		return npyFile(fmt.Sprintf("{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }", len(v)), data)
	}
	open := func(name string, nodes []*onnxpb.NodeProto, inputs []*onnxpb.ValueInfoProto, feeds [][]byte, want string) {
		g := &onnxpb.GraphProto{Name: proto.String(name), Node: nodes, Input: inputs,
			Output: []*onnxpb.ValueInfoProto{{Name: proto.String("y")}}}
		add(name, model(13, "", g), want)
		c := &cases[len(cases)-1]
		c.Loads = true
		for i, b := range feeds {
			c.Inputs = append(c.Inputs, file(fmt.Sprintf("%s/input_%d.npy", name, i), b))
		}
	}
	open("symbol-disagrees", []*onnxpb.NodeProto{node("Add", []string{"a", "b"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{viSym("a", onnxpb.TensorProto_FLOAT, "n"), viSym("b", onnxpb.TensorProto_FLOAT, "n")},
		[][]byte{f32npy(2), f32npy(3)}, "another input gives")
	open("symbol-expand-bomb", []*onnxpb.NodeProto{node("Expand", []string{"x", "s"}, []string{"big"}), node("ReduceSum", []string{"big"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{viSym("x", onnxpb.TensorProto_FLOAT, "n"), viSym("s", onnxpb.TensorProto_INT64, "r")},
		[][]byte{f32npy(3), i64npy(1<<20, 1<<12, 2, 3)}, "memory limit")
	open("symbol-reshape-overflow", []*onnxpb.NodeProto{node("Reshape", []string{"x", "s"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{viSym("x", onnxpb.TensorProto_FLOAT, "n"), viSym("s", onnxpb.TensorProto_INT64, "r")},
		[][]byte{f32npy(6), i64npy(1<<40, 1<<40, 1<<40)}, "Reshape")
	open("symbol-nonzero-bomb", []*onnxpb.NodeProto{node("Expand", []string{"x", "s"}, []string{"big"}), node("NonZero", []string{"big"}, []string{"y"})},
		[]*onnxpb.ValueInfoProto{viSym("x", onnxpb.TensorProto_FLOAT, "n"), viSym("s", onnxpb.TensorProto_INT64, "r")},
		[][]byte{f32npy(1), i64npy(1<<30, 1<<30)}, "")
	return cases, firstErr
}

// MappedWeightModel returns a model, y = Gather(table, ids) with ids an
// int64[4] input, whose 256 KiB table lies 64-byte aligned in the file, so
// a runtime reads it in place from the mapping rather than from a copy.
func MappedWeightModel() []byte {
	table := f32("table", []int64{4096, 16}, 4096*16)
	for pad := 0; pad < 64; pad++ {
		g := &onnxpb.GraphProto{
			Name:        proto.String("g"),
			Node:        []*onnxpb.NodeProto{node("Gather", []string{"table", "ids"}, []string{"y"})},
			Input:       []*onnxpb.ValueInfoProto{vi("ids", onnxpb.TensorProto_INT64, 4)},
			Output:      []*onnxpb.ValueInfoProto{{Name: proto.String("y")}},
			Initializer: []*onnxpb.TensorProto{table},
		}
		m := model(13, "", g)
		m.DocString = proto.String(string(make([]byte, pad)))
		b, err := proto.Marshal(m)
		if err != nil {
			panic(err)
		}
		if off := bytesIndex(b, table.RawData[4:64]) - 4; off >= 0 && off%64 == 0 {
			return b
		}
	}
	panic("onnxtest: no padding aligns the table")
}

func bytesIndex(b, sub []byte) int {
	for i := 0; i+len(sub) <= len(b); i++ {
		if string(b[i:i+len(sub)]) == string(sub) {
			return i
		}
	}
	return -1
}
