package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// toBlocked lays an NCHW tensor of n images and c channels (a multiple
// of 16) of sp positions out in NCHW16c; fromBlocked undoes it.
func toBlocked(x []float32, n, c, sp int) []float32 {
	y := make([]float32, len(x))
	for i := range n {
		for ch := range c {
			for p := range sp {
				y[((i*c/16+ch/16)*sp+p)*16+ch%16] = x[(i*c+ch)*sp+p]
			}
		}
	}
	return y
}

func fromBlocked(y []float32, n, c, sp int) []float32 {
	x := make([]float32, len(y))
	for i := range n {
		for ch := range c {
			for p := range sp {
				x[(i*c+ch)*sp+p] = y[((i*c/16+ch/16)*sp+p)*16+ch%16]
			}
		}
	}
	return x
}

// TestConvBlocked runs 1×1 convolutions on the channel-blocked path with
// every combination of input and output layouts it takes, with and
// without a residual and a Relu, against refConv.
func TestConvBlocked(t *testing.T) {
	if !useAVX512Kernel || !dw512 {
		t.Skip("the channel-blocked path needs AVX-512")
	}
	cases := []struct {
		n, c, m, h, w, stride int
	}{
		{1, 32, 64, 10, 10, 1},  // 100 positions: 8 tiles and a tail of 4
		{2, 48, 32, 8, 9, 1},    // two images, 72 positions each
		{1, 32, 64, 17, 19, 2},  // stride 2 onto 9×10
		{1, 20, 32, 9, 9, 1},    // channels not a multiple of 16: NCHW input only
		{1, 2048, 96, 8, 8, 1},  // panels in two blocks
		{1, 64, 256, 12, 12, 1}, // whole tiles only
		{2, 256, 64, 21, 23, 2}, // stride 2 onto 11×12, two images
		{1, 64, 64, 13, 13, 2},  // stride 2 onto 7×7: blocked input only
	}
	for _, cs := range cases {
		for _, threads := range []int{1, 3} {
			for _, inB := range []bool{false, true} {
				if inB && cs.c%16 != 0 {
					continue
				}
				for _, outB := range []bool{false, true} {
					if !inB && !outB {
						continue // the planes' own paths
					}
					for _, fused := range []bool{false, true} {
						name := fmt.Sprintf("%v/t%d/in%v/out%v/res%v", cs, threads, inB, outB, fused)
						t.Run(name, func(t *testing.T) {
							testConvBlocked(t, cs.n, cs.c, cs.m, cs.h, cs.w, cs.stride, threads, inB, outB, fused)
						})
					}
				}
			}
		}
	}
}

func testConvBlocked(t *testing.T, n, c, m, h, w, stride, threads int, inB, outB, fused bool) {
	cc := squareConv(n, c, m, h, w, 1, stride, 0)
	cg := buildConvCase(cc, randF32)
	want, bound := refConvBound(cc, cg)
	k, scratch, err := BuildFor(cg.tg.g, cg.n, threads)
	if err != nil {
		t.Fatal(err)
	}
	sp := int(cg.ys[2] * cg.ys[3])
	res := randF32(n * m * sp)
	if fused {
		k = fuseResidualRelu(t, cg, k, threads)
		for i := range want {
			want[i] = max(0, want[i]+float64(res[i]))
			bound[i] += math.Abs(float64(res[i]))
		}
	}
	bin, bout := blockRoles(k, scratch)
	if bin != (c%16 == 0) {
		t.Fatalf("blockRoles = %v, %v", bin, bout)
	}
	if inB && !bin || (outB || !inB) && !bout {
		t.Skipf("scratch of %d bytes: roles %v, %v", scratch, bin, bout)
	}
	ks, err := blockKernels([]Kernel{k}, inB, outB, cg.tg.g.Tensor(cg.wi).Data)
	if err != nil {
		t.Fatal(err)
	}
	x := cg.x
	if inB {
		x = toBlocked(x, n, c, h*w)
	}
	r := res
	if outB {
		r = toBlocked(r, n, m, sp)
	}
	bytes := int64(4 * len(want))
	in := [][]byte{f32Bytes(x), cg.tg.g.Tensor(cg.wi).Data, f32Bytes(cg.b), f32Bytes(r)}
	out := runKernel(ks[0], threads, scratch, in, []int64{bytes, bytes, int64(max(64, workBytes(ks[0])))})
	got := asF32(out[0])
	if fused {
		got = asF32(out[1])
	}
	if outB {
		got = fromBlocked(got, n, m, sp)
	}
	// 64 roundings of float32 of the sum of absolute terms: far below
	// one product left out or counted twice (about 1/c of that sum).
	checkBound(t, got, want, bound, 64*0x1p-24)
}

// squareConv is the convolution of n images of c channels of h×w by m
// filters of k×k, with the given stride and pads on every side, a bias
// and constant weights.
func squareConv(n, c, m, h, w, k, stride, pad int) convCase {
	k64, s64, p64 := int64(k), int64(stride), int64(pad)
	return convCase{x: ints64(int64(n), int64(c), int64(h), int64(w)), m: int64(m), group: 1,
		kern: ints64(k64, k64), strides: ints64(s64, s64), dil: ints64(1, 1),
		pads: ints64(p64, p64, p64, p64), bias: true, constW: true}
}

// refConvBound is refConv of cg and, for each output, the sum of its
// terms' absolute values, which bounds its rounding error.
func refConvBound(cc convCase, cg convCaseGraph) (want, bound []float64) {
	abs := func(v []float32) []float32 {
		a := make([]float32, len(v))
		for i, x := range v {
			a[i] = float32(math.Abs(float64(x)))
		}
		return a
	}
	return refConv(cc, cg.x, cg.w, cg.b, cg.pads, cg.ys), refConv(cc, abs(cg.x), abs(cg.w), abs(cg.b), cg.pads, cg.ys)
}

// checkBound wants each got[i] within scale·bound[i] of want[i].
func checkBound(t *testing.T, got []float32, want, bound []float64, scale float64) {
	t.Helper()
	bad := 0
	for i, g := range got {
		if d := math.Abs(float64(g) - want[i]); !(d <= scale*bound[i]) {
			if bad++; bad <= 5 {
				t.Errorf("Y[%d] = %v, want %v (bound %.3g)", i, g, want[i], scale*bound[i])
			}
		}
	}
}

// fuseResidualRelu fuses k, cg's convolution, with an Add of a residual
// (a fourth input) and a Relu, as the compiler does.
func fuseResidualRelu(t *testing.T, cg convCaseGraph, k Kernel, threads int) Kernel {
	t.Helper()
	y := cg.n.Outputs[0]
	shape := []int64(cg.tg.g.Tensor(y).Shape)
	r := cg.tg.input("r", ir.Float32, shape...)
	add := cg.tg.node("Add", nil, []ir.TensorID{y, r}, out{ir.Float32, shape})
	relu := cg.tg.node("Relu", nil, []ir.TensorID{add.Outputs[0]}, out{ir.Float32, shape})
	return fuseChain(t, cg, k, []*ir.Node{add, relu}, threads)
}

// fuseChain fuses k, cg's convolution, with the nodes of chain (which
// read its output), as the compiler does.
func fuseChain(t *testing.T, cg convCaseGraph, k Kernel, chain []*ir.Node, threads int) Kernel {
	t.Helper()
	y := cg.n.Outputs[0]
	shape := cg.tg.g.Tensor(y).Shape
	ep, _, err := newEpilogue(cg.tg.g, y, int(shape[2]*shape[3]), chain)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := fuseEpilogue(k, ep, 3, threads)
	if !ok {
		t.Fatal("fuseEpilogue refused the convolution")
	}
	return f
}

// TestGlobalPoolBlocked averages NCHW16c planes against the NCHW kernel.
func TestGlobalPoolBlocked(t *testing.T) {
	for _, sp := range []int{1, 49, 50} {
		tg := newTGraph(17)
		x := tg.input("x", ir.Float32, 2, 32, int64(sp), 1)
		nd := tg.node("GlobalAveragePool", nil, []ir.TensorID{x}, out{ir.Float32, []int64{2, 32, 1, 1}})
		v := randF32(2 * 32 * sp)
		want := exec(t, tg.g, nd, 2, f32Bytes(v))
		k, _, err := Build(tg.g, nd)
		if err != nil {
			t.Fatal(err)
		}
		bin, _ := blockRoles(k, 0)
		if !bin {
			t.Fatal("GlobalAveragePool does not take a blocked input")
		}
		ks, err := blockKernels([]Kernel{k}, true, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		in := [][]byte{alignedBytes(int64(4 * len(v)))}
		copy(in[0], f32Bytes(toBlocked(v, 2, 32, sp)))
		got := [][]byte{alignedBytes(4 * 64)}
		wk := NewWorkers(2)
		ks[0].Run(wk, in, got, nil)
		wk.Close()
		near(t, "Y", asF32(got[0]), widen(asF32(want[0])), 1e-6, 1e-6)
	}
}

// BenchmarkConvBlocked runs ResNet-50's 1×1 convolutions on planes and on
// the channel-blocked path with the layouts ResNet-50's blocks give them
// (in: the input blocked, out: the output and residual, both: both),
// with the residual and Relu where the model adds one.
func BenchmarkConvBlocked(b *testing.B) {
	cases := []struct {
		name            string
		c, h, m, stride int64
		res             bool
		k               int64
	}{
		{"3x3s2 128→128 56²", 128, 56, 128, 2, false, 3},
		{"3x3s2 256→256 28²", 256, 28, 256, 2, false, 3},
		{"256→64 56²", 256, 56, 64, 1, false, 1},
		{"64→256 56² +res", 64, 56, 256, 1, true, 1},
		{"128→256 56²", 128, 56, 256, 1, false, 1},
		{"256→128 56²", 256, 56, 128, 1, false, 1},
		{"s2 256→512 56²", 256, 56, 512, 2, false, 1},
		{"128→512 28² +res", 128, 28, 512, 1, true, 1},
		{"512→128 28²", 512, 28, 128, 1, false, 1},
		{"512→256 28²", 512, 28, 256, 1, false, 1},
		{"1024→256 14²", 1024, 14, 256, 1, false, 1},
		{"256→1024 14² +res", 256, 14, 1024, 1, true, 1},
		{"512→2048 7² +res", 512, 7, 2048, 1, true, 1},
		{"2048→512 7²", 2048, 7, 512, 1, false, 1},
		{"s2 512→1024 28² +res", 512, 28, 1024, 2, true, 1},
		{"s2 1024→2048 14² +res", 1024, 14, 2048, 2, true, 1},
	}
	for _, c := range cases {
		for _, th := range threadCounts() {
			for _, mode := range []string{"planes", "in", "out", "both"} {
				b.Run(fmt.Sprintf("%s/%s/threads=%d", c.name, mode, th), func(b *testing.B) {
					kk := max(c.k, 1)
					if kk > 1 && (mode == "in" || mode == "out") {
						b.Skip("a convolution of windows takes both layouts blocked")
					}
					g, n := convNode(1, c.c, c.h, c.h, c.m, kk, c.stride, kk/2, 1, true)
					y := g.Tensor(n.Outputs[0]).Shape
					p := prepareFor(b, g, n, th)
					k := p.k
					if c.res {
						f := *k.(*convKernel)
						f.fuse = newFused(&epilogue{rowLen: int(y[2] * y[3])}, 3, th)
						f.res, f.lim = 1, &[2]float32{0, float32(math.Inf(1))}
						k = &f
						p.in = append(p.in, alignedBytes(int64(len(p.out[0]))))
						p.out = append(p.out, p.out[0], alignedBytes(64))
					}
					if mode != "planes" {
						ks, err := blockKernels([]Kernel{k}, mode != "out", mode != "in", g.Tensor(n.Inputs[1]).Data)
						if err != nil {
							b.Fatal(err)
						}
						k = ks[0]
					}
					w := NewWorkers(th)
					defer w.Close()
					k.Run(w, p.in, p.out, p.scratch)
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						k.Run(w, p.in, p.out, p.scratch)
					}
					flops := 2 * float64(y.Elements()) * float64(c.c*kk*kk)
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// TestWinogradBlocked runs 3×3 convolutions on the blocked Winograd path,
// F(2×2, 3×3) and F(4×4, 3×3), against refConv: each output within 2⁻¹⁶
// of its sum of absolute terms (TestWinograd4's bound; one product left
// out would move it by about 1/(9c) of that sum).
func TestWinogradBlocked(t *testing.T) {
	if !useAVX512Kernel || !dw512 {
		t.Skip("the channel-blocked path needs AVX-512")
	}
	cases := []struct {
		n, c, m, h, w, pad, r int
	}{
		{1, 32, 32, 20, 20, 1, 2}, // F(2×2): 100 tiles
		{1, 32, 64, 14, 14, 1, 2}, // 49 tiles: the last thirteen at once
		{1, 64, 96, 17, 19, 1, 2}, // partial tiles on two sides
		{2, 48, 64, 16, 18, 0, 2}, // no padding, two images
		{1, 64, 64, 34, 34, 1, 4}, // F(4×4): 81 tiles
		{1, 32, 64, 35, 33, 1, 4}, // F(4×4), partial tiles
		{1, 32, 32, 56, 56, 1, 4}, // 196 tiles, as ResNet-50's 56² layers
	}
	for _, cs := range cases {
		for _, threads := range []int{1, 3} {
			for _, clamp := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/t%d/clamp%v", cs, threads, clamp), func(t *testing.T) {
					testWinogradBlocked(t, cs.n, cs.c, cs.m, cs.h, cs.w, cs.pad, cs.r, threads, clamp)
				})
			}
		}
	}
}

func testWinogradBlocked(t *testing.T, n, c, m, h, w, pad, r, threads int, clamp bool) {
	cc := squareConv(n, c, m, h, w, 3, 1, pad)
	cg := buildConvCase(cc, randF32)
	want, bound := refConvBound(cc, cg)
	k, scratch, err := BuildFor(cg.tg.g, cg.n, threads)
	if err != nil {
		t.Fatal(err)
	}
	ck := k.(*convKernel)
	if ck.wg == nil || ck.wg.r != r {
		t.Fatalf("not on the Winograd path F(%d×%d, 3×3)", r, r)
	}
	if clamp {
		f := *ck
		f.lim = &[2]float32{-0.5, 0.5}
		k = &f
		for i := range want {
			want[i] = min(0.5, max(-0.5, want[i]))
		}
	}
	if in, out := blockRoles(k, scratch); !in || !out || !blockTied(k) {
		t.Fatalf("blockRoles = %v, %v, blockTied = %v", in, out, blockTied(k))
	}
	ks, err := blockKernels([]Kernel{k}, true, true, cg.tg.g.Tensor(cg.wi).Data)
	if err != nil {
		t.Fatal(err)
	}
	sp := int(cg.ys[2] * cg.ys[3])
	in := [][]byte{alignedBytes(int64(4 * len(cg.x))), cg.tg.g.Tensor(cg.wi).Data, alignedBytes(int64(4 * m))}
	copy(in[0], f32Bytes(toBlocked(cg.x, n, c, h*w)))
	copy(in[2], f32Bytes(cg.b))
	out := [][]byte{alignedBytes(int64(4 * len(want)))}
	for j := range out[0] {
		out[0][j] = 0xA5
	}
	wk := NewWorkers(threads)
	defer wk.Close()
	ks[0].Run(wk, in, out, poisoned(scratch))
	checkBound(t, fromBlocked(asF32(out[0]), n, m, sp), want, bound, 0x1p-16)
}

// TestConvStrided runs convolutions of stride 2 from planes into NCHW16c
// (blockedWin: a ResNet's stem) against refConv, with a fused Relu.
func TestConvStrided(t *testing.T) {
	if !useAVX512Kernel || !dw512 {
		t.Skip("the channel-blocked path needs AVX-512")
	}
	cases := []struct {
		n, c, m, h, w, k, pad int
	}{
		{1, 3, 64, 30, 31, 7, 3}, // a 7×7 stem onto 15×16
		{2, 8, 32, 26, 27, 3, 1}, // 3×3 onto 13×14, two images
		{1, 5, 32, 40, 29, 5, 0}, // no padding, 18×13: a tail tile a row
	}
	for _, cs := range cases {
		for _, threads := range []int{1, 3} {
			for _, relu := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/t%d/relu%v", cs, threads, relu), func(t *testing.T) {
					testConvStrided(t, cs.n, cs.c, cs.m, cs.h, cs.w, cs.k, cs.pad, threads, relu)
				})
			}
		}
	}
}

func testConvStrided(t *testing.T, n, c, m, h, w, kk, pad, threads int, relu bool) {
	testWindowsBlocked(t, squareConv(n, c, m, h, w, kk, 2, pad), threads, relu, false)
}

// testWindowsBlocked runs convolution cc, fused with a Relu where relu is
// set, on a blocked output from an input in planes (the stem's path,
// blockedWin) or, inB set, blocked too (blockedGather), against refConv.
func testWindowsBlocked(t *testing.T, cc convCase, threads int, relu, inB bool) {
	cg := buildConvCase(cc, randF32)
	want, bound := refConvBound(cc, cg)
	k, scratch, err := BuildFor(cg.tg.g, cg.n, threads)
	if err != nil {
		t.Fatal(err)
	}
	y := cg.n.Outputs[0]
	shape := []int64(cg.tg.g.Tensor(y).Shape)
	n, c, m := int(cc.x[0]), int(cc.x[1]), int(cc.m)
	sp := int(shape[2] * shape[3])
	if relu {
		r := cg.tg.node("Relu", nil, []ir.TensorID{y}, out{ir.Float32, shape})
		k = fuseChain(t, cg, k, []*ir.Node{r}, threads)
		for i := range want {
			want[i] = max(0, want[i])
		}
	}
	if in, out := blockRoles(k, scratch); in != inB || !out || blockTied(k) != inB {
		t.Fatalf("blockRoles = %v, %v, blockTied = %v (scratch %d)", in, out, blockTied(k), scratch)
	}
	ks, err := blockKernels([]Kernel{k}, inB, true, cg.tg.g.Tensor(cg.wi).Data)
	if err != nil {
		t.Fatal(err)
	}
	x := cg.x
	if inB {
		x = toBlocked(x, n, c, int(cc.x[2]*cc.x[3]))
	}
	in := [][]byte{f32Bytes(x), cg.tg.g.Tensor(cg.wi).Data, f32Bytes(cg.b)}
	bytes := int64(4 * len(want))
	outs := runKernel(ks[0], threads, scratch, in, []int64{bytes, bytes, int64(max(64, workBytes(ks[0])))})
	got := asF32(outs[0])
	if relu {
		got = asF32(outs[1])
	}
	checkBound(t, fromBlocked(got, n, m, sp), want, bound, 64*0x1p-24)
}

// TestMaxPoolBlocked pools NCHW16c planes and wants the NCHW kernel's
// bits (both take the builtin max: a NaN wins, +0 beats −0), any NaN for
// a NaN.
func TestMaxPoolBlocked(t *testing.T) {
	if !dw512 {
		t.Skip("the channel-blocked path needs AVX-512")
	}
	cases := []struct {
		h, w, k, s, pad int
		ceil            bool
	}{
		{20, 21, 3, 2, 1, false}, // ResNet's, odd width
		{16, 16, 2, 2, 0, false},
		{9, 11, 3, 1, 1, false},
		{10, 13, 3, 2, 0, true},
	}
	for _, cs := range cases {
		t.Run(fmt.Sprintf("%v", cs), func(t *testing.T) {
			tg := newTGraph(17)
			x := tg.input("x", ir.Float32, 2, 32, int64(cs.h), int64(cs.w))
			ceil := int64(0)
			if cs.ceil {
				ceil = 1
			}
			oh := outSize(int64(cs.h), int64(cs.k), int64(cs.s), 1, int64(cs.pad), int64(cs.pad))
			ow := outSize(int64(cs.w), int64(cs.k), int64(cs.s), 1, int64(cs.pad), int64(cs.pad))
			if cs.ceil {
				oh = (int64(cs.h)+2*int64(cs.pad)-int64(cs.k)+int64(cs.s)-1)/int64(cs.s) + 1
				ow = (int64(cs.w)+2*int64(cs.pad)-int64(cs.k)+int64(cs.s)-1)/int64(cs.s) + 1
			}
			k64, s64, p64 := int64(cs.k), int64(cs.s), int64(cs.pad)
			nd := tg.node("MaxPool", ir.Attrs{
				"kernel_shape": {Kind: ir.AttrInts, Ints: []int64{k64, k64}},
				"strides":      {Kind: ir.AttrInts, Ints: []int64{s64, s64}},
				"pads":         {Kind: ir.AttrInts, Ints: []int64{p64, p64, p64, p64}},
				"ceil_mode":    {Kind: ir.AttrInt, Int: ceil},
			}, []ir.TensorID{x}, out{ir.Float32, []int64{2, 32, oh, ow}})
			v := randF32(2 * 32 * cs.h * cs.w)
			v[5], v[77] = float32(math.NaN()), float32(math.Copysign(0, -1))
			want := exec(t, tg.g, nd, 2, f32Bytes(v))
			k, _, err := Build(tg.g, nd)
			if err != nil {
				t.Fatal(err)
			}
			if in, out := blockRoles(k, 0); !in || !out || !blockTied(k) {
				t.Fatalf("blockRoles = %v, %v", in, out)
			}
			ks, err := blockKernels([]Kernel{k}, true, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			in := [][]byte{alignedBytes(int64(4 * len(v)))}
			copy(in[0], f32Bytes(toBlocked(v, 2, 32, cs.h*cs.w)))
			got := [][]byte{alignedBytes(int64(len(want[0])))}
			wk := NewWorkers(2)
			ks[0].Run(wk, in, got, nil)
			wk.Close()
			g := fromBlocked(asF32(got[0]), 2, 32, int(oh*ow))
			w := asF32(want[0])
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
					t.Fatalf("Y[%d] = %v, want %v", i, g[i], w[i])
				}
			}
		})
	}
}

// TestConvWindowSplit shares a deep product of windows onto a small
// plane by its depth (windowSplitFits) and wants refConv's values and the
// same bits on one, two and three workers.
func TestConvWindowSplit(t *testing.T) {
	cc := squareConv(1, 64, 64, 20, 20, 3, 2, 1)
	cg := buildConvCase(cc, randF32)
	want, bound := refConvBound(cc, cg)
	k, scratch, err := BuildFor(cg.tg.g, cg.n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if useAVX512Kernel && k.(*convKernel).kSplit != 2 {
		t.Fatalf("kSplit = %d, want 2", k.(*convKernel).kSplit)
	}
	var first []float32
	for _, threads := range []int{1, 2, 3} {
		in := [][]byte{alignedBytes(int64(4 * len(cg.x))), cg.tg.g.Tensor(cg.wi).Data, alignedBytes(int64(4 * 64))}
		copy(in[0], f32Bytes(cg.x))
		copy(in[2], f32Bytes(cg.b))
		out := [][]byte{alignedBytes(int64(4 * len(want)))}
		wk := NewWorkers(threads)
		k.Run(wk, in, out, poisoned(scratch))
		wk.Close()
		got := asF32(out[0])
		checkBound(t, got, want, bound, 64*0x1p-24)
		if first == nil {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("%d threads: other bits than on one", threads)
		}
	}
}

// TestConvGather runs convolutions of windows on NCHW16c input and output
// (blockedGather: A gathered a k slice at a time) against refConv, with a
// fused Relu.
func TestConvGather(t *testing.T) {
	if !useAVX512Kernel || !dw512 {
		t.Skip("the channel-blocked path needs AVX-512")
	}
	saved := winogradOn
	winogradOn = false
	defer func() { winogradOn = saved }()
	cases := []struct{ n, c, m, h, w, k, s, pad int }{
		{1, 64, 64, 23, 21, 3, 2, 1}, // ResNet's stride-2 3×3 onto 12×11, three k slices
		{2, 16, 32, 12, 13, 3, 1, 1}, // unit stride, two images
		{1, 16, 32, 30, 30, 7, 2, 3}, // a 7×7 window onto 15×15
		{1, 32, 32, 20, 20, 1, 2, 1}, // 1×1 of stride 2 with pads
		{1, 48, 64, 17, 17, 3, 1, 0}, // no padding, 15×15: tiles of 12 and a tail
	}
	for _, cs := range cases {
		for _, threads := range []int{1, 3} {
			for _, relu := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/t%d/relu%v", cs, threads, relu), func(t *testing.T) {
					testWindowsBlocked(t, squareConv(cs.n, cs.c, cs.m, cs.h, cs.w, cs.k, cs.s, cs.pad), threads, relu, true)
				})
			}
		}
	}
}

// TestConvStemRows runs stems into planes through stemRows (eight
// channels by 48 positions a tile, from the input split by column
// parity), with no epilogue, a Relu its kernel applies as it stores, a
// Sigmoid the fused epilogue applies over each row, and a residual,
// which it leaves to the im2col product: against refConv, and for the
// same bits as the im2col product.
func TestConvStemRows(t *testing.T) {
	if !useAVX512Kernel || !dw512 {
		t.Skip("stemRows needs AVX-512")
	}
	cases := []struct {
		n, c, m, h, w, k, pad int
	}{
		{1, 3, 32, 30, 98, 3, 1},  // MobileNetV2's stem onto 15×49: a tail tile a row
		{2, 3, 16, 20, 96, 3, 1},  // two images, whole tiles
		{1, 8, 24, 22, 121, 5, 2}, // 5×5 onto 11×61
		{1, 3, 64, 40, 110, 7, 3}, // ResNet's 7×7 onto 20×55
		{1, 4, 8, 17, 100, 3, 0},  // no padding
	}
	for _, cs := range cases {
		for _, threads := range []int{1, 3} {
			for _, ep := range []string{"none", "relu", "sigmoid", "residual"} {
				t.Run(fmt.Sprintf("%v/t%d/%s", cs, threads, ep), func(t *testing.T) {
					testStemRows(t, squareConv(cs.n, cs.c, cs.m, cs.h, cs.w, cs.k, 2, cs.pad), threads, ep)
				})
			}
		}
	}
}

func testStemRows(t *testing.T, cc convCase, threads int, epName string) {
	cg := buildConvCase(cc, randF32)
	want, bound := refConvBound(cc, cg)
	k, scratch, err := BuildFor(cg.tg.g, cg.n, threads)
	if err != nil {
		t.Fatal(err)
	}
	if ck, ok := k.(*convKernel); !ok || ck.stem == nil {
		t.Fatalf("the stem does not run as stemRows")
	}
	y := cg.n.Outputs[0]
	shape := []int64(cg.tg.g.Tensor(y).Shape)
	m := int(cc.m)
	in := [][]byte{alignedBytes(int64(4 * len(cg.x))), cg.tg.g.Tensor(cg.wi).Data, alignedBytes(int64(4 * m))}
	copy(in[0], f32Bytes(cg.x))
	copy(in[2], f32Bytes(cg.b))
	var chain []*ir.Node
	switch epName {
	case "relu":
		chain = append(chain, cg.tg.node("Relu", nil, []ir.TensorID{y}, out{ir.Float32, shape}))
		for i := range want {
			want[i] = max(0, want[i])
		}
	case "sigmoid":
		chain = append(chain, cg.tg.node("Sigmoid", nil, []ir.TensorID{y}, out{ir.Float32, shape}))
		for i, v := range want {
			// σ' ≤ 1/4, and the sigmoid's own few ulps of a value ≤ 1.
			want[i], bound[i] = 1/(1+math.Exp(-v)), bound[i]/4+1.0/16
		}
	case "residual":
		r := randF32(len(want))
		ri := cg.tg.input("r", ir.Float32, shape...)
		add := cg.tg.node("Add", nil, []ir.TensorID{y, ri}, out{ir.Float32, shape})
		chain = append(chain, add, cg.tg.node("Relu", nil, []ir.TensorID{add.Outputs[0]}, out{ir.Float32, shape}))
		in = append(in, alignedBytes(int64(4*len(r))))
		copy(in[3], f32Bytes(r))
		for i := range want {
			want[i], bound[i] = max(0, want[i]+float64(r[i])), bound[i]+math.Abs(float64(r[i]))
		}
	}
	if chain != nil {
		k = fuseChain(t, cg, k, chain, threads)
	}
	run := func(k Kernel) []float32 {
		bytes := int64(4 * len(want))
		outs := runKernel(k, threads, scratch, in, []int64{bytes, bytes, int64(max(64, workBytes(k)))})
		if chain != nil {
			return asF32(outs[1])
		}
		return asF32(outs[0])
	}
	got := run(k)
	checkBound(t, got, want, bound, 64*0x1p-24)
	// The im2col product's bits.
	plain := *k.(*convKernel)
	plain.stem = nil
	if ref := run(&plain); !slices.EqualFunc(got, ref, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Errorf("stemRows and the im2col product differ")
	}
}
