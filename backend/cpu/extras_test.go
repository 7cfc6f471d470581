package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

func TestPRelu(t *testing.T) {
	for _, ss := range [][]int64{{3, 1, 1}, {}, {2, 3, 4, 5}, {5}} {
		xs := []int64{2, 3, 4, 5}
		x, s := randF32(int(elems(xs))), randF32(int(elems(ss)))
		tg := newTGraph(16)
		n := tg.node("PRelu", nil, []ir.TensorID{tg.input("x", ir.Float32, xs...), tg.input("s", ir.Float32, ss...)}, out{ir.Float32, xs})
		want := make([]float64, len(x))
		for i, v := range x {
			want[i] = float64(v)
			if v < 0 {
				want[i] *= float64(s[bcastIndex(unravel(int64(i), xs), ss)])
			}
		}
		near(t, fmt.Sprint("PRelu ", ss), asF32(exec(t, tg.g, n, 2, f32Bytes(x), f32Bytes(s))[0]), want, 1e-7, 0)
	}
}

func TestMod(t *testing.T) {
	a, b := randI64(200, -50, 50), randI64(200, -7, 8)
	for _, fmod := range []int64{0, 1} {
		tg := newTGraph(13)
		n := tg.node("Mod", ir.Attrs{"fmod": {Kind: ir.AttrInt, Int: fmod}}, []ir.TensorID{tg.input("a", ir.Int64, 200), tg.input("b", ir.Int64, 200)}, out{ir.Int64, []int64{200}})
		got := asI64(exec(t, tg.g, n, 1, i64Bytes(a), i64Bytes(b))[0])
		for i := range a {
			var w int64
			if b[i] != 0 {
				w = int64(math.Mod(float64(a[i]), float64(b[i])))
				if fmod == 0 && w != 0 && (w < 0) != (b[i] < 0) {
					w += b[i]
				}
			}
			if got[i] != w {
				t.Fatalf("Mod fmod=%d: %d mod %d = %d, want %d", fmod, a[i], b[i], got[i], w)
			}
		}
	}
}

func TestTileTriluCumSumArg(t *testing.T) {
	// Tile.
	xs, reps := []int64{2, 3}, []int64{3, 2}
	ys := []int64{6, 6}
	tg := newTGraph(13)
	n := tg.node("Tile", nil, []ir.TensorID{tg.input("x", ir.Float32, xs...), tg.constant("r", ir.Int64, i64Bytes(reps), 2)}, out{ir.Float32, ys})
	x := randF32(6)
	want := make([]float64, 36)
	for i := range want {
		idx := unravel(int64(i), ys)
		want[i] = float64(x[(idx[0]%2)*3+idx[1]%3])
	}
	near(t, "Tile", asF32(exec(t, tg.g, n, 1, f32Bytes(x))[0]), want, 0, 0)

	// Trilu, both triangles, several diagonals, as a constant and an input.
	for _, upper := range []int64{0, 1} {
		for _, k := range []int64{-5, -1, 0, 2, 9} {
			tg := newTGraph(14)
			n := tg.node("Trilu", ir.Attrs{"upper": {Kind: ir.AttrInt, Int: upper}}, []ir.TensorID{tg.input("x", ir.Float32, 2, 4, 6), tg.input("k", ir.Int64)}, out{ir.Float32, []int64{2, 4, 6}})
			x := randF32(48)
			want := make([]float64, 48)
			for i := range want {
				idx := unravel(int64(i), []int64{2, 4, 6})
				d := idx[2] - idx[1]
				if (upper == 1 && d >= k) || (upper == 0 && d <= k) {
					want[i] = float64(x[i])
				}
			}
			near(t, fmt.Sprintf("Trilu upper=%d k=%d", upper, k), asF32(exec(t, tg.g, n, 1, f32Bytes(x), i64Bytes([]int64{k}))[0]), want, 0, 0)
		}
	}

	// CumSum along each axis, exclusive and reverse.
	shape := []int64{3, 4, 5}
	for axis := int64(-1); axis < 3; axis++ {
		for _, ex := range []int64{0, 1} {
			for _, rev := range []int64{0, 1} {
				x := randF32(60)
				tg := newTGraph(14)
				n := tg.node("CumSum", ir.Attrs{"exclusive": {Kind: ir.AttrInt, Int: ex}, "reverse": {Kind: ir.AttrInt, Int: rev}},
					[]ir.TensorID{tg.input("x", ir.Float32, shape...), tg.constant("a", ir.Int64, i64Bytes([]int64{axis}))}, out{ir.Float32, shape})
				ax := (axis + 3) % 3
				want := make([]float64, 60)
				for i := range want {
					idx := unravel(int64(i), shape)
					for j := int64(0); j < shape[ax]; j++ {
						in := (rev == 0 && (j < idx[ax] || (ex == 0 && j == idx[ax]))) || (rev == 1 && (j > idx[ax] || (ex == 0 && j == idx[ax])))
						if in {
							src := append([]int64(nil), idx...)
							src[ax] = j
							want[i] += float64(x[src[0]*20+src[1]*5+src[2]])
						}
					}
				}
				near(t, fmt.Sprintf("CumSum axis=%d ex=%d rev=%d", axis, ex, rev), asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 1e-6, 1e-6)
			}
		}
	}

	// ArgMax / ArgMin with ties resolved first or last.
	for _, op := range []string{"ArgMax", "ArgMin"} {
		for _, last := range []int64{0, 1} {
			for axis := int64(0); axis < 3; axis++ {
				v := randI64(60, 0, 4) // many ties
				x := make([]float32, 60)
				for i := range x {
					x[i] = float32(v[i])
				}
				ys := append([]int64(nil), shape...)
				ys[axis] = 1
				tg := newTGraph(13)
				n := tg.node(op, ir.Attrs{"axis": {Kind: ir.AttrInt, Int: axis}, "select_last_index": {Kind: ir.AttrInt, Int: last}},
					[]ir.TensorID{tg.input("x", ir.Float32, shape...)}, out{ir.Int64, ys})
				got := asI64(exec(t, tg.g, n, 2, f32Bytes(x))[0])
				for i := range got {
					idx := unravel(int64(i), ys)
					best := int64(0)
					for j := int64(0); j < shape[axis]; j++ {
						src := append([]int64(nil), idx...)
						src[axis] = j
						b := append([]int64(nil), idx...)
						b[axis] = best
						e, cur := x[src[0]*20+src[1]*5+src[2]], x[b[0]*20+b[1]*5+b[2]]
						better := e > cur
						if op == "ArgMin" {
							better = e < cur
						}
						if better || (last == 1 && e == cur) {
							best = j
						}
					}
					if got[i] != best {
						t.Fatalf("%s axis=%d last=%d: [%d] = %d, want %d", op, axis, last, i, got[i], best)
					}
				}
			}
		}
	}
}

func TestReduceExtras(t *testing.T) {
	shape := []int64{3, 4, 5}
	ref := map[string]struct {
		pre  func(float64) float64
		post func(float64) float64
		prod bool
	}{
		"ReduceL1":        {math.Abs, nil, false},
		"ReduceL2":        {func(v float64) float64 { return v * v }, math.Sqrt, false},
		"ReduceSumSquare": {func(v float64) float64 { return v * v }, nil, false},
		"ReduceLogSum":    {math.Abs, math.Log, false},
		"ReduceLogSumExp": {math.Exp, math.Log, false},
		"ReduceProd":      {nil, nil, true},
	}
	for op, r := range ref {
		for _, axes := range [][]int64{{1}, {2}, {0, 2}, nil} {
			x := randF32(60)
			if op == "ReduceLogSum" {
				for i := range x {
					x[i] = float32(math.Abs(float64(x[i])))
				}
			}
			red := []bool{axes == nil, axes == nil, axes == nil}
			for _, a := range axes {
				red[a] = true
			}
			ks := make([]int64, 3)
			for i := range ks {
				ks[i] = shape[i]
				if red[i] {
					ks[i] = 1
				}
			}
			want := make([]float64, elems(ks))
			if r.prod {
				fill(want, 1)
			}
			for i, v := range x {
				idx := unravel(int64(i), shape)
				for d := range idx {
					if red[d] {
						idx[d] = 0
					}
				}
				j := idx[0]*ks[1]*ks[2] + idx[1]*ks[2] + idx[2]
				if r.prod {
					want[j] *= float64(v)
				} else {
					want[j] += r.pre(float64(v))
				}
			}
			if r.post != nil {
				for j := range want {
					want[j] = r.post(want[j])
				}
			}
			attrs := ir.Attrs{}
			if axes != nil {
				attrs["axes"] = ir.Attr{Kind: ir.AttrInts, Ints: axes}
			}
			tg := newTGraph(13)
			n := tg.node(op, attrs, []ir.TensorID{tg.input("x", ir.Float32, shape...)}, out{ir.Float32, ks})
			near(t, fmt.Sprint(op, axes), asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 1e-6, 1e-7)
		}
	}
}

func TestInstanceNormAndBlocks(t *testing.T) {
	xs := []int64{2, 3, 4, 5}
	x, s, b := randF32(120), randF32(3), randF32(3)
	tg := newTGraph(13)
	n := tg.node("InstanceNormalization", ir.Attrs{"epsilon": {Kind: ir.AttrFloat, Float: 1e-3}},
		[]ir.TensorID{tg.input("x", ir.Float32, xs...), tg.constant("s", ir.Float32, f32Bytes(s), 3), tg.constant("b", ir.Float32, f32Bytes(b), 3)}, out{ir.Float32, xs})
	want := make([]float64, 120)
	for p := 0; p < 6; p++ {
		var m, v float64
		for _, e := range x[p*20 : p*20+20] {
			m += float64(e) / 20
		}
		for _, e := range x[p*20 : p*20+20] {
			v += (float64(e) - m) * (float64(e) - m) / 20
		}
		for i := p * 20; i < p*20+20; i++ {
			want[i] = (float64(x[i])-m)/math.Sqrt(v+float64(float32(1e-3)))*float64(s[p%3]) + float64(b[p%3])
		}
	}
	near(t, "InstanceNormalization", asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 1e-6, 1e-6)

	// DepthToSpace then SpaceToDepth is the identity (DCR), and CRD matches
	// its definition element by element.
	const bs = 2
	in := randF32(1 * 8 * 3 * 2)
	tg = newTGraph(13)
	d2s := tg.node("DepthToSpace", ir.Attrs{"blocksize": {Kind: ir.AttrInt, Int: bs}}, []ir.TensorID{tg.input("x", ir.Float32, 1, 8, 3, 2)}, out{ir.Float32, []int64{1, 2, 6, 4}})
	mid := exec(t, tg.g, d2s, 1, f32Bytes(in))[0]
	s2d := tg.node("SpaceToDepth", ir.Attrs{"blocksize": {Kind: ir.AttrInt, Int: bs}}, []ir.TensorID{tg.input("y", ir.Float32, 1, 2, 6, 4)}, out{ir.Float32, []int64{1, 8, 3, 2}})
	near(t, "DepthToSpace∘SpaceToDepth", asF32(exec(t, tg.g, s2d, 1, mid)[0]), widen(in), 0, 0)
	crd := tg.node("DepthToSpace", ir.Attrs{"blocksize": {Kind: ir.AttrInt, Int: bs}, "mode": {Kind: ir.AttrString, String: "CRD"}}, []ir.TensorID{tg.input("z", ir.Float32, 1, 8, 3, 2)}, out{ir.Float32, []int64{1, 2, 6, 4}})
	got := asF32(exec(t, tg.g, crd, 1, f32Bytes(in))[0])
	for i := range got {
		idx := unravel(int64(i), []int64{1, 2, 6, 4})
		c, h, w := idx[1], idx[2], idx[3]
		src := ((c*bs*bs+(h%bs)*bs+w%bs)*3+h/bs)*2 + w/bs
		if got[i] != in[src] {
			t.Fatalf("DepthToSpace CRD [%d] = %v, want %v", i, got[i], in[src])
		}
	}
}

func TestUnaryExtras(t *testing.T) {
	ref := map[string]func(float64) float64{
		"Tan": math.Tan, "Asin": math.Asin, "Acos": math.Acos, "Atan": math.Atan,
		"Sinh": math.Sinh, "Cosh": math.Cosh, "Asinh": math.Asinh,
		"Atanh":           math.Atanh,
		"Acosh":           func(v float64) float64 { return math.Acosh(v + 2) },
		"Softsign":        func(v float64) float64 { return v / (1 + math.Abs(v)) },
		"ThresholdedRelu": func(v float64) float64 { return map[bool]float64{true: v, false: 0}[v > 1] },
		"Shrink": func(v float64) float64 {
			return map[bool]float64{true: v - math.Copysign(0, 1)*v, false: 0}[math.Abs(v) > 0.5]
		},
	}
	for op, f := range ref {
		x := randF32(100)
		for i := range x {
			x[i] *= 0.99
			if op == "Acosh" {
				x[i] += 2
			}
			if op == "ThresholdedRelu" {
				x[i] *= 2
			}
		}
		want := make([]float64, len(x))
		for i, v := range x {
			if op == "Acosh" {
				want[i] = math.Acosh(float64(v))
			} else if op == "Shrink" {
				if v > 0.5 || v < -0.5 {
					want[i] = float64(v)
				}
			} else {
				want[i] = f(float64(v))
			}
		}
		tg := newTGraph(13)
		n := tg.node(op, nil, []ir.TensorID{tg.input("x", ir.Float32, 100)}, out{ir.Float32, []int64{100}})
		near(t, op, asF32(exec(t, tg.g, n, 1, f32Bytes(x))[0]), want, 2e-7, 1e-7)
	}
	// IsNaN / IsInf.
	v := []float32{1, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0}
	for _, c := range []struct {
		op       string
		neg, pos int64
		want     string
	}{
		{"IsNaN", 1, 1, "[0 1 0 0 0]"}, {"IsInf", 1, 1, "[0 0 1 1 0]"}, {"IsInf", 0, 1, "[0 0 1 0 0]"}, {"IsInf", 1, 0, "[0 0 0 1 0]"},
	} {
		tg := newTGraph(13)
		n := tg.node(c.op, ir.Attrs{"detect_negative": {Kind: ir.AttrInt, Int: c.neg}, "detect_positive": {Kind: ir.AttrInt, Int: c.pos}},
			[]ir.TensorID{tg.input("x", ir.Float32, 5)}, out{ir.Bool, []int64{5}})
		if got := fmt.Sprint(exec(t, tg.g, n, 1, f32Bytes(v))[0]); got != c.want {
			t.Errorf("%s neg=%d pos=%d = %s, want %s", c.op, c.neg, c.pos, got, c.want)
		}
	}
}
