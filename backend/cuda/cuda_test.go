package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// requireGPU skips the test where there is no CUDA.
func requireGPU(t testing.TB) {
	t.Helper()
	d, err := Device()
	if errors.Is(err, driver.ErrUnavailable) {
		t.Skipf("no CUDA here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s, compute %d.%d", d.Name, d.Major, d.Minor)
}

// tg builds one-node graphs by hand.
type tg struct {
	g   *ir.Graph
	r   *rand.Rand
	in  [][]byte // data of each graph input
	pos bool     // draw positive floats
}

func newTG(opset int64) *tg {
	return &tg{g: &ir.Graph{Name: "test", Opsets: map[string]int64{"": opset}}, r: rand.New(rand.NewPCG(1, 2))}
}

// input adds a graph input with random data.
func (t *tg) input(dt ir.DType, shape ...int64) ir.TensorID {
	id := t.g.NewTensor(fmt.Sprintf("in%d", len(t.g.Inputs)), dt, ir.Shape(shape).Clone(), nil)
	t.g.Inputs = append(t.g.Inputs, id)
	t.in = append(t.in, t.random(dt, ir.Shape(shape).Elements(), 0))
	return id
}

// indices adds a graph input of integer indices in [-dim, dim).
func (t *tg) indices(dt ir.DType, dim int64, shape ...int64) ir.TensorID {
	id := t.g.NewTensor(fmt.Sprintf("in%d", len(t.g.Inputs)), dt, ir.Shape(shape).Clone(), nil)
	t.g.Inputs = append(t.g.Inputs, id)
	t.in = append(t.in, t.random(dt, ir.Shape(shape).Elements(), dim))
	return id
}

// constant adds a constant with random data.
func (t *tg) constant(dt ir.DType, shape ...int64) ir.TensorID {
	return t.g.NewTensor(fmt.Sprintf("c%d", len(t.g.Tensors)), dt, ir.Shape(shape).Clone(), t.random(dt, ir.Shape(shape).Elements(), 0))
}

// ints adds an int64 constant.
func (t *tg) ints(v ...int64) ir.TensorID {
	return t.g.NewTensor(fmt.Sprintf("c%d", len(t.g.Tensors)), ir.Int64, ir.Shape{int64(len(v))}, ir.Int64Bytes(v))
}

// scalar adds a float32 scalar constant.
func (t *tg) scalar(v float32) ir.TensorID {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	return t.g.NewTensor(fmt.Sprintf("c%d", len(t.g.Tensors)), ir.Float32, ir.Shape{}, b)
}

func (t *tg) random(dt ir.DType, n, dim int64) []byte {
	b := make([]byte, n*int64(dt.Size()))
	for i := range n {
		switch dt {
		case ir.Float32:
			v := float32(t.r.NormFloat64())
			if t.pos {
				v = float32(math.Abs(float64(v))) + 0.1
			}
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		case ir.Int64, ir.Int32:
			v := int64(t.r.IntN(7)) - 3
			if dim > 0 {
				v = t.r.Int64N(2*dim) - dim
			}
			if dt == ir.Int64 {
				binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
			} else {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(v)))
			}
		case ir.Bool:
			b[i] = byte(t.r.IntN(2))
		}
	}
	return b
}

// node adds a node with k outputs whose types ir.Infer works out.
func (t *tg) node(op string, attrs ir.Attrs, k int, ins ...ir.TensorID) {
	t.g.Nodes = append(t.g.Nodes, ir.Node{Name: strings.ToLower(op), Op: op, Inputs: ins, Attrs: attrs})
	idx := len(t.g.Nodes) - 1
	n := &t.g.Nodes[idx]
	for i := range k {
		n.Outputs = append(n.Outputs, t.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("out%d", i), Producer: idx}))
	}
	types, err := ir.Infer(t.g, n)
	if err != nil {
		panic(err)
	}
	for i, id := range n.Outputs {
		t.g.Tensor(id).DType, t.g.Tensor(id).Shape = types[i].DType, types[i].Shape
	}
	t.g.Outputs = append(t.g.Outputs[:0], n.Outputs...)
}

// reference runs the graph's one node on the CPU backend.
func (t *tg) reference(tb testing.TB) [][]byte {
	tb.Helper()
	for i, id := range t.g.Inputs {
		t.g.Tensor(id).Data = t.in[i]
	}
	n := &t.g.Nodes[0]
	if err := cpu.Evaluate(t.g, n); err != nil {
		tb.Fatalf("CPU: %v", err)
	}
	var out [][]byte
	for _, id := range n.Outputs {
		out = append(out, t.g.Tensor(id).Data)
		t.g.Tensor(id).Data = nil
	}
	for _, id := range t.g.Inputs {
		t.g.Tensor(id).Data = nil
	}
	return out
}

// check runs the graph on the GPU and compares it with the CPU backend.
func (t *tg) check(tb testing.TB) {
	tb.Helper()
	want := t.reference(tb)
	for _, opts := range []Options{{}, {NoGraphs: true}, {NoBLAS: true}} {
		t.run(tb, opts, want)
	}
}

func (t *tg) run(tb testing.TB, opts Options, want [][]byte) {
	tb.Helper()
	exe, s := openSession(tb, t.g, opts)
	_, pl := exe.Plan()
	if s.ArenaBytes() != pl.ArenaBytes {
		tb.Errorf("arena %d bytes, plan %d", s.ArenaBytes(), pl.ArenaBytes)
	}
	got := make([][]byte, len(want))
	for i := range got {
		got[i] = make([]byte, len(want[i]))
		for j := range got[i] {
			got[i][j] = 0xAB // poison
		}
	}
	// The first run launches one by one, the second captures a graph
	// and replays it: both must give the reference.
	for run := range 2 {
		if err := s.Run(t.in, got); err != nil {
			tb.Fatalf("Run: %v", err)
		}
		for i, id := range t.g.Outputs {
			compare(tb, t.g.Tensor(id), got[i], want[i])
		}
		for i := range got {
			for j := range got[i] {
				got[i][j] = 0xAB
			}
		}
		if run == 1 && !opts.NoGraphs && !s.Graphed() {
			tb.Errorf("the session did not capture a graph")
		}
	}
}

func compare(tb testing.TB, t *ir.Tensor, got, want []byte) {
	tb.Helper()
	if t.DType != ir.Float32 {
		for i := range want {
			if got[i] != want[i] {
				tb.Errorf("%s %s%v: byte %d is %d, want %d", t.Name, t.DType, t.Shape, i, got[i], want[i])
				return
			}
		}
		return
	}
	var num, den float64
	worst, at := 0.0, -1
	for i := 0; i < len(want); i += 4 {
		g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i:])))
		w := float64(math.Float32frombits(binary.LittleEndian.Uint32(want[i:])))
		if math.IsNaN(g) != math.IsNaN(w) || math.IsInf(w, 0) && g != w {
			tb.Errorf("%s: element %d is %v, want %v", t.Name, i/4, g, w)
			return
		}
		if math.IsNaN(w) || math.IsInf(w, 0) {
			continue
		}
		num += (g - w) * (g - w)
		den += w * w
		if d := math.Abs(g - w); d > worst {
			worst, at = d, i/4
		}
	}
	rel := math.Sqrt(num / math.Max(den, 1e-30))
	if rel > 1e-5 && worst > 1e-5 {
		tb.Errorf("%s %v: rel L2 %.3g, worst |Δ| %.3g at %d", t.Name, t.Shape, rel, worst, at)
	}
}

func ints(v ...int64) ir.Attr  { return ir.Attr{Kind: ir.AttrInts, Ints: v} }
func intv(v int64) ir.Attr     { return ir.Attr{Kind: ir.AttrInt, Int: v} }
func floatv(v float32) ir.Attr { return ir.Attr{Kind: ir.AttrFloat, Float: v} }
func strv(v string) ir.Attr    { return ir.Attr{Kind: ir.AttrString, String: v} }
func dtypeAttr(d ir.DType) ir.Attr {
	onnx := map[ir.DType]int64{ir.Float32: 1, ir.Int32: 6, ir.Int64: 7, ir.Bool: 9}
	return intv(onnx[d])
}

func TestUnary(t *testing.T) {
	requireGPU(t)
	for _, op := range []string{"Relu", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Neg", "Abs", "Reciprocal", "Floor", "Ceil", "Sin", "Cos", "Softplus", "Elu"} {
		t.Run(op, func(t *testing.T) {
			g := newTG(17)
			g.pos = op == "Log" || op == "Sqrt" || op == "Reciprocal"
			var attrs ir.Attrs
			if op == "LeakyRelu" || op == "HardSigmoid" {
				attrs = ir.Attrs{"alpha": floatv(0.3)}
			}
			g.node(op, attrs, 1, g.input(ir.Float32, 3, 5, 77))
			g.check(t)
		})
	}
}

func TestClip(t *testing.T) {
	requireGPU(t)
	g := newTG(13)
	g.node("Clip", nil, 1, g.input(ir.Float32, 4, 100), g.scalar(-0.5), g.scalar(0.7))
	g.check(t)
	g = newTG(13)
	g.node("Clip", nil, 1, g.input(ir.Float32, 4, 100), g.input(ir.Float32))
	g.check(t)
	g = newTG(6)
	g.node("Clip", ir.Attrs{"min": floatv(0), "max": floatv(6)}, 1, g.input(ir.Float32, 1000))
	g.check(t)
}

func TestBinary(t *testing.T) {
	requireGPU(t)
	shapes := [][2][]int64{{{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {3, 1}}, {{4}, {2, 3, 4}}, {{2, 1, 5, 1}, {1, 7, 1, 3}}, {{3, 8}, {}}}
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Equal", "Less", "Greater"} {
		for _, dt := range []ir.DType{ir.Float32, ir.Int64, ir.Int32} {
			if op == "Pow" && dt != ir.Float32 || op == "Div" && dt != ir.Float32 {
				continue // integer division by the random zeros
			}
			for _, s := range shapes {
				t.Run(fmt.Sprintf("%s/%s/%v", op, dt, s), func(t *testing.T) {
					g := newTG(17)
					g.pos = op == "Pow"
					g.node(op, nil, 1, g.input(dt, s[0]...), g.input(dt, s[1]...))
					g.check(t)
				})
			}
		}
	}
	g := newTG(17)
	g.node("Add", nil, 1, g.input(ir.Float32, 5, 6), g.constant(ir.Float32, 6))
	g.check(t)
}

func TestLogical(t *testing.T) {
	requireGPU(t)
	shapes := [][2][]int64{{{3, 40}, {3, 40}}, {{2, 3, 4}, {3, 1}}, {{5}, {}}}
	for _, op := range []string{"And", "Or", "Xor"} {
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/%v", op, s), func(t *testing.T) {
				g := newTG(17)
				g.node(op, nil, 1, g.input(ir.Bool, s[0]...), g.input(ir.Bool, s[1]...))
				g.check(t)
			})
		}
	}
	t.Run("Not", func(t *testing.T) {
		g := newTG(17)
		g.node("Not", nil, 1, g.input(ir.Bool, 7, 33))
		g.check(t)
	})
}

func TestWhere(t *testing.T) {
	requireGPU(t)
	for _, dt := range []ir.DType{ir.Float32, ir.Int64, ir.Bool} {
		g := newTG(17)
		g.node("Where", nil, 1, g.input(ir.Bool, 1, 1, 4, 4), g.input(dt, 2, 3, 4, 4), g.input(dt, 1))
		g.check(t)
	}
}

func TestCast(t *testing.T) {
	requireGPU(t)
	types := []ir.DType{ir.Float32, ir.Int64, ir.Int32, ir.Bool}
	for _, from := range types {
		for _, to := range types {
			t.Run(fmt.Sprintf("%s-%s", from, to), func(t *testing.T) {
				g := newTG(17)
				g.node("Cast", ir.Attrs{"to": dtypeAttr(to)}, 1, g.input(from, 3, 33))
				g.check(t)
			})
		}
	}
}

func TestLayout(t *testing.T) {
	requireGPU(t)
	checkBuilds(t, 17, []buildCase{
		{"transpose", func(g *tg) {
			g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 3, 1)}, 1, g.input(ir.Float32, 2, 3, 5, 7))
		}},
		{"transpose-int64", func(g *tg) { g.node("Transpose", nil, 1, g.input(ir.Int64, 2, 3, 5)) }},
		{"transpose-bool", func(g *tg) {
			g.node("Transpose", ir.Attrs{"perm": ints(1, 0, 2)}, 1, g.input(ir.Bool, 3, 5, 2))
		}},
		{"gather-0", func(g *tg) {
			g.node("Gather", nil, 1, g.constant(ir.Float32, 11, 6), g.indices(ir.Int64, 11, 2, 5))
		}},
		{"gather-1-i32", func(g *tg) {
			g.node("Gather", ir.Attrs{"axis": intv(1)}, 1, g.input(ir.Float32, 3, 9, 4), g.indices(ir.Int32, 9, 7))
		}},
		{"gather-int64", func(g *tg) {
			g.node("Gather", nil, 1, g.input(ir.Int64, 5, 3), g.indices(ir.Int64, 5, 4))
		}},
		{"concat", func(g *tg) {
			g.node("Concat", ir.Attrs{"axis": intv(1)}, 1, g.input(ir.Float32, 2, 3, 4), g.constant(ir.Float32, 2, 1, 4), g.input(ir.Float32, 2, 5, 4))
		}},
		{"split", func(g *tg) { g.node("Split", ir.Attrs{"axis": intv(2)}, 3, g.input(ir.Float32, 2, 3, 12)) }},
		{"split-sizes", func(g *tg) { g.node("Split", nil, 2, g.input(ir.Float32, 7, 3), g.ints(2, 5)) }},
		{"slice", func(g *tg) {
			g.node("Slice", nil, 1, g.input(ir.Float32, 6, 8, 5), g.ints(1, -1), g.ints(5, 0), g.ints(0, 1), g.ints(2, -2))
		}},
		{"expand", func(g *tg) { g.node("Expand", nil, 1, g.input(ir.Float32, 3, 1), g.ints(2, 3, 4)) }},
		{"reshape", func(g *tg) { g.node("Reshape", nil, 1, g.input(ir.Float32, 6, 4), g.ints(3, -1)) }},
		{"reshape-const", func(g *tg) { g.node("Reshape", nil, 1, g.constant(ir.Float32, 6, 4), g.ints(3, -1)) }},
	})
}

func TestMatMul(t *testing.T) {
	requireGPU(t)
	shapes := [][2][]int64{{{17, 33}, {33, 20}}, {{2, 3, 17, 33}, {33, 70}}, {{5, 7}, {2, 7, 9}}, {{2, 1, 4, 8}, {3, 8, 5}}, {{8}, {8, 3}}, {{4, 8}, {8}}, {{130, 200}, {200, 129}}}
	for _, s := range shapes {
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			g := newTG(17)
			g.node("MatMul", nil, 1, g.input(ir.Float32, s[0]...), g.constant(ir.Float32, s[1]...))
			g.check(t)
		})
	}
}

func TestGemm(t *testing.T) {
	requireGPU(t)
	for _, ta := range []int64{0, 1} {
		for _, tb := range []int64{0, 1} {
			for _, cs := range [][]int64{nil, {30}, {20, 1}, {20, 30}} {
				t.Run(fmt.Sprintf("%d%d%v", ta, tb, cs), func(t *testing.T) {
					g := newTG(13)
					a := []int64{20, 40}
					if ta == 1 {
						a = []int64{40, 20}
					}
					b := []int64{40, 30}
					if tb == 1 {
						b = []int64{30, 40}
					}
					ins := []ir.TensorID{g.input(ir.Float32, a...), g.constant(ir.Float32, b...)}
					if cs != nil {
						ins = append(ins, g.constant(ir.Float32, cs...))
					}
					g.node("Gemm", ir.Attrs{"transA": intv(ta), "transB": intv(tb), "alpha": floatv(0.5), "beta": floatv(2)}, 1, ins...)
					g.check(t)
				})
			}
		}
	}
}

func TestConv(t *testing.T) {
	requireGPU(t)
	checkConvs(t, "Conv", []convCase{
		{"3x3", []int64{2, 3, 17, 15}, []int64{8, 3, 3, 3}, true, ir.Attrs{"pads": ints(1, 1, 1, 1)}},
		{"3x3-stride2", []int64{1, 4, 16, 16}, []int64{6, 4, 3, 3}, false, ir.Attrs{"pads": ints(1, 0, 1, 2), "strides": ints(2, 2)}},
		{"1x1", []int64{2, 16, 7, 7}, []int64{24, 16, 1, 1}, true, nil},
		{"depthwise", []int64{2, 8, 9, 9}, []int64{8, 1, 3, 3}, true, ir.Attrs{"group": intv(8), "pads": ints(1, 1, 1, 1), "strides": ints(2, 2)}},
		{"depthwise-x2", []int64{1, 4, 9, 9}, []int64{8, 1, 5, 5}, false, ir.Attrs{"group": intv(4), "auto_pad": strv("SAME_UPPER")}},
		{"grouped", []int64{2, 8, 10, 10}, []int64{6, 4, 3, 3}, true, ir.Attrs{"group": intv(2), "dilations": ints(2, 2)}},
		{"1d", []int64{2, 5, 30}, []int64{7, 5, 4}, true, ir.Attrs{"pads": ints(2, 1), "strides": ints(3)}},
	}, func(c convCase) int64 { return c.w[0] })
}

// convCase is one convolution of TestConv or TestConvTranspose.
type convCase struct {
	name  string
	x, w  []int64
	bias  bool
	attrs ir.Attrs
}

// checkConvs checks a node of op (Conv or ConvTranspose) per case, with a
// bias of biasLen values where the case has one.
func checkConvs(t *testing.T, op string, cases []convCase, biasLen func(convCase) int64) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTG(13)
			ins := []ir.TensorID{g.input(ir.Float32, tc.x...), g.constant(ir.Float32, tc.w...)}
			if tc.bias {
				ins = append(ins, g.constant(ir.Float32, biasLen(tc)))
			}
			g.node(op, tc.attrs, 1, ins...)
			g.check(t)
		})
	}
}

func TestConvTranspose(t *testing.T) {
	requireGPU(t)
	checkConvs(t, "ConvTranspose", []convCase{
		// PP-OCR's detector head: 2×2, stride 2.
		{"2x2-stride2", []int64{1, 24, 20, 30}, []int64{24, 24, 2, 2}, true, ir.Attrs{"strides": ints(2, 2)}},
		{"3x3-stride2-pads", []int64{2, 4, 7, 6}, []int64{4, 5, 3, 3}, true, ir.Attrs{"strides": ints(2, 2), "pads": ints(1, 1, 1, 1), "output_padding": ints(1, 1)}},
		{"asymmetric", []int64{1, 3, 5, 8}, []int64{3, 2, 4, 3}, false, ir.Attrs{"strides": ints(3, 2), "pads": ints(0, 2, 1, 0)}},
		{"dilated", []int64{1, 3, 6, 6}, []int64{3, 4, 3, 3}, true, ir.Attrs{"dilations": ints(2, 2), "pads": ints(1, 1, 1, 1)}},
		{"grouped", []int64{1, 6, 5, 5}, []int64{6, 2, 3, 3}, true, ir.Attrs{"group": intv(3), "strides": ints(2, 2)}},
		{"grouped-batch", []int64{3, 4, 5, 4}, []int64{4, 3, 2, 3}, true, ir.Attrs{"group": intv(2), "strides": ints(1, 2)}},
		{"same-upper", []int64{2, 3, 5, 5}, []int64{3, 4, 3, 3}, true, ir.Attrs{"strides": ints(2, 2), "auto_pad": strv("SAME_UPPER")}},
		{"output_shape", []int64{1, 3, 4, 4}, []int64{3, 2, 3, 3}, false, ir.Attrs{"strides": ints(3, 3), "output_shape": ints(12, 13)}},
		{"1d", []int64{2, 5, 30}, []int64{5, 7, 4}, true, ir.Attrs{"strides": ints(3), "pads": ints(2, 1)}},
		{"3d", []int64{1, 2, 3, 4, 5}, []int64{2, 3, 2, 3, 2}, true, ir.Attrs{"strides": ints(2, 1, 2), "pads": ints(0, 1, 0, 1, 0, 1)}},
	}, func(c convCase) int64 { return c.w[1] * c.attrs.Int("group", 1) })
	t.Run("weights-input", func(t *testing.T) {
		g := newTG(13)
		g.node("ConvTranspose", ir.Attrs{"strides": ints(2, 2)}, 1, g.input(ir.Float32, 2, 3, 4, 4), g.input(ir.Float32, 3, 2, 3, 3))
		g.check(t)
	})
}

func TestNorm(t *testing.T) {
	requireGPU(t)
	checkBuilds(t, 17, []buildCase{
		{"batchnorm", func(g *tg) {
			g.pos = true
			g.node("BatchNormalization", ir.Attrs{"epsilon": floatv(1e-3)}, 1, g.input(ir.Float32, 2, 5, 4, 3), g.constant(ir.Float32, 5), g.constant(ir.Float32, 5), g.constant(ir.Float32, 5), g.constant(ir.Float32, 5))
		}},
		{"layernorm", func(g *tg) {
			g.node("LayerNormalization", nil, 1, g.input(ir.Float32, 2, 7, 300), g.constant(ir.Float32, 300), g.constant(ir.Float32, 300))
		}},
		{"layernorm-nobias-axis1", func(g *tg) {
			g.node("LayerNormalization", ir.Attrs{"axis": intv(1)}, 1, g.input(ir.Float32, 3, 4, 5), g.constant(ir.Float32, 4, 5))
		}},
		{"softmax", func(g *tg) { g.node("Softmax", nil, 1, g.input(ir.Float32, 2, 4, 1000)) }},
		{"softmax-axis1", func(g *tg) { g.node("Softmax", ir.Attrs{"axis": intv(1)}, 1, g.input(ir.Float32, 2, 7, 5)) }},
		{"logsoftmax", func(g *tg) { g.node("LogSoftmax", nil, 1, g.input(ir.Float32, 3, 65)) }},
		{"reducemean", func(g *tg) {
			g.node("ReduceMean", ir.Attrs{"axes": ints(-1)}, 1, g.input(ir.Float32, 2, 3, 513))
		}},
		{"reducesum-axis1", func(g *tg) {
			g.node("ReduceSum", ir.Attrs{"keepdims": intv(0)}, 1, g.input(ir.Float32, 2, 30, 7), g.ints(1))
		}},
		{"globalaveragepool", func(g *tg) { g.node("GlobalAveragePool", nil, 1, g.input(ir.Float32, 2, 6, 7, 9)) }},
		{"maxpool", func(g *tg) {
			g.node("MaxPool", ir.Attrs{"kernel_shape": ints(3, 3), "strides": ints(2, 2), "pads": ints(1, 1, 1, 1)}, 1, g.input(ir.Float32, 2, 3, 15, 16))
		}},
		{"maxpool-ceil", func(g *tg) {
			g.node("MaxPool", ir.Attrs{"kernel_shape": ints(2, 2), "strides": ints(2, 2), "ceil_mode": intv(1)}, 1, g.input(ir.Float32, 1, 3, 15, 15))
		}},
		{"averagepool", func(g *tg) {
			g.node("AveragePool", ir.Attrs{"kernel_shape": ints(3, 3), "strides": ints(2, 2), "pads": ints(1, 1, 1, 1)}, 1, g.input(ir.Float32, 2, 3, 15, 16))
		}},
		{"averagepool-include-pad", func(g *tg) {
			g.node("AveragePool", ir.Attrs{"kernel_shape": ints(3, 3), "pads": ints(1, 1, 1, 1), "count_include_pad": intv(1)}, 1, g.input(ir.Float32, 2, 3, 8, 8))
		}},
	})
}

// TestUnsupportedNamesNode needs no GPU: the builders run before any
// device work.
func TestUnsupportedNamesNode(t *testing.T) {
	g := newTG(17)
	g.node("Sign", nil, 1, g.input(ir.Float32, 3))
	var extras [][]byte
	_, err := buildNode(g.g, 0, 1, false, &extras)
	if err == nil || !strings.Contains(err.Error(), `"sign"`) || !strings.Contains(err.Error(), "Sign") {
		t.Fatalf("err = %v, want one naming the node and its operator", err)
	}
	g = newTG(17)
	g.node("Relu", nil, 1, g.input(ir.Float64, 3))
	if _, err := buildNode(g.g, 0, 1, false, &extras); err == nil || !strings.Contains(err.Error(), "float64") {
		t.Fatalf("err = %v, want one naming the dtype", err)
	}
}

// TestCompileWithoutGPU checks that Compile fails cleanly where there is no
// CUDA.
func TestCompileWithoutGPU(t *testing.T) {
	if _, err := Device(); err == nil {
		t.Skip("CUDA is present")
	}
	g := newTG(17)
	g.node("Relu", nil, 1, g.input(ir.Float32, 3))
	_, err := Compile(g.g, Options{})
	if !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Compile: %v, want ErrUnavailable", err)
	}
}

// BenchmarkKernelThroughput times single operators at the sizes of
// BERT-base and ResNet-50 layers, each product in every precision: ns/op
// is the device time of one run of the kernels alone (Session.KernelTime),
// with the TFLOP/s or GB/s it makes.
func BenchmarkKernelThroughput(b *testing.B) {
	requireGPU(b)
	cases := []struct {
		name  string
		flops float64 // 0: report bytes moved instead
		bytes float64
		build func(g *tg)
	}{
		{"matmul 128x768x3072", 2 * 128 * 768 * 3072, 0, func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 128, 768), g.constant(ir.Float32, 768, 3072))
		}},
		{"matmul 1024x1024x1024", 2 << 30, 0, func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 1024, 1024), g.constant(ir.Float32, 1024, 1024))
		}},
		{"attention scores 12x128x64x128", 2 * 12 * 128 * 64 * 128, 0, func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 1, 12, 128, 64), g.input(ir.Float32, 1, 12, 64, 128))
		}},
		{"conv 64x56x56 3x3", 2 * 64 * 64 * 9 * 56 * 56, 0, func(g *tg) {
			g.node("Conv", ir.Attrs{"pads": ints(1, 1, 1, 1)}, 1, g.input(ir.Float32, 1, 64, 56, 56), g.constant(ir.Float32, 64, 64, 3, 3), g.constant(ir.Float32, 64))
		}},
		{"conv 1x1 256x56x56", 2 * 256 * 64 * 56 * 56, 0, func(g *tg) {
			g.node("Conv", nil, 1, g.input(ir.Float32, 1, 256, 56, 56), g.constant(ir.Float32, 64, 256, 1, 1))
		}},
		{"add bias 128x3072", 0, 3 * 4 * 128 * 3072, func(g *tg) {
			g.node("Add", nil, 1, g.input(ir.Float32, 128, 3072), g.constant(ir.Float32, 3072))
		}},
		{"add 16M", 0, 3 * 4 << 24, func(g *tg) {
			g.node("Add", nil, 1, g.input(ir.Float32, 1<<24), g.input(ir.Float32, 1<<24))
		}},
		{"softmax 1536x128", 0, 2 * 4 * 1536 * 128, func(g *tg) { g.node("Softmax", nil, 1, g.input(ir.Float32, 12, 128, 128)) }},
		{"layernorm 128x768", 0, 2 * 4 * 128 * 768, func(g *tg) {
			g.node("LayerNormalization", nil, 1, g.input(ir.Float32, 128, 768), g.constant(ir.Float32, 768), g.constant(ir.Float32, 768))
		}},
		{"transpose 128x12x64", 0, 2 * 4 * 128 * 768, func(g *tg) {
			g.node("Transpose", ir.Attrs{"perm": ints(1, 0, 2)}, 1, g.input(ir.Float32, 128, 12, 64))
		}},
	}
	variants := []struct {
		name string
		opts Options
	}{{"cublas", Options{}}, {"nvrtc", Options{NoBLAS: true}}, {"tf32", Options{Precision: TF32}}, {"bf16", Options{Precision: BF16}}}
	for _, tc := range cases {
		for _, v := range variants {
			if tc.flops == 0 && v.name != "cublas" {
				continue
			}
			// Compiled once, on the first of the rounds in which the
			// benchmark finds its b.N.
			var exe *Executable
			var s *Session
			b.Run(tc.name+"/"+v.name, func(b *testing.B) {
				if s == nil {
					g := newTG(17)
					tc.build(g)
					var err error
					if exe, err = Compile(g.g, v.opts); err != nil {
						b.Fatal(err)
					}
					if s, err = exe.NewSession(); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
				}
				d, err := s.KernelTime(b.N)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d.Nanoseconds()), "ns/op")
				if tc.flops > 0 {
					b.ReportMetric(tc.flops/d.Seconds()/1e12, "TFLOP/s")
				} else {
					b.ReportMetric(tc.bytes/d.Seconds()/1e9, "GB/s")
				}
			})
			if s != nil {
				s.Close()
			}
			if exe != nil {
				exe.Close()
			}
		}
	}
}

func TestDiskCache(t *testing.T) {
	requireGPU(t)
	d, _ := Device()
	dir := t.TempDir()
	a, err := compileSource(d, pool, dir)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("%d files in the cache, want 1", len(files))
	}
	b, err := compileSource(d, pool, dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatal("the cached cubin differs from the compiled one")
	}
}

func TestRunErrors(t *testing.T) {
	requireGPU(t)
	g := newTG(17)
	g.node("Relu", nil, 1, g.input(ir.Float32, 8))
	_, s := openSession(t, g.g, Options{})
	out := [][]byte{make([]byte, 32)}
	if err := s.Run(nil, out); err == nil {
		t.Error("Run without inputs succeeded")
	}
	if err := s.Run([][]byte{make([]byte, 31)}, out); err == nil {
		t.Error("Run with a short input succeeded")
	}
	if err := s.Run([][]byte{make([]byte, 32)}, [][]byte{make([]byte, 4)}); err == nil {
		t.Error("Run with a short output succeeded")
	}
	if err := s.Run([][]byte{make([]byte, 32)}, out); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Run([][]byte{make([]byte, 32)}, out); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}

// TestZeroAllocsPerRun: a run (one graph launch and one synchronisation,
// cuBLAS GEMMs inside the graph) allocates nothing on the host.
func TestZeroAllocsPerRun(t *testing.T) {
	requireGPU(t)
	g := newTG(17)
	g.node("MatMul", nil, 1, g.input(ir.Float32, 64, 96), g.constant(ir.Float32, 96, 80))
	g.node("Relu", nil, 1, g.g.Nodes[0].Outputs[0])
	for _, opts := range []Options{{}, {NoBLAS: true}} {
		exe, s := openSession(t, g.g, opts)
		out := [][]byte{make([]byte, 64*80*4)}
		for range 2 { // the second run captures the graph
			if err := s.Run(g.in, out); err != nil {
				t.Fatal(err)
			}
		}
		if !s.Graphed() {
			t.Errorf("%+v: the session did not capture a graph", opts)
		}
		allocs := testing.AllocsPerRun(100, func() {
			if err := s.Run(g.in, out); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%+v: cuBLAS %v (%s), %v host allocations per run", opts, exe.usesBLAS, driver.BLASLibrary(), allocs)
		if allocs != 0 {
			t.Errorf("%+v: %v host allocations per run, want 0", opts, allocs)
		}
		if want := map[bool]int64{true: blasWorkspace}[exe.usesBLAS]; exe.WorkspaceBytes() != want {
			t.Errorf("%+v: workspace %d bytes, want %d", opts, exe.WorkspaceBytes(), want)
		}
		s.Close()
		exe.Close()
	}
}

// TestTF32 checks the TF32 precision option against the CPU: rel L2 near
// 1e-3 rather than 1e-7.
func TestTF32(t *testing.T) {
	requireGPU(t)
	if !blasOn() {
		t.Skip("no cuBLAS")
	}
	g := newTG(17)
	g.node("MatMul", nil, 1, g.input(ir.Float32, 128, 768), g.constant(ir.Float32, 768, 512))
	want := g.reference(t)[0]
	_, s := openSession(t, g.g, Options{Precision: TF32})
	got := [][]byte{make([]byte, len(want))}
	if err := s.Run(g.in, got); err != nil {
		t.Fatal(err)
	}
	rel := relL2Bytes(got[0], want)
	t.Logf("TF32 MatMul 128x768x512: rel L2 %.3g", rel)
	if !(rel < 1e-2) {
		t.Errorf("rel L2 %.3g, want < 1e-2", rel)
	}
}

// TestHalfPrecision checks the bf16 and f16 GEMM precisions against the
// CPU on each way an operand reaches cuBLAS (a constant's shadow copy, an
// activation rounded into scratch, im2col's 16-bit patches, a strided
// batch of activations, Gemm's addend): rel L2 under 1e-2, the products'
// rounding rather than a wrong element.
func TestHalfPrecision(t *testing.T) {
	requireGPU(t)
	if !blasOn() {
		t.Skip("no cuBLAS")
	}
	cases := []struct {
		name  string
		build func(g *tg)
	}{
		{"matmul const 128x768x512", func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 128, 768), g.constant(ir.Float32, 768, 512))
		}},
		{"matmul batched act 12x128x64x128", func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 12, 128, 64), g.input(ir.Float32, 12, 64, 128))
		}},
		{"matmul 3d x 2d 2x64x96x40", func(g *tg) {
			g.node("MatMul", nil, 1, g.input(ir.Float32, 2, 64, 96), g.constant(ir.Float32, 96, 40))
		}},
		{"gemm transB bias 32x256x100", func(g *tg) {
			g.node("Gemm", ir.Attrs{"transB": intv(1), "alpha": floatv(0.5), "beta": floatv(2)}, 1,
				g.input(ir.Float32, 32, 256), g.constant(ir.Float32, 100, 256), g.constant(ir.Float32, 100))
		}},
		{"conv 3x3 pad bias 2x16x20x20", func(g *tg) {
			g.node("Conv", ir.Attrs{"pads": ints(1, 1, 1, 1)}, 1, g.input(ir.Float32, 2, 16, 20, 20), g.constant(ir.Float32, 32, 16, 3, 3), g.constant(ir.Float32, 32))
		}},
		{"conv 1x1 2x64x14x14", func(g *tg) {
			g.node("Conv", nil, 1, g.input(ir.Float32, 2, 64, 14, 14), g.constant(ir.Float32, 48, 64, 1, 1))
		}},
		// Outputs under 256 positions a channel at batch > 1: one GEMM
		// over the whole batch (foldedConv).
		{"conv 3x3 stride 2 bias folded 3x8x13x13", func(g *tg) {
			g.node("Conv", ir.Attrs{"pads": ints(1, 1, 1, 1), "strides": ints(2, 2)}, 1, g.input(ir.Float32, 3, 8, 13, 13), g.constant(ir.Float32, 20, 8, 3, 3), g.constant(ir.Float32, 20))
		}},
		{"conv 7x7 stride 2 folded 4x3x15x15", func(g *tg) {
			g.node("Conv", ir.Attrs{"pads": ints(3, 3, 3, 3), "strides": ints(2, 2)}, 1, g.input(ir.Float32, 4, 3, 15, 15), g.constant(ir.Float32, 16, 3, 7, 7))
		}},
		{"convtranspose 2x2 stride 2 bias 2x16x12x12", func(g *tg) {
			g.node("ConvTranspose", ir.Attrs{"strides": ints(2, 2)}, 1, g.input(ir.Float32, 2, 16, 12, 12), g.constant(ir.Float32, 16, 8, 2, 2), g.constant(ir.Float32, 8))
		}},
		{"conv grouped 2x16x9x9", func(g *tg) {
			g.node("Conv", ir.Attrs{"group": intv(4), "strides": ints(2, 2)}, 1, g.input(ir.Float32, 2, 16, 9, 9), g.constant(ir.Float32, 8, 4, 3, 3))
		}},
	}
	for _, prec := range []Precision{BF16, F16} {
		for _, tc := range cases {
			t.Run(prec.String()+"/"+tc.name, func(t *testing.T) {
				g := newTG(17)
				tc.build(g)
				want := g.reference(t)[0]
				exe, s := openSession(t, g.g, Options{Precision: prec})
				got := [][]byte{make([]byte, len(want))}
				for i := range got[0] {
					got[0][i] = 0xFF
				}
				if err := s.Run(g.in, got); err != nil {
					t.Fatal(err)
				}
				rel := relL2Bytes(got[0], want)
				t.Logf("%s %s: rel L2 %.3g, %d launches, weights %d bytes", prec, tc.name, rel, exe.Launches(), exe.WeightBytes())
				if !(rel < 1e-2) || rel == 0 {
					t.Errorf("rel L2 %.3g, want in (0, 1e-2)", rel)
				}
			})
		}
	}
}

// openSession compiles g with opts and makes a session of it; both are
// closed when the test ends.
func openSession(tb testing.TB, g *ir.Graph, opts Options) (*Executable, *Session) {
	tb.Helper()
	exe, err := Compile(g, opts)
	if err != nil {
		tb.Fatalf("Compile: %v", err)
	}
	tb.Cleanup(func() { exe.Close() })
	s, err := exe.NewSession()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return exe, s
}

// graphCase is one small graph of a test, built on a fresh tg at opset.
type graphCase struct {
	name  string
	opset int64
	build func(g *tg)
}

// buildCase is a graphCase at the opset of its test.
type buildCase struct {
	name  string
	build func(g *tg)
}

// checkGraphs checks each case's graph against the CPU's results, in a
// subtest of its own.
func checkGraphs(t *testing.T, cases []graphCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newTG(tc.opset)
			tc.build(g)
			g.check(t)
		})
	}
}

// checkBuilds is checkGraphs for cases at one opset.
func checkBuilds(t *testing.T, opset int64, cases []buildCase) {
	all := make([]graphCase, len(cases))
	for i, c := range cases {
		all[i] = graphCase{c.name, opset, c.build}
	}
	checkGraphs(t, all)
}

// relL2Bytes is ‖got − want‖ / ‖want‖ over float32 values held as bytes.
func relL2Bytes(got, want []byte) float64 {
	var num, den float64
	for i := 0; i+4 <= len(want); i += 4 {
		gv := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[i:])))
		wv := float64(math.Float32frombits(binary.LittleEndian.Uint32(want[i:])))
		num += (gv - wv) * (gv - wv)
		den += wv * wv
	}
	return math.Sqrt(num / den)
}

func TestGemmTiling(t *testing.T) {
	for _, c := range []struct {
		m, n, k, nb, sms int64
		kernel           string
		tile, parts      int64
	}{
		{1024, 1024, 1024, 1, 132, "gemm64", 64, 1}, // 64 tiles of 128 leave multiprocessors idle, 256 of 64 do not
		{4096, 4096, 64, 1, 132, "gemm128", 128, 1},
		{2048, 1024, 64, 1, 132, "gemm64", 64, 1}, // 128 tiles of 128, still fewer than 132
		{256, 4096, 64, 8, 132, "gemm128", 128, 1},
		{64, 3136, 576, 1, 132, "gemm64", 64, 4},      // 49 tiles, K cut in 128-deep parts
		{512, 100, 4608, 1, 132, "gemm64", 64, 16},    // 16 tiles: 4·132/16 rounded up is 33, K allows 36, at most 16
		{64, 64, 200, 1, 132, "gemm64", 64, 1},        // too shallow to split
		{2048, 49, 512, 1, 132, "gemm64", 64, 4},      // 32 tiles, 512/128 parts
		{16, 16, 100000, 40000, 132, "gemm64", 64, 1}, // small matrices, many of them: no 128 tiles, no parts
	} {
		kernel, tile, parts := gemmTiling(c.m, c.n, c.k, c.nb, c.sms)
		if kernel != c.kernel || tile != c.tile || parts != c.parts {
			t.Errorf("gemmTiling(%d, %d, %d, %d, %d) = %s, %d, %d; want %s, %d, %d", c.m, c.n, c.k, c.nb, c.sms, kernel, tile, parts, c.kernel, c.tile, c.parts)
		}
	}
}
