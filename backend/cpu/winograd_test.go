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

func wgCase(c convCase) convCase {
	c.group, c.kern, c.strides, c.dil, c.constW = 1, ints64(3, 3), ints64(1, 1), ints64(1, 1), true
	return c
}

// TestWinograd checks the Winograd path against the reference loop on
// multiples of 1/4, where its transforms and products are exact, on 1 to
// 3 threads, built for as many threads or others.
func TestWinograd(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	for _, c := range wgCases {
		c := wgCase(c)
		g := buildConvCase(c, randQuarters)
		k, _, err := BuildFor(g.tg.g, g.n, 2)
		if err != nil {
			t.Fatal(err)
		}
		if ck, ok := k.(*convKernel); !ok || ck.wg == nil {
			t.Fatalf("%s: not on the Winograd path", c.name)
		}
		for _, th := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {2, 1}, {1, 3}} {
			t.Run(fmt.Sprintf("%s/built=%d/threads=%d", c.name, th[0], th[1]), func(t *testing.T) {
				testConvFor(t, c, th[0], th[1])
			})
		}
	}
}

// TestWinogradRounding compares the Winograd path with the direct
// product on normal random values, where they differ by rounding only:
// F(2×2, 3×3)'s transforms add a few roundings per output, far below the
// error a float32 model may show.
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
	for _, c := range wgCases {
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
			if ck := k.(*convKernel); (ck.wg != nil) != wino {
				t.Fatalf("%s: Winograd path %v, want %v", c.name, ck.wg != nil, wino)
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
		if rel := math.Sqrt(num / den); rel > 1e-6 || math.IsNaN(rel) {
			t.Errorf("%s: rel L2 %.3g from the direct product, want at most 1e-6", c.name, rel)
		}
	}
}

// TestWinogradScratchBounded checks that the Winograd path's scratch is
// its blocks of tiles and a few split rows per worker, whatever the image
// size, and that wide rows and planes of few tiles take the direct
// product.
func TestWinogradScratchBounded(t *testing.T) {
	if !dw512 || !useAVX512Kernel {
		t.Skip("no AVX-512 kernels")
	}
	for _, c := range []struct {
		ch, h, w, m int64
		wino        bool
	}{
		{64, 512, 512, 64, true},
		{256, 56, 56, 256, true},
		{32, 4, 2*wgMaxTileRow + 2, 32, false},
		// Fewer tiles than one 12×32 micro-tile: the direct product.
		{512, 7, 7, 512, false},
		{32, 8, 14, 32, false},
		{32, 8, 16, 32, true},
	} {
		g, n := convNode(1, c.ch, c.h, c.w, c.m, 3, 1, 1, 1, true)
		k, scratch, err := BuildFor(g, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		ck := k.(*convKernel)
		if (ck.wg != nil) != c.wino {
			t.Errorf("%d×%d: Winograd path %v, want %v", c.h, c.w, ck.wg != nil, c.wino)
			continue
		}
		if !c.wino {
			continue
		}
		limit := int64(wgBlockFloats+16*2*gemmNR*int(c.ch)+2*(2*(wgBlockFloats/16/ceilDiv(int(c.w), 2)+4)+2)*int(c.w)+4096) * 4
		if scratch > limit {
			t.Errorf("%d→%d %d×%d: scratch %d bytes, want at most %d", c.ch, c.m, c.h, c.w, scratch, limit)
		}
	}
}
