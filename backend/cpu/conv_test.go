package cpu

import (
	"fmt"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// convCase is one convolution geometry.
type convCase struct {
	name               string
	x                  []int64 // N, C, spatial...
	m, group           int64
	kern, strides, dil []int64
	pads               []int64 // begins then ends; nil with autoPad
	autoPad            string
	bias, constW, ceil bool
}

// outSize is the spatial output size with explicit pads.
func outSize(in, k, s, d, pb, pe int64) int64 {
	return (in+pb+pe-((k-1)*d+1))/s + 1
}

// resolvePads mirrors ONNX's auto_pad rules for the reference.
func resolvePads(c convCase) (pads, outSp []int64) {
	r := len(c.kern)
	pads = make([]int64, 2*r)
	outSp = make([]int64, r)
	for i := 0; i < r; i++ {
		in, k, s, d := c.x[2+i], c.kern[i], c.strides[i], c.dil[i]
		switch c.autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			o := (in + s - 1) / s
			total := max(0, (o-1)*s+(k-1)*d+1-in)
			if c.autoPad == "SAME_UPPER" {
				pads[i], pads[r+i] = total/2, total-total/2
			} else {
				pads[i], pads[r+i] = total-total/2, total/2
			}
		case "VALID":
		default:
			pads[i], pads[r+i] = c.pads[i], c.pads[r+i]
		}
		outSp[i] = outSize(in, k, s, d, pads[i], pads[r+i])
	}
	return pads, outSp
}

func refConv(c convCase, x, w, b []float32, pads, ys []int64) []float64 {
	r := len(c.kern)
	cg := c.x[1] / c.group
	mg := c.m / c.group
	out := make([]float64, elems(ys))
	kvol := elems(c.kern)
	xst := strides(c.x)
	for o := range out {
		idx := unravel(int64(o), ys)
		n, m := idx[0], idx[1]
		g := m / mg
		var s float64
		if c.bias {
			s = float64(b[m])
		}
		for ci := int64(0); ci < cg; ci++ {
			for kk := int64(0); kk < kvol; kk++ {
				kidx := unravel(kk, c.kern)
				xoff := n*xst[0] + (g*cg+ci)*xst[1]
				inside := true
				for d := 0; d < r; d++ {
					p := idx[2+d]*c.strides[d] - pads[d] + kidx[d]*c.dil[d]
					if p < 0 || p >= c.x[2+d] {
						inside = false
						break
					}
					xoff += p * xst[2+d]
				}
				if inside {
					s += float64(x[xoff]) * float64(w[(m*cg+ci)*kvol+kk])
				}
			}
		}
		out[o] = s
	}
	return out
}

func ints64(v ...int64) []int64 { return v }

func TestConv(t *testing.T) {
	one, two := ints64(1, 1), ints64(2, 2)
	cases := []convCase{
		{name: "3x3 s1 p1", x: ints64(1, 3, 9, 11), m: 5, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "3x3 s2 p1 batch2", x: ints64(2, 4, 13, 10), m: 6, group: 1, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "7x7 s2 p3", x: ints64(1, 3, 23, 23), m: 8, group: 1, kern: ints64(7, 7), strides: two, dil: one, pads: ints64(3, 3, 3, 3), bias: false, constW: true},
		{name: "1x1 pointwise", x: ints64(2, 16, 5, 7), m: 9, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "1x1 stride 2", x: ints64(1, 8, 9, 9), m: 4, group: 1, kern: ints64(1, 1), strides: two, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "dilation 2", x: ints64(1, 2, 12, 12), m: 3, group: 1, kern: ints64(3, 3), strides: one, dil: two, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "asymmetric pads", x: ints64(1, 2, 8, 9), m: 3, group: 1, kern: ints64(3, 2), strides: ints64(1, 2), dil: one, pads: ints64(0, 1, 2, 0), bias: true, constW: true},
		{name: "groups 2", x: ints64(1, 4, 7, 7), m: 6, group: 2, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "groups 4 runtime W", x: ints64(2, 8, 6, 6), m: 8, group: 4, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: false},
		{name: "depthwise", x: ints64(1, 8, 10, 10), m: 8, group: 8, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "depthwise s2", x: ints64(2, 6, 11, 12), m: 6, group: 6, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 1, 1, 1), bias: false, constW: true},
		{name: "depthwise 5x5 dilated", x: ints64(1, 4, 14, 13), m: 4, group: 4, kern: ints64(5, 5), strides: one, dil: two, pads: ints64(4, 3, 4, 2), bias: true, constW: true},
		{name: "depthwise multiplier 2", x: ints64(1, 4, 6, 6), m: 8, group: 4, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: false},
		{name: "SAME_UPPER s2", x: ints64(1, 3, 10, 9), m: 4, group: 1, kern: ints64(3, 3), strides: two, dil: one, autoPad: "SAME_UPPER", bias: true, constW: true},
		{name: "SAME_LOWER s2", x: ints64(1, 3, 10, 9), m: 4, group: 1, kern: ints64(4, 4), strides: two, dil: one, autoPad: "SAME_LOWER", bias: true, constW: true},
		{name: "SAME_UPPER depthwise", x: ints64(1, 3, 7, 8), m: 3, group: 3, kern: ints64(4, 3), strides: two, dil: one, autoPad: "SAME_UPPER", bias: true, constW: true},
		{name: "VALID", x: ints64(1, 3, 10, 9), m: 4, group: 1, kern: ints64(3, 3), strides: one, dil: one, autoPad: "VALID", bias: false, constW: true},
		{name: "deep k", x: ints64(1, 40, 6, 9), m: 10, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "many tiles", x: ints64(1, 4, 40, 37), m: 70, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "1-D", x: ints64(2, 3, 20), m: 4, group: 1, kern: ints64(5), strides: ints64(2), dil: ints64(1), pads: ints64(2, 1), bias: true, constW: true},
		{name: "1-D depthwise", x: ints64(1, 4, 17), m: 4, group: 4, kern: ints64(3), strides: ints64(1), dil: ints64(2), pads: ints64(2, 2), bias: true, constW: true},
		{name: "3-D", x: ints64(1, 2, 5, 6, 7), m: 3, group: 1, kern: ints64(3, 2, 3), strides: ints64(1, 2, 1), dil: ints64(1, 1, 2), pads: ints64(1, 0, 1, 1, 1, 2), bias: true, constW: true},
		{name: "3-D depthwise", x: ints64(1, 3, 4, 5, 6), m: 3, group: 3, kern: ints64(2, 3, 3), strides: ints64(1, 1, 2), dil: ints64(1, 1, 1), pads: ints64(0, 1, 1, 1, 1, 1), bias: false, constW: true},
	}
	for _, c := range cases {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(t *testing.T) {
				testConv(t, c, threads)
			})
		}
	}
}

func testConv(t *testing.T, c convCase, threads int) {
	pads, osp := resolvePads(c)
	ys := append(ints64(c.x[0], c.m), osp...)
	ws := append(ints64(c.m, c.x[1]/c.group), c.kern...)
	x, w, b := randF32(int(elems(c.x))), randF32(int(elems(ws))), randF32(int(c.m))
	tg := newTGraph(17)
	xi := tg.input("x", ir.Float32, c.x...)
	feeds := [][]byte{f32Bytes(x)}
	var wi ir.TensorID
	if c.constW {
		wi = tg.constant("w", ir.Float32, f32Bytes(w), ws...)
	} else {
		wi = tg.input("w", ir.Float32, ws...)
		feeds = append(feeds, f32Bytes(w))
	}
	ins := []ir.TensorID{xi, wi}
	if c.bias {
		ins = append(ins, tg.constant("b", ir.Float32, f32Bytes(b), c.m))
	}
	attrs := ir.Attrs{
		"strides":      {Kind: ir.AttrInts, Ints: c.strides},
		"dilations":    {Kind: ir.AttrInts, Ints: c.dil},
		"group":        {Kind: ir.AttrInt, Int: c.group},
		"kernel_shape": {Kind: ir.AttrInts, Ints: c.kern},
	}
	if c.autoPad != "" {
		attrs["auto_pad"] = ir.Attr{Kind: ir.AttrString, String: c.autoPad}
	} else {
		attrs["pads"] = ir.Attr{Kind: ir.AttrInts, Ints: c.pads}
	}
	n := tg.node("Conv", attrs, ins, out{ir.Float32, ys})
	got := exec(t, tg.g, n, threads, feeds...)
	near(t, "Y", asF32(got[0]), refConv(c, x, w, b, pads, ys), 1e-5, 1e-5)
}

func TestConvErrors(t *testing.T) {
	tg := newTGraph(17)
	x := tg.input("x", ir.Float32, 1, 3, 8, 8)
	w := tg.input("w", ir.Float32, 4, 3, 3, 3)
	// Wrong output size for the geometry.
	n := tg.node("Conv", nil, []ir.TensorID{x, w}, out{ir.Float32, []int64{1, 4, 7, 7}})
	if _, _, err := Build(tg.g, n); err == nil {
		t.Errorf("Build accepted a wrong output size")
	}
	// Unsupported dtype names node, op and dtype.
	tg = newTGraph(17)
	x = tg.input("x", ir.Float64, 1, 3, 8, 8)
	w = tg.input("w", ir.Float64, 4, 3, 3, 3)
	n = tg.node("Conv", nil, []ir.TensorID{x, w}, out{ir.Float64, []int64{1, 4, 6, 6}})
	_, _, err := Build(tg.g, n)
	if err == nil || !contains(err.Error(), "Conv_0", "Conv", "float64") {
		t.Errorf("error %v does not name node, op and dtype", err)
	}
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !containsStr(s, p) {
			return false
		}
	}
	return true
}

func containsStr(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
