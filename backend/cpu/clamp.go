package cpu

// Square and Cube (Pow by 2 and 3) on float32 multiply on whole vectors,
// in the loops' order.

// squareF32 is squareLoop for float32.
func squareF32(d, s []byte, a args) {
	df, sf := f32s(d), f32s(s)
	n := 0
	if clampAsm {
		powAVX2(df, sf, false)
		n = len(df) &^ 7
	}
	squareLoop(df[n:], sf[n:len(df)], a)
}

// cubeF32 is cubeLoop for float32.
func cubeF32(d, s []byte, a args) {
	df, sf := f32s(d), f32s(s)
	n := 0
	if clampAsm {
		powAVX2(df, sf, true)
		n = len(df) &^ 7
	}
	cubeLoop(df[n:], sf[n:len(df)], a)
}

// Relu and Clip on float32 decide per element which value to keep; in Go
// that is a branch, which random-signed data mispredicts half the time
// (a ReLU6 network ran twice as fast on an all-zero image as on a random
// one). The AVX2 kernels select with masks instead, with the same
// comparisons, so the results are the same bit for bit.

// reluF32 is reluLoop for float32, on the assembly kernel where there is
// one.
func reluF32(d, s []byte, a args) {
	df, sf := f32s(d), f32s(s)
	n := 0
	if clampAsm {
		reluAVX2(df, sf)
		n = len(df) &^ 7
	}
	reluLoop(df[n:], sf[n:len(df)], a)
}

// clipF32 is clipLoop for float32 (bounds in a), on the assembly kernel
// where there is one.
func clipF32(d, s []byte, a args) {
	df, sf := f32s(d), f32s(s)
	n := 0
	if clampAsm {
		lo, hi := boundsOf[float32](a)
		clipAVX2(df, sf, lo, hi)
		n = len(df) &^ 7
	}
	clipLoop(df[n:], sf[n:len(df)], a)
}
