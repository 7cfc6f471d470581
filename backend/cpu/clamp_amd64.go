//go:build !noasm

package cpu

import "golang.org/x/sys/cpu"

// clampAsm reports whether float32 Relu and Clip run on the branch-free
// AVX2 kernels; tests clear it to exercise the Go loops.
var clampAsm = cpu.X86.HasAVX2

// reluAVX2 is reluLoop over the first len(d)&^7 elements of d and s.
//
//go:noescape
func reluAVX2(d, s []float32)

// clipAVX2 is clipLoop over the first len(d)&^7 elements of d and s.
//
//go:noescape
func clipAVX2(d, s []float32, lo, hi float32)

// powAVX2 is squareLoop (cubeLoop when cube) over the first len(d)&^7
// elements of d and s.
//
//go:noescape
func powAVX2(d, s []float32, cube bool)

// maxIntoAVX2 sets d[i] = max(d[i], s[i]), the builtin max, for the first
// len(d)&^7 elements.
//
//go:noescape
func maxIntoAVX2(d, s []float32)
