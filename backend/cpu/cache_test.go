package cpu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCacheRows checks the rows kernels of CachedAttention, assembly and
// Go, against float64 sums over strided rows: any count of rows (eight at
// a time, then one by one) and widths of one block of eight up to several
// blocks of sixty-four, and widths the assembly does not take.
func TestCacheRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range []int{8, 12, 16, 64, 72, 128, 200} {
		for _, rows := range []int{0, 1, 7, 8, 9, 17, 64} {
			stride := d + 8*rng.IntN(3)
			k := make([]float32, rows*stride+d)
			for i := range k {
				k[i] = float32(rng.NormFloat64())
			}
			q := make([]float32, d)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			s := make([]float32, rows+1)
			s[rows] = 42 // past the rows: untouched
			dotRows(s, q, k, rows, stride, d)
			for j := range rows {
				var want, mag float64
				for c := range d {
					want += float64(q[c]) * float64(k[j*stride+c])
					mag += math.Abs(float64(q[c]) * float64(k[j*stride+c]))
				}
				if math.Abs(float64(s[j])-want) > 1e-6*mag {
					t.Fatalf("d %d rows %d: s[%d] = %g, want %g", d, rows, j, s[j], want)
				}
			}
			if s[rows] != 42 {
				t.Fatalf("d %d rows %d: dotRows wrote past its rows", d, rows)
			}
			o := make([]float32, d+1)
			o[d] = 42
			weightRows(o, q, k, min(rows, d), stride, d)
			for c := range d {
				var want, mag float64
				for j := range min(rows, d) {
					want += float64(q[j]) * float64(k[j*stride+c])
					mag += math.Abs(float64(q[j]) * float64(k[j*stride+c]))
				}
				if math.Abs(float64(o[c])-want) > 1e-6*mag {
					t.Fatalf("d %d rows %d: o[%d] = %g, want %g", d, rows, c, o[c], want)
				}
			}
			if o[d] != 42 {
				t.Fatalf("d %d rows %d: weightRows wrote past its width", d, rows)
			}
		}
	}
}
