#include "textflag.h"

// func arithAVX2(op int, o, a, b *float32, n, sa, sb int)
//
// o[i] = a[i·sa] OP b[i·sb] for i < n&^7, OP by op (0 +, 1 −, 2 ×, 3 ÷),
// strides 0 (a repeated scalar) or 1, not both 0. One instruction per
// eight results, rounded as the scalar operation rounds each.

#define VV(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (SI)(AX*4), Y0; \
	INS     (DX)(AX*4), Y0, Y0; \
	VMOVUPS Y0, (DI)(AX*4); \
	ADDQ    $8, AX; \
	JMP     lbl

#define VS(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (SI)(AX*4), Y0; \
	INS     Y1, Y0, Y0; \
	VMOVUPS Y0, (DI)(AX*4); \
	ADDQ    $8, AX; \
	JMP     lbl

#define SV(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (DX)(AX*4), Y0; \
	INS     Y0, Y1, Y2; \
	VMOVUPS Y2, (DI)(AX*4); \
	ADDQ    $8, AX; \
	JMP     lbl

TEXT ·arithAVX2(SB), NOSPLIT, $0-56
	MOVQ op+0(FP), R8
	MOVQ o+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ sa+40(FP), R9
	MOVQ sb+48(FP), R10
	ANDQ $-8, CX
	XORQ AX, AX
	CMPQ R10, $0
	JEQ  scalarb
	CMPQ R9, $0
	JEQ  scalara

	// Both operands advance.
	CMPQ R8, $0
	JEQ  addvv
	CMPQ R8, $1
	JEQ  subvv
	CMPQ R8, $2
	JEQ  mulvv
	JMP  divvv

scalarb:
	VBROADCASTSS (DX), Y1
	CMPQ         R8, $0
	JEQ          addvs
	CMPQ         R8, $1
	JEQ          subvs
	CMPQ         R8, $2
	JEQ          mulvs
	JMP          divvs

scalara:
	VBROADCASTSS (SI), Y1
	CMPQ         R8, $0
	JEQ          addsv
	CMPQ         R8, $1
	JEQ          subsv
	CMPQ         R8, $2
	JEQ          mulsv
	JMP          divsv

	VV(addvv, VADDPS)
	VV(subvv, VSUBPS)
	VV(mulvv, VMULPS)
	VV(divvv, VDIVPS)
	VS(addvs, VADDPS)
	VS(subvs, VSUBPS)
	VS(mulvs, VMULPS)
	VS(divvs, VDIVPS)
	SV(addsv, VADDPS)
	SV(subsv, VSUBPS)
	SV(mulsv, VMULPS)
	SV(divsv, VDIVPS)

done:
	VZEROUPPER
	RET

// func arithAVX512(op int, o, a, b *float32, n, sa, sb int)
//
// arithAVX2 on zmm registers for i < n&^15: sixteen results an
// instruction, the same bits. It needs AVX-512F.

#define VV16(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done16; \
	VMOVUPS (SI)(AX*4), Z0; \
	INS     (DX)(AX*4), Z0, Z0; \
	VMOVUPS Z0, (DI)(AX*4); \
	ADDQ    $16, AX; \
	JMP     lbl

#define VS16(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done16; \
	VMOVUPS (SI)(AX*4), Z0; \
	INS     Z1, Z0, Z0; \
	VMOVUPS Z0, (DI)(AX*4); \
	ADDQ    $16, AX; \
	JMP     lbl

#define SV16(lbl, INS) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done16; \
	VMOVUPS (DX)(AX*4), Z0; \
	INS     Z0, Z1, Z2; \
	VMOVUPS Z2, (DI)(AX*4); \
	ADDQ    $16, AX; \
	JMP     lbl

TEXT ·arithAVX512(SB), NOSPLIT, $0-56
	MOVQ op+0(FP), R8
	MOVQ o+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ sa+40(FP), R9
	MOVQ sb+48(FP), R10
	ANDQ $-16, CX
	XORQ AX, AX
	CMPQ R10, $0
	JEQ  scalarb16
	CMPQ R9, $0
	JEQ  scalara16

	// Both operands advance.
	CMPQ R8, $0
	JEQ  addvv16
	CMPQ R8, $1
	JEQ  subvv16
	CMPQ R8, $2
	JEQ  mulvv16
	JMP  divvv16

scalarb16:
	VBROADCASTSS (DX), Z1
	CMPQ         R8, $0
	JEQ          addvs16
	CMPQ         R8, $1
	JEQ          subvs16
	CMPQ         R8, $2
	JEQ          mulvs16
	JMP          divvs16

scalara16:
	VBROADCASTSS (SI), Z1
	CMPQ         R8, $0
	JEQ          addsv16
	CMPQ         R8, $1
	JEQ          subsv16
	CMPQ         R8, $2
	JEQ          mulsv16
	JMP          divsv16

	VV16(addvv16, VADDPS)
	VV16(subvv16, VSUBPS)
	VV16(mulvv16, VMULPS)
	VV16(divvv16, VDIVPS)
	VS16(addvs16, VADDPS)
	VS16(subvs16, VSUBPS)
	VS16(mulvs16, VMULPS)
	VS16(divvs16, VDIVPS)
	SV16(addsv16, VADDPS)
	SV16(subsv16, VSUBPS)
	SV16(mulsv16, VMULPS)
	SV16(divsv16, VDIVPS)

done16:
	VZEROUPPER
	RET
