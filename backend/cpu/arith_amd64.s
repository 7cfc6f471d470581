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

// One loop of ARITH at label lbl: while AX < CX, X0 = the N floats at p
// from AX on, then INS a, b, c, and the N floats of res stored at DI from
// AX on.
#define ALOOP(lbl, p, X0, INS, a, b, c, res, N) \
lbl:;                        \
	CMPQ    AX, CX;          \
	JGE     done;            \
	VMOVUPS (p)(AX*4), X0;   \
	INS     a, b, c;         \
	VMOVUPS res, (DI)(AX*4); \
	ADDQ    $N, AX;          \
	JMP     lbl

// Both operands advance (VV); b is a scalar, broadcast in X1 (VS); a is
// a scalar, broadcast in X1 (SV).
#define VV(lbl, INS, X0, X1, X2, N) ALOOP(lbl, SI, X0, INS, (DX)(AX*4), X0, X0, X0, N)
#define VS(lbl, INS, X0, X1, X2, N) ALOOP(lbl, SI, X0, INS, X1, X0, X0, X0, N)
#define SV(lbl, INS, X0, X1, X2, N) ALOOP(lbl, DX, X0, INS, X0, X1, X2, X2, N)

// The four loops of one form (VV, VS or SV) at labels add, sub, mul, div.
#define FOUR(form, add, sub, mul, div, X0, X1, X2, N) \
	form(add, VADDPS, X0, X1, X2, N); \
	form(sub, VSUBPS, X0, X1, X2, N); \
	form(mul, VMULPS, X0, X1, X2, N); \
	form(div, VDIVPS, X0, X1, X2, N)

// On to label add, sub, mul or div by op (R8).
#define BYOP(add, sub, mul, div) \
	CMPQ R8, $0; \
	JEQ  add;    \
	CMPQ R8, $1; \
	JEQ  sub;    \
	CMPQ R8, $2; \
	JEQ  mul;    \
	JMP  div

#define ARITH(X0, X1, X2, N) \
	MOVQ op+0(FP), R8;                                   \
	MOVQ o+8(FP), DI;                                    \
	MOVQ a+16(FP), SI;                                   \
	MOVQ b+24(FP), DX;                                   \
	MOVQ n+32(FP), CX;                                   \
	MOVQ sa+40(FP), R9;                                  \
	MOVQ sb+48(FP), R10;                                 \
	ANDQ $-N, CX;                                        \
	XORQ AX, AX;                                         \
	CMPQ R10, $0;                                        \
	JEQ  scalarb;                                        \
	CMPQ R9, $0;                                         \
	JEQ  scalara;                                        \
	BYOP(addvv, subvv, mulvv, divvv);                    \
scalarb:;                                                \
	VBROADCASTSS (DX), X1;                               \
	BYOP(addvs, subvs, mulvs, divvs);                    \
scalara:;                                                \
	VBROADCASTSS (SI), X1;                               \
	BYOP(addsv, subsv, mulsv, divsv);                    \
	FOUR(VV, addvv, subvv, mulvv, divvv, X0, X1, X2, N); \
	FOUR(VS, addvs, subvs, mulvs, divvs, X0, X1, X2, N); \
	FOUR(SV, addsv, subsv, mulsv, divsv, X0, X1, X2, N); \
done:;                                                   \
	VZEROUPPER;                                          \
	RET

TEXT ·arithAVX2(SB), NOSPLIT, $0-56
	ARITH(Y0, Y1, Y2, 8)

TEXT ·arithAVX512(SB), NOSPLIT, $0-56
	ARITH(Z0, Z1, Z2, 16)
