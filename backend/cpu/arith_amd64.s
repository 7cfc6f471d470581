//go:build !noasm

#include "textflag.h"

// func arithAVX2(op int, o, a, b *float32, n, sa, sb int)
//
// o[i] = a[i·sa] OP b[i·sb] for i < n&^7, OP by op (0 +, 1 −, 2 ×, 3 ÷),
// strides 0 (a repeated scalar) or 1, not both 0. One instruction per
// eight results, rounded as the scalar operation rounds each.
//
// func arithAVX512(op int, o, a, b *float32, n, sa, sb int)
//
// The same for i < n&^15 on zmm registers, sixteen results an
// instruction. It needs AVX-512F.
//
// Both are ARITH: on registers X0..X2 of N lanes. Labels are the
// function's own, so both use the same ones.

// Both operands advance.
#define VV(lbl, INS, X0, N) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (SI)(AX*4), X0; \
	INS     (DX)(AX*4), X0, X0; \
	VMOVUPS X0, (DI)(AX*4); \
	ADDQ    $N, AX; \
	JMP     lbl

// b is a scalar, broadcast in X1.
#define VS(lbl, INS, X0, X1, N) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (SI)(AX*4), X0; \
	INS     X1, X0, X0; \
	VMOVUPS X0, (DI)(AX*4); \
	ADDQ    $N, AX; \
	JMP     lbl

// a is a scalar, broadcast in X1.
#define SV(lbl, INS, X0, X1, X2, N) \
lbl:; \
	CMPQ    AX, CX; \
	JGE     done; \
	VMOVUPS (DX)(AX*4), X0; \
	INS     X0, X1, X2; \
	VMOVUPS X2, (DI)(AX*4); \
	ADDQ    $N, AX; \
	JMP     lbl

#define ARITH(X0, X1, X2, N) \
	MOVQ op+0(FP), R8; \
	MOVQ o+8(FP), DI; \
	MOVQ a+16(FP), SI; \
	MOVQ b+24(FP), DX; \
	MOVQ n+32(FP), CX; \
	MOVQ sa+40(FP), R9; \
	MOVQ sb+48(FP), R10; \
	ANDQ $-N, CX; \
	XORQ AX, AX; \
	CMPQ R10, $0; \
	JEQ  scalarb; \
	CMPQ R9, $0; \
	JEQ  scalara; \
	CMPQ R8, $0; \
	JEQ  addvv; \
	CMPQ R8, $1; \
	JEQ  subvv; \
	CMPQ R8, $2; \
	JEQ  mulvv; \
	JMP  divvv; \
scalarb:; \
	VBROADCASTSS (DX), X1; \
	CMPQ         R8, $0; \
	JEQ          addvs; \
	CMPQ         R8, $1; \
	JEQ          subvs; \
	CMPQ         R8, $2; \
	JEQ          mulvs; \
	JMP          divvs; \
scalara:; \
	VBROADCASTSS (SI), X1; \
	CMPQ         R8, $0; \
	JEQ          addsv; \
	CMPQ         R8, $1; \
	JEQ          subsv; \
	CMPQ         R8, $2; \
	JEQ          mulsv; \
	JMP          divsv; \
	VV(addvv, VADDPS, X0, N); \
	VV(subvv, VSUBPS, X0, N); \
	VV(mulvv, VMULPS, X0, N); \
	VV(divvv, VDIVPS, X0, N); \
	VS(addvs, VADDPS, X0, X1, N); \
	VS(subvs, VSUBPS, X0, X1, N); \
	VS(mulvs, VMULPS, X0, X1, N); \
	VS(divvs, VDIVPS, X0, X1, N); \
	SV(addsv, VADDPS, X0, X1, X2, N); \
	SV(subsv, VSUBPS, X0, X1, X2, N); \
	SV(mulsv, VMULPS, X0, X1, X2, N); \
	SV(divsv, VDIVPS, X0, X1, X2, N); \
done:; \
	VZEROUPPER; \
	RET

TEXT ·arithAVX2(SB), NOSPLIT, $0-56
	ARITH(Y0, Y1, Y2, 8)

TEXT ·arithAVX512(SB), NOSPLIT, $0-56
	ARITH(Z0, Z1, Z2, 16)
