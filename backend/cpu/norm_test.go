package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

func TestBatchNorm(t *testing.T) {
	for _, shape := range [][]int64{{2, 3, 4, 5}, {2, 3}, {1, 4, 7}, {2, 3, 2, 2, 3}} {
		for _, constant := range []bool{true, false} {
			t.Run(fmt.Sprintf("%v/const=%v", shape, constant), func(t *testing.T) {
				c := shape[1]
				x := randF32(int(elems(shape)))
				p := [4][]float32{randF32(int(c)), randF32(int(c)), randF32(int(c)), randF32(int(c))}
				for i := range p[3] {
					p[3][i] = p[3][i]*p[3][i] + 0.1 // variance > 0
				}
				tg := newTGraph(15)
				ins := []ir.TensorID{tg.input("x", ir.Float32, shape...)}
				feeds := [][]byte{f32Bytes(x)}
				for i, v := range p {
					if constant {
						ins = append(ins, tg.constant(fmt.Sprint("p", i), ir.Float32, f32Bytes(v), c))
					} else {
						ins = append(ins, tg.input(fmt.Sprint("p", i), ir.Float32, c))
						feeds = append(feeds, f32Bytes(v))
					}
				}
				const eps = 1e-3
				n := tg.node("BatchNormalization", ir.Attrs{"epsilon": {Kind: ir.AttrFloat, Float: eps}}, ins, out{ir.Float32, shape})
				want := make([]float64, len(x))
				sp := elems(shape[2:])
				for i, v := range x {
					ch := int64(i) / sp % c
					want[i] = (float64(v)-float64(p[2][ch]))/math.Sqrt(float64(p[3][ch])+float64(float32(eps)))*float64(p[0][ch]) + float64(p[1][ch])
				}
				near(t, "Y", asF32(exec(t, tg.g, n, 3, feeds...)[0]), want, 1e-6, 1e-6)
				near(t, "Y in place", asF32(execAliased(t, tg.g, n, 3, 0, feeds...)), want, 1e-6, 1e-6)
			})
		}
	}
}

func TestLayerNorm(t *testing.T) {
	cases := []struct {
		shape []int64
		axis  int64
		bias  bool
		stats bool
	}{
		{[]int64{2, 3, 8}, -1, true, false},
		{[]int64{2, 3, 8}, 1, true, true},
		{[]int64{4, 16}, -1, false, true},
		{[]int64{5, 768}, -1, true, false},
		{[]int64{6}, 0, true, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/axis=%d/bias=%v", c.shape, c.axis, c.bias), func(t *testing.T) {
			r := int64(len(c.shape))
			axis := (c.axis + r) % r
			ns := c.shape[axis:]
			d, rows := elems(ns), elems(c.shape[:axis])
			x, scale, bias := randF32(int(elems(c.shape))), randF32(int(d)), randF32(int(d))
			for i := range x {
				x[i] = x[i]*5 + 3 // an offset mean, to exercise the two-pass variance
			}
			tg := newTGraph(17)
			ins := []ir.TensorID{tg.input("x", ir.Float32, c.shape...), tg.constant("s", ir.Float32, f32Bytes(scale), ns...)}
			if c.bias {
				ins = append(ins, tg.constant("b", ir.Float32, f32Bytes(bias), ns...))
			}
			outs := []out{{ir.Float32, c.shape}}
			statShape := append(append([]int64(nil), c.shape[:axis]...), make([]int64, len(ns))...)
			for i := axis; i < r; i++ {
				statShape[i] = 1
			}
			if c.stats {
				outs = append(outs, out{ir.Float32, statShape}, out{ir.Float32, statShape})
			}
			const eps = 1e-5
			n := tg.node("LayerNormalization", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: c.axis}, "epsilon": {Kind: ir.AttrFloat, Float: eps}}, ins, outs...)
			want := make([]float64, len(x))
			means, invs := make([]float64, rows), make([]float64, rows)
			for row := int64(0); row < rows; row++ {
				var m, v float64
				for j := int64(0); j < d; j++ {
					m += float64(x[row*d+j])
				}
				m /= float64(d)
				for j := int64(0); j < d; j++ {
					v += (float64(x[row*d+j]) - m) * (float64(x[row*d+j]) - m)
				}
				inv := 1 / math.Sqrt(v/float64(d)+float64(float32(eps)))
				means[row], invs[row] = m, inv
				for j := int64(0); j < d; j++ {
					y := (float64(x[row*d+j]) - m) * inv * float64(scale[j])
					if c.bias {
						y += float64(bias[j])
					}
					want[row*d+j] = y
				}
			}
			got := exec(t, tg.g, n, 2, f32Bytes(x))
			near(t, "Y", asF32(got[0]), want, 1e-6, 1e-6)
			if c.stats {
				near(t, "Mean", asF32(got[1]), means, 1e-6, 1e-6)
				near(t, "InvStdDev", asF32(got[2]), invs, 1e-6, 1e-6)
			}
		})
	}
}

func TestSoftmax(t *testing.T) {
	cases := []struct {
		opset int64
		shape []int64
		axis  *int64
	}{
		{13, []int64{2, 3, 5}, nil},
		{13, []int64{2, 3, 5}, ptr(0)},
		{13, []int64{2, 3, 5}, ptr(1)},
		{13, []int64{2, 3, 5}, ptr(-2)},
		{11, []int64{2, 3, 5}, nil},
		{11, []int64{2, 3, 5}, ptr(2)},
		{11, []int64{2, 3, 5}, ptr(0)},
		{17, []int64{4, 1000}, nil},
		{17, []int64{7}, nil},
	}
	for _, op := range []string{"Softmax", "LogSoftmax"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/opset%d/%v/axis=%v", op, c.opset, c.shape, c.axis), func(t *testing.T) {
				x := randF32(int(elems(c.shape)))
				for i := range x {
					x[i] *= 40 // large logits: needs the max subtraction
				}
				r := int64(len(c.shape))
				axis := int64(-1)
				if c.opset < 13 {
					axis = 1
				}
				attrs := ir.Attrs{}
				if c.axis != nil {
					axis = *c.axis
					attrs["axis"] = ir.Attr{Kind: ir.AttrInt, Int: axis}
				}
				axis = (axis + r) % r
				// Reference: groups of elements normalised together.
				outer := elems(c.shape[:axis])
				var n, str int64
				if c.opset < 13 {
					n, str = elems(c.shape[axis:]), 1
				} else {
					n, str = c.shape[axis], elems(c.shape[axis+1:])
				}
				want := make([]float64, len(x))
				for o := int64(0); o < outer; o++ {
					for i := int64(0); i < str; i++ {
						at := func(j int64) int64 { return o*n*str + j*str + i }
						m := math.Inf(-1)
						for j := int64(0); j < n; j++ {
							m = math.Max(m, float64(x[at(j)]))
						}
						var s float64
						for j := int64(0); j < n; j++ {
							s += math.Exp(float64(x[at(j)]) - m)
						}
						for j := int64(0); j < n; j++ {
							if op == "Softmax" {
								want[at(j)] = math.Exp(float64(x[at(j)])-m) / s
							} else {
								want[at(j)] = float64(x[at(j)]) - m - math.Log(s)
							}
						}
					}
				}
				tg := newTGraph(c.opset)
				node := tg.node(op, attrs, []ir.TensorID{tg.input("x", ir.Float32, c.shape...)}, out{ir.Float32, c.shape})
				near(t, "Y", asF32(exec(t, tg.g, node, 2, f32Bytes(x))[0]), want, 1e-6, 1e-7)
				near(t, "Y in place", asF32(execAliased(t, tg.g, node, 2, 0, f32Bytes(x))), want, 1e-6, 1e-7)
			})
		}
	}
}

func ptr(v int64) *int64 { return &v }

func TestReduce(t *testing.T) {
	shape := []int64{2, 3, 4, 5}
	axesSets := [][]int64{nil, {0}, {1}, {3}, {-1}, {1, 2}, {0, 2}, {0, 3}, {0, 1, 2, 3}, {2, 3}}
	for _, op := range []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"} {
		for _, axes := range axesSets {
			for _, keep := range []int64{0, 1} {
				for _, asInput := range []bool{false, true} {
					if asInput && op != "ReduceSum" {
						continue
					}
					name := fmt.Sprintf("%s/axes=%v/keepdims=%d/input=%v", op, axes, keep, asInput)
					t.Run(name, func(t *testing.T) {
						testReduce(t, op, shape, axes, keep, asInput)
					})
				}
			}
		}
	}
	// A long run split across workers, and a tall one.
	testReduce(t, "ReduceMean", []int64{3, 70000}, []int64{1}, 1, false)
	testReduce(t, "ReduceSum", []int64{70000, 3}, []int64{0}, 0, false)
}

func testReduce(t *testing.T, op string, shape, axes []int64, keep int64, asInput bool) {
	r := int64(len(shape))
	red := make([]bool, r)
	for _, a := range axes {
		red[(a+r)%r] = true
	}
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
	}
	var ys, ks []int64
	for i, d := range shape {
		if red[i] {
			ks = append(ks, 1)
			if keep == 1 {
				ys = append(ys, 1)
			}
		} else {
			ks = append(ks, d)
			ys = append(ys, d)
		}
	}
	x := randF32(int(elems(shape)))
	want := make([]float64, elems(ks))
	cnt := make([]int, len(want))
	for i, v := range x {
		idx := unravel(int64(i), shape)
		for d := range idx {
			if red[d] {
				idx[d] = 0
			}
		}
		j := int64(0)
		st := strides(ks)
		for d := range idx {
			j += idx[d] * st[d]
		}
		f := float64(v)
		switch {
		case cnt[j] == 0:
			want[j] = f
		case op == "ReduceMax":
			want[j] = math.Max(want[j], f)
		case op == "ReduceMin":
			want[j] = math.Min(want[j], f)
		default:
			want[j] += f
		}
		cnt[j]++
	}
	if op == "ReduceMean" {
		for j := range want {
			want[j] /= float64(cnt[j])
		}
	}
	opset := int64(11)
	attrs := ir.Attrs{"keepdims": {Kind: ir.AttrInt, Int: keep}}
	tg := newTGraph(opset)
	ins := []ir.TensorID{tg.input("x", ir.Float32, shape...)}
	if asInput {
		tg.g.Opsets[""] = 13
		if axes != nil {
			ins = append(ins, tg.constant("axes", ir.Int64, i64Bytes(axes), int64(len(axes))))
		}
	} else if axes != nil {
		attrs["axes"] = ir.Attr{Kind: ir.AttrInts, Ints: axes}
	}
	n := tg.node(op, attrs, ins, out{ir.Float32, ys})
	near(t, "Y", asF32(exec(t, tg.g, n, 3, f32Bytes(x))[0]), want, 1e-6, 1e-6)
}

func TestReduceSpecial(t *testing.T) {
	// noop_with_empty_axes keeps the input.
	tg := newTGraph(13)
	n := tg.node("ReduceSum", ir.Attrs{"noop_with_empty_axes": {Kind: ir.AttrInt, Int: 1}},
		[]ir.TensorID{tg.input("x", ir.Float32, 2, 3)}, out{ir.Float32, []int64{2, 3}})
	x := randF32(6)
	near(t, "noop", asF32(exec(t, tg.g, n, 1, f32Bytes(x))[0]), widen(x), 0, 0)
	// Integer sums are exact.
	tg = newTGraph(13)
	n = tg.node("ReduceSum", ir.Attrs{"keepdims": {Kind: ir.AttrInt, Int: 0}},
		[]ir.TensorID{tg.input("x", ir.Int64, 2, 3), tg.constant("axes", ir.Int64, i64Bytes([]int64{1}), 1)}, out{ir.Int64, []int64{2}})
	got := asI64(exec(t, tg.g, n, 1, i64Bytes([]int64{1 << 40, 2, 3, 4, 5, -6}))[0])
	if got[0] != 1<<40+5 || got[1] != 3 {
		t.Errorf("int64 ReduceSum = %v", got)
	}
}
