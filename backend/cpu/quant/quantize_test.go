package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// The assembly quantisation of activation rows writes the bytes the Go
// one writes, on random rows and on awkward blocks: zeros, −0, ties,
// a NaN, infinities, values whose scale is subnormal or overflows f16.
func TestQuantizeQ8_0Asm(t *testing.T) {
	const k = 32 * 40
	r := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64()) * float32(math.Pow(10, float64(r.IntN(9)-4)))
	}
	blk := func(b int) []float32 { return x[32*b : 32*b+32] }
	clear(blk(1))
	for i := range blk(2) {
		blk(2)[i] = float32(math.Copysign(0, -1))
	}
	for i := range blk(3) {
		blk(3)[i] = float32(i) - 15.5 // ties after scaling by 127/16.5? some
	}
	blk(4)[0], blk(4)[1], blk(4)[2] = 127, 0.5, 1.5
	blk(5)[7] = float32(math.NaN())
	blk(11)[31] = float32(math.NaN())
	blk(6)[3] = float32(math.Inf(1))
	blk(7)[9] = float32(math.Inf(-1))
	for i := range blk(8) {
		blk(8)[i] = 1e-9 * float32(i-16) // d subnormal in f16
	}
	blk(9)[0] = 1e30    // d overflows f16
	blk(10)[5] = -1e-40 // a subnormal float32 alone
	for _, bias := range []bool{false, true} {
		want := make([]byte, actStride(kindQ8_0B, k))
		got := make([]byte, len(want))
		for i := range got {
			got[i], want[i] = 0xa5, 0xa5
		}
		quantizeQ8_0Go(want, x, bias)
		if !quantizeQ8_0Asm(got, x, bias, nil, nil) {
			t.Skip("no assembly quantisation here")
		}
		// The values and sums of fours must be the same bytes; the
		// scales the same floats, any NaN as good as another (Go's max
		// leaves a NaN whose payload depends on the other values).
		nb := k / 32
		od, os := q8Offsets(k, bias)
		if !bytes.Equal(got[:od], want[:od]) || !bytes.Equal(got[os+4*nb:], want[os+4*nb:]) {
			for i := range got {
				if got[i] != want[i] && (i < od || i >= os+4*nb) {
					t.Errorf("bias %v: byte %d is %#x, Go's %#x", bias, i, got[i], want[i])
					break
				}
			}
		}
		g, w := f32s(got[od:], 2*nb), f32s(want[od:], 2*nb)
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
				t.Errorf("bias %v: scale %d of block %d is %g, Go's %g", bias, i/nb, i%nb, g[i], w[i])
			}
		}
	}
}

// Quantising into the AMX layout as well puts each block's fours and
// scale where amxRow puts them, and writes nothing else there.
func TestQuantizeQ8_0AMXLayout(t *testing.T) {
	const k, nb = 32 * 9, 9
	r := rand.New(rand.NewPCG(13, 14))
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, bias := range []bool{false, true} {
		a := make([]byte, actStride(kindQ8_0B, k))
		want, got := make([]byte, 16*k), make([]byte, 16*k)
		wantS, gotS := make([]float32, 16*nb), make([]float32, 16*nb)
		for i := range got {
			got[i], want[i] = 0xa5, 0xa5
		}
		const c = 5 // the row's place in its tile
		if !quantizeQ8_0Asm(a, x, bias, got[4*c:], gotS[c:]) {
			t.Skip("no assembly quantisation here")
		}
		amxRow(want[4*c:], wantS[c:], a, k, bias)
		if !bytes.Equal(got, want) {
			t.Errorf("bias %v: the layout's values differ", bias)
		}
		for i := range gotS {
			if gotS[i] != wantS[i] {
				t.Errorf("bias %v: scale %d is %g, want %g", bias, i, gotS[i], wantS[i])
			}
		}
	}
}

// Goroutines quantising shares of the rows of a product from Prepared
// (at once) leave in the scratch what Prepare leaves, AMX layout
// included.
func TestQuantizeShares(t *testing.T) {
	const m, n = 37, 16
	for _, typ := range []ggml.Type{ggml.Q4_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K, ggml.Q5_1} {
		k := 512
		r := rand.New(rand.NewPCG(uint64(typ), 15))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		y := make([]float32, m*n)
		want := make([]byte, ScratchBytes(typ, m, k))
		got := make([]byte, len(want))
		for i := range got {
			got[i], want[i] = 0x5a, 0x5a
		}
		if _, err := Prepare(y, x, m, k, w, n, typ, want); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, s := range [][2]int{{0, 5}, {5, 30}, {30, m}} {
			p, err := Prepared(y, x, m, k, w, n, typ, got)
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { p.Quantize(s[0], s[1]) })
		}
		wg.Wait()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the scratch differs", typ)
		}
	}
}
