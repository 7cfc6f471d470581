//go:build !noasm

package quant

import (
	"unsafe"

	"golang.org/x/sys/cpu"

	"github.com/berth-ml/berth/weights/ggml"
)

// The AVX2 kernels need AVX2 and F16C (every AVX2 CPU has it; x/sys/cpu
// does not report it, so CPUID is asked).
var hasAVX2 = cpu.X86.HasAVX2 && cpuid1ECX()&(1<<29) != 0

// cpuid1ECX is ECX of CPUID leaf 1.
func cpuid1ECX() uint32

// The assembly kernels (dot_amd64.s). nb is the number of blocks, n the
// number of runs of 32 values; each returns what its Go counterpart
// (ref.go) returns for that many.

//go:noescape
func dotQ8_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_1AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_1AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_KAVX2(w, q *byte, d *float32, sums *int16, nb int) float32

//go:noescape
func dotQ5_KAVX2(w, q *byte, d *float32, sums *int16, nb int) float32

//go:noescape
func dotQ6_KAVX2(w, q *byte, d *float32, nb int) float32

//go:noescape
func dotF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotBF16AVX2(w *byte, x *float32, n int) float32

//go:noescape
func dotF16AVX512(w *byte, x *float32, n int) float32

//go:noescape
func dotBF16AVX512(w *byte, x *float32, n int) float32

// asmImpls lists the assembly kernels this CPU runs for type t, the
// fastest first.
func asmImpls(t ggml.Type) []impl {
	if !hasAVX2 {
		return nil
	}
	switch t {
	case ggml.Q8_0:
		return append(avx512Impls(t), withTile(impl32(dotQ8_0AVX2, 34, kindQ8_0, "avx2"), tile32(tileQ8_0AVX2, 34, kindQ8_0, 4, 1)))
	case ggml.Q4_0:
		return append(avx512Impls(t), withTile(impl32(dotQ4_0AVX2, 18, kindQ8_0B, "avx2"), tile32(tileQ4_0AVX2, 18, kindQ8_0B, 4, 1)))
	case ggml.Q5_0:
		return append(avx512Impls(t), impl32(dotQ5_0AVX2, 22, kindQ8_0B, "avx2"))
	case ggml.Q4_1:
		return append(avx512Impls(t), impl32(dotQ4_1AVX2, 20, kindQ8_0, "avx2"))
	case ggml.Q5_1:
		return append(avx512Impls(t), impl32(dotQ5_1AVX2, 24, kindQ8_0, "avx2"))
	case ggml.Q4_K:
		return []impl{{kindQ8_K, func(w, a []byte, k int) float32 { return qkcall(dotQ4_KAVX2, w, a, k, 144) }, "avx2", tileK(tileQ4_KAVX2, 144, 4)}}
	case ggml.Q5_K:
		return []impl{{kindQ8_K, func(w, a []byte, k int) float32 { return qkcall(dotQ5_KAVX2, w, a, k, 176) }, "avx2", tileK(tileQ5_KAVX2, 176, 4)}}
	case ggml.Q6_K:
		return []impl{{kindQ8_K, func(w, a []byte, k int) float32 {
			xq, xd, _ := qkRow(a, k)
			_ = w[210*(k/256)-1]
			return dotQ6_KAVX2(&w[0], &xq[0], &xd[0], k/256)
		}, "avx2", tileK(tileQ6_KAVX2, 210, 4)}}
	case ggml.F16:
		return floatImpls(dotF16AVX2, dotF16AVX512, tileF16AVX2, tileF16AVX512, tailF16)
	case ggml.BF16:
		return floatImpls(dotBF16AVX2, dotBF16AVX512, tileBF16AVX2, tileBF16AVX512, tailBF16)
	}
	return nil
}

// floatImpls are the kernels of F16 or BF16 weights: the AVX-512 dot
// and tile where the CPU has AVX-512, and the AVX2 ones; tail adds the
// values past the last whole run of 32.
func floatImpls(dot2, dot512 func(w *byte, x *float32, n int) float32, tile2, tile512 tileFloatFunc, tail func(w []byte, x []float32, k32 int) float32) []impl {
	dot := func(f func(w *byte, x *float32, n int) float32) dotFunc {
		return func(w, a []byte, k int) float32 {
			x := f32s(a, k)
			_ = w[2*k-1]
			return f(&w[0], &x[0], k/32) + tail(w, x, k&^31)
		}
	}
	avx2 := impl{kindFloat, dot(dot2), "avx2", tileF(tile2, 3, 1, tail)}
	if hasAVX512 {
		return []impl{{kindFloat, dot(dot512), "avx512", tileF(tile512, 4, 2, tail)}, avx2}
	}
	return []impl{avx2}
}

// qkcall runs a K-quant kernel (blocks of size bytes) on a prepared Q8_K
// row, after the bounds checks the assembly does not make.
func qkcall(f func(w, q *byte, d *float32, sums *int16, nb int) float32, w, a []byte, k, size int) float32 {
	xq, xd, sums := qkRow(a, k)
	nb := k / 256
	_ = w[size*nb-1]
	return f(&w[0], &xq[0], &xd[0], &sums[0], nb)
}

// The AVX-512 kernels need AVX-512 F, BW and VL; those named VNNI also
// AVX512-VNNI.
var (
	hasAVX512 = hasAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	hasVNNI   = hasAVX512 && cpu.X86.HasAVX512VNNI
)

// The kernels of 32-value blocks take the activation row's values,
// scales, block sums and sums of fours (the last only where their row is
// Q8_0B; any valid pointer elsewhere).
type dot32 func(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ8_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ8_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_1VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ4_1BW(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_1VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32

//go:noescape
func dotQ5_1BW(w, q *byte, d, s *float32, bias *int32, nb int) float32

// impl32 wraps a kernel of 32-value blocks of size bytes on rows of the
// given kind.
func impl32(f dot32, size int, kind kind, path string) impl {
	bias := kind == kindQ8_0B
	return impl{kind, func(w, a []byte, k int) float32 {
		nb := k / 32
		od, os := q8Offsets(k, bias)
		xd, xs := f32s(a[od:], nb), f32s(a[os:], nb)
		_ = a[os+4*nb+63] // the kernels read up to 64 bytes past a part
		_ = w[size*nb-1]
		b := (*int32)(unsafe.Pointer(&a[od]))
		if bias {
			b = &i32s(a[k:], k/4)[0]
		}
		return f(&w[0], &a[0], &xd[0], &xs[0], b, nb)
	}, path, tiling{}}
}

// avx512Impls lists the AVX-512 kernels of type t this CPU runs.
func avx512Impls(t ggml.Type) []impl {
	if !hasAVX512 {
		return nil
	}
	type pair struct {
		vnni, bw         dot32
		vnniTile, bwTile tile32Func
		size             int
		vnniKind         kind
		bwKind           kind
	}
	var p pair
	switch t {
	case ggml.Q8_0:
		p = pair{dotQ8_0VNNI, dotQ8_0BW, tileQ8_0VNNI, tileQ8_0BW, 34, kindQ8_0B, kindQ8_0}
	case ggml.Q4_0:
		p = pair{dotQ4_0VNNI, dotQ4_0BW, tileQ4_0VNNI, tileQ4_0BW, 18, kindQ8_0B, kindQ8_0B}
	case ggml.Q5_0:
		p = pair{dotQ5_0VNNI, dotQ5_0BW, nil, nil, 22, kindQ8_0B, kindQ8_0B}
	case ggml.Q4_1:
		p = pair{dotQ4_1VNNI, dotQ4_1BW, nil, nil, 20, kindQ8_0, kindQ8_0}
	case ggml.Q5_1:
		p = pair{dotQ5_1VNNI, dotQ5_1BW, nil, nil, 24, kindQ8_0, kindQ8_0}
	default:
		return nil
	}
	var v []impl
	if hasVNNI {
		v = append(v, withTile(impl32(p.vnni, p.size, p.vnniKind, "avx512vnni"), tile32(p.vnniTile, p.size, p.vnniKind, 4, 4)))
	}
	return append(v, withTile(impl32(p.bw, p.size, p.bwKind, "avx512bw"), tile32(p.bwTile, p.size, p.bwKind, 4, 4)))
}

// The tile kernels of 32-value blocks (tile512_amd64.s, tile_amd64.s)
// take y and its row length ldy, the first weight row and the bytes from
// one to the next, the first activation row's values, scales and sums of
// fours (any valid pointer where its rows have none) and the bytes from
// one row to the next. Each computes the tile of the Go wrapper tile32
// gives it.
type tile32Func func(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ4_0VNNI(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ4_0BW(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ8_0VNNI(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ8_0BW(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ4_0AVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

//go:noescape
func tileQ8_0AVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)

// tile32 wraps a tile kernel of mr activation rows by nr weight rows of
// 32-value blocks of size bytes, on prepared rows of the given kind; a
// nil kernel gives no tiling.
func tile32(f tile32Func, size int, kind kind, mr, nr int) tiling {
	if f == nil {
		return tiling{}
	}
	bias := kind == kindQ8_0B
	return tiling{func(y []float32, ldy int, w []byte, wRow int, a []byte, aRow int, k int) {
		nb := k / 32
		od, _ := q8Offsets(k, bias)
		_ = a[mr*aRow-1] // each row holds 64 bytes past its parts, which the kernels may read
		_ = w[(nr-1)*wRow+size*nb-1]
		_ = y[(mr-1)*ldy+nr-1]
		b := (*int32)(unsafe.Pointer(&a[od]))
		if bias {
			b = (*int32)(unsafe.Pointer(&a[k]))
		}
		f(&y[0], ldy, &w[0], wRow, &a[0], (*float32)(unsafe.Pointer(&a[od])), b, aRow, nb)
	}, mr, nr}
}

// The tile kernels of F16 and BF16 weights take y and its row length,
// the first weight row and the bytes from one to the next, the first
// activation row and the bytes from one to the next, and the number of
// whole runs of 32 values.
type tileFloatFunc func(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)

//go:noescape
func tileF16AVX512(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)

//go:noescape
func tileBF16AVX512(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)

//go:noescape
func tileBF16AVX2(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)

//go:noescape
func tileF16AVX2(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)

// tileF wraps a tile kernel of mr rows of float32 activations by nr
// weight rows of 16-bit values; tail adds the values past the last whole
// run of 32 to each output, as the dot kernels do.
func tileF(f tileFloatFunc, mr, nr int, tail func(w []byte, x []float32, k32 int) float32) tiling {
	return tiling{func(y []float32, ldy int, w []byte, wRow int, a []byte, aRow int, k int) {
		_ = a[(mr-1)*aRow+4*k-1]
		_ = w[(nr-1)*wRow+2*k-1]
		_ = y[(mr-1)*ldy+nr-1]
		f(&y[0], ldy, &w[0], wRow, &a[0], aRow, k/32)
		// As the dot kernels, add the tail even where it is empty (0):
		// a sum of −0 becomes +0.
		for i := range mr {
			x := f32s(a[i*aRow:], k)
			for j := range nr {
				y[i*ldy+j] += tail(w[j*wRow:j*wRow+2*k], x, k&^31)
			}
		}
	}, mr, nr}
}

// The tile kernels of the K-quants take y and its row length, the first
// weight row and the bytes from one to the next, the first activation
// row's values, scales and sums of 32 (unused by Q6_K) and the bytes
// from one row to the next, and the number of blocks.
type tileKFunc func(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)

//go:noescape
func tileQ4_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)

//go:noescape
func tileQ5_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)

//go:noescape
func tileQ6_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)

// tileK wraps a K-quant tile kernel of mr activation rows by one weight
// row of blocks of size bytes.
func tileK(f tileKFunc, size, mr int) tiling {
	return tiling{func(y []float32, ldy int, w []byte, wRow int, a []byte, aRow int, k int) {
		nb := k / 256
		_ = a[(mr-1)*aRow+k+4*nb+2*(k/32)-1]
		_ = w[size*nb-1]
		_ = y[(mr-1)*ldy]
		f(&y[0], ldy, &w[0], wRow, &a[0], (*float32)(unsafe.Pointer(&a[k])), (*int16)(unsafe.Pointer(&a[k+4*nb])), aRow, nb)
	}, mr, 1}
}

//go:noescape
func quantizeQ8_0AVX512(q *byte, d, s *float32, bias *int32, x *float32, nb int, xv *byte, xs *float32)

// quantizeQ8_0Asm is quantizeQ8_0 with AVX-512, where the CPU has it; it
// reports whether it ran. Where xv is not nil, it also lays the row out
// for the AMX tiles (amxRow).
func quantizeQ8_0Asm(a []byte, x []float32, bias bool, xv []byte, xs []float32) bool {
	nb := len(x) / 32
	if !hasAVX512 || nb == 0 {
		return false
	}
	k := 32 * nb
	od, os := q8Offsets(k, bias)
	_ = a[os+4*nb-1]
	var b *int32
	if bias {
		b = &i32s(a[k:], k/4)[0]
	}
	var v *byte
	var s *float32
	if xv != nil {
		_ = xv[512*(nb-1)+448+3]
		_ = xs[16*(nb-1)]
		v, s = &xv[0], &xs[0]
	}
	quantizeQ8_0AVX512(&a[0], &f32s(a[od:], nb)[0], &f32s(a[os:], nb)[0], b, &x[0], nb, v, s)
	return true
}
