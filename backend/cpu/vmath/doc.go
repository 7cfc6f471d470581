// Package vmath is the CPU backend's vectorised float32 math: exp,
// sigmoid, SiLU, tanh, erf and both forms of GELU over slices, and the
// reductions and affine loops of Softmax and the normalisations (Max,
// ExpSum, Sum, SumSqDev, Scale, NormAffine). Each function has AVX2+FMA
// (and, where it pays, AVX-512) assembly and a Go version that computes
// the same algorithm with the same float32 constants; Asm chooses between
// them, and tests clear it to run the Go code. vmath.go describes the
// algorithms and their measured accuracy.
package vmath
