//go:build !amd64 || noasm

package cpu

import "unsafe"

// useAsmKernel and useAVX512Kernel are false: this platform has no
// assembly micro-kernel.
var (
	useAsmKernel    = false
	useAVX512Kernel = false
)

// sgemm6x16 is the portable form of the amd64 micro-kernel (see
// gemm_amd64.go for the contract). gemm.run does not call it on this
// platform; it exists so that both builds share one call site.
func sgemm6x16(kb int, a, b, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32) {
	var acc [gemmMR][gemmNR]float32
	if kb > 0 {
		microGo(unsafe.Slice(a, kb*gemmMR), unsafe.Slice(b, kb*gemmNR), &acc)
	}
	cs := unsafe.Slice(c, (gemmMR-1)*ldc+gemmNR)
	var rs []float32
	if res != nil {
		rs = unsafe.Slice(res, (gemmMR-1)*ldc+gemmNR)
	}
	// Element by element, the residual read before C is written: res may
	// be C's memory.
	for i := range gemmMR {
		row := cs[i*ldc:][:gemmNR]
		var r float32
		if rb != nil && mode == 0 {
			r = *(*float32)(unsafe.Add(unsafe.Pointer(rb), 4*i))
		}
		for j, v := range acc[i] {
			switch {
			case mode != 0:
				v += row[j]
			case cb != nil:
				v = v + *(*float32)(unsafe.Add(unsafe.Pointer(cb), 4*j)) + r
			default:
				v += r
			}
			if rs != nil {
				v += rs[i*ldc+j]
			}
			row[j] = v
		}
		if lim != nil {
			clampLoop(row, row, *lim, *(*float32)(unsafe.Add(unsafe.Pointer(lim), 4)))
		}
	}
}

// sgemm12x32 is the portable form of the amd64 AVX-512 micro-kernel (see
// gemm512_amd64.go for the contract): the four 6×16 quarters of the tile.
// gemm.run does not call it on this platform.
func sgemm12x32(kb int, a0, a1, b0, b1 *float32, bstep int, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int, a2 *float32, pfstep int) {
	if a2 != nil {
		extraRows(kb, a2, b0, b1, bstep, c, ldc, rb, cb, mode, lim, res, 2*gemmMR, 1)
	}
	var t0, t1 [gemmKC * gemmNR]float32
	b0, b1 = packedPanel(b0, bstep, kb, &t0), packedPanel(b1, bstep, kb, &t1)
	down := 4 * gemmMR * ldc // bytes from row 0 to row 6 of C
	rbLow := shift(rb, 4*gemmMR)
	sgemm6x32(kb, a0, b0, b1, gemmNR, c, ldc, rb, cb, mode, lim, res, nil, nil, 0, nil)
	sgemm6x32(kb, a1, b0, b1, gemmNR, shift(c, down), ldc, rbLow, cb, mode, lim, shift(res, down), nil, nil, 0, nil)
}

// extraRows computes rows [row, row+n) of a tile of C at c, n ≤ 6, the
// first n rows of the A panel at a, through a 6×32 tile of which only
// those rows are kept.
func extraRows(kb int, a, b0, b1 *float32, bstep int, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, row, n int) {
	const nr2 = 2 * gemmNR
	var t, r [gemmMR * nr2]float32
	var tb [gemmMR]float32
	rows := unsafe.Slice(shift(c, 4*row*ldc), (n-1)*ldc+nr2)
	for i := range n {
		copy(t[i*nr2:][:nr2], rows[i*ldc:])
	}
	var trb, tres *float32
	if rb != nil {
		copy(tb[:n], unsafe.Slice(shift(rb, 4*row), n))
		trb = &tb[0]
	}
	if res != nil {
		src := unsafe.Slice(shift(res, 4*row*ldc), (n-1)*ldc+nr2)
		for i := range n {
			copy(r[i*nr2:][:nr2], src[i*ldc:])
		}
		tres = &r[0]
	}
	sgemm6x32(kb, a, b0, b1, bstep, &t[0], nr2, trb, cb, mode, lim, tres, nil, nil, 0, nil)
	for i := range n {
		copy(rows[i*ldc:][:nr2], t[i*nr2:])
	}
}

// sgemm6x32 is the portable form of the amd64 AVX-512 6×32 kernel (see
// gemm512_amd64.go): the two 6×16 halves of the tile, and rows 6 and 7
// through extraRows where a1 is set. gemm.run does not call it on this
// platform.
func sgemm6x32(kb int, a, b0, b1 *float32, bstep int, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int, a1 *float32) {
	if a1 != nil {
		extraRows(kb, a1, b0, b1, bstep, c, ldc, rb, cb, mode, lim, res, gemmMR, 2)
	}
	var t0, t1 [gemmKC * gemmNR]float32
	b0, b1 = packedPanel(b0, bstep, kb, &t0), packedPanel(b1, bstep, kb, &t1)
	const right = 4 * gemmNR // bytes from a row's column 0 to column 16
	sgemm6x16(kb, a, b0, c, ldc, rb, cb, mode, lim, res)
	sgemm6x16(kb, a, b1, shift(c, right), ldc, rb, shift(cb, right), mode, lim, shift(res, right))
}

// sgemm12x16 is the portable form of the amd64 AVX-512 12×16 kernel (see
// gemm512_amd64.go): the two 6×16 halves of the tile. gemm.run does not
// call it on this platform.
func sgemm12x16(kb int, a0, a1, b, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf0, pf1 *float32, pfn int) {
	down := 4 * gemmMR * ldc
	sgemm6x16(kb, a0, b, c, ldc, rb, cb, mode, lim, res)
	sgemm6x16(kb, a1, b, shift(c, down), ldc, shift(rb, 4*gemmMR), cb, mode, lim, shift(res, down))
}

// shift is p moved by n bytes, or nil for nil.
func shift(p *float32, n int) *float32 {
	if p == nil {
		return nil
	}
	return (*float32)(unsafe.Add(unsafe.Pointer(p), n))
}

// packedPanel returns the B panel at b, whose k steps are bstep floats
// apart, in the packed layout: b itself when it is packed (bstep = NR),
// else a copy in t (kb ≤ KC).
func packedPanel(b *float32, bstep, kb int, t *[gemmKC * gemmNR]float32) *float32 {
	if bstep == gemmNR {
		return b
	}
	for l := 0; l < kb; l++ {
		copy(t[l*gemmNR:(l+1)*gemmNR], unsafe.Slice((*float32)(unsafe.Add(unsafe.Pointer(b), 4*l*bstep)), gemmNR))
	}
	return &t[0]
}

// prefetchL2 is a hint with no portable form.
func prefetchL2(p *float32, lines int) {}

// prefetchRowsL2 is a hint with no portable form.
func prefetchRowsL2(p *float32, stride, rows int) {}

func packA6Cols(dst, src *float32, k, cs, panels int) {
	panic("packA6Cols: no assembly on this platform")
}

func packA6Rows(dst, src *float32, k4, rs int) {
	panic("packA6Rows: no assembly on this platform")
}

func sgemm6x64(kb int, a, b *float32, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32, pf *float32, pfn int, lda int) {
	panic("sgemm6x64: no assembly on this platform")
}

func packB16Rows(dst, src *float32, panels, rows, rs, dp, ds int) {
	panic("packB16Rows: no assembly on this platform")
}

func pointwiseBlocked12x32(kb16 int, a *float32, akb int, mode int, b *float32, c *float32, chalf int, bias, res, lim, pf *float32) {
	panic("pointwiseBlocked12x32: no assembly on this platform")
}

func pointwiseBlocked13x32(kb16 int, a *float32, akb int, b *float32, c *float32, chalf int, bias, res, lim *float32) {
	panic("pointwiseBlocked13x32: no assembly on this platform")
}

func blockedWindows12x32(k int, a *float32, offs *int, b *float32, c *float32, chalf int, bias, lim *float32) {
	panic("blockedWindows12x32: no assembly on this platform")
}

func gather12(dst, src *float32, offs *int) {
	panic("gather12: no assembly on this platform")
}

func stemRows8x48(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32) {
	panic("stemRows8x48: no assembly on this platform")
}

func stemRows8x16(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32) {
	panic("stemRows8x16: no assembly on this platform")
}
