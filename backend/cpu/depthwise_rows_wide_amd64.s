//go:build !noasm

#include "textflag.h"
#include "dw9_amd64.h"

// The wide-row 3×3 kernel (depthwiseRowsWide3): unit strides and padding 1 on planes
// wider than sixteen columns, an output row sixteen columns (a chunk) at
// a time. For each filter row it keeps the input row's chunk before
// (P), the chunk itself (C) and loads the one after (N); the taps are
// C shifted one lane right with P's last value in lane 0, C, and C
// shifted one lane left with N's first value in lane 15. Each input
// vector is loaded once per filter row and no padded copy is made.
//
// Registers: Z0..Z8 the weights, Z9 the bias, Z10 and Z11 the clamp
// bounds, Z12..Z17 P and C of filter rows 0-2, Z18 N, Z19 a shifted
// vector, Z20 the accumulator. R9..R11 the filter rows' input rows (the
// zero row outside the plane), R12 the chunk's byte offset, R13 the
// output row.

// One filter row of a chunk: N from p at the next chunk under K1, the
// three taps into Z20, then P, C = C, N.
#define WROW(p, prev, cur, w0, w1, w2) \
	VMOVUPS.Z   64(p)(R12*1), K1, Z18; \
	VALIGND     $15, prev, cur, Z19;   \
	VFMADD231PS Z19, w0, Z20;          \
	VFMADD231PS cur, w1, Z20;          \
	VALIGND     $1, cur, Z18, Z19;     \
	VFMADD231PS Z19, w2, Z20;          \
	VMOVAPS     cur, prev;             \
	VMOVAPS     Z18, cur

// K1 = the lanes of the chunk whose first column is col that lie inside
// the row (width columns); AX must hold 0xFFFF (BX, CX clobbered).
#define CHUNKMASK(col) \
	MOVQ    width+40(FP), BX; \
	SUBQ    col, BX;       \
	MOVQ    $0xFFFF, CX;   \
	CMPQ    BX, $16;       \
	JGE     5(PC);         \
	XORQ    CX, CX;        \
	TESTQ   BX, BX;        \
	JLE     2(PC);         \
	BZHIQ   BX, AX, CX;    \
	KMOVW   CX, K1

// func depthwiseRowsWide3(o, x, w, b *float32, h, width, nch int, lim, zero *float32)
//
// For each of nch ≥ 1 channels (planes of h×width floats at x and o,
// nine weights each at w, one bias each at b, or none if b is nil):
// o[i][j] = bias + Σ_r Σ_c w[3r+c]·x[i+r−1][j+c−1], the taps added in
// order (a tap outside the plane adds w·0), clamped to [lim[0], lim[1]]
// if lim is not nil. zero is a row of zeros of at least width+16 values.
TEXT ·depthwiseRowsWide3(SB), NOSPLIT, $16-72
	MOVQ o+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ b+24(FP), R8
	MOVQ nch+48(FP), R14
	MOVQ zero+64(FP), R15
	MOVQ lim+56(FP), AX
	TESTQ AX, AX
	JEQ  wchan
	VBROADCASTSS (AX), Z10
	VBROADCASTSS 4(AX), Z11

wchan:
	BCAST9(DX)
	VXORPS Z9, Z9, Z9
	TESTQ  R8, R8
	JEQ    2(PC)
	VBROADCASTSS (R8), Z9
	XORQ   AX, AX
	MOVQ   AX, row-8(SP)        // output row

wrow:
	// The input rows i−1, i, i+1, the zero row outside the plane.
	MOVQ  row-8(SP), AX
	MOVQ  width+40(FP), BX
	SHLQ  $2, BX                // row bytes
	IMULQ BX, AX
	LEAQ  (SI)(AX*1), R10       // row i
	LEAQ  (DI)(AX*1), R13       // output row i
	MOVQ  R10, R9
	SUBQ  BX, R9                // row i−1
	LEAQ  (R10)(BX*1), R11      // row i+1
	MOVQ  row-8(SP), AX
	TESTQ AX, AX
	CMOVQEQ R15, R9
	INCQ  AX
	CMPQ  AX, h+32(FP)
	CMOVQEQ R15, R11
	// P = 0 (the padding before the row), C = the first chunk.
	XORQ    R12, R12
	MOVQ    $0xFFFF, AX
	XORQ    CX, CX
	CHUNKMASK(CX)
	VXORPS    Z12, Z12, Z12
	VXORPS    Z14, Z14, Z14
	VXORPS    Z16, Z16, Z16
	VMOVUPS.Z (R9), K1, Z13
	VMOVUPS.Z (R10), K1, Z15
	VMOVUPS.Z (R11), K1, Z17

wchunk:
	// K2: the chunk's outputs; K1: the next chunk's columns.
	KMOVW  K1, K2
	MOVQ   R12, CX
	SHRQ   $2, CX
	ADDQ   $16, CX              // the next chunk's first column
	MOVQ   $0xFFFF, AX
	CHUNKMASK(CX)
	VMOVAPS Z9, Z20
	WROW(R9, Z12, Z13, Z0, Z1, Z2)
	WROW(R10, Z14, Z15, Z3, Z4, Z5)
	WROW(R11, Z16, Z17, Z6, Z7, Z8)
	CMPQ    lim+56(FP), $0
	JEQ     3(PC)
	VMAXPS  Z20, Z10, Z20
	VMINPS  Z20, Z11, Z20
	VMOVUPS Z20, K2, (R13)(R12*1)
	ADDQ    $64, R12
	MOVQ    R12, CX
	SHRQ    $2, CX
	CMPQ    CX, width+40(FP)
	JLT     wchunk

	MOVQ row-8(SP), AX
	INCQ AX
	MOVQ AX, row-8(SP)
	CMPQ AX, h+32(FP)
	JLT  wrow
	// The next channel.
	MOVQ  h+32(FP), AX
	IMULQ width+40(FP), AX
	LEAQ  (SI)(AX*4), SI
	LEAQ  (DI)(AX*4), DI
	ADDQ  $36, DX
	TESTQ R8, R8
	JEQ   2(PC)
	ADDQ  $4, R8
	DECQ  R14
	JNZ   wchan
	VZEROUPPER
	RET
