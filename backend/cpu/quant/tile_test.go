package quant

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// runRange computes the product with the kernel im over the weight rows
// of each range in parts (as workers take them), with its tiles or,
// without tiles, one output at a time.
func runRange(t *testing.T, typ ggml.Type, im impl, tiles bool, x []float32, m, k int, w []byte, n int, parts [][2]int) []float32 {
	t.Helper()
	if !tiles {
		im.tile = tiling{}
	}
	y := make([]float32, m*n)
	for i := range y {
		y[i] = float32(math.NaN()) // every output must be written
	}
	scratch := make([]byte, 64+m*actStride(im.kind, k))
	p, err := prepare(y, x, m, k, w, n, typ, scratch, im, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range parts {
		p.Run(r[0], r[1])
	}
	return y
}

// tileShapes are products of awkward sizes for the tiles: rows and weight
// rows not multiples of a tile, fewer than a tile, one weight row; k of
// one block, of an odd number of blocks and of several.
func tileShapes(typ ggml.Type) (s [][3]int) {
	ks := []int{32, 64, 96, 288, 1024}
	if typ.BlockSize() == 256 {
		ks = []int{256, 512, 768}
	}
	if typ == ggml.F16 || typ == ggml.BF16 || typ == ggml.F32 {
		ks = append(ks, 1, 31, 45, 100)
	}
	for _, m := range []int{1, 3, 4, 5, 8, 9, 13} {
		for _, k := range ks {
			for _, n := range []int{1, 2, 3, 4, 5, 7, 16, 17} {
				s = append(s, [3]int{m, k, n})
			}
		}
	}
	return append(s, [3]int{64, 2048, 37}, [3]int{41, 5632, 20})
}

// The tile kernels give each output the bits the dot kernel of their path
// gives it, for every path this CPU runs, whatever the ranges of weight
// rows Run is given.
func TestTilesMatchRows(t *testing.T) {
	for _, typ := range types {
		for _, path := range Paths(typ) {
			im := implOf(typ, path)
			if im.tile.f == nil {
				continue
			}
			tested := 0
			for _, sh := range tileShapes(typ) {
				m, k, n := sh[0], sh[1], sh[2]
				r := rand.New(rand.NewPCG(uint64(typ), uint64(m*k*n+3)))
				w := randomWeights(r, typ, n, k)
				x := randomX(r, m, k)
				whole := [][2]int{{0, n}}
				want := runRange(t, typ, im, false, x, m, k, w, n, whole)
				ranges := [][][2]int{whole}
				if n > 2 {
					ranges = append(ranges, [][2]int{{0, 1}, {1, n - 1}, {n - 1, n}})
				}
				for _, parts := range ranges {
					y := runRange(t, typ, im, true, x, m, k, w, n, parts)
					for i := range y {
						if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
							t.Errorf("%s %s m=%d k=%d n=%d ranges %v: y[%d] = %g, one by one %g", typ, path, m, k, n, parts, i, y[i], want[i])
							break
						}
					}
				}
				tested++
			}
			t.Logf("%s %s: tiles of %d×%d, %d shapes", typ, path, im.tile.mr, im.tile.nr, tested)
		}
	}
}

// Tiles on extreme values: weights at their limits, activations of
// ±127 after quantisation, zeros, and one huge value among tiny ones.
func TestTilesOnExtremes(t *testing.T) {
	const m, k, n = 8, 512, 8
	x := make([]float32, m*k)
	for e := range k {
		x[e] = 1e3 * float32(1-2*(e&1))
		x[2*k+e] = 1e-30
		x[5*k+e] = -1e3
	}
	x[2*k+5] = 1e30
	for _, typ := range types {
		for _, fill := range []byte{0x00, 0xff, 0x80, 0x7f} {
			w := extremeWeights(typ, n, k, fill, 6)
			for _, path := range Paths(typ) {
				im := implOf(typ, path)
				if im.tile.f == nil {
					continue
				}
				whole := [][2]int{{0, n}}
				want := runRange(t, typ, im, false, x, m, k, w, n, whole)
				y := runRange(t, typ, im, true, x, m, k, w, n, whole)
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s %s, bytes %#x: y[%d] = %g, one by one %g", typ, path, fill, i, y[i], want[i])
						break
					}
				}
			}
		}
	}
}
