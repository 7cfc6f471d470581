//go:build !noasm

package cpu

import "golang.org/x/sys/cpu"

// useAsmKernel selects the AVX2+FMA micro-kernel. It is a variable so that
// tests can force the pure-Go kernel on machines that have AVX2.
var useAsmKernel = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// sgemm6x16 computes the 6×16 product of kb steps of a packed A panel
// (6 floats per step, at a) and a packed B panel (16 floats per step, at b)
// and writes it to the 6 rows of C at c, ldc floats apart. With mode 0 it
// stores product + rb[i] + cb[j], where a nil rb or cb counts as zeros;
// with mode 1 it adds the product to C and ignores rb and cb. A non-nil
// res then adds the 6×16 residual at res (rows ldc floats apart, as C's),
// and a non-nil lim clamps what it writes to [lim[0], lim[1]] (NaN
// passing through, as Clip and Relu do). kb may be 0.
//
//go:noescape
func sgemm6x16(kb int, a, b, c *float32, ldc int, rb, cb *float32, mode int, lim, res *float32)

// fmaPeakLoop runs n iterations of 24 8-lane fused multiply-adds spread
// over 12 independent register accumulators: 384·n floating-point
// operations, no memory traffic. Benchmarks use it to measure the core's
// FMA peak.
//
//go:noescape
func fmaPeakLoop(n int)

// prefetchL2 asks for the lines 64-byte lines from p on to be brought into
// L2 (a hint: the addresses need not be valid).
//
//go:noescape
func prefetchL2(p *float32, lines int)

// prefetchRowsL2 asks for 128 bytes from p on, and as many from each of
// the rows-1 rows after it (stride floats apart), to be brought into L2:
// 32 columns of rows of a row-major matrix. It is a hint: the addresses
// need not be valid.
//
//go:noescape
func prefetchRowsL2(p *float32, stride, rows int)

// packA6Cols packs panels whole A panels of an operand whose columns are
// contiguous (packA's rs = 1, alpha = 1 case): for l < k and p < panels,
// dst[(p·k + l)·6 + i] = src[l·cs + 6p + i], i < 6. It needs only SSE2.
//
//go:noescape
func packA6Cols(dst, src *float32, k, cs, panels int)

// packA6Rows packs the first k4 columns (a multiple of 4) of one A panel
// of an operand whose rows are contiguous (packA's cs = 1, alpha = 1
// case): for l < k4, dst[l·6 + i] = src[i·rs + l], i < 6. It needs only
// SSE2.
//
//go:noescape
func packA6Rows(dst, src *float32, k4, rs int)

// packB16Rows copies rows rows of panels whole B panels of an operand
// whose rows are contiguous (packB's cs = 1 case) to where packBPanels
// puts them: for q < panels and l < rows, dst[q·dp + l·ds + j] =
// src[l·rs + 16q + j], j < 16. It needs AVX.
//
//go:noescape
func packB16Rows(dst, src *float32, panels, rows, rs, dp, ds int)
