package quant

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// BenchmarkGEMV times y[1,n] = x[1,k]·Wᵀ on one goroutine, with each
// kernel this CPU runs, and reports the weight bytes read per second.
// "hot" multiplies one W again and again: after the first run it comes
// from the cache (the shapes here fit a large last-level cache). "cold"
// takes a different copy of W each time from 1 GiB of them, as a model
// too large for the cache streams its weights from memory.
func BenchmarkGEMV(b *testing.B) {
	var arena []byte // the copies of W for "cold"
	for _, shape := range [][2]int{{2048, 2048}, {2048, 5632}} {
		k, n := shape[0], shape[1]
		for _, typ := range types {
			r := rand.New(rand.NewPCG(3, uint64(typ)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, 1, k)
			y := make([]float32, n)
			copies := 0
			for _, path := range Paths(typ) {
				im := implOf(typ, path)
				scratch := make([]byte, 64+actStride(im.kind, k))
				gemv := func(w []byte) {
					p, err := prepare(y, x, 1, k, w, n, typ, scratch, im, true)
					if err != nil {
						b.Fatal(err)
					}
					p.Run(0, n)
				}
				b.Run(fmt.Sprintf("hot/k=%d/n=%d/%s/%s", k, n, typ, path), func(b *testing.B) {
					b.SetBytes(int64(len(w)))
					for b.Loop() {
						gemv(w)
					}
				})
				if path == "go" {
					continue
				}
				b.Run(fmt.Sprintf("cold/k=%d/n=%d/%s/%s", k, n, typ, path), func(b *testing.B) {
					if copies == 0 {
						if arena == nil {
							arena = make([]byte, 1<<30)
						}
						copies = len(arena) / len(w)
						for i := range copies {
							copy(arena[i*len(w):], w)
						}
					}
					b.SetBytes(int64(len(w)))
					i := 0
					for b.Loop() {
						gemv(arena[i*len(w) : (i+1)*len(w)])
						i = (i + 1) % copies
					}
				})
			}
		}
	}
}

// BenchmarkGEMM times a prompt's product, y[512,n] = x[512,k]·Wᵀ, on one
// goroutine, with each kernel this CPU runs: "tiles" as Run computes it,
// "rows" one output at a time with the dot kernel, as Run did before it
// had tiles, and "amx" on the AMX tiles (RunWith), where the CPU has
// them. It reports G ops/s (two a multiply-add) and, in the name, the
// path. Quantising the activations (Prepare) is left out.
func BenchmarkGEMM(b *testing.B) {
	const m = 512
	for _, shape := range [][2]int{{2048, 2048}, {2048, 5632}, {5632, 2048}} {
		k, n := shape[0], shape[1]
		for _, typ := range []ggml.Type{ggml.Q4_0, ggml.Q8_0, ggml.F16, ggml.Q6_K, ggml.Q4_K} {
			r := rand.New(rand.NewPCG(5, uint64(typ)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, m, k)
			y := make([]float32, m*n)
			for _, path := range Paths(typ) {
				if path == "go" {
					continue
				}
				for _, tiles := range []bool{false, true} {
					im := implOf(typ, path)
					name := "tiles"
					if !tiles {
						im.tile, name = tiling{}, "rows"
					}
					if tiles && im.tile.f == nil {
						continue
					}
					scratch := make([]byte, 64+m*actStride(im.kind, k))
					p, err := prepare(y, x, m, k, w, n, typ, scratch, im, true)
					if err != nil {
						b.Fatal(err)
					}
					b.Run(fmt.Sprintf("m=%d/k=%d/n=%d/%s/%s/%s", m, k, n, typ, path, name), func(b *testing.B) {
						for b.Loop() {
							p.Run(0, n)
						}
						b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gop/s")
					})
				}
			}
			if !AMX(typ) {
				continue
			}
			scratch := make([]byte, ScratchBytes(typ, m, k))
			work := make([]byte, WorkBytes(typ, m, k))
			p, err := Prepare(y, x, m, k, w, n, typ, scratch)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("m=%d/k=%d/n=%d/%s/amx/tiles", m, k, n, typ), func(b *testing.B) {
				for b.Loop() {
					p.RunWith(0, n, work)
				}
				b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gop/s")
			})
		}
	}
}

// BenchmarkMemory measures what one core reads and copies: bytes.IndexByte
// scanning a buffer for a byte it does not hold (vector loads, nothing
// else), and copy (bytes read plus bytes written), on buffers that fit
// the last-level cache and on ones that do not.
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
