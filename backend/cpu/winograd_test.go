package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// wgCases are convolutions that take the Winograd path: odd output sizes
// (clipped tiles), channel counts that are not multiples of the GEMM's
// panels, k slices (300 input channels), tile blocks that end inside a
// tile row (56²), tiles that end in a lone GEMM panel (11²: 36 tiles),
// pads 0 and asymmetric pads, batches, with and without bias.
var wgCases = []convCase{
	{name: "32→32 11² p1", x: ints64(1, 32, 11, 11), m: 32, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "64→40 56² p1 blocks", x: ints64(1, 64, 56, 56), m: 40, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "33→35 13×11 p1", x: ints64(1, 33, 13, 11), m: 35, pads: ints64(1, 1, 1, 1), bias: false},
	{name: "300→36 11×12 k slices", x: ints64(1, 300, 11, 12), m: 36, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "40→48 15×17 asymmetric", x: ints64(1, 40, 15, 17), m: 48, pads: ints64(0, 2, 1, 0), bias: true},
	{name: "32→32 14² p0", x: ints64(1, 32, 14, 14), m: 32, pads: ints64(0, 0, 0, 0), bias: true},
	{name: "batch 2 32→33 14²", x: ints64(2, 32, 14, 14), m: 33, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "48→40 60×50 blocks", x: ints64(1, 48, 60, 50), m: 40, pads: ints64(1, 1, 1, 1), bias: true},
}

// wg4Cases take F(4×4, 3×3): clipped tiles on both sides (37×35), k
// slices (300 input channels), asymmetric pads, pads 0, batches, and tile
// blocks that end inside a tile row (76²: 361 tiles in two blocks).
var wg4Cases = []convCase{
	{name: "33→35 37×35 p1", x: ints64(1, 33, 37, 35), m: 35, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "300→36 34×30 k slices", x: ints64(1, 300, 34, 30), m: 36, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "40→48 33×35 asymmetric", x: ints64(1, 40, 33, 35), m: 48, pads: ints64(0, 2, 1, 0), bias: false},
	{name: "32→32 34² p0", x: ints64(1, 32, 34, 34), m: 32, pads: ints64(0, 0, 0, 0), bias: true},
	{name: "batch 2 32→33 32²", x: ints64(2, 32, 32, 32), m: 33, pads: ints64(1, 1, 1, 1), bias: true},
	{name: "40→40 76² blocks", x: ints64(1, 40, 76, 76), m: 40, pads: ints64(1, 1, 1, 1), bias: true},
}

func wgCase(c convCase) convCase {
	c.group, c.kern, c.strides, c.dil, c.constW = 1, ints64(3, 3), ints64(1, 1), ints64(1, 1), true
	return c
}

// withWinograd4 runs f with F(4×4, 3×3) allowed or not.
func withWinograd4(on bool, f func()) {
	saved := winograd4On
	winograd4On = on
	defer func() { winograd4On = saved }()
	f()
}

// wgRadix builds c's convolution for two threads and returns the output
// tile side of its Winograd path (2 or 4), or 0 where it takes another.
func wgRadix(t *testing.T, c convCase) int {
	g := buildConvCase(c, randQuarters)
	k, _, err := BuildFor(g.tg.g, g.n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ck, ok := k.(*convKernel); ok && ck.wg != nil {
		return ck.wg.r
	}
	return 0
}

var wgThreads = [][2]int{{1, 1}, {2, 2}, {3, 3}, {2, 1}, {1, 3}}

// TestWinograd checks F(2×2, 3×3) against the reference loop on multiples
// of 1/4, where its transforms and products are exact, on 1 to 3 threads,
// built for as many threads or others.
func TestWinograd(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	withWinograd4(false, func() {
		for _, c := range wgCases {
			c := wgCase(c)
			if r := wgRadix(t, c); r != 2 {
				t.Fatalf("%s: Winograd tiles %d, want 2", c.name, r)
			}
			for _, th := range wgThreads {
				t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
					testConvFor(t, c, th[0], th[1])
				})
			}
		}
	})
}

// TestWinograd4 checks F(4×4, 3×3) against the reference loop on
// multiples of 1/4. Its filter transform divides by 3, so it is not exact
// there: each output may be off by 2⁻¹⁶ of the sum of the absolute values
// of its products and bias (1.5e-5; measured: at most 2.4e-6), which
// stays below 1/16, the least a lost or misplaced nonzero product changes
// it by, on up to 455 input channels.
func TestWinograd4(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	for _, c := range wg4Cases {
		c := wgCase(c)
		if r := wgRadix(t, c); r != 4 {
			t.Fatalf("%s: Winograd tiles %d, want 4", c.name, r)
		}
		cg := buildConvCase(c, randQuarters)
		want := refConv(c, cg.x, cg.w, cg.b, cg.pads, cg.ys)
		sum := refConv(c, absF32(cg.x), absF32(cg.w), absF32(cg.b), cg.pads, cg.ys)
		for _, th := range wgThreads {
			t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
				y := runConvCase(t, c, cg, th[0], th[1])
				bad, worst := 0, 0.0
				for i := range y {
					d := math.Abs(float64(y[i]) - want[i])
					worst = max(worst, d/sum[i])
					if !(d <= sum[i]/(1<<16)) {
						if bad < 5 {
							t.Errorf("Y[%d] = %v, want %v (absolute sum %v)", i, y[i], want[i], sum[i])
						}
						bad++
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d values off", bad, len(y))
				}
				t.Logf("worst error %.3g of the absolute sum", worst)
			})
		}
	}
}

// absF32 returns the absolute values of v.
func absF32(v []float32) []float32 {
	a := make([]float32, len(v))
	for i, x := range v {
		a[i] = float32(math.Abs(float64(x)))
	}
	return a
}

// TestWinogradRounding compares the Winograd paths with the direct
// product on normal random values, where they differ by rounding only:
// F(2×2, 3×3)'s transforms add a few roundings per output (rel L2 at most
// 1e-6 here), F(4×4, 3×3)'s more, multiplied by up to 8 (measured
// 1.5e-6 to 1.7e-6; at most 5e-6 here), both far below the error a
// float32 model may show.
func TestWinogradRounding(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	normal := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	for _, r := range []int{2, 4} {
		cases, bound := append(wgCases, wg4Cases...), 1e-6
		if r == 4 {
			cases, bound = wg4Cases, 5e-6
		}
		withWinograd4(r == 4, func() {
			for _, c := range cases {
				c := wgCase(c)
				g := buildConvCase(c, normal)
				run := func(wino bool) []float32 {
					saved := winogradOn
					winogradOn = wino
					defer func() { winogradOn = saved }()
					k, scratch, err := BuildFor(g.tg.g, g.n, 2)
					if err != nil {
						t.Fatal(err)
					}
					if ck := k.(*convKernel); (ck.wg != nil) != wino || wino && ck.wg.r != r {
						t.Fatalf("%s: Winograd path %v, want %v with %d×%d tiles", c.name, ck.wg != nil, wino, r, r)
					}
					in := [][]byte{alignedCopy(f32Bytes(g.x)), alignedCopy(g.tg.g.Tensor(g.wi).Data)}
					if c.bias {
						in = append(in, alignedCopy(f32Bytes(g.b)))
					}
					y := alignedBytes(elems(g.ys) * 4)
					pool := NewWorkers(2)
					defer pool.Close()
					k.Run(pool, in, [][]byte{y}, poisoned(scratch))
					return append([]float32(nil), asF32(y)...)
				}
				wino, direct := run(true), run(false)
				var num, den float64
				for i := range direct {
					d := float64(wino[i]) - float64(direct[i])
					num += d * d
					den += float64(direct[i]) * float64(direct[i])
				}
				if rel := math.Sqrt(num / den); rel > bound || math.IsNaN(rel) {
					t.Errorf("F(%d×%d): %s: rel L2 %.3g from the direct product, want at most %g", r, r, c.name, rel, bound)
				}
			}
		})
	}
}

// TestWinogradScratchBounded checks that the Winograd path's scratch is
// its blocks of tiles and a few split rows per worker, whatever the image
// size, that wide rows and planes of few tiles take the direct product,
// and which tiles the others take.
func TestWinogradScratchBounded(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	for _, c := range []struct {
		ch, h, w, m int64
		r           int // the tiles' side, 0 for the direct product
	}{
		{64, 512, 512, 64, 4},
		{256, 56, 56, 256, 4},
		// F(4×4, 3×3) takes 64 tiles and at most 512 channels.
		{128, 28, 28, 128, 2},
		{256, 56, 56, 512, 2},
		{32, 4, 2*wgMaxTileRow + 2, 32, 0},
		// Fewer tiles than one 12×32 micro-tile: the direct product.
		{512, 7, 7, 512, 0},
		{32, 8, 14, 32, 0},
		{32, 8, 16, 32, 2},
	} {
		g, n := convNode(1, c.ch, c.h, c.w, c.m, 3, 1, 1, 1, true)
		k, scratch, err := BuildFor(g, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		r := 0
		if wg := k.(*convKernel).wg; wg != nil {
			r = wg.r
		}
		if r != c.r {
			t.Errorf("%d→%d %d×%d: Winograd tiles %d, want %d", c.ch, c.m, c.h, c.w, r, c.r)
			continue
		}
		if r == 0 {
			continue
		}
		// V and M, the packed tails, and two workers' split rows (a
		// block's tile rows and two, r²/2 quarter or half rows each).
		xis, tw := (r+2)*(r+2), ceilDiv(int(c.w), r)
		rows := r*(wgBlockFloats/xis/tw+2) + 2
		limit := int64(wgBlockFloats+xis*2*gemmNR*int(c.ch)+2*rows*r*r/2*(tw+16)+4096) * 4
		if scratch > limit {
			t.Errorf("%d→%d %d×%d: scratch %d bytes, want at most %d", c.ch, c.m, c.h, c.w, scratch, limit)
		}
	}
}
