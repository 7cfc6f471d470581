#include "textflag.h"

// Winograd F(2×2, 3×3) transforms, sixteen tiles of one tile row at a
// time, one tile a lane (see winograd.go for the matrices).

// Sets k to the lanes of the tiles left (AX = n − tx; at most 16 of
// them), clobbering CX and DX.
#define TAILMASK(k) \
	MOVQ  AX, CX;  \
	CMPQ  CX, $16; \
	JLE   2(PC);   \
	MOVQ  $16, CX; \
	MOVQ  $1, DX;  \
	SHLQ  CX, DX;  \
	DECQ  DX;      \
	KMOVW DX, k

// Loads row i of the tiles from DX (the row's even columns from tile tx
// on; its odd columns R9 bytes on): d0 d1 d2 d3 = E[tx] O[tx] E[tx+1]
// O[tx+1], and sets its row transform r0..r3 = d0−d2, d1+d2, d2−d1,
// d1−d3.
#define INROW(r0, r1, r2, r3) \
	VMOVUPS.Z (DX), K1, Z28;        \
	VMOVUPS.Z (DX)(R9*1), K1, Z29;  \
	VMOVUPS.Z 4(DX), K1, Z30;       \
	VMOVUPS.Z 4(DX)(R9*1), K1, Z31; \
	VSUBPS    Z30, Z28, r0;         \
	VADDPS    Z30, Z29, r1;         \
	VSUBPS    Z29, Z30, r2;         \
	VSUBPS    Z31, Z29, r3

// Column transform of column u (a, b, c, d: its values in tile rows 0..3)
// into a−c, b+c, c−b, b−d, stored as ξ = u, 4+u, 8+u, 12+u: at R11 +
// ξ·R8 bytes (R11 = the output for ξ 0, tile tx).
#define INCOL(a, b, c, d, u) \
	VSUBPS  c, a, Z24;             \
	VADDPS  c, b, Z25;             \
	VSUBPS  b, c, Z26;             \
	VSUBPS  d, b, Z27;             \
	VMOVUPS Z24, K1, (R12);        \
	VMOVUPS Z25, K1, (R12)(R13*1); \
	VMOVUPS Z26, K1, (R12)(R13*2); \
	VMOVUPS Z27, K1, (R12)(R14*1); \
	ADDQ    R8, R12

// func wgIn(v *float32, vstep int, e *float32, p, n int)
//
// Input transform of n tiles of one tile row of one channel. The four
// padded input rows of the tile row are split into even and odd columns:
// row i's even columns at e + 2i·p, its odd ones at e + (2i+1)·p, each
// with at least n+1 readable values. For tile tx < n and ξ = 4v+u,
// v[ξ·vstep + tx] = (Bᵀ·d·B)[v][u], d the tile's 4×4 padded input.
TEXT ·wgIn(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), DI
	MOVQ vstep+8(FP), R8
	MOVQ e+16(FP), SI
	MOVQ p+24(FP), R9
	MOVQ n+32(FP), R10
	SHLQ $2, R8              // one ξ: bytes
	MOVQ R8, R13
	SHLQ $2, R13             // four ξ (the next v)
	LEAQ (R13)(R13*2), R14   // twelve ξ
	SHLQ $2, R9              // p: bytes
	XORQ BX, BX

in16:
	MOVQ R10, AX
	SUBQ BX, AX
	JLE  indone
	TAILMASK(K1)
	LEAQ (SI)(BX*4), DX
	INROW(Z0, Z1, Z2, Z3)
	LEAQ (DX)(R9*2), DX
	INROW(Z4, Z5, Z6, Z7)
	LEAQ (DX)(R9*2), DX
	INROW(Z8, Z9, Z10, Z11)
	LEAQ (DX)(R9*2), DX
	INROW(Z12, Z13, Z14, Z15)
	LEAQ (DI)(BX*4), R12
	INCOL(Z0, Z4, Z8, Z12, 0)
	INCOL(Z1, Z5, Z9, Z13, 1)
	INCOL(Z2, Z6, Z10, Z14, 2)
	INCOL(Z3, Z7, Z11, Z15, 3)
	ADDQ $16, BX
	JMP  in16

indone:
	VZEROUPPER
	RET

// Loads ξ = 4v..4v+3 (from R12 on, R8 bytes apart) under K1 and sets
// their row transform: b0 = m0+m1+m2, b1 = m1−m2−m3.
#define OUTROW(b0, b1) \
	VMOVUPS.Z (R12), K1, Z28;          \
	VMOVUPS.Z (R12)(R8*1), K1, Z29;    \
	VMOVUPS.Z (R12)(R8*2), K1, Z30;    \
	VMOVUPS.Z (R12)(R13*1), K1, Z31;   \
	VADDPS    Z29, Z28, b0;            \
	VADDPS    Z30, b0, b0;             \
	VSUBPS    Z30, Z29, b1;            \
	VSUBPS    Z31, b1, b1;             \
	LEAQ      (R12)(R8*4), R12

// Column transform of column b (s0..s3: its values for v = 0..3) into
// output rows 0 and 1: y0 = s0+s1+s2, y1 = s1−s2−s3, plus the bias.
#define OUTCOL(s0, s1, s2, s3, y0, y1) \
	VADDPS s1, s0, y0;  \
	VADDPS s2, y0, y0;  \
	VADDPS Z16, y0, y0; \
	VSUBPS s2, s1, y1;  \
	VSUBPS s3, y1, y1;  \
	VADDPS Z16, y1, y1

// Clamps z to [Z17, Z18] when lim is set (a NaN passes).
#define OUTCLAMP(z) \
	VMAXPS z, Z17, z; \
	VMINPS z, Z18, z

// Interleaves the columns b = 0 (a) and b = 1 (b) of sixteen tiles into
// 32 output columns and stores them from R11 under K2 and K3.
#define OUTSTORE(a, b) \
	VMOVAPS   a, Z28;          \
	VPERMT2PS b, Z19, Z28;     \
	VPERMT2PS b, Z20, a;       \
	VMOVUPS   Z28, K2, (R11);  \
	VMOVUPS   a, K3, 64(R11)

// wgLo<>, wgHi<>: the lanes that interleave two vectors (0, 16, 1, 17,
// … and 8, 24, 9, 25, …) for VPERMT2PS.
DATA wgLo<>+0(SB)/4, $0
DATA wgLo<>+4(SB)/4, $16
DATA wgLo<>+8(SB)/4, $1
DATA wgLo<>+12(SB)/4, $17
DATA wgLo<>+16(SB)/4, $2
DATA wgLo<>+20(SB)/4, $18
DATA wgLo<>+24(SB)/4, $3
DATA wgLo<>+28(SB)/4, $19
DATA wgLo<>+32(SB)/4, $4
DATA wgLo<>+36(SB)/4, $20
DATA wgLo<>+40(SB)/4, $5
DATA wgLo<>+44(SB)/4, $21
DATA wgLo<>+48(SB)/4, $6
DATA wgLo<>+52(SB)/4, $22
DATA wgLo<>+56(SB)/4, $7
DATA wgLo<>+60(SB)/4, $23
GLOBL wgLo<>(SB), RODATA, $64
DATA wgHi<>+0(SB)/4, $8
DATA wgHi<>+4(SB)/4, $24
DATA wgHi<>+8(SB)/4, $9
DATA wgHi<>+12(SB)/4, $25
DATA wgHi<>+16(SB)/4, $10
DATA wgHi<>+20(SB)/4, $26
DATA wgHi<>+24(SB)/4, $11
DATA wgHi<>+28(SB)/4, $27
DATA wgHi<>+32(SB)/4, $12
DATA wgHi<>+36(SB)/4, $28
DATA wgHi<>+40(SB)/4, $13
DATA wgHi<>+44(SB)/4, $29
DATA wgHi<>+48(SB)/4, $14
DATA wgHi<>+52(SB)/4, $30
DATA wgHi<>+56(SB)/4, $15
DATA wgHi<>+60(SB)/4, $31
GLOBL wgHi<>(SB), RODATA, $64

// func wgOut(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32)
//
// Output transform of n tiles of one tile row of one output channel:
// for tile tx < n, the 2×2 outputs Aᵀ·M·A + bias (M[v][u] = m[(4v+u)·mstep
// + tx]), clamped to [lim[0], lim[1]] when lim is set, go to output rows
// y and y + ldy (the second only when rows is 2), columns 2tx and 2tx+1
// where they are below cols.
TEXT ·wgOut(SB), NOSPLIT, $0-68
	MOVQ y+0(FP), DI
	MOVQ ldy+8(FP), R9
	MOVQ m+16(FP), SI
	MOVQ mstep+24(FP), R8
	MOVQ n+32(FP), R10
	SHLQ $2, R8              // one ξ: bytes
	LEAQ (R8)(R8*2), R13     // three ξ
	SHLQ $2, R9
	VBROADCASTSS bias+64(FP), Z16
	MOVQ lim+56(FP), AX
	TESTQ AX, AX
	JEQ  3(PC)
	VBROADCASTSS (AX), Z17
	VBROADCASTSS 4(AX), Z18
	LEAQ wgLo<>(SB), AX
	VMOVUPS (AX), Z19
	LEAQ wgHi<>(SB), AX
	VMOVUPS (AX), Z20
	XORQ BX, BX

out16:
	MOVQ R10, AX
	SUBQ BX, AX
	JLE  outdone
	TAILMASK(K1)
	// K2, K3: the output columns 2tx.. below cols, in two vectors.
	MOVQ cols+40(FP), AX
	SUBQ BX, AX
	SUBQ BX, AX
	TAILMASK(K2)
	SUBQ $16, AX
	JGE  2(PC)
	XORQ AX, AX
	TAILMASK(K3)
	LEAQ (SI)(BX*4), R12
	OUTROW(Z0, Z1)
	OUTROW(Z2, Z3)
	OUTROW(Z4, Z5)
	OUTROW(Z6, Z7)
	OUTCOL(Z0, Z2, Z4, Z6, Z8, Z9)
	OUTCOL(Z1, Z3, Z5, Z7, Z10, Z11)
	CMPQ lim+56(FP), $0
	JEQ  outnoclamp
	OUTCLAMP(Z8)
	OUTCLAMP(Z9)
	OUTCLAMP(Z10)
	OUTCLAMP(Z11)

outnoclamp:
	LEAQ (DI)(BX*8), R11
	OUTSTORE(Z8, Z10)
	CMPQ rows+48(FP), $2
	JLT  outnext
	ADDQ R9, R11
	OUTSTORE(Z9, Z11)

outnext:
	ADDQ $16, BX
	JMP  out16

outdone:
	VZEROUPPER
	RET
