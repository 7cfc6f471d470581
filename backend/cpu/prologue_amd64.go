//go:build !noasm

package cpu

import "golang.org/x/sys/cpu"

// prologueAsm reports whether a prologue packs whole panels with the AVX2
// kernel (and, where the compiled BatchNormalization expression fuses its
// multiply-add, FMA); tests clear it to exercise the Go loop.
var prologueAsm = cpu.X86.HasAVX2 && (!bnFused || cpu.X86.HasFMA)

// prologuePanelAVX2 packs one full panel of gemmNR columns: for each row l
// of len(a), d[l·gemmNR+j] = bnRelu of s[l·rs+j] with a[l], b[l] (mode&1:
// with the Relu; mode&2: with one fused multiply-add).
//
//go:noescape
func prologuePanelAVX2(d, s []float32, a, b []float64, rs, mode int)
