package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// sign is ONNX's Sign: -1, 0 or 1, with sign(0) = 0.
func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func TestUnaryFloat(t *testing.T) {
	cases := []struct {
		op    string
		attrs ir.Attrs
		ref   func(x float64) float64
		scale float64 // input range [-scale, scale)
	}{
		{"Relu", nil, func(x float64) float64 { return math.Max(x, 0) }, 1},
		{"LeakyRelu", nil, func(x float64) float64 { return map[bool]float64{true: x, false: 0.01 * x}[x >= 0] }, 1},
		{"LeakyRelu", ir.Attrs{"alpha": {Kind: ir.AttrFloat, Float: 0.3}}, func(x float64) float64 { return map[bool]float64{true: x, false: float64(float32(0.3)) * x}[x >= 0] }, 1},
		{"Sigmoid", nil, sigmoid, 20},
		{"HardSigmoid", nil, func(x float64) float64 { return math.Max(0, math.Min(1, float64(float32(0.2))*x+0.5)) }, 6},
		{"HardSwish", nil, func(x float64) float64 { return x * math.Max(0, math.Min(1, x/6+0.5)) }, 6},
		{"Tanh", nil, math.Tanh, 5},
		{"Erf", nil, math.Erf, 3},
		{"Exp", nil, math.Exp, 10},
		{"Log", nil, func(x float64) float64 { return math.Log(math.Abs(x)) }, 10},
		{"Sqrt", nil, func(x float64) float64 { return math.Sqrt(math.Abs(x)) }, 10},
		{"Neg", nil, func(x float64) float64 { return -x }, 1},
		{"Abs", nil, math.Abs, 1},
		{"Sign", nil, sign, 1},
		{"Reciprocal", nil, func(x float64) float64 { return 1 / x }, 4},
		{"Floor", nil, math.Floor, 4},
		{"Ceil", nil, math.Ceil, 4},
		{"Round", nil, math.RoundToEven, 4},
		{"Sin", nil, math.Sin, 4},
		{"Cos", nil, math.Cos, 4},
		{"Softplus", nil, func(x float64) float64 { return math.Log(1 + math.Exp(x)) }, 10},
		{"Elu", nil, func(x float64) float64 { return map[bool]float64{true: x, false: math.Exp(x) - 1}[x >= 0] }, 3},
		{"Selu", nil, func(x float64) float64 {
			const a, g = 1.67326319217681884765625, 1.05070102214813232421875
			return g * map[bool]float64{true: x, false: a * (math.Exp(x) - 1)}[x > 0]
		}, 3},
		{"Clip", ir.Attrs{"min": {Kind: ir.AttrFloat, Float: -0.25}, "max": {Kind: ir.AttrFloat, Float: 0.5}}, func(x float64) float64 { return math.Max(-0.25, math.Min(0.5, x)) }, 1},
	}
	for _, c := range cases {
		for _, shape := range [][]int64{{}, {7}, {3, 50000}} {
			t.Run(fmt.Sprintf("%s/%v", c.op, shape), func(t *testing.T) {
				x := randF32(int(elems(shape)))
				for i := range x {
					x[i] *= float32(c.scale)
					if c.op == "Log" || c.op == "Sqrt" {
						x[i] = float32(math.Abs(float64(x[i])))
					}
					if c.op == "Sign" && i%5 == 0 {
						x[i] = float32(math.Copysign(0, float64(x[i]))) // zeros of both signs
					}
				}
				want := make([]float64, len(x))
				for i, v := range x {
					want[i] = c.ref(float64(v))
				}
				opset := int64(17)
				if c.op == "Clip" {
					opset = 6
				}
				tg := newTGraph(opset)
				xi := tg.input("x", ir.Float32, shape...)
				n := tg.node(c.op, c.attrs, []ir.TensorID{xi}, out{ir.Float32, shape})
				near(t, "out", asF32(exec(t, tg.g, n, 3, f32Bytes(x))[0]), want, 2e-7, 1e-7)
				near(t, "in place", asF32(execAliased(t, tg.g, n, 3, 0, f32Bytes(x))), want, 2e-7, 1e-7)
			})
		}
	}
}

func TestUnaryInt(t *testing.T) {
	for _, op := range []string{"Relu", "Neg", "Abs", "Sign"} {
		for _, dt := range []ir.DType{ir.Int32, ir.Int64} {
			x := randI64(100, -50, 50)
			x[0] = 0 // Sign(0) is 0
			tg := newTGraph(17)
			xi := tg.input("x", dt, 100)
			n := tg.node(op, nil, []ir.TensorID{xi}, out{dt, []int64{100}})
			in := encodeInts(x, dt)
			got := decodeInts(exec(t, tg.g, n, 2, in)[0], dt)
			for i, v := range x {
				var w int64
				switch op {
				case "Relu":
					w = max(v, 0)
				case "Neg":
					w = -v
				case "Abs":
					w = max(v, -v)
				case "Sign":
					w = map[bool]int64{true: 1, false: 0}[v > 0] - map[bool]int64{true: 1, false: 0}[v < 0]
				}
				if got[i] != w {
					t.Fatalf("%s %s(%d) = %d, want %d", op, dt, v, got[i], w)
				}
			}
		}
	}
}

func encodeInts(v []int64, dt ir.DType) []byte {
	switch dt {
	case ir.Int32:
		w := make([]int32, len(v))
		for i, x := range v {
			w[i] = int32(x)
		}
		return i32Bytes(w)
	case ir.Int64:
		return i64Bytes(v)
	case ir.Bool, ir.Uint8, ir.Int8:
		b := make([]byte, len(v))
		for i, x := range v {
			b[i] = byte(x)
		}
		return b
	}
	panic("encodeInts: " + dt.String())
}

func decodeInts(b []byte, dt ir.DType) []int64 {
	t := ir.Tensor{DType: dt, Shape: ir.Shape{int64(len(b) / dt.Size())}, Data: b}
	v, err := t.Int64s()
	if err != nil {
		panic(err)
	}
	return v
}

func TestClipInputs(t *testing.T) {
	x := randF32(1000)
	for i := range x {
		x[i] *= 3
	}
	type bound struct {
		present, constant bool
		v                 float32
	}
	cases := []struct{ lo, hi bound }{
		{bound{true, true, -1}, bound{true, true, 2}},
		{bound{true, false, -1}, bound{true, false, 0.5}},
		{bound{false, false, 0}, bound{true, false, 0.5}},
		{bound{true, true, -0.5}, bound{false, false, 0}},
		{bound{false, false, 0}, bound{false, false, 0}},
		{bound{true, false, 1}, bound{true, true, -1}}, // min > max: all max
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			tg := newTGraph(13)
			ins := []ir.TensorID{tg.input("x", ir.Float32, 1000)}
			feeds := [][]byte{f32Bytes(x)}
			lo, hi := math.Inf(-1), math.Inf(1)
			for j, b := range []bound{c.lo, c.hi} {
				if !b.present {
					ins = append(ins, ir.NoTensor)
					continue
				}
				if j == 0 {
					lo = float64(b.v)
				} else {
					hi = float64(b.v)
				}
				if b.constant {
					ins = append(ins, tg.constant(fmt.Sprint("b", j), ir.Float32, f32Bytes([]float32{b.v})))
				} else {
					ins = append(ins, tg.input(fmt.Sprint("b", j), ir.Float32))
					feeds = append(feeds, f32Bytes([]float32{b.v}))
				}
			}
			n := tg.node("Clip", nil, ins, out{ir.Float32, []int64{1000}})
			want := make([]float64, len(x))
			for i, v := range x {
				want[i] = math.Min(math.Max(float64(v), lo), hi)
			}
			near(t, "Clip", asF32(exec(t, tg.g, n, 2, feeds...)[0]), want, 0, 0)
		})
	}
	// Integer Clip.
	tg := newTGraph(13)
	xi := tg.input("x", ir.Int64, 50)
	n := tg.node("Clip", nil, []ir.TensorID{xi, tg.constant("lo", ir.Int64, i64Bytes([]int64{-3})), ir.NoTensor}, out{ir.Int64, []int64{50}})
	xv := randI64(50, -10, 10)
	got := asI64(exec(t, tg.g, n, 1, i64Bytes(xv))[0])
	for i, v := range xv {
		if got[i] != max(v, -3) {
			t.Fatalf("Clip int64(%d) = %d", v, got[i])
		}
	}
}

// binary reference operators, in float64 (exact for the small integers the
// integer tests use).
var binRef = map[string]func(a, b float64) float64{
	"Add": func(a, b float64) float64 { return a + b },
	"Sub": func(a, b float64) float64 { return a - b },
	"Mul": func(a, b float64) float64 { return a * b },
	"Div": func(a, b float64) float64 { return a / b },
	"Max": math.Max,
	"Min": math.Min,
	"Pow": math.Pow,
}

var broadcastCases = []struct{ a, b []int64 }{
	{[]int64{2, 3, 4}, []int64{2, 3, 4}},
	{[]int64{}, []int64{2, 3, 4}},
	{[]int64{2, 3, 4}, []int64{1}},
	{[]int64{2, 3, 4}, []int64{4}},
	{[]int64{2, 3, 4}, []int64{3, 1}},
	{[]int64{2, 1, 4}, []int64{3, 1}},
	{[]int64{1, 3, 1}, []int64{2, 1, 4}},
	{[]int64{4, 1}, []int64{1, 5}},
	{[]int64{2, 3, 1, 5}, []int64{3, 4, 1}},
	{[]int64{3, 20000}, []int64{20000}},
	{[]int64{40000}, []int64{}},
	{[]int64{2, 1, 1}, []int64{2, 1, 1}},
	{[]int64{3, 1}, []int64{3, 1, 1}},
	{[]int64{0, 3}, []int64{3}},
}

func TestBinaryFloat(t *testing.T) {
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"} {
		for _, c := range broadcastCases {
			name := fmt.Sprintf("%s/%v,%v", op, c.a, c.b)
			t.Run(name, func(t *testing.T) {
				ys := bcastShape(t, c.a, c.b)
				a, b := randF32(int(elems(c.a))), randF32(int(elems(c.b)))
				if op == "Pow" {
					for i := range a {
						a[i] = float32(math.Abs(float64(a[i]))) * 3
					}
					for i := range b {
						b[i] *= 3
					}
				}
				want := make([]float64, elems(ys))
				for i := range want {
					idx := unravel(int64(i), ys)
					want[i] = binRef[op](float64(a[bcastIndex(idx, c.a)]), float64(b[bcastIndex(idx, c.b)]))
				}
				tg := newTGraph(17)
				ai, bi := tg.input("a", ir.Float32, c.a...), tg.input("b", ir.Float32, c.b...)
				n := tg.node(op, nil, []ir.TensorID{ai, bi}, out{ir.Float32, ys})
				for _, threads := range []int{1, 3} {
					near(t, "out", asF32(exec(t, tg.g, n, threads, f32Bytes(a), f32Bytes(b))[0]), want, 1e-6, 1e-7)
				}
				for alias, s := range [][]int64{c.a, c.b} {
					if ir.Shape(s).Equal(ys) {
						near(t, fmt.Sprint("in place on ", alias), asF32(execAliased(t, tg.g, n, 3, alias, f32Bytes(a), f32Bytes(b))), want, 1e-6, 1e-7)
					}
				}
			})
		}
	}
}

func TestPowConstantExponent(t *testing.T) {
	for _, e := range []float32{1, 2, 3, 0.5, -1, 1.7} {
		x := randF32(300)
		for i := range x {
			x[i] = float32(math.Abs(float64(x[i]))) * 4
		}
		tg := newTGraph(17)
		xi := tg.input("x", ir.Float32, 300)
		n := tg.node("Pow", nil, []ir.TensorID{xi, tg.constant("e", ir.Float32, f32Bytes([]float32{e}))}, out{ir.Float32, []int64{300}})
		want := make([]float64, len(x))
		for i, v := range x {
			want[i] = math.Pow(float64(v), float64(e))
		}
		near(t, fmt.Sprint("Pow ", e), asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 3e-7, 0)
	}
	// Integer exponent with a float base, and integer base.
	tg := newTGraph(17)
	xi := tg.input("x", ir.Float32, 5)
	ei := tg.input("e", ir.Int64, 5)
	n := tg.node("Pow", nil, []ir.TensorID{xi, ei}, out{ir.Float32, []int64{5}})
	got := asF32(exec(t, tg.g, n, 1, f32Bytes([]float32{2, -3, 0.5, 4, 10}), i64Bytes([]int64{3, 2, -1, 0, -2}))[0])
	near(t, "Pow f32^i64", got, []float64{8, 9, 2, 1, 0.01}, 1e-7, 0)
	tg = newTGraph(17)
	xi = tg.input("x", ir.Int64, 5)
	ei = tg.input("e", ir.Int64, 5)
	n = tg.node("Pow", nil, []ir.TensorID{xi, ei}, out{ir.Int64, []int64{5}})
	gi := asI64(exec(t, tg.g, n, 1, i64Bytes([]int64{2, -3, 7, 1, -1}), i64Bytes([]int64{10, 3, 0, -5, -3}))[0])
	for i, w := range []int64{1024, -27, 1, 1, -1} {
		if gi[i] != w {
			t.Errorf("Pow int64 [%d] = %d, want %d", i, gi[i], w)
		}
	}
}

func TestBinaryInt(t *testing.T) {
	for _, dt := range []ir.DType{ir.Int32, ir.Int64} {
		for _, op := range []string{"Add", "Sub", "Mul", "Div", "Max", "Min"} {
			for _, c := range broadcastCases[:9] {
				ys := bcastShape(t, c.a, c.b)
				a, b := randI64(int(elems(c.a)), -100, 100), randI64(int(elems(c.b)), -9, 9)
				tg := newTGraph(17)
				ai, bi := tg.input("a", dt, c.a...), tg.input("b", dt, c.b...)
				n := tg.node(op, nil, []ir.TensorID{ai, bi}, out{dt, ys})
				got := decodeInts(exec(t, tg.g, n, 2, encodeInts(a, dt), encodeInts(b, dt))[0], dt)
				for i := range got {
					idx := unravel(int64(i), ys)
					x, y := a[bcastIndex(idx, c.a)], b[bcastIndex(idx, c.b)]
					var w int64
					switch op {
					case "Add":
						w = x + y
					case "Sub":
						w = x - y
					case "Mul":
						w = x * y
					case "Div":
						if y != 0 {
							w = x / y // Go truncates toward zero, like C
						}
					case "Max":
						w = max(x, y)
					case "Min":
						w = min(x, y)
					}
					if got[i] != w {
						t.Fatalf("%s %s %v,%v: [%d] %d op %d = %d, want %d", dt, op, c.a, c.b, i, x, y, got[i], w)
					}
				}
			}
		}
	}
	// C-style truncation of negative quotients.
	tg := newTGraph(17)
	ai, bi := tg.input("a", ir.Int32, 4), tg.input("b", ir.Int32, 4)
	n := tg.node("Div", nil, []ir.TensorID{ai, bi}, out{ir.Int32, []int64{4}})
	got := decodeInts(exec(t, tg.g, n, 1, i32Bytes([]int32{-7, 7, -7, 7}), i32Bytes([]int32{2, -2, -2, 2}))[0], ir.Int32)
	for i, w := range []int64{-3, -3, 3, 3} {
		if got[i] != w {
			t.Errorf("Div int32 [%d] = %d, want %d", i, got[i], w)
		}
	}
}

func TestVariadic(t *testing.T) {
	shapes := [][]int64{{2, 3, 4}, {4}, {3, 1}, {2, 3, 4}}
	ys := []int64{2, 3, 4}
	for _, op := range []string{"Sum", "Mean", "Max", "Min"} {
		for nin := 1; nin <= 4; nin++ {
			in := make([][]float32, nin)
			tg := newTGraph(17)
			var ids []ir.TensorID
			var feeds [][]byte
			for i := 0; i < nin; i++ {
				s := shapes[i]
				if nin == 1 {
					s = ys
				}
				in[i] = randF32(int(elems(s)))
				ids = append(ids, tg.input(fmt.Sprint("x", i), ir.Float32, s...))
				feeds = append(feeds, f32Bytes(in[i]))
			}
			n := tg.node(op, nil, ids, out{ir.Float32, ys})
			want := make([]float64, elems(ys))
			for j := range want {
				idx := unravel(int64(j), ys)
				var acc float64
				for i := 0; i < nin; i++ {
					s := shapes[i]
					if nin == 1 {
						s = ys
					}
					v := float64(in[i][bcastIndex(idx, s)])
					switch {
					case i == 0:
						acc = v
					case op == "Max":
						acc = math.Max(acc, v)
					case op == "Min":
						acc = math.Min(acc, v)
					default:
						acc += v
					}
				}
				if op == "Mean" {
					acc /= float64(nin)
				}
				want[j] = acc
			}
			name := fmt.Sprintf("%s/%d inputs", op, nin)
			near(t, name, asF32(exec(t, tg.g, n, 2, feeds...)[0]), want, 1e-6, 1e-7)
			for alias := 0; alias < nin; alias++ {
				if ir.Shape(shapes[alias]).Equal(ys) || nin == 1 {
					near(t, fmt.Sprint(name, " in place on ", alias), asF32(execAliased(t, tg.g, n, 2, alias, feeds...)), want, 1e-6, 1e-7)
				}
			}
		}
	}
}

func TestCompareAndLogic(t *testing.T) {
	cmp := map[string]func(a, b float64) bool{
		"Equal":          func(a, b float64) bool { return a == b },
		"Less":           func(a, b float64) bool { return a < b },
		"Greater":        func(a, b float64) bool { return a > b },
		"LessOrEqual":    func(a, b float64) bool { return a <= b },
		"GreaterOrEqual": func(a, b float64) bool { return a >= b },
	}
	for op, f := range cmp {
		for _, dt := range []ir.DType{ir.Float32, ir.Int32, ir.Int64} {
			for _, c := range broadcastCases[:9] {
				ys := bcastShape(t, c.a, c.b)
				a, b := randI64(int(elems(c.a)), -3, 3), randI64(int(elems(c.b)), -3, 3)
				enc := func(v []int64) []byte {
					if dt == ir.Float32 {
						f := make([]float32, len(v))
						for i, x := range v {
							f[i] = float32(x) / 2
						}
						return f32Bytes(f)
					}
					return encodeInts(v, dt)
				}
				tg := newTGraph(17)
				ai, bi := tg.input("a", dt, c.a...), tg.input("b", dt, c.b...)
				n := tg.node(op, nil, []ir.TensorID{ai, bi}, out{ir.Bool, ys})
				got := exec(t, tg.g, n, 2, enc(a), enc(b))[0]
				for i := range got {
					idx := unravel(int64(i), ys)
					w := f(float64(a[bcastIndex(idx, c.a)]), float64(b[bcastIndex(idx, c.b)]))
					if got[i] != b2u(w) {
						t.Fatalf("%s %s %v,%v: [%d] = %d, want %v", op, dt, c.a, c.b, i, got[i], w)
					}
				}
			}
		}
	}
	logic := map[string]func(a, b bool) bool{
		"And":   func(a, b bool) bool { return a && b },
		"Or":    func(a, b bool) bool { return a || b },
		"Xor":   func(a, b bool) bool { return a != b },
		"Equal": func(a, b bool) bool { return a == b },
	}
	for op, f := range logic {
		for _, c := range broadcastCases[:9] {
			ys := bcastShape(t, c.a, c.b)
			a, b := randI64(int(elems(c.a)), 0, 2), randI64(int(elems(c.b)), 0, 2)
			tg := newTGraph(17)
			ai, bi := tg.input("a", ir.Bool, c.a...), tg.input("b", ir.Bool, c.b...)
			n := tg.node(op, nil, []ir.TensorID{ai, bi}, out{ir.Bool, ys})
			got := exec(t, tg.g, n, 2, encodeInts(a, ir.Bool), encodeInts(b, ir.Bool))[0]
			for i := range got {
				idx := unravel(int64(i), ys)
				w := f(a[bcastIndex(idx, c.a)] != 0, b[bcastIndex(idx, c.b)] != 0)
				if got[i] != b2u(w) {
					t.Fatalf("%s %v,%v: [%d] = %d, want %v", op, c.a, c.b, i, got[i], w)
				}
			}
		}
	}
	// Not.
	tg := newTGraph(17)
	n := tg.node("Not", nil, []ir.TensorID{tg.input("x", ir.Bool, 3)}, out{ir.Bool, []int64{3}})
	if got := exec(t, tg.g, n, 1, []byte{0, 1, 0})[0]; got[0] != 1 || got[1] != 0 || got[2] != 1 {
		t.Errorf("Not = %v", got)
	}
}

func TestWhere(t *testing.T) {
	cases := []struct{ c, x, y []int64 }{
		{[]int64{2, 3}, []int64{2, 3}, []int64{2, 3}},
		{[]int64{1, 1, 4, 4}, []int64{2, 3, 4, 4}, []int64{}},
		{[]int64{3, 1}, []int64{1, 5}, []int64{3, 5}},
		{[]int64{}, []int64{4}, []int64{4}},
		{[]int64{5}, []int64{2, 1}, []int64{1}},
	}
	for _, dt := range []ir.DType{ir.Float32, ir.Int64, ir.Bool} {
		for _, c := range cases {
			ys := bcastShape(t, c.c, c.x, c.y)
			cond := randI64(int(elems(c.c)), 0, 2)
			x, y := randI64(int(elems(c.x)), 0, 1000), randI64(int(elems(c.y)), 1000, 2000)
			if dt == ir.Bool {
				x, y = randI64(len(x), 0, 2), randI64(len(y), 0, 2)
			}
			enc := func(v []int64) []byte {
				if dt == ir.Float32 {
					f := make([]float32, len(v))
					for i, a := range v {
						f[i] = float32(a)
					}
					return f32Bytes(f)
				}
				return encodeInts(v, dt)
			}
			tg := newTGraph(17)
			ci, xi, yi := tg.input("c", ir.Bool, c.c...), tg.input("x", dt, c.x...), tg.input("y", dt, c.y...)
			n := tg.node("Where", nil, []ir.TensorID{ci, xi, yi}, out{dt, ys})
			got := exec(t, tg.g, n, 2, encodeInts(cond, ir.Bool), enc(x), enc(y))[0]
			var gv []int64
			if dt == ir.Float32 {
				for _, f := range asF32(got) {
					gv = append(gv, int64(f))
				}
			} else {
				gv = decodeInts(got, dt)
			}
			for i := range gv {
				idx := unravel(int64(i), ys)
				w := y[bcastIndex(idx, c.y)]
				if cond[bcastIndex(idx, c.c)] != 0 {
					w = x[bcastIndex(idx, c.x)]
				}
				if gv[i] != w {
					t.Fatalf("Where %s %v: [%d] = %d, want %d", dt, c, i, gv[i], w)
				}
			}
		}
	}
}
