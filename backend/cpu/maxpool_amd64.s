//go:build !noasm

#include "textflag.h"

// The 3×3 stride-2 max pooling kernel (padding 1): an output row's
// sixteen columns at a time from thirty-two input columns of its (two or
// three) input rows. The rows' maximum is taken first, column by column,
// then the input columns are split into even and odd ones (VPERMT2PS)
// and each output is the maximum of the odd column before it, the even
// one and the odd one after: the order maxPlaneRows takes them in.
//
// The maxima are the builtin max's, bit for bit (a NaN wins, +0 beats
// −0), computed as maxIntoAVX2 does on negated values: with x' = −x, the
// kernel keeps every value negated from load to store, and MAXN(a, n)
// sets a' to the negation of max(a, n).
//
// Registers: Z31 the sign bit, Z30 and Z29 the even and odd column
// indices, Z28 −∞ (what a masked load leaves outside the plane), Z20 the
// last chunk's odd columns, Z0..Z7 work. K3, K4 the tail chunk's load
// masks, K5 its store mask.

// a' = −max(a, n) for negated a', n' (Z6, Z7 clobbered).
#define MAXN(a, n) \
	VMINPS n, a, Z6;  \
	VMINPS a, Z6, Z7; \
	VORPS  Z7, Z6, a

// Loads the 32 columns of the chunk of row p (R11 bytes in) negated into
// Z0:Z1 (first row) or into Z2:Z3 and takes the maximum into Z0:Z1.
#define FIRST(p) \
	VXORPS (p)(R11*1), Z31, Z0;   \
	VXORPS 64(p)(R11*1), Z31, Z1

#define NEXT(p) \
	VXORPS (p)(R11*1), Z31, Z2;   \
	VXORPS 64(p)(R11*1), Z31, Z3; \
	MAXN(Z0, Z2);                 \
	MAXN(Z1, Z3)

// The same for the tail chunk: lanes outside the row read as −∞.
#define FIRSTT(p) \
	VMOVAPS Z28, Z0;                 \
	VMOVAPS Z28, Z1;                 \
	VMOVUPS (p)(R11*1), K3, Z0;      \
	VMOVUPS 64(p)(R11*1), K4, Z1;    \
	VXORPS  Z31, Z0, Z0;             \
	VXORPS  Z31, Z1, Z1

#define NEXTT(p) \
	VMOVAPS Z28, Z2;                 \
	VMOVAPS Z28, Z3;                 \
	VMOVUPS (p)(R11*1), K3, Z2;      \
	VMOVUPS 64(p)(R11*1), K4, Z3;    \
	VXORPS  Z31, Z2, Z2;             \
	VXORPS  Z31, Z3, Z3;             \
	MAXN(Z0, Z2);                    \
	MAXN(Z1, Z3)

// The rows' maximum of the chunk (first through first, the others
// through next, skipping a row pointer of 0), then the columns'.
// Leaves the chunk's sixteen outputs, negated back, in Z5.
#define CHUNK(first, next, skip2) \
	first(R8);                     \
	TESTQ R9, R9;                  \
	JEQ   skip2;                   \
	next(R9);                      \
	TESTQ R10, R10;                \
	JEQ   skip2;                   \
	next(R10);                     \
skip2:                             \
	VMOVAPS   Z0, Z4;              \
	VPERMT2PS Z1, Z30, Z4;         \
	VPERMT2PS Z1, Z29, Z0;         \
	VALIGND   $15, Z20, Z0, Z5;    \
	VMOVAPS   Z0, Z20;             \
	MAXN(Z5, Z4);                  \
	MAXN(Z5, Z0);                  \
	VXORPS    Z31, Z5, Z5

// func maxPool3s2(y, x *float32, h, w, oh, ow, full int, masks uint64, idx *[32]int32, planes int)
//
// For each of planes planes (h×w floats at x, oh×ow at y, oh = (h+1)/2,
// ow = (w+1)/2): y[i][j] = max over rows 2i−1..2i+1 and columns
// 2j−1..2j+1 inside the plane. full is the chunks of an output row whose
// 32 input columns and 16 outputs all lie inside; a last chunk, if any,
// loads under the masks' bits 0-15 and 16-31 and stores under 32-47.
TEXT ·maxPool3s2(SB), NOSPLIT, $0-80
	MOVQ      y+0(FP), DI
	MOVQ      x+8(FP), SI
	MOVQ      idx+64(FP), AX
	VMOVDQU32 (AX), Z30
	VMOVDQU32 64(AX), Z29
	MOVL      $0x80000000, AX
	VPBROADCASTD AX, Z31
	MOVL      $0xff800000, AX
	VPBROADCASTD AX, Z28
	MOVQ      masks+56(FP), AX
	KMOVW     AX, K3
	SHRQ      $16, AX
	KMOVW     AX, K4
	SHRQ      $16, AX
	KMOVW     AX, K5
	MOVQ      w+24(FP), R12
	SHLQ      $2, R12            // input row bytes
	MOVQ      planes+72(FP), R15

plane:
	XORQ CX, CX                  // output row

row:
	// R8, R9, R10: the input rows 2i−1, 2i, 2i+1 that lie inside, the
	// first of them in R8, 0 for the missing ones.
	MOVQ CX, AX
	SHLQ $1, AX                  // 2i
	MOVQ AX, BX
	IMULQ R12, BX
	LEAQ (SI)(BX*1), R9          // row 2i
	LEAQ (R9)(R12*1), R10        // row 2i+1
	INCQ AX
	CMPQ AX, h+16(FP)
	JLT  2(PC)
	XORQ R10, R10                // row 2i+1 lies below the plane
	MOVQ R9, R8
	SUBQ R12, R8                 // row 2i−1
	TESTQ CX, CX
	JNE  rows3
	// The first output row: rows 0 and 1.
	MOVQ R9, R8
	MOVQ R10, R9
	XORQ R10, R10

rows3:
	// −∞ before the row's first column (negated: +∞).
	VXORPS Z31, Z28, Z20
	XORQ   R11, R11              // chunk byte offset in the input rows
	MOVQ   CX, R13
	IMULQ  ow+40(FP), R13
	LEAQ   (DI)(R13*4), R13      // the output row
	MOVQ   full+48(FP), R14
	TESTQ  R14, R14
	JEQ    tail

chunk:
	CHUNK(FIRST, NEXT, skip2)
	VMOVUPS Z5, (R13)
	ADDQ    $64, R13
	ADDQ    $128, R11
	DECQ    R14
	JNZ     chunk

tail:
	KORTESTW K5, K5
	JEQ      rowdone
	CHUNK(FIRSTT, NEXTT, skip2t)
	VMOVUPS  Z5, K5, (R13)

rowdone:
	INCQ CX
	CMPQ CX, oh+32(FP)
	JLT  row
	// The next plane.
	MOVQ h+16(FP), AX
	IMULQ R12, AX
	ADDQ AX, SI
	MOVQ oh+32(FP), AX
	IMULQ ow+40(FP), AX
	LEAQ (DI)(AX*4), DI
	DECQ R15
	JNZ  plane
	VZEROUPPER
	RET

// func maxTapsB(dst, src *float32, offs *int, taps, n, step int)
//
// Max pooling on NCHW16c: for i < n, the sixteen channels at dst + 64·i
// bytes take the maximum (the builtin max's, as maxPool3s2 takes it) of
// the vectors at src + i·step + offs[t] bytes, t < taps (taps ≥ 1).
TEXT ·maxTapsB(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ taps+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ step+40(FP), R10
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z31

mtRow:
	TESTQ CX, CX
	JEQ   mtDone
	MOVQ  (R8), R11
	VXORPS (SI)(R11*1), Z31, Z0
	MOVQ  $1, R12

mtTap:
	CMPQ  R12, R9
	JGE   mtPut
	MOVQ  (R8)(R12*8), R11
	VXORPS (SI)(R11*1), Z31, Z2
	MAXN(Z0, Z2)
	INCQ  R12
	JMP   mtTap

mtPut:
	VXORPS  Z31, Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    R10, SI
	DECQ    CX
	JMP     mtRow

mtDone:
	VZEROUPPER
	RET
