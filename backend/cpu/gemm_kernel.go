package cpu

// The portable micro-kernel below is unrolled by hand for 6-row panels and
// 16-column panels; these declarations fail to compile if gemmMR or gemmNR
// change without it.
var (
	_ [gemmMR - 6]struct{}
	_ [6 - gemmMR]struct{}
	_ [gemmNR - 16]struct{}
	_ [16 - gemmNR]struct{}
)

// microGo is the portable micro-kernel: acc = Aᵀ·B of one packed A panel
// slice a (kb groups of gemmMR) and one packed B panel slice b (kb groups
// of gemmNR). It runs where the assembly kernel does not (see
// useAsmKernel). Each k step adds the outer product of 6 values of A and
// 16 of B, four B values at a time, into six row arrays that the compiler
// keeps in registers or L1; the body is unrolled by hand because the
// compiler does not unroll loops.
func microGo(a, b []float32, acc *[gemmMR][gemmNR]float32) {
	var r0, r1, r2, r3, r4, r5 [gemmNR]float32
	for len(a) >= gemmMR && len(b) >= gemmNR {
		av := (*[gemmMR]float32)(a)
		bv := (*[gemmNR]float32)(b)
		a0, a1, a2, a3, a4, a5 := av[0], av[1], av[2], av[3], av[4], av[5]
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
		r4[0] += a4 * b0
		r4[1] += a4 * b1
		r4[2] += a4 * b2
		r4[3] += a4 * b3
		r5[0] += a5 * b0
		r5[1] += a5 * b1
		r5[2] += a5 * b2
		r5[3] += a5 * b3
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
		r4[4] += a4 * b0
		r4[5] += a4 * b1
		r4[6] += a4 * b2
		r4[7] += a4 * b3
		r5[4] += a5 * b0
		r5[5] += a5 * b1
		r5[6] += a5 * b2
		r5[7] += a5 * b3
		b0, b1, b2, b3 = bv[8], bv[9], bv[10], bv[11]
		r0[8] += a0 * b0
		r0[9] += a0 * b1
		r0[10] += a0 * b2
		r0[11] += a0 * b3
		r1[8] += a1 * b0
		r1[9] += a1 * b1
		r1[10] += a1 * b2
		r1[11] += a1 * b3
		r2[8] += a2 * b0
		r2[9] += a2 * b1
		r2[10] += a2 * b2
		r2[11] += a2 * b3
		r3[8] += a3 * b0
		r3[9] += a3 * b1
		r3[10] += a3 * b2
		r3[11] += a3 * b3
		r4[8] += a4 * b0
		r4[9] += a4 * b1
		r4[10] += a4 * b2
		r4[11] += a4 * b3
		r5[8] += a5 * b0
		r5[9] += a5 * b1
		r5[10] += a5 * b2
		r5[11] += a5 * b3
		b0, b1, b2, b3 = bv[12], bv[13], bv[14], bv[15]
		r0[12] += a0 * b0
		r0[13] += a0 * b1
		r0[14] += a0 * b2
		r0[15] += a0 * b3
		r1[12] += a1 * b0
		r1[13] += a1 * b1
		r1[14] += a1 * b2
		r1[15] += a1 * b3
		r2[12] += a2 * b0
		r2[13] += a2 * b1
		r2[14] += a2 * b2
		r2[15] += a2 * b3
		r3[12] += a3 * b0
		r3[13] += a3 * b1
		r3[14] += a3 * b2
		r3[15] += a3 * b3
		r4[12] += a4 * b0
		r4[13] += a4 * b1
		r4[14] += a4 * b2
		r4[15] += a4 * b3
		r5[12] += a5 * b0
		r5[13] += a5 * b1
		r5[14] += a5 * b2
		r5[15] += a5 * b3
		a, b = a[gemmMR:], b[gemmNR:]
	}
	acc[0], acc[1], acc[2], acc[3], acc[4], acc[5] = r0, r1, r2, r3, r4, r5
}
