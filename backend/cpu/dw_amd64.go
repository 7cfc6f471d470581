package cpu

import "golang.org/x/sys/cpu"

// dwAsm reports whether depthwise rows of unit stride run on the AVX2+FMA
// kernel; tests clear it to exercise the Go code.
var dwAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dwS1AVX2 sets o[x] = bias + Σ_r Σ_c w[r·kw+c]·rp[r][x+c] for x < n, n a
// multiple of 8; each rp[r] must have n+kw−1 readable values.
//
//go:noescape
func dwS1AVX2(o *float32, rp *[dwMaxK]*float32, w *float32, kh, kw, n int, bias float32)
