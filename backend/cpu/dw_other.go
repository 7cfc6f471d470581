//go:build !amd64 || noasm

package cpu

import "unsafe"

// dwAsm is false: there is no assembly kernel on this platform.
var dwAsm = false

func dwS1AVX2(o *float32, rp *[dwMaxK]*float32, w *float32, kh, kw, n int, bias float32) {
	panic("dwS1AVX2 without assembly")
}

func dwTapsAVX2(o *float32, tp *[dwMaxTaps]*float32, w *float32, ntaps, n int, bias float32) {
	panic("dwTapsAVX2 without assembly")
}

func dwPadRows(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int) {
	panic("dwPadRows without assembly")
}

func dwSplitRows(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int) {
	panic("dwSplitRows without assembly")
}

// dw512 is false: there is no assembly kernel on this platform.
var dw512 = false

func dwTapsAVX512(o *float32, tp *[dwMaxTaps]*float32, w *float32, ntaps, n int, bias float32) {
	panic("dwTapsAVX512 without assembly")
}

func depthwiseChannels16(o, x, w, b *float32, offs *int, ntaps, n, step int) {
	panic("depthwiseChannels16: no assembly on this platform")
}

func tr16(dst, src *[16]*float32, loadMask, storeMask int) {
	panic("tr16: no assembly on this platform")
}

func copyRuns(dst, src unsafe.Pointer, taps *int, n int, ro, rd *int, nr int) {
	panic("copyRuns: no assembly on this platform")
}

func dw3s1x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32) {
	panic("dw3s1x4: no assembly on this platform")
}

func dw3s2x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32) {
	panic("dw3s2x4: no assembly on this platform")
}

func dwPadRows512(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int) {
	panic("dwPadRows512: no assembly on this platform")
}

func dwSplitRows512(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int) {
	panic("dwSplitRows512: no assembly on this platform")
}

func evenCols(dst, src *float32, n, rows, ldd, lds int) {
	panic("evenCols: no assembly on this platform")
}

func depthwiseRows3(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *[4]uint16, lim *float32) {
	panic("depthwiseRows3: no assembly on this platform")
}

func depthwiseRows5(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *[4]uint16, lim *float32) {
	panic("depthwiseRows5: no assembly on this platform")
}

func depthwiseSplit3(o, x, w, b *float32, bstep int, rows *int64, oh, full int, masks uint64, sp, isp, nch int, idx *[32]int32, lim, zero *float32) {
	panic("depthwiseSplit3: no assembly on this platform")
}

func depthwiseSplit5(o, x, w, b *float32, bstep int, tab *depthwiseSplitVec, nvec, row, sp, isp, nch int, idx *[32]int32, lim *float32) {
	panic("depthwiseSplit5: no assembly on this platform")
}

func maxPool3s2(y, x *float32, h, w, oh, ow, full int, masks uint64, idx *[32]int32, planes int) {
	panic("maxPool3s2: no assembly on this platform")
}

func maxTapsB(dst, src *float32, offs *int, taps, n, step int) {
	panic("maxTapsB: no assembly on this platform")
}

func depthwiseRowsWide3(o, x, w, b *float32, h, width, nch int, lim, zero *float32) {
	panic("depthwiseRowsWide3: no assembly on this platform")
}
