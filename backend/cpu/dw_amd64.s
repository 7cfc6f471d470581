#include "textflag.h"

// func dwS1AVX2(o *float32, rp *[7]*float32, w *float32, kh, kw, n int, bias float32)
//
// o[x] = bias + Σ_r Σ_c w[r·kw+c]·rp[r][x+c] for x in [0, n), n a multiple
// of 8: 32 outputs at a time in four accumulators, then 8 at a time. The
// taps are added in row-major order, each with one fused multiply-add.
TEXT ·dwS1AVX2(SB), NOSPLIT, $0-52
	MOVQ o+0(FP), DI
	MOVQ rp+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ kh+24(FP), R8
	MOVQ kw+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSS bias+48(FP), Y15
	XORQ AX, AX

loop32:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $32
	JLT  loop8
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	XORQ R10, R10
	MOVQ DX, R12

rows32:
	MOVQ (SI)(R10*8), R11
	LEAQ (R11)(AX*4), R11
	XORQ R13, R13

cols32:
	VBROADCASTSS (R12), Y4
	VFMADD231PS  (R11), Y4, Y0
	VFMADD231PS  32(R11), Y4, Y1
	VFMADD231PS  64(R11), Y4, Y2
	VFMADD231PS  96(R11), Y4, Y3
	ADDQ         $4, R12
	ADDQ         $4, R11
	INCQ         R13
	CMPQ         R13, R9
	JLT          cols32
	INCQ         R10
	CMPQ         R10, R8
	JLT          rows32
	VMOVUPS      Y0, (DI)(AX*4)
	VMOVUPS      Y1, 32(DI)(AX*4)
	VMOVUPS      Y2, 64(DI)(AX*4)
	VMOVUPS      Y3, 96(DI)(AX*4)
	ADDQ         $32, AX
	JMP          loop32

loop8:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JLT  done
	VMOVAPS Y15, Y0
	XORQ R10, R10
	MOVQ DX, R12

rows8:
	MOVQ (SI)(R10*8), R11
	LEAQ (R11)(AX*4), R11
	XORQ R13, R13

cols8:
	VBROADCASTSS (R12), Y4
	VFMADD231PS  (R11), Y4, Y0
	ADDQ         $4, R12
	ADDQ         $4, R11
	INCQ         R13
	CMPQ         R13, R9
	JLT          cols8
	INCQ         R10
	CMPQ         R10, R8
	JLT          rows8
	VMOVUPS      Y0, (DI)(AX*4)
	ADDQ         $8, AX
	JMP          loop8

done:
	VZEROUPPER
	RET
