// The store of the GEMM micro-kernels (gemm_amd64.s, gemm512_amd64.s):
// the steps on one row of the tile, two vectors r0, r1 of w bytes each,
// for the register lists of regs_amd64.h (a list passes a, b and the
// row i on).

#include "regs_amd64.h"

// Broadcasts the value of A at a into t and adds its products with
// b0:b1 into the row's accumulators r0:r1. VFMADD231PS x, y, z computes
// z += y·x.
#define ROWFMA(a, t, b0, b1, r0, r1) \
	VBROADCASTSS a, t;      \
	VFMADD231PS  b0, t, r0; \
	VFMADD231PS  b1, t, r1

// The six rows of one A panel at aoff(p) (broadcast into t0..t5 in
// turn) times b0:b1, into the accumulator pairs from r (the pairs r0:r1 to r10:r11).
#define SIXROWS(aoff, p, b0, b1, t0, t1, t2, t3, t4, t5, r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11) \
	ROWFMA(aoff(p), t0, b0, b1, r0, r1);    \
	ROWFMA(aoff+4(p), t1, b0, b1, r2, r3);  \
	ROWFMA(aoff+8(p), t2, b0, b1, r4, r5);  \
	ROWFMA(aoff+12(p), t3, b0, b1, r6, r7); \
	ROWFMA(aoff+16(p), t4, b0, b1, r8, r9); \
	ROWFMA(aoff+20(p), t5, b0, b1, r10, r11)

// Adds the column bias x, y to the row.
#define ADDROW(x, y, i, r0, r1) \
	VADDPS x, r0, r0; \
	VADDPS y, r1, r1

// Adds row i's bias at 4i(R9), broadcast into t, to the row.
#define ROWBIAS(t, b, i, r0, r1) \
	VBROADCASTSS 4*i(R9), t; \
	VADDPS       t, r0, r0;  \
	VADDPS       t, r1, r1

// Adds the row at p (C's, or the residual's) into the row without
// storing it and moves p to the next row (R8 bytes on).
#define ADDM(p, w, i, r0, r1) \
	VADDPS (p), r0, r0;  \
	VADDPS w(p), r1, r1; \
	ADDQ   R8, p

// Adds C's row at DX into the row (mode accumulate), then stores it back
// and moves DX to the next row.
#define ADDC(w, b, i, r0, r1) \
	VADDPS  (DX), r0, r0;  \
	VADDPS  w(DX), r1, r1; \
	VMOVUPS r0, (DX);      \
	VMOVUPS r1, w(DX);     \
	ADDQ    R8, DX

// ADDROW, ROWBIAS, ADDM and ADDC for a one-vector row r.
#define ADDR1(x, b, i, r) VADDPS x, r, r

#define ROWBIAS1(t, b, i, r) \
	VBROADCASTSS 4*i(R9), t; \
	VADDPS       t, r, r

#define ADDC1(a, b, i, r) \
	VADDPS  (DX), r, r; \
	VMOVUPS r, (DX);    \
	ADDQ    R8, DX


#define ADDM1(p, b, i, r) \
	VADDPS (p), r, r; \
	ADDQ   R8, p

// Stores the row as C's row at DX and moves DX on.
#define PUTC(w, b, i, r0, r1) \
	VMOVUPS r0, (DX);  \
	VMOVUPS r1, w(DX); \
	ADDQ    R8, DX

// Touches a row of C at AX (the lines at off0 and off1) and moves AX to
// the next row.
#define TOUCH2(off0, off1) \
	PREFETCHT0 off0(AX); \
	PREFETCHT0 off1(AX); \
	ADDQ       R8, AX
