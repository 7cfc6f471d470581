//go:build !amd64 || noasm

package vmath

import "math"

// hasAsm is false: only amd64 has assembly kernels.
const hasAsm = false

// Wide512 is false: only amd64 has the AVX-512 kernels.
var Wide512 = false

// Stand-ins for the amd64 assembly kernels, with the same contracts, so
// that the dispatching code in vmath.go stays portable; they only run if a
// test forces Asm on.

func expAVX2(d, s []float32)       { mapf(Exp, d, s) }
func sigmoidAVX2(d, s []float32)   { mapf(sigmoidf, d, s) }
func siluAVX2(d, s []float32)      { mapf(func(x float32) float32 { return x * sigmoidf(x) }, d, s) }
func sigmoidAVX512(d, s []float32) { sigmoidAVX2(d, s) }
func siluAVX512(d, s []float32)    { siluAVX2(d, s) }
func tanhAVX2(d, s []float32)      { mapf(tanhf, d, s) }
func tanhAVX512(d, s []float32)    { tanhAVX2(d, s) }
func erfAVX2(d, s []float32)       { mapf(erff, d, s) }
func erfAVX512(d, s []float32)     { erfAVX2(d, s) }
func geluAVX2(d, s []float32)      { mapf(geluf, d, s) }
func geluTanhAVX2(d, s []float32)  { mapf(geluTanhf, d, s) }

func mapf(f func(float32) float32, d, s []float32) {
	for i, x := range s[:len(d)] {
		d[i] = f(x)
	}
}

func maxAVX2(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	return m
}

func expSumAVX2(d, x []float32, m float32) float64 {
	var s float64
	for i, v := range x[:len(d)] {
		d[i] = Exp(v - m)
		s += float64(d[i])
	}
	return s
}

func expSumAVX512(d, x []float32, m float32) float64 { return expSumAVX2(d, x, m) }

func sumAVX512(x []float32) float64 { return sumAVX2(x) }

func sumAVX2(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v)
	}
	return s
}

func sumSqDevAVX2(x []float32, m float32) float64 {
	var s float64
	for _, v := range x {
		dv := float64(v - m)
		s += dv * dv
	}
	return s
}

func scaleAVX2(d, s []float32, c float32) {
	for i, v := range s[:len(d)] {
		d[i] = v * c
	}
}

func normAffineAVX2(y, x, sc, bi []float32, mean, inv float32) {
	for i := range y {
		y[i] = (x[i]-mean)*(inv*sc[i]) + bi[i]
	}
}

func MeanRows512(y, x *float32, rows, n int, scale float64) {
	panic("MeanRows512: no assembly on this platform")
}
