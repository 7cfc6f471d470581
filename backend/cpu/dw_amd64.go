//go:build !noasm

package cpu

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// dwAsm reports whether depthwise planes run on the AVX2+FMA kernels
// (dwBandPlane, and the rows of unit stride of depthwise2D); tests clear
// it to exercise the Go code.
var dwAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dwS1AVX2 sets o[x] = bias + Σ_r Σ_c w[r·kw+c]·rp[r][x+c] for x < n, n a
// multiple of 8; each rp[r] must have n+kw−1 readable values.
//
//go:noescape
func dwS1AVX2(o *float32, rp *[dwMaxK]*float32, w *float32, kh, kw, n int, bias float32)

// dwTapsAVX2 sets o[x] = bias + Σ_t w[t]·tp[t][x] for x < n, n a multiple
// of 8, adding the taps t < ntaps in order; each tp[t] must have n
// readable values.
//
//go:noescape
func dwTapsAVX2(o *float32, tp *[dwMaxTaps]*float32, w *float32, ntaps, n int, bias float32)

// dwPadRows writes rows rows of dst, ldd floats apart, each as pre zeros,
// cols values of the source row (rows lds floats apart in src) and post
// zeros.
//
//go:noescape
func dwPadRows(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int)

// dwSplitRows splits rows rows of x (ldx floats apart) into their even
// and odd columns in e and o (ld floats apart): it zeroes e[0, p) and
// o[0, p), rounded up to whole vectors, then sets e[lo+j] = x[off+2j]
// and o[lo+j] = x[off+2j+1] for j < pairs, o[lo−1] = x[0] if head is not
// 0, and e[lo+pairs] = x[tail] if tail is not negative.
//
//go:noescape
func dwSplitRows(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int)

// dw512 reports whether dwBandPlane runs dwTapsAVX512 rather than
// dwTapsAVX2; tests clear it to exercise the AVX2 kernel.
var dw512 = dwAsm && cpu.X86.HasAVX512F

// dwTapsAVX512 is dwTapsAVX2 on zmm registers, n a multiple of 16.
//
//go:noescape
func dwTapsAVX512(o *float32, tp *[dwMaxTaps]*float32, w *float32, ntaps, n int, bias float32)

// depthwiseChannels16 computes n output positions of sixteen channels at
// once from a channel-blocked input (sixteen floats a position): o[16j+l] =
// b[l] + Σ_t w[16t+l]·x[16·step·j + offs[t]/4 + l], the ntaps ≥ 1 taps
// added in order (offs in bytes). It needs AVX-512F (dw512).
//
//go:noescape
func depthwiseChannels16(o, x, w, b *float32, offs *int, ntaps, n, step int)

// tr16 transposes a 16×16 block: for j < 16, the values src[i][j] (i <
// 16, loaded under the lane mask loadMask, the other lanes reading as 0)
// are stored as dst[j][i] under the lane mask storeMask (bit i for lane
// i). It needs AVX-512F (dw512).
//
//go:noescape
func tr16(dst, src *[16]*float32, loadMask, storeMask int)

// copyRuns copies, for each of the n rows r of 16 floats at dst and each
// of the nr runs i in order, the 16 floats at src + 4·taps[r] + ro[i] to
// dst + 64·r + rd[i] (ro and rd in bytes): im2colPadded's panel rows. It
// needs AVX2 (dwAsm).
//
//go:noescape
func copyRuns(dst, src unsafe.Pointer, taps *int, n int, ro, rd *int, nr int)

// dw3s1x4 computes groups groups of four output rows of a 3×3 filter
// with unit strides from the padded input rows x (p floats apart, p a
// multiple of 16): o[(4g+q)·ld + j] = bias + Σ_r Σ_c w[3r+c]·x[(4g+q+r)·p
// + j + c] for q < 4 and j < cols, the taps added in order. Every input
// row read needs roundUp(cols, 32) + 16 readable floats. s is unused. It
// needs AVX-512F (dw512). With lim not nil, the outputs are clamped to
// [lim[0], lim[1]] as they are stored, as the GEMM kernels do.
//
//go:noescape
func dw3s1x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32)

// dw3s2x4 is dw3s1x4 for strides 2 on dwBandPlane's four sub-arrays, s
// floats apart: sub(a, b) holds the padded input rows of parity a and
// their columns of parity b, and o[(4g+q)·ld + j] = bias + Σ_r Σ_c
// w[3r+c]·sub(r mod 2, c mod 2)[(4g+q+r/2)·p + j + c/2].
//
//go:noescape
func dw3s2x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32)

// dwPadRows512 is dwPadRows on zmm registers. It needs AVX-512F (dw512).
//
//go:noescape
func dwPadRows512(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int)

// dwSplitRows512 is dwSplitRows on zmm registers, except that it writes
// exactly e[0, p) and o[0, p) of each row. It needs AVX-512F (dw512).
//
//go:noescape
func dwSplitRows512(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int)

// evenCols sets, for each of rows rows (ldd floats apart in dst, lds in
// src), dst[j] = src[2j] for j < n, reading nothing past src[2n−2]. It
// needs AVX-512F (dw512).
//
//go:noescape
func evenCols(dst, src *float32, n, rows, ldd, lds int)

// depthwiseRows3 and depthwiseRows5 compute nch depthwise planes of sp
// floats, 3×3 or 5×5 filters, a few whole rows of a plane at most sixteen
// columns wide to a vector, from the row-vector table tab
// (depthwiseRowsTable: nvec vectors); row is the plane's width and cols the
// masks of the column shifts −1, +1, −2, +2: see depthwise_rows_amd64.s. b
// may be nil (no bias), lim nil (no clamp). They need AVX-512F (dw512).
//
//go:noescape
func depthwiseRows3(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *[4]uint16, lim *float32)

//go:noescape
func depthwiseRows5(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *[4]uint16, lim *float32)

// depthwiseSplit3 computes nch depthwise planes of a 3×3 filter of stride 2
// and padding 1, an output row sixteen columns at a time from thirty-two
// input columns of each of its input rows (rows: depthwiseSplit3Rows), full
// whole chunks a row and a last one under masks; zero is a row of zeros as
// long as the chunks reach. depthwiseSplit5 computes them for 5×5 filters,
// one output row of at most sixteen columns a vector, from input rows of at
// most thirty-two (row floats wide), from the table tab
// (depthwiseSplitTable: nvec vectors). Output planes are sp floats apart,
// input planes isp; the biases bstep bytes apart (0: one for all), idx the
// even and odd column indices (depthwiseSplitIdx): see
// depthwise_split_amd64.s. lim may be nil (no clamp). They need AVX-512F
// (dw512).
//
//go:noescape
func depthwiseSplit3(o, x, w, b *float32, bstep int, rows *int64, oh, full int, masks uint64, sp, isp, nch int, idx *[32]int32, lim, zero *float32)

//go:noescape
func depthwiseSplit5(o, x, w, b *float32, bstep int, tab *depthwiseSplitVec, nvec, row, sp, isp, nch int, idx *[32]int32, lim *float32)

// maxPool3s2 is a float32 3×3 max pool of strides 2 and padding 1 over
// planes planes of h×w floats at x into oh×ow at y (oh = (h+1)/2, ow =
// (w+1)/2), bit for bit as maxPlaneRows: full chunks of sixteen outputs
// a row, then one under masks (bits 0-31 the loads', 32-47 the store's);
// idx is depthwiseSplitIdx. See maxpool_amd64.s. It needs AVX-512F (dw512).
//
//go:noescape
func maxPool3s2(y, x *float32, h, w, oh, ow, full int, masks uint64, idx *[32]int32, planes int)

// maxTapsB is max pooling on NCHW16c: for i < n, the sixteen channels at
// dst + 64·i bytes take the maximum (the builtin max's) of the vectors at
// src + i·step + offs[t] bytes, t < taps (taps ≥ 1). It needs AVX-512F
// (dw512).
//
//go:noescape
func maxTapsB(dst, src *float32, offs *int, taps, n, step int)

// depthwiseRowsWide3 computes nch depthwise planes of h×width floats, a 3×3
// filter of unit strides and padding 1 on rows wider than sixteen columns,
// an output row sixteen columns at a time: see depthwise_rows_amd64.s. b
// may be nil (no bias), lim nil (no clamp); zero is a row of at least
// width+16 zeros. It needs AVX-512F (dw512).
//
//go:noescape
func depthwiseRowsWide3(o, x, w, b *float32, h, width, nch int, lim, zero *float32)
