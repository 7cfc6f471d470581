// The store of the GEMM micro-kernels (gemm_amd64.s, gemm512_amd64.s):
// the steps on one row of the tile, two vectors r0, r1 of w bytes each,
// for the register lists of regs_amd64.h (a list passes a, b and the
// row i on).

#include "regs_amd64.h"

// Four k steps of a kernel, A 24 bytes a step (six floats): step(aoff)
// for each, or step(aoff, boff) with B 64 bytes a step.
#define STEPS4(step) step(0); step(24); step(48); step(72)
#define STEPS4B(step) step(0, 0); step(24, 64); step(48, 128); step(72, 192)

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

// ROWFMA and SIXROWS for one-vector rows: b the step of B, r0..r5 the
// rows, t the broadcast value of A (Z26..Z31 in turn in SIXROWS1).
#define ROWFMA1(a, t, b, r) \
	VBROADCASTSS a, t; \
	VFMADD231PS  b, t, r

#define SIXROWS1(aoff, p, b, r0, r1, r2, r3, r4, r5) \
	ROWFMA1(aoff(p), Z26, b, r0);    \
	ROWFMA1(aoff+4(p), Z27, b, r1);  \
	ROWFMA1(aoff+8(p), Z28, b, r2);  \
	ROWFMA1(aoff+12(p), Z29, b, r3); \
	ROWFMA1(aoff+16(p), Z30, b, r4); \
	ROWFMA1(aoff+20(p), Z31, b, r5)

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

// The steps of ADDROW, ROWBIAS, ADDM and PUTC for rows of three and four
// vectors (64 bytes each) from the 8×48 (conv_rows_amd64.s) and 6×64
// kernels; ADDROW4 adds Z24..Z27.
#define ROWBIAS3(t, b, i, r0, r1, r2) \
	VBROADCASTSS 4*i(R9), t; \
	VADDPS       t, r0, r0;  \
	VADDPS       t, r1, r1;  \
	VADDPS       t, r2, r2

#define PUTC3(a, b, i, r0, r1, r2) \
	VMOVUPS r0, (DX);    \
	VMOVUPS r1, 64(DX);  \
	VMOVUPS r2, 128(DX); \
	ADDQ    R8, DX

#define ADDROW4(a, b, i, r0, r1, r2, r3) \
	VADDPS Z24, r0, r0; \
	VADDPS Z25, r1, r1; \
	VADDPS Z26, r2, r2; \
	VADDPS Z27, r3, r3

#define ROWBIAS4(t, b, i, r0, r1, r2, r3) \
	ROWBIAS3(t, b, i, r0, r1, r2); \
	VADDPS t, r3, r3

#define ADDM4(p, b, i, r0, r1, r2, r3) \
	VADDPS (p), r0, r0;    \
	VADDPS 64(p), r1, r1;  \
	VADDPS 128(p), r2, r2; \
	VADDPS 192(p), r3, r3; \
	ADDQ   R8, p

#define PUTC4(a, b, i, r0, r1, r2, r3) \
	VMOVUPS r0, (DX);    \
	VMOVUPS r1, 64(DX);  \
	VMOVUPS r2, 128(DX); \
	VMOVUPS r3, 192(DX); \
	ADDQ    R8, DX

// Touches a row of C at AX (the lines at off0 and off1) and moves AX to
// the next row.
#define TOUCH2(off0, off1) \
	PREFETCHT0 off0(AX); \
	PREFETCHT0 off1(AX); \
	ADDQ       R8, AX

// Jumps to label when the pointer argument arg (loaded into r) is nil.
#define NILJMPQ(arg, r, label) \
	MOVQ  arg, r; \
	TESTQ r, r;   \
	JEQ   label

// The head of a kernel's store: mode into AX and lim into BX, and on to
// label acc when mode is not 0 (C is added in).
#define STOREHEAD(mode, lim, acc) \
	MOVQ  mode, AX; \
	MOVQ  lim, BX;  \
	TESTQ AX, AX;   \
	JNE   acc

// The head of a store, from label store on: STOREHEAD, then the column
// bias (cbadd, with cb's pointer in R10) where cb is not nil; at rowbias,
// on to put where rb is nil, else on with its pointer in R9.
#define STORECB(mode, lim, cb, rb, cbadd) \
store:                                \
	STOREHEAD(mode, lim, accumulate); \
	NILJMPQ(cb, R10, rowbias);        \
	cbadd;                            \
rowbias:                              \
	NILJMPQ(rb, R9, put)

// The head of a store's mode accumulate, from label accumulate on: with
// neither a clamp (BX) nor a residual (res), on to accnow, which adds the
// tile into C and stores it at once; else from accload on, C's rows
// added in from DX on (AX keeps DX).
#define ACCHEAD(res) \
accumulate:                    \
	TESTQ BX, BX;              \
	JNE   accload;             \
	NILJMPQ(res, R10, accnow); \
accload:                       \
	MOVQ  DX, AX

// The store of sgemm6x16 (ymm) and sgemm12x16 (zmm), from label store on:
// mode, lim, cb, rb and res are the arguments; cbadd adds the column bias
// at R10 and rbadd the row bias at R9; list(addm, v, p, w) adds the rows
// at p (C's, the residual's); clamp clamps to the bounds at BX; puttile
// stores the tile at DX and addc adds it into C there. With mode set, C
// is added in (and stored at once when there is neither residual nor
// clamp); then the residual, the clamp and the store.
#define STORETILE(mode, lim, cb, rb, res, cbadd, rbadd, list, addm, v, w, clamp, puttile, addc) \
	STORECB(mode, lim, cb, rb, cbadd); \
	rbadd;                             \
put:                                       \
	NILJMPQ(res, R10, resdone);        \
	list(addm, v, R10, w);             \
resdone:                                   \
	TESTQ BX, BX;                      \
	JEQ   putnow;                      \
	clamp;                             \
putnow:                                    \
	puttile;                           \
	VZEROUPPER;                        \
	RET;                               \
	ACCHEAD(res);                      \
	list(addm, v, DX, w);              \
	MOVQ  AX, DX;                      \
	JMP   put;                         \
accnow:                                    \
	addc;                              \
	VZEROUPPER;                        \
	RET
