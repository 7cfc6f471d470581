//go:build !noasm

package vmath

import "golang.org/x/sys/cpu"

// hasAsm: the assembly kernels need AVX2 and FMA.
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// Wide512 selects the sixteen-lane forms of the kernels that have one
// (sigmoid, SiLU, tanh, erf and softmax's exponentials with their sum):
// the same bits as the AVX2 ones, twice the lanes. It is a variable so
// that tests can compare both on AVX-512 machines.
var Wide512 = hasAsm && cpu.X86.HasAVX512F

// The assembly kernels (vmath_amd64.s). Slices hold a whole number of
// eight-element blocks; d and s (or y and x) have equal length and may be
// the same memory.

// expAVX2 sets d[i] = e^s[i].
//
//go:noescape
func expAVX2(d, s []float32)

// sigmoidAVX2 sets d[i] = 1/(1+e^−s[i]).
//
//go:noescape
func sigmoidAVX2(d, s []float32)

// siluAVX2 sets d[i] = s[i]·sigmoid(s[i]), the product rounded once
// more after sigmoidAVX2's result.
//
//go:noescape
func siluAVX2(d, s []float32)

// sigmoidAVX512 and siluAVX512 are sigmoidAVX2 and siluAVX2 for slices
// of a whole number of sixteen-element blocks, with the same results.
// They need AVX-512F.
//
//go:noescape
func sigmoidAVX512(d, s []float32)

//go:noescape
func siluAVX512(d, s []float32)

// tanhAVX2 sets d[i] = tanh(s[i]).
//
//go:noescape
func tanhAVX2(d, s []float32)

// tanhAVX512 is tanhAVX2 for slices of a whole number of sixteen-element
// blocks, with the same results. It needs AVX-512F.
//
//go:noescape
func tanhAVX512(d, s []float32)

// erfAVX2 sets d[i] = erf(s[i]).
//
//go:noescape
func erfAVX2(d, s []float32)

// erfAVX512 is erfAVX2 for slices of a whole number of sixteen-element
// blocks, with the same results. It needs AVX-512F.
//
//go:noescape
func erfAVX512(d, s []float32)

// geluAVX2 sets d[i] = s[i]/2·(1 + erf(s[i]/√2)).
//
//go:noescape
func geluAVX2(d, s []float32)

// geluTanhAVX2 sets d[i] = s[i]·sigmoid(2·√(2/π)·(s[i] + 0.044715·s[i]³)).
//
//go:noescape
func geluTanhAVX2(d, s []float32)

// maxAVX2 returns the largest element of x, ignoring NaNs.
//
//go:noescape
func maxAVX2(x []float32) float32

// expSumAVX2 sets d[i] = e^(x[i]−m) and returns their sum in float64.
//
//go:noescape
func expSumAVX2(d, x []float32, m float32) float64

// expSumAVX512 is expSumAVX2 on zmm registers, with the same results
// (the exponentials and the sum). It needs AVX-512F.
//
//go:noescape
func expSumAVX512(d, x []float32, m float32) float64

// sumAVX2 returns the sum of x in float64.
//
//go:noescape
func sumAVX2(x []float32) float64

// sumAVX512 is sumAVX2 for lengths that are multiples of 32, on zmm
// registers. It needs AVX-512F (Wide512).
//
//go:noescape
func sumAVX512(x []float32) float64

// MeanRows512 sets y[i] = float32(scale·Σ_j x[i·n+j]) for i < rows, the
// sums in float64, n ≥ 1. It needs AVX-512F (Wide512).
//
//go:noescape
func MeanRows512(y, x *float32, rows, n int, scale float64)

// sumSqDevAVX2 returns Σ(x[i]−m)² in float64.
//
//go:noescape
func sumSqDevAVX2(x []float32, m float32) float64

// scaleAVX2 sets d[i] = s[i]·c.
//
//go:noescape
func scaleAVX2(d, s []float32, c float32)

// normAffineAVX2 sets y[i] = (x[i]−mean)·(inv·sc[i]) + bi[i].
//
//go:noescape
func normAffineAVX2(y, x, sc, bi []float32, mean, inv float32)
