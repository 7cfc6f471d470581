package cpu

// micro4x8 computes the 4×8 block acc = Aᵀ·B of one packed A panel slice a
// (kb groups of 4) and one packed B panel slice b (kb groups of 8). The 32
// sums live in four row arrays that the compiler keeps in registers or L1;
// the body is unrolled by hand because the compiler does not unroll loops.
func micro4x8(a, b []float32, acc *[gemmMR][gemmNR]float32) {
	var r0, r1, r2, r3 [gemmNR]float32
	for len(a) >= gemmMR && len(b) >= gemmNR {
		av := (*[gemmMR]float32)(a)
		bv := (*[gemmNR]float32)(b)
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		r0[0] += a0 * b0
		r0[1] += a0 * b1
		r0[2] += a0 * b2
		r0[3] += a0 * b3
		r1[0] += a1 * b0
		r1[1] += a1 * b1
		r1[2] += a1 * b2
		r1[3] += a1 * b3
		r2[0] += a2 * b0
		r2[1] += a2 * b1
		r2[2] += a2 * b2
		r2[3] += a2 * b3
		r3[0] += a3 * b0
		r3[1] += a3 * b1
		r3[2] += a3 * b2
		r3[3] += a3 * b3
		b0, b1, b2, b3 = bv[4], bv[5], bv[6], bv[7]
		r0[4] += a0 * b0
		r0[5] += a0 * b1
		r0[6] += a0 * b2
		r0[7] += a0 * b3
		r1[4] += a1 * b0
		r1[5] += a1 * b1
		r1[6] += a1 * b2
		r1[7] += a1 * b3
		r2[4] += a2 * b0
		r2[5] += a2 * b1
		r2[6] += a2 * b2
		r2[7] += a2 * b3
		r3[4] += a3 * b0
		r3[5] += a3 * b1
		r3[6] += a3 * b2
		r3[7] += a3 * b3
		a, b = a[gemmMR:], b[gemmNR:]
	}
	acc[0], acc[1], acc[2], acc[3] = r0, r1, r2, r3
}
