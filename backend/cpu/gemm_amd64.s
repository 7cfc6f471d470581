//go:build !noasm

#include "textflag.h"
#include "gemm_amd64.h"

// One k step of the 6×16 micro-kernel: load the 16 values of B at boff(DI)
// into Y12:Y13, broadcast each of the 6 values of A at aoff(SI) (into Y14
// and Y15 in turn) and add the outer product into the accumulators
// Y0..Y11 (row i in Y(2i), Y(2i+1)).
#define STEP(aoff, boff) \
	VMOVUPS boff(DI), Y12;    \
	VMOVUPS boff+32(DI), Y13; \
	SIXROWS(aoff, SI, Y12, Y13, Y14, Y15, Y14, Y15, Y14, Y15, Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11)

// The column bias at R10 into Y12:Y13 and added to the tile.
#define COLBIAS6 \
	VMOVUPS (R10), Y12;   \
	VMOVUPS 32(R10), Y13; \
	PAIRS6(ADDROW, VY, Y12, Y13)

// The bounds at BX into Y12, Y13 and the tile clamped to them.
#define CLAMP6 \
	VBROADCASTSS (BX), Y12;  \
	VBROADCASTSS 4(BX), Y13; \
	PAIRS6(CLAMP2, VY, Y12, Y13)

// func sgemm6x16(kb int, a, b, c *float32, ldc int, rb, cb *float32, mode int, lim *float32, res *float32)
TEXT ·sgemm6x16(SB), NOSPLIT, $0-80
	MOVQ kb+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ c+24(FP), DX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8

	// Touch the six rows of C early so that the store finds them in L1.
	MOVQ       DX, AX
	REP4(TOUCH2(0, 60))
	TOUCH2(0, 60)
	PREFETCHT0 (AX)
	PREFETCHT0 60(AX)

	REGS12(ZEROPS, VY, 0, 0)

loop4:
	CMPQ CX, $4
	JLT  tail
	PREFETCHT0 384(SI)
	STEPS4B(STEP)
	ADDQ $96, SI
	ADDQ $256, DI
	SUBQ $4, CX
	JMP  loop4

tail:
	TESTQ CX, CX
	JEQ   store
	STEP(0, 0)
	ADDQ  $24, SI
	ADDQ  $64, DI
	DECQ  CX
	JMP   tail

	STORETILE(mode+56(FP), lim+64(FP), cb+48(FP), rb+40(FP), res+72(FP), COLBIAS6, PAIRS6(ROWBIAS, VY, Y14, 0), PAIRS6, ADDM, VY, 32, CLAMP6, PAIRS6(PUTC, VY, 32, 0), PAIRS6(ADDC, VY, 32, 0))

// func prefetchL2(p *float32, lines int)
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE  pfdone

pfloop:
	PREFETCHT1 (SI)
	ADDQ       $64, SI
	DECQ       CX
	JNZ        pfloop

pfdone:
	RET

// func prefetchRowsL2(p *float32, stride, rows int)
TEXT ·prefetchRowsL2(SB), NOSPLIT, $0-24
	MOVQ  p+0(FP), SI
	MOVQ  stride+8(FP), DX
	SHLQ  $2, DX
	MOVQ  rows+16(FP), CX
	TESTQ CX, CX
	JLE   prdone

prloop:
	PREFETCHT1 (SI)
	PREFETCHT1 64(SI)
	PREFETCHT1 124(SI)
	ADDQ       DX, SI
	DECQ       CX
	JNZ        prloop

prdone:
	RET

// func packA6Cols(dst, src *float32, k, cs, panels int)
//
// Packs panels whole A panels whose columns are contiguous: for l < k
// and p < panels, dst[(p·k + l)·6 + i] = src[l·cs + 6p + i], i < 6.
TEXT ·packA6Cols(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ k+16(FP), CX
	MOVQ cs+24(FP), R8
	MOVQ panels+32(FP), R9
	SHLQ $2, R8             // column step in bytes
	LEAQ (CX)(CX*2), R10
	SHLQ $3, R10            // one panel: k·24 bytes

pcol:
	TESTQ CX, CX
	JEQ   pdone
	MOVQ  SI, AX
	MOVQ  DI, DX
	MOVQ  R9, BX

ppanel:
	TESTQ  BX, BX
	JEQ    pnext
	MOVUPS (AX), X0
	MOVQ   16(AX), R11
	MOVUPS X0, (DX)
	MOVQ   R11, 16(DX)
	ADDQ   $24, AX
	ADDQ   R10, DX
	DECQ   BX
	JMP    ppanel

pnext:
	ADDQ R8, SI
	ADDQ $24, DI
	DECQ CX
	JMP  pcol

pdone:
	RET

// func packA6Rows(dst, src *float32, k4, rs int)
//
// Packs the first k4 columns (a multiple of 4) of one A panel whose rows
// are contiguous: for l < k4, dst[l·6 + i] = src[i·rs + l], i < 6. Four
// columns at a time: a 4×4 transpose of rows 0–3 and an interleave of
// rows 4 and 5.
TEXT ·packA6Rows(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DX
	MOVQ src+8(FP), SI
	MOVQ k4+16(FP), CX
	MOVQ rs+24(FP), R8
	SHLQ $2, R8               // row step in bytes
	LEAQ (SI)(R8*1), R9       // row 1
	LEAQ (SI)(R8*2), R10      // row 2
	LEAQ (R9)(R8*2), R11      // row 3
	LEAQ (R10)(R8*2), R12     // row 4
	LEAQ (R11)(R8*2), R13     // row 5
	XORQ AX, AX
	SHRQ $2, CX
	JZ   rdone

rloop:
	MOVUPS   (SI)(AX*1), X0
	MOVUPS   (R9)(AX*1), X1
	MOVUPS   (R10)(AX*1), X2
	MOVUPS   (R11)(AX*1), X3
	MOVUPS   (R12)(AX*1), X4
	MOVUPS   (R13)(AX*1), X5
	MOVAPS   X0, X6
	UNPCKLPS X1, X6           // r0[0] r1[0] r0[1] r1[1]
	UNPCKHPS X1, X0           // r0[2] r1[2] r0[3] r1[3]
	MOVAPS   X2, X7
	UNPCKLPS X3, X7           // r2[0] r3[0] r2[1] r3[1]
	UNPCKHPS X3, X2           // r2[2] r3[2] r2[3] r3[3]
	MOVAPS   X6, X8
	MOVLHPS  X7, X8           // rows 0–3 of column 0
	MOVHLPS  X6, X7           // column 1
	MOVAPS   X0, X9
	MOVLHPS  X2, X9           // column 2
	MOVHLPS  X0, X2           // column 3
	MOVAPS   X4, X10
	UNPCKLPS X5, X10          // r4[0] r5[0] r4[1] r5[1]
	UNPCKHPS X5, X4           // r4[2] r5[2] r4[3] r5[3]
	MOVUPS   X8, (DX)
	MOVLPS   X10, 16(DX)
	MOVUPS   X7, 24(DX)
	MOVHPS   X10, 40(DX)
	MOVUPS   X9, 48(DX)
	MOVLPS   X4, 64(DX)
	MOVUPS   X2, 72(DX)
	MOVHPS   X4, 88(DX)
	ADDQ     $16, AX
	ADDQ     $96, DX
	DECQ     CX
	JNZ      rloop

rdone:
	RET

// func packB16Rows(dst, src *float32, panels, rows, rs, dp, ds int)
//
// Copies rows rows of panels whole B panels of a row-major operand into
// their packed places: for q < panels and l < rows, the 16 floats at
// src[l·rs + 16q] go to dst[q·dp + l·ds]. Panel after panel, each row two
// 32-byte moves, with no stop in between.
TEXT ·packB16Rows(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ panels+16(FP), CX
	MOVQ rows+24(FP), DX
	MOVQ rs+32(FP), R8
	SHLQ $2, R8               // row step in bytes
	MOVQ dp+40(FP), R9
	SHLQ $2, R9               // panel step in bytes
	MOVQ ds+48(FP), R12
	SHLQ $2, R12              // row step in bytes
	TESTQ CX, CX
	JLE  bdone
	TESTQ DX, DX
	JLE  bdone

bpanel:
	MOVQ SI, R10
	MOVQ DI, R11
	MOVQ DX, BX

brow:
	VMOVUPS (R10), Y0
	VMOVUPS 32(R10), Y1
	VMOVUPS Y0, (R11)
	VMOVUPS Y1, 32(R11)
	ADDQ    R8, R10
	ADDQ    R12, R11
	DECQ    BX
	JNE     brow

	ADDQ $64, SI
	ADDQ R9, DI
	DECQ CX
	JNE  bpanel

bdone:
	VZEROUPPER
	RET
