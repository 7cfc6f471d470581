//go:build !noasm

#include "textflag.h"
#include "regs_amd64.h"

// Winograd transforms on channel-blocked activations (NCHW16c): one tile
// of sixteen channels at a time, a channel a lane (see winograd.go for
// the matrices and conv_blocked.go for the layout). Each transform is
// separable: a first pass along the patch's rows into tmp, a second down
// its columns.

// F(4×4, 3×3)'s Bᵀ applied to d0..d5 (Z0..Z5) into Z6..Z11, with Z26 =
// 4, Z27 = −4, Z28 = −5, Z29 = 2, Z30 = −2; clobbers Z12..Z15.
#define BT6 \
	VMOVAPS     Z4, Z6;        \
	VFMADD231PS Z28, Z2, Z6;   \
	VFMADD231PS Z26, Z0, Z6;   \
	VMOVAPS     Z5, Z11;       \
	VFMADD231PS Z28, Z3, Z11;  \
	VFMADD231PS Z26, Z1, Z11;  \
	VMOVAPS     Z4, Z12;       \
	VFMADD231PS Z27, Z2, Z12;  \
	VMOVAPS     Z3, Z13;       \
	VFMADD231PS Z27, Z1, Z13;  \
	VADDPS      Z13, Z12, Z7;  \
	VSUBPS      Z13, Z12, Z8;  \
	VSUBPS      Z2, Z4, Z14;   \
	VSUBPS      Z1, Z3, Z15;   \
	VMOVAPS     Z14, Z9;       \
	VFMADD231PS Z29, Z15, Z9;  \
	VMOVAPS     Z14, Z10;      \
	VFMADD231PS Z30, Z15, Z10

// F(4×4, 3×3)'s Aᵀ applied to m0..m5 (Z0..Z5) into Z6..Z9, with Z26 = 4,
// Z29 = 2, Z23 = 8; clobbers Z12..Z15.
#define AT6 \
	VADDPS      Z2, Z1, Z12;  \
	VSUBPS      Z2, Z1, Z13;  \
	VADDPS      Z4, Z3, Z14;  \
	VSUBPS      Z4, Z3, Z15;  \
	VADDPS      Z12, Z0, Z6;  \
	VADDPS      Z14, Z6, Z6;  \
	VMOVAPS     Z13, Z7;      \
	VFMADD231PS Z29, Z15, Z7; \
	VMOVAPS     Z12, Z8;      \
	VFMADD231PS Z26, Z14, Z8; \
	VADDPS      Z5, Z13, Z9;  \
	VFMADD231PS Z23, Z15, Z9

// F(2×2, 3×3)'s Bᵀ applied to d0..d3 (Z0..Z3) into Z6..Z9.
#define BT4 \
	VSUBPS Z2, Z0, Z6; \
	VADDPS Z2, Z1, Z7; \
	VSUBPS Z1, Z2, Z8; \
	VSUBPS Z3, Z1, Z9

// F(2×2, 3×3)'s Aᵀ applied to m0..m3 (Z0..Z3) into Z6, Z7.
#define AT4 \
	VADDPS Z1, Z0, Z6; \
	VADDPS Z2, Z6, Z6; \
	VSUBPS Z2, Z1, Z7; \
	VSUBPS Z3, Z7, Z7

// Loads the four vectors at p, s bytes apart, into Z0..Z3; LOAD6 the
// six 64 bytes apart into Z0..Z5.
#define LOAD4(p, s) \
	VMOVUPS 0*s(p), Z0; \
	VMOVUPS 1*s(p), Z1; \
	VMOVUPS 2*s(p), Z2; \
	VMOVUPS 3*s(p), Z3

#define LOAD6(p) \
	LOAD4(p, 64);       \
	VMOVUPS 256(p), Z4; \
	VMOVUPS 320(p), Z5

// Stores Z6..Z9 at p, 64 bytes apart; STORE6 Z6..Z11.
#define STORE4(p) \
	VMOVUPS Z6, (p);    \
	VMOVUPS Z7, 64(p);  \
	VMOVUPS Z8, 128(p); \
	VMOVUPS Z9, 192(p)

#define STORE6(p) \
	STORE4(p);           \
	VMOVUPS Z10, 256(p); \
	VMOVUPS Z11, 320(p)

// Loads Z0..Z5 from p, p+s, p+2s, q, q+s, q+2s (q = p + 3s, in R12).
#define LOAD6S(p, s) \
	LEAQ    (p)(s*2), R12; \
	ADDQ    s, R12;        \
	VMOVUPS (p), Z0;       \
	VMOVUPS (p)(s*1), Z1;  \
	VMOVUPS (p)(s*2), Z2;  \
	VMOVUPS (R12), Z3;     \
	VMOVUPS (R12)(s*1), Z4; \
	VMOVUPS (R12)(s*2), Z5

// Stores Z6..Z11 to p, p+s, p+2s, q, q+s, q+2s (q = p + 3s, in R12).
#define STORE6S(p, s) \
	LEAQ    (p)(s*2), R12;  \
	ADDQ    s, R12;         \
	VMOVUPS Z6, (p);        \
	VMOVUPS Z7, (p)(s*1);   \
	VMOVUPS Z8, (p)(s*2);   \
	VMOVUPS Z9, (R12);      \
	VMOVUPS Z10, (R12)(s*1); \
	VMOVUPS Z11, (R12)(s*2)

// Stores Z6..Z9 to p, p+s, q, q+s (q = p + 2s, in R12).
#define STORE4S(p, s) \
	LEAQ    (p)(s*2), R12; \
	VMOVUPS Z6, (p);       \
	VMOVUPS Z7, (p)(s*1);  \
	VMOVUPS Z8, (R12);     \
	VMOVUPS Z9, (R12)(s*1)

// A pass of a transform over n rows or columns: from src on in AX and
// dst on in d, R13 counting them; PASSNEXT moves AX on by a bytes and d
// by b bytes, on to loop while any are left.
#define PASS(src, dst, d, n) \
	MOVQ src, AX; \
	MOVQ dst, d;  \
	MOVQ $n, R13

#define PASSNEXT(a, b, d, loop) \
	ADDQ a, AX; \
	ADDQ b, d;  \
	DECQ R13;   \
	JNE  loop

// The end of a patch: the next tile of 64 bytes at v and the next patch
// at s (R10 bytes on), on to loop while CX patches are left, then done.
#define NEXTPATCH(v, s, loop, done) \
	ADDQ $64, v;  \
	ADDQ R10, s;  \
	DECQ CX;      \
	JMP  loop;    \
done:;            \
	VZEROUPPER;   \
	RET

// Adds the bias (Z20) to r and clamps it to [Z21, Z22] where BX is not 0.
#define FINISH(r) \
	VADDPS Z20, r, r;  \
	TESTQ  BX, BX;     \
	JEQ    2(PC);      \
	VMAXPS Z21, r, r;  \
	TESTQ  BX, BX;     \
	JEQ    2(PC);      \
	VMINPS Z22, r, r

// Sets Z20 to the sixteen biases at AX (zeros for nil) and Z21, Z22 to
// the bounds at BX, if not nil.
#define BIASLIM \
	VPXORD       Z20, Z20, Z20; \
	TESTQ        AX, AX;        \
	JEQ          2(PC);         \
	VMOVUPS      (AX), Z20;     \
	TESTQ        BX, BX;        \
	JEQ          3(PC);         \
	VBROADCASTSS (BX), Z21;     \
	VBROADCASTSS 4(BX), Z22

// The arguments of the input transforms (wgInB4, wgInB2): v in DI, vxi
// in R8, src in SI, rs in R9, ts in R10, n in CX, tmp in DX.
#define INARGS \
	MOVQ v+0(FP), DI;     \
	MOVQ vxi+8(FP), R8;   \
	MOVQ src+16(FP), SI;  \
	MOVQ rs+24(FP), R9;   \
	MOVQ ts+32(FP), R10;  \
	MOVQ n+40(FP), CX;    \
	MOVQ tmp+48(FP), DX

// The arguments of the output transforms (wgOutB4, wgOutB2): y in DI, ys
// in R9, ts in R10, m in SI, mxi in R8, n in CX, bias in AX, lim in BX,
// tmp in DX.
#define OUTARGS \
	MOVQ y+0(FP), DI;     \
	MOVQ ys+8(FP), R9;    \
	MOVQ ts+16(FP), R10;  \
	MOVQ m+24(FP), SI;    \
	MOVQ mxi+32(FP), R8;  \
	MOVQ n+40(FP), CX;    \
	MOVQ bias+48(FP), AX; \
	MOVQ lim+56(FP), BX;  \
	MOVQ tmp+64(FP), DX

// func wgInB4(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32)
TEXT ·wgInB4(SB), NOSPLIT, $0-56
	INARGS
	IMUL3Q $6, R8, R11 // six ξ: the next v
	BCASTK(0x40800000, Z26) // 4
	BCASTK(0xc0800000, Z27) // -4
	BCASTK(0xc0a00000, Z28) // -5
	BCASTK(0x40000000, Z29) // 2
	BCASTK(0xc0000000, Z30) // -2

inb4:
	TESTQ CX, CX
	JEQ   inb4done
	// Rows of the patch: tmp[6i+u].
	PASS(SI, DX, BX, 6)

inb4row:
	LOAD6(AX)
	BT6
	STORE6(BX)
	PASSNEXT(R9, $384, BX, inb4row)

	// Columns: tmp[6v+u], v = 0..5, into ξ = 6v+u.
	PASS(DX, DI, BX, 6)

inb4col:
	MOVQ    $384, R14
	LOAD6S(AX, R14)
	BT6
	STORE6S(BX, R11)
	PASSNEXT($64, R8, BX, inb4col)

	NEXTPATCH(DI, SI, inb4, inb4done)

// func wgOutB4(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32)
TEXT ·wgOutB4(SB), NOSPLIT, $0-72
	OUTARGS
	IMUL3Q $6, R8, R11 // six ξ: the next v
	BIASLIM
	BCASTK(0x40800000, Z26) // 4
	BCASTK(0x40000000, Z29) // 2
	BCASTK(0x41000000, Z23) // 8

outb4:
	TESTQ CX, CX
	JEQ   outb4done
	// Rows v of M: tmp[4v+j].
	PASS(SI, DX, R15, 6)

outb4row:
	LOAD6S(AX, R8)
	AT6
	STORE4(R15)
	PASSNEXT(R11, $256, R15, outb4row)

	// Columns j: tmp[4v+j], v = 0..5, into output rows 0..3.
	PASS(DX, DI, R15, 4)

outb4col:
	MOVQ    $256, R14
	LOAD6S(AX, R14)
	AT6
	FINISH(Z6)
	FINISH(Z7)
	FINISH(Z8)
	FINISH(Z9)
	STORE4S(R15, R9)
	PASSNEXT($64, $64, R15, outb4col)

	NEXTPATCH(SI, DI, outb4, outb4done)

// func wgInB2(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32)
TEXT ·wgInB2(SB), NOSPLIT, $0-56
	INARGS
	SHLQ $2, R8 // four ξ: the next v (R8 is vxi·4 from here)
	MOVQ vxi+8(FP), R11

inb2:
	TESTQ CX, CX
	JEQ   inb2done
	PASS(SI, DX, BX, 4)

inb2row:
	LOAD4(AX, 64)
	BT4
	STORE4(BX)
	PASSNEXT(R9, $256, BX, inb2row)

	PASS(DX, DI, BX, 4)

inb2col:
	LOAD4(AX, 256)
	BT4
	STORE4S(BX, R8)
	PASSNEXT($64, R11, BX, inb2col)

	NEXTPATCH(DI, SI, inb2, inb2done)

// func wgOutB2(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32)
TEXT ·wgOutB2(SB), NOSPLIT, $0-72
	OUTARGS
	LEAQ (R8)(R8*2), R11 // 3 ξ
	BIASLIM

outb2:
	TESTQ CX, CX
	JEQ   outb2done
	PASS(SI, DX, R15, 4)

outb2row:
	VMOVUPS (AX), Z0
	VMOVUPS (AX)(R8*1), Z1
	VMOVUPS (AX)(R8*2), Z2
	VMOVUPS (AX)(R11*1), Z3
	AT4
	VMOVUPS Z6, (R15)
	VMOVUPS Z7, 64(R15)
	LEAQ    (AX)(R8*4), AX
	ADDQ    $128, R15
	DECQ    R13
	JNE     outb2row

	PASS(DX, DI, R15, 2)

outb2col:
	LOAD4(AX, 128)
	AT4
	FINISH(Z6)
	FINISH(Z7)
	VMOVUPS Z6, (R15)
	VMOVUPS Z7, (R15)(R9*1)
	PASSNEXT($64, $64, R15, outb2col)

	NEXTPATCH(SI, DI, outb2, outb2done)
