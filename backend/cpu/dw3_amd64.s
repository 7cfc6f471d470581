//go:build !noasm

#include "textflag.h"
#include "dwrows_amd64.h"
#include "dw9_amd64.h"

// Row-blocked 3×3 depthwise kernels on dwBandPlane's band layout (rows p
// floats apart, p a multiple of 16). Four output rows of two vectors
// (4 × 32 outputs) are summed at once: each input row is loaded once as
// three aligned vectors and shifted in registers (VALIGND) for the taps
// of columns 1 and 2, and serves every output row it is a tap row of. An
// output still adds its taps in row-major order from the bias, one fused
// multiply-add each, so the results are dwTapsAVX512's bit for bit.
//
// Registers: Z0..Z8 the weights, Z9 the bias, Z10..Z17 the accumulators
// (output row q, vector v in Z10+2q+v), Z18..Z24 the current input row,
// Z25 and Z26 the clamp's bounds.
//
// The zmm row copies that feed these kernels, the Winograd transforms
// and strided 1×1 convolutions follow: dwPadRows512, dwSplitRows512 and
// evenCols.

// Broadcasts the nine weights at AX and the bias.
#define WEIGHTS \
	BCAST9(AX); \
	VBROADCASTSS bias+72(FP), Z9

// Starts the eight accumulators from the bias.
#define BIAS8 \
	VMOVAPS Z9, Z10; \
	VMOVAPS Z9, Z11; \
	VMOVAPS Z9, Z12; \
	VMOVAPS Z9, Z13; \
	VMOVAPS Z9, Z14; \
	VMOVAPS Z9, Z15; \
	VMOVAPS Z9, Z16; \
	VMOVAPS Z9, Z17

// Unit stride: loads the 48 values of an input row from m (an address
// operand and its two successors 64 and 128 bytes on) and shifts them:
// Z18, Z21, Z22 are columns x, x+1, x+2 of vector 0; Z19, Z23, Z24 of
// vector 1.
#define ROW1(m0, m1, m2) \
	VMOVUPS m0, Z18;              \
	VMOVUPS m1, Z19;              \
	VMOVUPS m2, Z20;              \
	VALIGND $1, Z18, Z19, Z21;    \
	VALIGND $2, Z18, Z19, Z22;    \
	VALIGND $1, Z19, Z20, Z23;    \
	VALIGND $2, Z19, Z20, Z24

// Adds the current row's three taps with weights a, b, c into the
// accumulators u (vector 0) and v (vector 1): Z18/Z19 the first tap,
// Z21/Z23 the second, Z22/Z24 the third.
#define TAPS3(a, b, c, u, v) \
	VFMADD231PS Z18, a, u; \
	VFMADD231PS Z19, a, v; \
	VFMADD231PS Z21, b, u; \
	VFMADD231PS Z23, b, v; \
	VFMADD231PS Z22, c, u; \
	VFMADD231PS Z24, c, v

// Filter rows 0, 1, 2 of output row q (accumulators u, v).
#define KR0(u, v) TAPS3(Z0, Z1, Z2, u, v)
#define KR1(u, v) TAPS3(Z3, Z4, Z5, u, v)
#define KR2(u, v) TAPS3(Z6, Z7, Z8, u, v)

// Stores the eight accumulators under the masks ka (vector 0) and kb
// (vector 1): output row q at DI + q·R10 bytes (AX the address of row 2).
#define STORE8(ka, kb) \
	LEAQ    (DI)(R10*2), AX;       \
	VMOVUPS Z10, ka, (DI);         \
	VMOVUPS Z11, kb, 64(DI);       \
	VMOVUPS Z12, ka, (DI)(R10*1);  \
	VMOVUPS Z13, kb, 64(DI)(R10*1); \
	VMOVUPS Z14, ka, (AX);         \
	VMOVUPS Z15, kb, 64(AX);       \
	VMOVUPS Z16, ka, (AX)(R10*1);  \
	VMOVUPS Z17, kb, 64(AX)(R10*1)

// Clamps the eight accumulators to [Z25, Z26] as the GEMM kernels do
// (a NaN passes) when lim is set.
#define CLAMP8(skip) \
	CMPQ   lim+64(FP), $0; \
	JEQ    skip;           \
	VMAXPS Z10, Z25, Z10;  \
	VMAXPS Z11, Z25, Z11;  \
	VMAXPS Z12, Z25, Z12;  \
	VMAXPS Z13, Z25, Z13;  \
	VMAXPS Z14, Z25, Z14;  \
	VMAXPS Z15, Z25, Z15;  \
	VMAXPS Z16, Z25, Z16;  \
	VMAXPS Z17, Z25, Z17;  \
	VMINPS Z10, Z26, Z10;  \
	VMINPS Z11, Z26, Z11;  \
	VMINPS Z12, Z26, Z12;  \
	VMINPS Z13, Z26, Z13;  \
	VMINPS Z14, Z26, Z14;  \
	VMINPS Z15, Z26, Z15;  \
	VMINPS Z16, Z26, Z16;  \
	VMINPS Z17, Z26, Z17;  \
skip:

// Stores a step (clamped when lim is set): whole vectors, or the last
// step's masks (BX = 1).
#define STORESTEP(last, next, skip) \
	CLAMP8(skip);     \
	CMPQ BX, $1;      \
	JEQ  last;        \
	STORE8(K1, K1);   \
	JMP  next;        \
last:                 \
	STORE8(K3, K4);   \
next:

// Ends a step: stores it, moves on to the next step of the group (back
// to step) or to the next group (back to group).
#define STEPEND(last, next, skip, step, group) \
	STORESTEP(last, next, skip); \
	ADDQ $128, SI;          \
	ADDQ $128, DI;          \
	DECQ BX;                \
	JNZ  step;              \
	LEAQ (R12)(R8*4), SI;   \
	LEAQ (R13)(R10*4), DI;  \
	DECQ CX;                \
	JMP  group

// Sets R11 to the 32-column steps of a row of cols+0(FP) columns, K1 to
// all lanes and K3, K4 to the lanes of the last step's two vectors
// (clobbers AX, BX, CX).
#define STEPS \
	MOVQ  cols+48(FP), R11; \
	MOVQ  R11, CX;          \
	ADDQ  $31, R11;         \
	SHRQ  $5, R11;          \
	MOVQ  R11, AX;          \
	SHLQ  $5, AX;           \
	SUBQ  $32, AX;          \
	SUBQ  AX, CX;           \
	MOVQ  $1, AX;           \
	SHLQ  CX, AX;           \
	DECQ  AX;               \
	KMOVW AX, K3;           \
	SHRQ  $16, AX;          \
	KMOVW AX, K4;           \
	MOVQ  $0xFFFF, AX;      \
	KMOVW AX, K1

// Loads the arguments common to both kernels: DI the output, SI the
// input, R8 the input pitch (floats), R10 the output pitch (bytes), CX
// the groups, and the weights, bias, step masks and clamp bounds.
#define ARGS \
	MOVQ o+0(FP), DI;      \
	MOVQ x+8(FP), SI;      \
	MOVQ w+16(FP), AX;     \
	MOVQ p+32(FP), R8;     \
	WEIGHTS;               \
	STEPS;                 \
	MOVQ groups+56(FP), CX; \
	MOVQ ld+40(FP), R10;   \
	SHLQ $2, R10;          \
	MOVQ lim+64(FP), AX;   \
	TESTQ AX, AX;          \
	JEQ  3(PC);            \
	VBROADCASTSS (AX), Z25; \
	VBROADCASTSS 4(AX), Z26

// func dw3s1x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32)
//
// For each of groups groups of four output rows (row 4g+q, q < 4, at
// o + (4g+q)·ld) and each column j < cols of them: o[(4g+q)·ld + j] =
// bias + Σ_r Σ_c w[3r+c]·x[(4g+q+r)·p + j + c]. The input is read in
// 32-column steps: every row of x read needs roundUp(cols, 32) + 16
// readable values. s is unused (the sub-array size of the strided form).
// With lim set, the outputs are clamped to [lim[0], lim[1]] as stored.
TEXT ·dw3s1x4(SB), NOSPLIT, $0-76
	ARGS
	SHLQ $2, R8              // input row pitch in bytes
	LEAQ (R8)(R8*2), R9      // three rows
	LEAQ (R8)(R8*4), R14     // five rows

s1group:
	TESTQ CX, CX
	JEQ   s1done
	MOVQ  SI, R12
	MOVQ  DI, R13
	MOVQ  R11, BX

s1step:
	BIAS8
	ROW1((SI), 64(SI), 128(SI))
	KR0(Z10, Z11)
	ROW1((SI)(R8*1), 64(SI)(R8*1), 128(SI)(R8*1))
	KR1(Z10, Z11)
	KR0(Z12, Z13)
	ROW1((SI)(R8*2), 64(SI)(R8*2), 128(SI)(R8*2))
	KR2(Z10, Z11)
	KR1(Z12, Z13)
	KR0(Z14, Z15)
	ROW1((SI)(R9*1), 64(SI)(R9*1), 128(SI)(R9*1))
	KR2(Z12, Z13)
	KR1(Z14, Z15)
	KR0(Z16, Z17)
	ROW1((SI)(R8*4), 64(SI)(R8*4), 128(SI)(R8*4))
	KR2(Z14, Z15)
	KR1(Z16, Z17)
	ROW1((SI)(R14*1), 64(SI)(R14*1), 128(SI)(R14*1))
	KR2(Z16, Z17)
	STEPEND(s1last, s1next, s1noclamp, s1step, s1group)

s1done:
	VZEROUPPER
	RET

// Stride 2: loads an input row from its even columns at AX and its odd
// columns at AX+DX into ROW1's registers, so that KR0..KR2 add its taps
// (columns 0, 1, 2: even, odd, even one on): Z18, Z19 the even columns of
// vectors 0 and 1, Z21, Z23 the odd ones, Z22, Z24 the even ones one
// column on.
#define ROW2 \
	VMOVUPS (AX), Z18;         \
	VMOVUPS 64(AX), Z19;       \
	VMOVUPS 128(AX), Z20;      \
	VMOVUPS (AX)(DX*1), Z21;   \
	VMOVUPS 64(AX)(DX*1), Z23; \
	VALIGND $1, Z18, Z19, Z22; \
	VALIGND $1, Z19, Z20, Z24

// Loads padded input row i of the group (ROW2): sub-array row i/2 (at
// rowaddr) of the even rows (i even) or of the odd rows, R14 bytes on.
#define EVENROW(rowaddr) LEAQ rowaddr, AX; ROW2
#define ODDROW(rowaddr) LEAQ rowaddr, AX; ADDQ R14, AX; ROW2

// The input rows of sub-array row rowaddr after the first: the even one
// ends the output row in p0:p1 (filter row 2) and starts the next one in
// n0:n1 (filter row 0), the odd one goes on with n0:n1 (filter row 1).
#define MIDROW(rowaddr, p0, p1, n0, n1) \
	EVENROW(rowaddr); \
	KR2(p0, p1);      \
	KR0(n0, n1);      \
	ODDROW(rowaddr);  \
	KR1(n0, n1)

// func dw3s2x4(o, x, w *float32, s, p, ld, cols, groups int, lim *float32, bias float32)
//
// dw3s1x4 for stride 2 on dwBandPlane's four sub-arrays of s floats each
// (even rows' even and odd columns, then odd rows' even and odd
// columns): output i = bias + Σ_r Σ_c w[3r+c]·sub(r mod 2, c mod 2)[i +
// (r/2)·p + c/2].
TEXT ·dw3s2x4(SB), NOSPLIT, $0-76
	ARGS
	MOVQ s+24(FP), DX
	SHLQ $2, DX              // sub-array size in bytes
	LEAQ (DX)(DX*1), R14     // even rows to odd rows
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9

s2group:
	TESTQ CX, CX
	JEQ   s2done
	MOVQ  SI, R12
	MOVQ  DI, R13
	MOVQ  R11, BX

s2step:
	BIAS8
	EVENROW((SI))
	KR0(Z10, Z11)
	ODDROW((SI))
	KR1(Z10, Z11)
	MIDROW((SI)(R8*1), Z10, Z11, Z12, Z13)
	MIDROW((SI)(R8*2), Z12, Z13, Z14, Z15)
	MIDROW((SI)(R9*1), Z14, Z15, Z16, Z17)
	EVENROW((SI)(R8*4))
	KR2(Z16, Z17)
	STEPEND(s2last, s2next, s2noclamp, s2step, s2group)

s2done:
	VZEROUPPER
	RET

// Sets K1 to the first n lanes (n in CX, 0 ≤ n ≤ 16), clobbering AX.
#define LANES(k) \
	MOVQ  $1, AX; \
	SHLQ  CX, AX; \
	DECQ  AX;     \
	KMOVW AX, k

// Sets K5 and K6 to the first BX values (at most 32) of two vectors,
// clobbering AX, BX and CX.
#define PAIRLANES \
	MOVQ BX, CX;   \
	CMPQ CX, $16;  \
	JLE  2(PC);    \
	MOVQ $16, CX;  \
	LANES(K5);     \
	SUBQ CX, BX;   \
	MOVQ BX, CX;   \
	LANES(K6)

// Zeroes n floats from p (registers; p is advanced past them), sixteen
// at a time and then the rest under a mask (K1 clobbered with AX, CX).
#define ZERON(p, n, loop, tail, done) \
	MOVQ n, CX;           \
loop:                     \
	CMPQ CX, $16;         \
	JLT  tail;            \
	VMOVUPS Z31, (p);     \
	ADDQ $64, p;          \
	SUBQ $16, CX;         \
	JMP  loop;            \
tail:                     \
	TESTQ CX, CX;         \
	JEQ   done;           \
	LEAQ (p)(CX*4), BX;   \
	LANES(K1);            \
	VMOVUPS Z31, K1, (p); \
	MOVQ BX, p;           \
done:

// func dwPadRows512(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int)
//
// dwPadRows on zmm registers: for each of rows rows, pre zeros, cols
// values of the source row and post zeros, touching nothing else.
TEXT ·dwPadRows512(SB), NOSPLIT, $0-64
	PADARGS
	VPXORD Z31, Z31, Z31
	// K2: the last cols mod 16 values of a row.
	MOVQ R12, CX
	ANDQ $15, CX
	LANES(K2)
	MOVQ R12, R14
	ANDQ $-16, R14

prow:
	TESTQ R10, R10
	JEQ   pdone
	MOVQ  DI, DX
	ZERON(DX, R11, ppre, ppret, pprez)
	XORQ  AX, AX

	PADVEC(pvec, ptail, Z0, 16)

ptail:
	CMPQ      AX, R12
	JGE       ppost
	VMOVUPS.Z (SI)(AX*4), K2, Z0
	VMOVUPS   Z0, K2, (DX)(AX*4)

ppost:
	LEAQ (DX)(R12*4), DX
	ZERON(DX, R13, ppo, ppot, ppoz)
	PADNEXT(prow, pdone)

// dwEvenOdd<>: the lane indices of the even values (0, 2, …, 30) and of
// the odd values (1, 3, …, 31) of two vectors, for VPERMT2PS.
DATA dwEvenOdd<>+0(SB)/4, $0
DATA dwEvenOdd<>+4(SB)/4, $2
DATA dwEvenOdd<>+8(SB)/4, $4
DATA dwEvenOdd<>+12(SB)/4, $6
DATA dwEvenOdd<>+16(SB)/4, $8
DATA dwEvenOdd<>+20(SB)/4, $10
DATA dwEvenOdd<>+24(SB)/4, $12
DATA dwEvenOdd<>+28(SB)/4, $14
DATA dwEvenOdd<>+32(SB)/4, $16
DATA dwEvenOdd<>+36(SB)/4, $18
DATA dwEvenOdd<>+40(SB)/4, $20
DATA dwEvenOdd<>+44(SB)/4, $22
DATA dwEvenOdd<>+48(SB)/4, $24
DATA dwEvenOdd<>+52(SB)/4, $26
DATA dwEvenOdd<>+56(SB)/4, $28
DATA dwEvenOdd<>+60(SB)/4, $30
DATA dwEvenOdd<>+64(SB)/4, $1
DATA dwEvenOdd<>+68(SB)/4, $3
DATA dwEvenOdd<>+72(SB)/4, $5
DATA dwEvenOdd<>+76(SB)/4, $7
DATA dwEvenOdd<>+80(SB)/4, $9
DATA dwEvenOdd<>+84(SB)/4, $11
DATA dwEvenOdd<>+88(SB)/4, $13
DATA dwEvenOdd<>+92(SB)/4, $15
DATA dwEvenOdd<>+96(SB)/4, $17
DATA dwEvenOdd<>+100(SB)/4, $19
DATA dwEvenOdd<>+104(SB)/4, $21
DATA dwEvenOdd<>+108(SB)/4, $23
DATA dwEvenOdd<>+112(SB)/4, $25
DATA dwEvenOdd<>+116(SB)/4, $27
DATA dwEvenOdd<>+120(SB)/4, $29
DATA dwEvenOdd<>+124(SB)/4, $31
GLOBL dwEvenOdd<>(SB), RODATA, $128

// func dwSplitRows512(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int)
//
// dwSplitRows on zmm registers, writing exactly e[0, p) and o[0, p) of
// each row (no zeros past p).
TEXT ·dwSplitRows512(SB), NOSPLIT, $0-96
	SPLITARGS
	SHLQ $2, R8
	SHLQ $2, R9
	VPXORD  Z31, Z31, Z31
	LEAQ    dwEvenOdd<>(SB), AX
	VMOVUPS (AX), Z29
	VMOVUPS 64(AX), Z30
	// K5, K6: the loaded lanes of the last pairs mod 16 pairs' two
	// vectors; K7 the pairs stored.
	MOVQ pairs+72(FP), CX
	ANDQ $15, CX
	LANES(K7)
	SHLQ $1, CX
	MOVQ CX, BX
	PAIRLANES

srow:
	TESTQ R10, R10
	JEQ   sdone
	// Zeros in e[0, p) and o[0, p).
	MOVQ DI, R11
	ZERON(R11, p+48(FP), sze, szet, szez)
	MOVQ SI, R11
	ZERON(R11, p+48(FP), szo, szot, szoz)
	MOVQ lo+56(FP), R11
	LEAQ (DI)(R11*4), R12     // e + lo
	LEAQ (SI)(R11*4), R11     // o + lo
	MOVQ off+64(FP), R13
	LEAQ (DX)(R13*4), R13     // x + off
	MOVQ pairs+72(FP), R14
	ANDQ $-16, R14
	XORQ AX, AX

svec:
	CMPQ        AX, R14
	JGE         stl
	VMOVUPS     (R13)(AX*8), Z0
	VMOVUPS     64(R13)(AX*8), Z1
	VMOVAPS     Z0, Z2
	VPERMT2PS   Z1, Z29, Z2
	VPERMT2PS   Z1, Z30, Z0
	VMOVUPS     Z2, (R12)(AX*4)
	VMOVUPS     Z0, (R11)(AX*4)
	ADDQ        $16, AX
	JMP         svec

stl:
	CMPQ        AX, pairs+72(FP)
	JGE         sfix
	VMOVUPS.Z   (R13)(AX*8), K5, Z0
	VMOVUPS.Z   64(R13)(AX*8), K6, Z1
	VMOVAPS     Z0, Z2
	VPERMT2PS   Z1, Z29, Z2
	VPERMT2PS   Z1, Z30, Z0
	VMOVUPS     Z2, K7, (R12)(AX*4)
	VMOVUPS     Z0, K7, (R11)(AX*4)

sfix:
	SPLITHEAD(R11, stail)

stail:
	SPLITTAILQ(tail+88(FP), snext)
	MOVQ pairs+72(FP), CX
	MOVL BX, (R12)(CX*4)

snext:
	SPLITNEXT(srow, sdone)

// func evenCols(dst, src *float32, n, rows, ldd, lds int)
//
// For each of rows rows (ldd floats apart in dst, lds in src): dst[j] =
// src[2j] for j < n, reading nothing past src[2n−2].
TEXT ·evenCols(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), R8
	MOVQ rows+24(FP), R9
	MOVQ ldd+32(FP), R10
	MOVQ lds+40(FP), R11
	SHLQ $2, R10
	SHLQ $2, R11
	LEAQ    dwEvenOdd<>(SB), AX
	VMOVUPS (AX), Z29
	TESTQ R8, R8
	JEQ   edone
	// R12: the outputs before the last vector of them (which may be
	// whole), so that no whole vector reads past src[2n−2]. K7: the r
	// outputs of the last vector; K5, K6 the lanes of its two input
	// vectors that hold its 2r−1 values.
	LEAQ -1(R8), R12
	SHRQ $4, R12
	SHLQ $4, R12
	MOVQ R8, CX
	SUBQ R12, CX
	LANES(K7)
	LEAQ -1(CX)(CX*1), BX
	PAIRLANES

erow:
	TESTQ R9, R9
	JEQ   edone
	XORQ  AX, AX

evec:
	CMPQ      AX, R12
	JGE       etail
	VMOVUPS   (SI)(AX*8), Z0
	VMOVUPS   64(SI)(AX*8), Z1
	VPERMT2PS Z1, Z29, Z0
	VMOVUPS   Z0, (DI)(AX*4)
	ADDQ      $16, AX
	JMP       evec

etail:
	CMPQ      AX, R8
	JGE       enext
	VMOVUPS.Z (SI)(AX*8), K5, Z0
	VMOVUPS.Z 64(SI)(AX*8), K6, Z1
	VPERMT2PS Z1, Z29, Z0
	VMOVUPS   Z0, K7, (DI)(AX*4)

enext:
	ADDQ R10, DI
	ADDQ R11, SI
	DECQ R9
	JMP  erow

edone:
	VZEROUPPER
	RET
