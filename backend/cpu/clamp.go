package cpu

// Relu and Clip on float32 decide per element which value to keep; in Go
// that is a branch, which random-signed data mispredicts half the time
// (a ReLU6 network ran twice as fast on an all-zero image as on a random
// one). Their AVX2 kernels select with compare masks instead, with the
// loops' own comparisons; Square and Cube multiply whole vectors in the
// loops' order. The results are the same bit for bit.

// onVectors runs asm over the whole vectors of d and s, where there is
// assembly, and loop over the rest.
func onVectors(d, s []byte, a args, asm func(d, s []float32), loop func(d, s []float32, a args)) {
	df, sf := f32s(d), f32s(s)
	n := 0
	if clampAsm {
		asm(df, sf)
		n = len(df) &^ 7
	}
	loop(df[n:], sf[n:len(df)], a)
}

func squareAVX2(d, s []float32) { powAVX2(d, s, false) }
func cubeAVX2(d, s []float32)   { powAVX2(d, s, true) }

// squareF32 is squareLoop for float32.
func squareF32(d, s []byte, a args) { onVectors(d, s, a, squareAVX2, squareLoop[float32]) }

// cubeF32 is cubeLoop for float32.
func cubeF32(d, s []byte, a args) { onVectors(d, s, a, cubeAVX2, cubeLoop[float32]) }

// reluF32 is reluLoop for float32.
func reluF32(d, s []byte, a args) { onVectors(d, s, a, reluAVX2, reluLoop[float32]) }

// clampF32s clamps y to [lo, hi] in place, as the Clip kernels do (a NaN
// passes through): branch-free vectors, then the Go loop for the tail.
func clampF32s(y []float32, lo, hi float32) {
	n := 0
	if clampAsm {
		clipAVX2(y, y, lo, hi)
		n = len(y) &^ 7
	}
	clampLoop(y[n:], y[n:], lo, hi)
}

// clipF32 is clipLoop for float32 (bounds in a).
func clipF32(d, s []byte, a args) {
	lo, hi := boundsOf[float32](a)
	onVectors(d, s, a, func(d, s []float32) { clipAVX2(d, s, lo, hi) }, clipLoop[float32])
}
