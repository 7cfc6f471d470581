//go:build !noasm

package cpu

import "golang.org/x/sys/cpu"

// arithAsm reports whether float32 Add, Sub, Mul and Div run on the AVX2
// kernel; tests clear it to exercise the Go loops.
var arithAsm = cpu.X86.HasAVX2

// arith512 selects arithAVX512 for the whole sixteen-element blocks where
// the CPU has AVX-512F; tests clear it to compare both kernels.
var arith512 = arithAsm && cpu.X86.HasAVX512F

// arithAVX2 sets o[i] = a[i·sa] op b[i·sb] for i < n&^7 (op: 0 +, 1 −,
// 2 ×, 3 ÷; strides 0 or 1, not both 0).
//
//go:noescape
func arithAVX2(op int, o, a, b *float32, n, sa, sb int)

// arithAVX512 is arithAVX2 for i < n&^15, sixteen elements an
// instruction. It needs AVX-512F.
//
//go:noescape
func arithAVX512(op int, o, a, b *float32, n, sa, sb int)
