package quant

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// BenchmarkGEMV times y[1,n] = x[1,k]·Wᵀ on one goroutine, each kernel
// this CPU runs, and reports the weight bytes read per second.
func BenchmarkGEMV(b *testing.B) {
	for _, shape := range [][2]int{{2048, 2048}, {2048, 5632}} {
		k, n := shape[0], shape[1]
		for _, typ := range types {
			r := rand.New(rand.NewPCG(3, uint64(typ)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, 1, k)
			y := make([]float32, n)
			for _, path := range Paths(typ) {
				b.Run(fmt.Sprintf("k=%d/n=%d/%s/%s", k, n, typ, path), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					im := implOf(typ, path)
					scratch := make([]byte, 64+actStride(im.kind, k))
					for b.Loop() {
						p, err := prepare(y, x, 1, k, w, n, typ, scratch, im)
						if err != nil {
							b.Fatal(err)
						}
						p.Run(0, n)
					}
				})
			}
		}
	}
}

// BenchmarkMemory measures what one core reads and copies: bytes.IndexByte
// scanning a buffer for a byte it does not hold (vector loads, nothing
// else), and copy (bytes read plus bytes written), on buffers that fit
// the last-level cache and on one of 1 GiB that does not.
func BenchmarkMemory(b *testing.B) {
	for _, size := range []int{4 << 20, 16 << 20, 1 << 30} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = 1
		}
		b.Run(fmt.Sprintf("read/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if bytes.IndexByte(buf, 0) >= 0 {
					b.Fatal("found")
				}
			}
		})
		if size > 64<<20 {
			size = 256 << 20 // a copy of 2·256 MiB is beyond the cache too
		}
		dst := make([]byte, size)
		b.Run(fmt.Sprintf("copy/%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(2 * int64(size))
			for b.Loop() {
				copy(dst, buf[:size])
			}
		})
	}
}

var _ = ggml.Q4_0
