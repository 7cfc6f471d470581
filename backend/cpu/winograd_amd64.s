//go:build !noasm

#include "textflag.h"
#include "regs_amd64.h"

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

// The arguments of wgIn and wgIn4: DI v, R8 vstep, SI e, R9 p, R10 n;
// of wgOut and wgOut4: DI y, R9 ldy, SI m, R8 mstep, R10 n.
#define WGINARGS \
	MOVQ v+0(FP), DI;      \
	MOVQ vstep+8(FP), R8;  \
	MOVQ e+16(FP), SI;     \
	MOVQ p+24(FP), R9;     \
	MOVQ n+32(FP), R10

#define WGOUTARGS \
	MOVQ y+0(FP), DI;      \
	MOVQ ldy+8(FP), R9;    \
	MOVQ m+16(FP), SI;     \
	MOVQ mstep+24(FP), R8; \
	MOVQ n+32(FP), R10

// func wgIn(v *float32, vstep int, e *float32, p, n int)
//
// Input transform of n tiles of one tile row of one channel. The four
// padded input rows of the tile row are split into even and odd columns:
// row i's even columns at e + 2i·p, its odd ones at e + (2i+1)·p, each
// with at least n+1 readable values. For tile tx < n and ξ = 4v+u,
// v[ξ·vstep + tx] = (Bᵀ·d·B)[v][u], d the tile's 4×4 padded input.
TEXT ·wgIn(SB), NOSPLIT, $0-40
	WGINARGS
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
#define OUTCLAMP(z) CLAMPR(Z17, Z18, z)

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
#define WGLANES(t, lo, k) \
	DATA t+8*k(SB)/4, $(lo+k); \
	DATA t+8*k+4(SB)/4, $(lo+16+k)

IDX8(WGLANES, wgLo<>, 0)
GLOBL wgLo<>(SB), RODATA, $64
IDX8(WGLANES, wgHi<>, 8)
GLOBL wgHi<>(SB), RODATA, $64

// Loads the bounds at lim into Z17, Z18 if it is not nil, and the
// interleaving lanes wgLo<>, wgHi<> into Z19, Z20.
#define OUTCONSTS(lim) \
	MOVQ lim, AX;            \
	TESTQ AX, AX;            \
	JEQ  3(PC);              \
	VBROADCASTSS (AX), Z17;  \
	VBROADCASTSS 4(AX), Z18; \
	LEAQ wgLo<>(SB), AX;     \
	VMOVUPS (AX), Z19;       \
	LEAQ wgHi<>(SB), AX;     \
	VMOVUPS (AX), Z20

// func wgOut(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32)
//
// Output transform of n tiles of one tile row of one output channel:
// for tile tx < n, the 2×2 outputs Aᵀ·M·A + bias (M[v][u] = m[(4v+u)·mstep
// + tx]), clamped to [lim[0], lim[1]] when lim is set, go to output rows
// y and y + ldy (the second only when rows is 2), columns 2tx and 2tx+1
// where they are below cols.
TEXT ·wgOut(SB), NOSPLIT, $0-68
	WGOUTARGS
	SHLQ $2, R8              // one ξ: bytes
	LEAQ (R8)(R8*2), R13     // three ξ
	SHLQ $2, R9
	VBROADCASTSS bias+64(FP), Z16
	OUTCONSTS(lim+56(FP))
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

// Winograd F(4×4, 3×3) transforms, sixteen tiles of one tile row at a
// time, one tile a lane (see winograd.go for the matrices). Z30 holds 4
// and Z31 2 in the input transform.

// Loads row i of the tiles from DX (row i's columns 4tx+j, j < 4, at DX +
// j·R9 bytes from tile tx on; R14 = 3·R9): d0..d5 in Z24..Z29.
#define IN4LOAD \
	VMOVUPS.Z (DX), K1, Z24;        \
	VMOVUPS.Z (DX)(R9*1), K1, Z25;  \
	VMOVUPS.Z (DX)(R9*2), K1, Z26;  \
	VMOVUPS.Z (DX)(R14*1), K1, Z27; \
	VMOVUPS.Z 4(DX), K1, Z28;       \
	VMOVUPS.Z 4(DX)(R9*1), K1, Z29

// The first three values of the row transform of d0..d5: r0 = 4(d0−d2) +
// (d4−d2), r1 = (d4−4d2) + (d3−4d1), r2 = (d4−4d2) − (d3−4d1).
#define IN4ROWA(r0, r1, r2) \
	VSUBPS       Z26, Z24, r0;  \
	VSUBPS       Z26, Z28, Z18; \
	VFMADD213PS  Z18, Z30, r0;  \
	VMOVAPS      Z28, r1;       \
	VFNMADD231PS Z30, Z26, r1;  \
	VMOVAPS      Z27, Z18;      \
	VFNMADD231PS Z30, Z25, Z18; \
	VSUBPS       Z18, r1, r2;   \
	VADDPS       Z18, r1, r1

// The last three: r3 = (d4−d2) + 2(d3−d1), r4 = (d4−d2) − 2(d3−d1),
// r5 = (d5−d3) − 4(d3−d1).
#define IN4ROWB(r3, r4, r5) \
	VSUBPS       Z26, Z28, Z18; \
	VSUBPS       Z25, Z27, Z19; \
	VMOVAPS      Z18, r3;       \
	VFMADD231PS  Z31, Z19, r3;  \
	VMOVAPS      Z18, r4;       \
	VFNMADD231PS Z31, Z19, r4;  \
	VSUBPS       Z27, Z29, r5;  \
	VFNMADD231PS Z30, Z19, r5

// Column transform of one column (x0..x5: its values in rows 0..5), the
// same six combinations, stored under K1 as ξ = u, 6+u, …, 30+u: from
// R12 on, R13 bytes apart.
#define IN4COL(x0, x1, x2, x3, x4, x5) \
	MOVQ         R12, R11;      \
	VSUBPS       x2, x0, Z20;   \
	VSUBPS       x2, x4, Z21;   \
	VFMADD213PS  Z21, Z30, Z20; \
	VMOVUPS      Z20, K1, (R11); \
	ADDQ         R13, R11;      \
	VMOVAPS      x4, Z22;       \
	VFNMADD231PS Z30, x2, Z22;  \
	VMOVAPS      x3, Z23;       \
	VFNMADD231PS Z30, x1, Z23;  \
	VADDPS       Z23, Z22, Z24; \
	VMOVUPS      Z24, K1, (R11); \
	ADDQ         R13, R11;      \
	VSUBPS       Z23, Z22, Z25; \
	VMOVUPS      Z25, K1, (R11); \
	ADDQ         R13, R11;      \
	VSUBPS       x1, x3, Z26;   \
	VMOVAPS      Z21, Z27;      \
	VFMADD231PS  Z31, Z26, Z27; \
	VMOVUPS      Z27, K1, (R11); \
	ADDQ         R13, R11;      \
	VFNMADD231PS Z31, Z26, Z21; \
	VMOVUPS      Z21, K1, (R11); \
	ADDQ         R13, R11;      \
	VSUBPS       x3, x5, Z28;   \
	VFNMADD231PS Z30, Z26, Z28; \
	VMOVUPS      Z28, K1, (R11)

// Sets Z0..Z17 to three values of the row transforms (row(…), IN4ROWA
// or IN4ROWB) of rows 0..5 of the tiles from tile BX on: row i's in
// Z(3i)..Z(3i+2).
#define IN4ROWS(row) \
	LEAQ (SI)(BX*4), DX;         \
	IN4LOAD;                     \
	row(Z0, Z1, Z2);             \
	IN4NEXT(row, Z3, Z4, Z5);    \
	IN4NEXT(row, Z6, Z7, Z8);    \
	IN4NEXT(row, Z9, Z10, Z11);  \
	IN4NEXT(row, Z12, Z13, Z14); \
	IN4NEXT(row, Z15, Z16, Z17)

// The next row of IN4ROWS (four rows of the input on) into r0..r2.
#define IN4NEXT(row, r0, r1, r2) \
	LEAQ (DX)(R9*4), DX; \
	IN4LOAD;             \
	row(r0, r1, r2)

// Column transforms of the three columns in Z0..Z17 (IN4ROWS), stored
// from R12 on, the next column R8 bytes on.
#define IN4COLS \
	IN4COL(Z0, Z3, Z6, Z9, Z12, Z15);  \
	ADDQ R8, R12;                      \
	IN4COL(Z1, Z4, Z7, Z10, Z13, Z16); \
	ADDQ R8, R12;                      \
	IN4COL(Z2, Z5, Z8, Z11, Z14, Z17)

// func wgIn4(v *float32, vstep int, e *float32, p, n int)
//
// Input transform of F(4×4, 3×3) for n tiles of one tile row of one
// channel. The six padded input rows of the tile row are split four ways:
// row i's column 4t+j at e[(4i+j)·p + t], each of the 24 with at least
// n+1 readable values. For tile tx < n and ξ = 6v+u, v[ξ·vstep + tx] =
// (Bᵀ·d·B)[v][u], d the tile's 6×6 padded input.
TEXT ·wgIn4(SB), NOSPLIT, $0-40
	WGINARGS
	SHLQ  $2, R8             // one ξ: bytes
	IMUL3Q $6, R8, R13       // six ξ (the next v)
	SHLQ  $2, R9             // p: bytes
	LEAQ  (R9)(R9*2), R14    // 3p
	BCASTK(0x40800000, Z30) // 4
	BCASTK(0x40000000, Z31) // 2
	XORQ  BX, BX

in4:
	MOVQ R10, AX
	SUBQ BX, AX
	JLE  in4done
	TAILMASK(K1)
	// Columns u = 0, 1, 2, then 3, 4, 5.
	IN4ROWS(IN4ROWA)
	LEAQ (DI)(BX*4), R12
	IN4COLS
	ADDQ R8, R12
	IN4ROWS(IN4ROWB)
	IN4COLS
	ADDQ $16, BX
	JMP  in4

in4done:
	VZEROUPPER
	RET

// Loads column u of M for v = 0..5 (from R12 on, R13 bytes apart; R11 =
// R12 + 3·R13) under K1 into Z24..Z29.
#define OUT4LOAD \
	LEAQ      (R12)(R14*1), R11;   \
	VMOVUPS.Z (R12), K1, Z24;        \
	VMOVUPS.Z (R12)(R13*1), K1, Z25; \
	VMOVUPS.Z (R12)(R13*2), K1, Z26; \
	VMOVUPS.Z (R11), K1, Z27;        \
	VMOVUPS.Z (R11)(R13*1), K1, Z28; \
	VMOVUPS.Z (R11)(R13*2), K1, Z29

// Column transform of the loaded column into output rows 0 (pa = m0 +
// (m1+m2) + (m3+m4)) and 2 (pb = (m1+m2) + 4(m3+m4)).
#define OUT4COLE(pa, pb) \
	OUT4LOAD;                  \
	VADDPS      Z26, Z25, Z30; \
	VADDPS      Z28, Z27, Z31; \
	VADDPS      Z30, Z24, pa;  \
	VADDPS      Z31, pa, pa;   \
	VMOVAPS     Z30, pb;       \
	VFMADD231PS Z22, Z31, pb;  \
	ADDQ        R8, R12

// … into output rows 1 (pa = (m1−m2) + 2(m3−m4)) and 3 (pb = (m1−m2) +
// 8(m3−m4) + m5).
#define OUT4COLO(pa, pb) \
	OUT4LOAD;                  \
	VSUBPS      Z26, Z25, Z30; \
	VSUBPS      Z28, Z27, Z31; \
	VMOVAPS     Z30, pa;       \
	VFMADD231PS Z21, Z31, pa;  \
	VADDPS      Z29, Z30, pb;  \
	VFMADD231PS Z23, Z31, pb;  \
	ADDQ        R8, R12

// Sets Z0..Z5 and Z6..Z11 to two output rows' column transforms
// (col(…), OUT4COLE or OUT4COLO) of columns u = 0..5 of M from tile BX
// on.
#define OUT4COLS(col) \
	LEAQ (SI)(BX*4), R12; \
	col(Z0, Z6);          \
	col(Z1, Z7);          \
	col(Z2, Z8);          \
	col(Z3, Z9);          \
	col(Z4, Z10);         \
	col(Z5, Z11)

// Row transform of q0..q5 (one output row of sixteen tiles) into its
// four columns, plus the bias, clamped to [Z17, Z18], interleaved into 64
// output columns and stored from CX under K2..K5.
#define OUT4ROW(q0, q1, q2, q3, q4, q5) \
	VADDPS      q2, q1, Z24;     \
	VSUBPS      q2, q1, Z25;     \
	VADDPS      q4, q3, Z26;     \
	VSUBPS      q4, q3, Z27;     \
	VADDPS      Z24, q0, Z28;    \
	VADDPS      Z26, Z28, Z28;   \
	VFMADD231PS Z22, Z26, Z24;   \
	VADDPS      q5, Z25, Z29;    \
	VFMADD231PS Z23, Z27, Z29;   \
	VFMADD231PS Z21, Z27, Z25;   \
	VADDPS      Z16, Z28, Z28;   \
	VADDPS      Z16, Z25, Z25;   \
	VADDPS      Z16, Z24, Z24;   \
	VADDPS      Z16, Z29, Z29;   \
	OUTCLAMP(Z28);               \
	OUTCLAMP(Z25);               \
	OUTCLAMP(Z24);               \
	OUTCLAMP(Z29);               \
	VMOVAPS     Z28, Z26;        \
	VPERMT2PS   Z24, Z19, Z26;   \
	VPERMT2PS   Z24, Z20, Z28;   \
	VMOVAPS     Z25, Z27;        \
	VPERMT2PS   Z29, Z19, Z27;   \
	VPERMT2PS   Z29, Z20, Z25;   \
	VMOVAPS     Z26, Z30;        \
	VPERMT2PS   Z27, Z19, Z30;   \
	VPERMT2PS   Z27, Z20, Z26;   \
	VMOVAPS     Z28, Z31;        \
	VPERMT2PS   Z25, Z19, Z31;   \
	VPERMT2PS   Z25, Z20, Z28;   \
	VMOVUPS     Z30, K2, (CX);   \
	VMOVUPS     Z26, K3, 64(CX); \
	VMOVUPS     Z31, K4, 128(CX); \
	VMOVUPS     Z28, K5, 192(CX)

// Sets k to the lanes of the output columns left (AX of them, at most 16
// taken, none where AX < 0) and takes 16 from AX, clobbering CX and DX.
#define COLMASK(k) \
	CMPQ AX, $0;   \
	JGE  2(PC);    \
	XORQ AX, AX;   \
	TAILMASK(k);   \
	SUBQ $16, AX

// func wgOut4(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32)
//
// Output transform of F(4×4, 3×3) for n tiles of one tile row of one
// output channel: for tile tx < n, the 4×4 outputs Aᵀ·M·A + bias
// (M[v][u] = m[(6v+u)·mstep + tx]), clamped to [lim[0], lim[1]] when lim
// is set, go to output rows y + i·ldy for i < rows, columns 4tx..4tx+3
// where they are below cols.
TEXT ·wgOut4(SB), NOSPLIT, $0-68
	WGOUTARGS
	SHLQ $2, R8              // one ξ: bytes
	IMUL3Q $6, R8, R13       // six ξ (the next v)
	LEAQ (R13)(R13*2), R14   // three v
	SHLQ $2, R9
	VBROADCASTSS bias+64(FP), Z16
	BCASTK(0xff800000, Z17) // −∞ and +∞ without lim
	BCASTK(0x7f800000, Z18)
	OUTCONSTS(lim+56(FP))
	BCASTK(0x40000000, Z21) // 2
	BCASTK(0x40800000, Z22) // 4
	BCASTK(0x41000000, Z23) // 8
	XORQ BX, BX

out4:
	MOVQ R10, AX
	SUBQ BX, AX
	JLE  out4done
	TAILMASK(K1)
	// K2..K5: the output columns from 4tx on below cols.
	MOVQ cols+40(FP), AX
	MOVQ BX, CX
	SHLQ $2, CX
	SUBQ CX, AX
	COLMASK(K2)
	COLMASK(K3)
	COLMASK(K4)
	COLMASK(K5)
	// Output rows 0 and 2.
	OUT4COLS(OUT4COLE)
	MOVQ BX, CX
	SHLQ $4, CX
	ADDQ DI, CX
	OUT4ROW(Z0, Z1, Z2, Z3, Z4, Z5)
	CMPQ rows+48(FP), $2
	JLE  out4odd
	LEAQ (CX)(R9*2), CX
	OUT4ROW(Z6, Z7, Z8, Z9, Z10, Z11)

out4odd:
	// Output rows 1 and 3.
	CMPQ rows+48(FP), $1
	JLE  out4next
	OUT4COLS(OUT4COLO)
	MOVQ BX, CX
	SHLQ $4, CX
	ADDQ DI, CX
	ADDQ R9, CX
	OUT4ROW(Z0, Z1, Z2, Z3, Z4, Z5)
	CMPQ rows+48(FP), $3
	JLE  out4next
	LEAQ (CX)(R9*2), CX
	OUT4ROW(Z6, Z7, Z8, Z9, Z10, Z11)

out4next:
	ADDQ $16, BX
	JMP  out4

out4done:
	VZEROUPPER
	RET
