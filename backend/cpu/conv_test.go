package cpu

import (
	"bytes"
	"fmt"
	"math"
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
	cg := buildConvCase(c, randF32)
	got := exec(t, cg.tg.g, cg.n, threads, cg.feeds...)
	near(t, "Y", asF32(got[0]), refConv(c, cg.x, cg.w, cg.b, cg.pads, cg.ys), 1e-5, 1e-5)
}

// convCaseGraph is the Conv node of a convCase with its values: x, w and
// b, and feeds (x, then w unless it is a constant).
type convCaseGraph struct {
	tg       *tgraph
	n        *ir.Node
	wi       ir.TensorID
	x, w, b  []float32
	feeds    [][]byte
	pads, ys []int64
}

// buildConvCase makes c's Conv node on values drawn by draw.
func buildConvCase(c convCase, draw func(int) []float32) convCaseGraph {
	pads, osp := resolvePads(c)
	ys := append(ints64(c.x[0], c.m), osp...)
	ws := append(ints64(c.m, c.x[1]/c.group), c.kern...)
	cg := convCaseGraph{tg: newTGraph(17), pads: pads, ys: ys,
		x: draw(int(elems(c.x))), w: draw(int(elems(ws))), b: draw(int(c.m))}
	tg := cg.tg
	xi := tg.input("x", ir.Float32, c.x...)
	cg.feeds = [][]byte{f32Bytes(cg.x)}
	if c.constW {
		cg.wi = tg.constant("w", ir.Float32, f32Bytes(cg.w), ws...)
	} else {
		cg.wi = tg.input("w", ir.Float32, ws...)
		cg.feeds = append(cg.feeds, f32Bytes(cg.w))
	}
	ins := []ir.TensorID{xi, cg.wi}
	if c.bias {
		ins = append(ins, tg.constant("b", ir.Float32, f32Bytes(cg.b), c.m))
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
	cg.n = tg.node("Conv", attrs, ins, out{ir.Float32, ys})
	return cg
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

// BenchmarkConvDepthwise runs the depthwise layers of MobileNet-v2 and
// EfficientNet-B0 (dwShapes) on the Go loops and on the kernels chosen at
// run time, with one and two threads.
func BenchmarkConvDepthwise(b *testing.B) {
	saved := dwAsm
	defer func() { dwAsm = saved }()
	for _, asm := range []bool{false, saved} {
		dwAsm = asm
		for _, c := range dwShapes {
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/asm=%v/threads=%d", c.name, asm, th), func(b *testing.B) {
					g, n := convNode(1, c.c, c.h, c.h, c.c, c.k, c.stride, c.p, c.c, true)
					y := g.Tensor(n.Outputs[0]).Shape
					benchKernel(b, g, n, th, 2*float64(y.Elements())*float64(c.k*c.k))
				})
			}
		}
	}
}

// TestConvBlocking checks the bounded-scratch lowering against the
// reference loop where it matters: column blocks that do not divide the
// output, several k slices, groups, batches, output-channel parts (fewer
// column blocks than workers), 1-D and 3-D, run-time weights, and kernels
// built for one thread count and run on pools of another.
func TestConvBlocking(t *testing.T) {
	one, two := ints64(1, 1), ints64(2, 2)
	p1 := ints64(1, 1, 1, 1)
	cases := []convCase{
		{name: "blocks 33x35", x: ints64(2, 5, 33, 35), m: 7, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "3 k slices", x: ints64(1, 64, 9, 10), m: 13, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "k 257", x: ints64(1, 257, 7, 6), m: 5, group: 1, kern: ints64(1, 1), strides: two, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "k slices runtime W", x: ints64(1, 40, 11, 12), m: 9, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: false},
		{name: "groups k slices", x: ints64(2, 96, 8, 9), m: 10, group: 2, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "groups 3 runtime W no bias", x: ints64(1, 6, 20, 21), m: 9, group: 3, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 0, 0, 1), bias: false, constW: false},
		{name: "pointwise k slices blocks", x: ints64(1, 300, 17, 19), m: 11, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise batch runtime W", x: ints64(3, 20, 9, 31), m: 8, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: false, constW: false},
		{name: "pointwise 1x1 planes", x: ints64(3, 70, 1, 1), m: 45, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise 7x7 planes", x: ints64(2, 70, 7, 7), m: 100, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise 5x9 planes deep", x: ints64(1, 600, 5, 9), m: 37, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: false, constW: true},
		{name: "pointwise 1x1 planes batch 8", x: ints64(8, 33, 1, 1), m: 70, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise 1x1 planes deep", x: ints64(1, 600, 1, 1), m: 20, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: false, constW: true},
		{name: "pointwise raw pairs and packed tail", x: ints64(2, 70, 28, 28), m: 40, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise raw rows 256 bytes apart", x: ints64(1, 203, 8, 16), m: 30, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise shallow wide blocks", x: ints64(1, 16, 70, 71), m: 26, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "pointwise shallow blocks walked by rows", x: ints64(1, 24, 90, 91), m: 50, group: 1, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "1x1 s2 odd sizes batch", x: ints64(2, 40, 15, 13), m: 24, group: 1, kern: ints64(1, 1), strides: two, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "1x1 s2 to 7x7", x: ints64(1, 64, 14, 14), m: 80, group: 1, kern: ints64(1, 1), strides: two, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "1x1 s2 wide runtime W", x: ints64(1, 33, 6, 70), m: 20, group: 1, kern: ints64(1, 1), strides: two, dil: one, pads: ints64(0, 0, 0, 0), bias: false, constW: false},
		{name: "pointwise groups", x: ints64(1, 24, 13, 14), m: 12, group: 4, kern: ints64(1, 1), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "channel parts", x: ints64(1, 64, 3, 3), m: 64, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "channel parts tiny", x: ints64(1, 32, 2, 2), m: 50, group: 1, kern: ints64(2, 2), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: false},
		{name: "stride dilation pads", x: ints64(1, 7, 30, 29), m: 6, group: 1, kern: ints64(3, 5), strides: ints64(2, 3), dil: ints64(2, 1), pads: ints64(3, 1, 2, 4), bias: true, constW: true},
		{name: "5x5 wide", x: ints64(1, 12, 12, 70), m: 5, group: 1, kern: ints64(5, 5), strides: one, dil: one, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "1-D long", x: ints64(2, 30, 700), m: 6, group: 1, kern: ints64(9), strides: ints64(1), dil: ints64(1), pads: ints64(4, 4), bias: true, constW: true},
		{name: "1-D strided groups", x: ints64(1, 8, 333), m: 4, group: 2, kern: ints64(3), strides: ints64(3), dil: ints64(2), pads: ints64(1, 2), bias: true, constW: false},
		{name: "3-D", x: ints64(1, 8, 6, 10, 12), m: 5, group: 1, kern: ints64(3, 3, 3), strides: ints64(1, 1, 1), dil: ints64(1, 1, 1), pads: ints64(1, 1, 1, 1, 1, 1), bias: true, constW: true},
		{name: "negative pads", x: ints64(1, 3, 12, 11), m: 4, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(-1, 1, 0, -2), bias: true, constW: true},
		{name: "no input channels", x: ints64(1, 0, 5, 6), m: 3, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "3-D strided k slices", x: ints64(1, 12, 7, 9, 8), m: 4, group: 1, kern: ints64(3, 3, 3), strides: ints64(2, 1, 2), dil: ints64(1, 2, 1), pads: ints64(1, 2, 0, 1, 2, 1), bias: false, constW: true},
	}
	for _, c := range cases {
		for _, th := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {7, 7}, {2, 7}, {7, 1}, {3, 2}} {
			t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
				testConvFor(t, c, th[0], th[1])
			})
		}
	}
}

// TestConvWindowsAsRows covers runT for kernels larger than 1×1: the
// positions' input windows gathered into A (tTable), from unit and larger
// strides, dilation, negative and uneven pads, batches, 3-D, and products
// deep enough for several k slices, on pools larger and smaller than the
// one the kernel was built for.
func TestConvWindowsAsRows(t *testing.T) {
	if !dw512 {
		t.Skip("the window path runs on AVX-512 only")
	}
	one, two := ints64(1, 1), ints64(2, 2)
	p1 := ints64(1, 1, 1, 1)
	cases := []convCase{
		{name: "7x7 s1 (too few channels for Winograd)", x: ints64(2, 30, 7, 7), m: 64, group: 1, kern: ints64(3, 3), strides: one, dil: one, pads: p1, bias: true, constW: true},
		{name: "14x13 s2 to 7x7", x: ints64(1, 30, 14, 13), m: 70, group: 1, kern: ints64(3, 3), strides: two, dil: one, pads: p1, bias: false, constW: true},
		{name: "s2 deep", x: ints64(1, 64, 14, 14), m: 96, group: 1, kern: ints64(3, 3), strides: two, dil: one, pads: p1, bias: true, constW: true},
		{name: "dilation negative pads", x: ints64(1, 29, 9, 8), m: 65, group: 1, kern: ints64(3, 3), strides: one, dil: two, pads: ints64(-1, 2, 1, 0), bias: true, constW: true},
		{name: "deep 5x5", x: ints64(1, 40, 6, 5), m: 100, group: 1, kern: ints64(5, 5), strides: one, dil: one, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "3-D", x: ints64(1, 12, 3, 4, 4), m: 64, group: 1, kern: ints64(3, 3, 3), strides: ints64(1, 1, 1), dil: ints64(1, 1, 1), pads: ints64(1, 1, 1, 1, 1, 1), bias: true, constW: true},
	}
	for _, c := range cases {
		cg := buildConvCase(c, randQuarters)
		k, _, err := BuildFor(cg.tg.g, cg.n, 2)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ck, ok := k.(*convKernel); !ok || ck.tIdx == nil {
			t.Fatalf("%s: not built for the window path", c.name)
		}
		for _, th := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {2, 7}, {7, 1}} {
			t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
				testConvFor(t, c, th[0], th[1])
			})
		}
	}
}

// TestConvPositionsAsShares covers runT split among workers by positions
// (tRows) where a split by output channels would leave a worker an odd
// number of B panels: 160 channels (ten panels) on two workers, 80 (five)
// on three, and 48 (three) on two, with and without bias, batches, and a
// last A panel of one row.
func TestConvPositionsAsShares(t *testing.T) {
	if !useAVX512Kernel {
		t.Skip("runT's 12×32 tiles run on AVX-512 only")
	}
	one := ints64(1, 1)
	cases := []struct {
		convCase
		parts int
	}{
		{convCase{name: "7x7 160 channels", x: ints64(1, 96, 7, 7), m: 160, group: 1, kern: one, strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true}, 2},
		{convCase{name: "7x7 80 channels", x: ints64(1, 64, 7, 7), m: 80, group: 1, kern: one, strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: false, constW: true}, 3},
		{convCase{name: "5x9 48 channels batch", x: ints64(2, 40, 5, 9), m: 48, group: 1, kern: one, strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true}, 2},
	}
	for _, c := range cases {
		cg := buildConvCase(c.convCase, randQuarters)
		k, _, err := BuildFor(cg.tg.g, cg.n, c.parts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ck, ok := k.(*convKernel); !ok || !ck.tPath || !ck.tByRows(c.parts) {
			t.Fatalf("%s: not split by positions on %d workers", c.name, c.parts)
		}
		for _, th := range [][2]int{{c.parts, c.parts}, {1, 1}, {c.parts, 7}} {
			t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
				testConvFor(t, c.convCase, th[0], th[1])
			})
		}
	}
}

// TestDepthwiseFast covers the depthwise fast paths (3×3 and other small
// filters): rows and columns with and without an interior, outputs not a
// multiple of four, mixed strides, pads other than 1, 1-D inputs and
// channel multipliers.
func TestDepthwiseFast(t *testing.T) {
	one, two := ints64(1, 1), ints64(2, 2)
	cases := []convCase{
		{name: "s1 p1 wide", x: ints64(1, 5, 6, 37), m: 5, group: 5, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "s1 p0", x: ints64(2, 3, 9, 13), m: 3, group: 3, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(0, 0, 0, 0), bias: true, constW: true},
		{name: "s2 p1 odd", x: ints64(1, 4, 15, 23), m: 4, group: 4, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "s2 p1 even", x: ints64(1, 4, 16, 32), m: 4, group: 4, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 1, 1, 1), bias: false, constW: true},
		{name: "strides 2,1", x: ints64(1, 3, 11, 18), m: 3, group: 3, kern: ints64(3, 3), strides: ints64(2, 1), dil: one, pads: ints64(1, 0, 0, 2), bias: true, constW: true},
		{name: "strides 1,2", x: ints64(1, 3, 10, 19), m: 3, group: 3, kern: ints64(3, 3), strides: ints64(1, 2), dil: one, pads: ints64(0, 1, 2, 1), bias: true, constW: false},
		{name: "pad 2", x: ints64(1, 2, 7, 9), m: 2, group: 2, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "tiny 2x2", x: ints64(1, 3, 2, 2), m: 3, group: 3, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "single column", x: ints64(1, 2, 5, 1), m: 2, group: 2, kern: ints64(3, 3), strides: two, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "multiplier 3", x: ints64(1, 2, 8, 12), m: 6, group: 2, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "SAME_UPPER s2", x: ints64(1, 4, 14, 14), m: 4, group: 4, kern: ints64(3, 3), strides: two, dil: one, autoPad: "SAME_UPPER", bias: true, constW: true},
		{name: "SAME_LOWER s2", x: ints64(1, 4, 13, 14), m: 4, group: 4, kern: ints64(3, 3), strides: two, dil: one, autoPad: "SAME_LOWER", bias: true, constW: true},
		{name: "batch 2 large", x: ints64(2, 8, 28, 28), m: 8, group: 8, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(1, 1, 1, 1), bias: true, constW: true},
		{name: "5x5 s1 p2", x: ints64(1, 4, 14, 23), m: 4, group: 4, kern: ints64(5, 5), strides: one, dil: one, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "5x5 s2 SAME_UPPER", x: ints64(1, 4, 28, 27), m: 4, group: 4, kern: ints64(5, 5), strides: two, dil: one, autoPad: "SAME_UPPER", bias: true, constW: true},
		{name: "7x7 s1 p3", x: ints64(1, 2, 12, 30), m: 2, group: 2, kern: ints64(7, 7), strides: one, dil: one, pads: ints64(3, 3, 3, 3), bias: false, constW: true},
		{name: "2x3 s3 asymmetric", x: ints64(1, 3, 17, 29), m: 3, group: 3, kern: ints64(2, 3), strides: ints64(3, 3), dil: one, pads: ints64(0, 2, 1, 0), bias: true, constW: true},
		{name: "5x5 larger than input", x: ints64(1, 2, 3, 4), m: 2, group: 2, kern: ints64(5, 5), strides: one, dil: one, pads: ints64(2, 2, 2, 2), bias: true, constW: true},
		{name: "1-D k5", x: ints64(2, 3, 41), m: 3, group: 3, kern: ints64(5), strides: ints64(1), dil: ints64(1), pads: ints64(2, 2), bias: true, constW: true},
		{name: "1-D k3 s2", x: ints64(1, 3, 40), m: 6, group: 3, kern: ints64(3), strides: ints64(2), dil: ints64(1), pads: ints64(1, 0), bias: true, constW: false},
		{name: "negative pads", x: ints64(1, 2, 9, 11), m: 2, group: 2, kern: ints64(3, 3), strides: one, dil: one, pads: ints64(-1, -1, 0, 1), bias: true, constW: true},
		{name: "9x9 generic", x: ints64(1, 2, 12, 12), m: 2, group: 2, kern: ints64(9, 9), strides: one, dil: one, pads: ints64(4, 4, 4, 4), bias: true, constW: true},
	}
	testConvsWith(t, cases, &dwAsm, "asm")
}

// testConvFor is testConv with the kernel built for one thread count and
// run on a pool of another. The values are multiples of 1/4 in [-1, 1], so
// every product and partial sum is exact in float32: any summation order
// (k slices, blocks, micro-kernels with or without fused multiply-add)
// gives the reference exactly, and a wrong index cannot hide in rounding.
// testConvsWith runs cases on 1, 2 and 3 threads, first with *flag (a
// choice of code path, called name in the subtests) off, then as it was.
func testConvsWith(t *testing.T, cases []convCase, flag *bool, name string) {
	saved := *flag
	defer func() { *flag = saved }()
	for _, on := range []bool{false, saved} {
		*flag = on
		for _, c := range cases {
			for _, th := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/%s=%v/threads=%d", c.name, name, on, th), func(t *testing.T) {
					testConvFor(t, c, th, th)
				})
			}
		}
	}
}

func testConvFor(t *testing.T, c convCase, built, threads int) {
	cg := buildConvCase(c, randQuarters)
	y := runConvCase(t, c, cg, built, threads)
	near(t, "Y", y, refConv(c, cg.x, cg.w, cg.b, cg.pads, cg.ys), 0, 0) // exact: see above
}

// runConvCase runs cg's convolution, built for built threads, twice on a
// pool of threads workers, and returns its output.
func runConvCase(t *testing.T, c convCase, cg convCaseGraph, built, threads int) []float32 {
	t.Helper()
	x, b, ys := cg.x, cg.b, cg.ys
	k, scratch, err := BuildFor(cg.tg.g, cg.n, built)
	if err != nil {
		t.Fatalf("BuildFor: %v", err)
	}
	in := [][]byte{alignedCopy(f32Bytes(x)), nil}
	if c.constW {
		in[1] = alignedCopy(cg.tg.g.Tensor(cg.wi).Data)
	} else {
		in[1] = alignedCopy(cg.feeds[1])
	}
	if c.bias {
		in = append(in, alignedCopy(f32Bytes(b)))
	}
	y := alignedBytes(elems(ys) * 4)
	for i := range y {
		y[i] = 0xA5 // garbage: the kernel must write every byte
	}
	pool := NewWorkers(threads)
	defer pool.Close()
	// Twice: a run must not depend on what the last one left in scratch.
	sc := poisoned(scratch)
	k.Run(pool, in, [][]byte{y}, sc)
	k.Run(pool, in, [][]byte{y}, sc)
	return asF32(y)
}

// randQuarters returns n random multiples of 1/4 in [-1, 1].
func randQuarters(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(9)-4) / 4
	}
	return v
}

// TestConvScratchBounded checks that the scratch of a large convolution is
// a few packed blocks per worker, not a whole im2col matrix.
func TestConvScratchBounded(t *testing.T) {
	// The Winograd path bounds its scratch otherwise
	// (TestWinogradScratchBounded).
	saved := winogradOn
	winogradOn = false
	defer func() { winogradOn = saved }()
	for _, c := range []struct {
		name                     string
		ch, h, m, k, stride, pad int64
		constW                   bool
		threads                  int
	}{
		{"7x7s2 3→64 224²", 3, 224, 64, 7, 2, 3, true, 2},
		{"3x3 64→64 56²", 64, 56, 64, 3, 1, 1, true, 4},
		{"3x3 512→512 7² runtime W", 512, 7, 512, 3, 1, 1, false, 2},
		{"1x1 256→64 56²", 256, 56, 64, 1, 1, 0, true, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, n := convNode(1, c.ch, c.h, c.h, c.m, c.k, c.stride, c.pad, 1, c.constW)
			_, scratch, err := BuildFor(g, n, c.threads)
			if err != nil {
				t.Fatal(err)
			}
			// Per worker: a packed block of about convKC×convNC floats
			// (a shallow product's wider blocks round up to a whole
			// panel) and the padded input rows im2colPadded keeps
			// beside it.
			limit := c.threads * (convKC*roundUp(convNC, gemmNR) + convKC*gemmNR + im2colPadMax + alignment/2)
			if !c.constW {
				limit += packedASize(int(c.m), int(c.ch*c.k*c.k)) + alignment/4
			}
			if scratch > int64(limit)*4 {
				t.Errorf("scratch %d bytes, want at most %d", scratch, limit*4)
			}
		})
	}
}

// TestConvWeightsPrepacked wants every convolution whose constant weights
// are packed at build time, whichever layout it packs them in, to say so:
// a runtime then keeps the file's bytes out of memory.
func TestConvWeightsPrepacked(t *testing.T) {
	for _, c := range []struct {
		name                  string
		c, h, m, k, stride, p int64
	}{
		{"3x3", 16, 9, 8, 3, 1, 1},
		{"1x1 56²", 32, 56, 16, 1, 1, 0},
		{"1x1 7² (positions as rows)", 64, 7, 40, 1, 1, 0},
		{"1x1 1² (images as rows)", 64, 1, 40, 1, 1, 0},
	} {
		g, n := convNode(1, c.c, c.h, c.h, c.m, c.k, c.stride, c.p, 1, true)
		k, _, err := BuildFor(g, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		pk, ok := k.(prepackedKernel)
		if !ok || !pk.Prepacked(1) || pk.PackedBytes() < 4*c.m*c.c*c.k*c.k {
			t.Errorf("%s: weights not reported prepacked (%T)", c.name, k)
		}
	}
}

// TestConvSplitK covers splitK and tSplitK: a pointwise convolution of a
// depthwise convolution's output, shared by its depth on pools of 2 to 4
// workers,
// wants the bytes of its one-thread run (the partial products add up in
// the order of the slices) and the reference product.
func TestConvSplitK(t *testing.T) {
	if !useAVX512Kernel {
		t.Skip("splitK needs the AVX-512 kernels")
	}
	for _, c := range []struct {
		name   string
		ch, m  int64
		h, w   int64
		slices int
	}{
		{"96→24 20×21", 96, 24, 20, 21, 2},
		{"150→40 9×30", 150, 40, 9, 30, 2},
		{"600→64 14²", 600, 64, 14, 14, 4},
		{"1100→96 9²", 1100, 96, 9, 9, 6},
		// Small planes: the positions as rows (tSplitK).
		{"960→160 7²", 960, 160, 7, 7, 4},
		{"200→40 6²", 200, 40, 6, 6, 2},
	} {
		tg := newTGraph(17)
		x := tg.input("x", ir.Float32, 1, c.ch, c.h, c.w)
		dw := tg.constant("dw", ir.Float32, f32Bytes(randF32(int(c.ch*9))), c.ch, 1, 3, 3)
		tg.node("Conv", ir.Attrs{
			"pads":  {Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}},
			"group": {Kind: ir.AttrInt, Int: c.ch},
		}, []ir.TensorID{x, dw}, out{ir.Float32, []int64{1, c.ch, c.h, c.w}})
		y1 := tg.g.Nodes[0].Outputs[0]
		wv, bv := randF32(int(c.m*c.ch)), randF32(int(c.m))
		wt := tg.constant("w", ir.Float32, f32Bytes(wv), c.m, c.ch, 1, 1)
		b := tg.constant("b", ir.Float32, f32Bytes(bv), c.m)
		tg.node("Conv", nil, []ir.TensorID{y1, wt, b}, out{ir.Float32, []int64{1, c.m, c.h, c.w}})
		g, n := tg.g, &tg.g.Nodes[1]
		xv := randF32(int(c.ch * c.h * c.w))
		sp := int(c.h * c.w)
		// The products are up to 1100 deep: float32 sums of that many
		// terms of [-1, 1)² drift from the exact value by about the unit
		// roundoff times the root sum of squares of the partial sums (a
		// random walk of rounding errors), which for 960 terms is about
		// 1.4e-5, and a sequential float32 sum exceeds a fixed 1e-5 in
		// about one sum of ten thousand. Each value may be off by six
		// times that, or 1e-5 where that is less; a wrong or missing
		// slice, or term, is off by far more.
		want := make([]float64, int(c.m)*sp)
		bound := make([]float64, len(want))
		for o := range int(c.m) {
			for p := range sp {
				s := float64(bv[o])
				var sq float64
				for i := range int(c.ch) {
					s += float64(wv[o*int(c.ch)+i]) * float64(xv[i*sp+p])
					sq += s * s
				}
				want[o*sp+p] = s
				bound[o*sp+p] = max(1e-5, 6*0x1p-24*math.Sqrt(sq))
			}
		}
		var one []byte
		for _, th := range []int{1, 2, 3, 4} {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, th), func(t *testing.T) {
				k, scratch, err := BuildFor(g, n, th)
				if err != nil {
					t.Fatal(err)
				}
				ck := k.(*convKernel)
				kc := ck.kc
				if ck.tPath {
					kc = ck.tKC
				}
				if slices := ceilDiv(ck.kdim, max(kc, 1)); slices != c.slices {
					t.Fatalf("%d k slices, want %d", slices, c.slices)
				}
				if wantSplit := min(th, c.slices); th > 1 && ck.kSplit != wantSplit {
					t.Fatalf("kSplit %d, want %d", ck.kSplit, wantSplit)
				}
				in := [][]byte{alignedCopy(f32Bytes(xv)), alignedCopy(g.Tensor(wt).Data), alignedCopy(f32Bytes(bv))}
				y := alignedBytes(int64(len(want)) * 4)
				pool := NewWorkers(th)
				defer pool.Close()
				sc := poisoned(scratch)
				k.Run(pool, in, [][]byte{y}, sc)
				k.Run(pool, in, [][]byte{y}, sc)
				for i, g := range asF32(y) {
					if d := math.Abs(float64(g) - want[i]); !(d <= 1e-5*math.Abs(want[i])+bound[i]) {
						t.Fatalf("Y[%d] = %v, want %v (off by %.3g, bound %.3g)", i, g, want[i], d, bound[i])
					}
				}
				if th == 1 {
					one = append([]byte(nil), y...)
				} else if !bytes.Equal(y, one) {
					t.Errorf("%d threads: output differs from the one-thread run", th)
				}
			})
		}
	}
}
