//go:build !noasm

#include "textflag.h"

// The channel-blocked depthwise kernel: sixteen channels side by side,
// one zmm register per output position (see depthwiseChannelsPlanes).

// Four accumulators a..d start from the bias (Z31).
#define BIAS4(a, b, c, d) \
	VMOVAPS Z31, a; \
	VMOVAPS Z31, b; \
	VMOVAPS Z31, c; \
	VMOVAPS Z31, d

// Starts the walk over the taps: AX the weights, DX the offsets, BX the
// taps left.
#define TAPS \
	MOVQ w+16(FP), AX;    \
	MOVQ offs+32(FP), DX; \
	MOVQ R8, BX

// Points R13 at the current tap of position 0 and loads its weights
// into Z4.
#define TAP \
	MOVQ    (DX), R13; \
	ADDQ    SI, R13;   \
	VMOVUPS (AX), Z4

// Adds the tap of four positions from p on (R10 bytes apart, R12 = 3·R10)
// into a..d.
#define FMA4(p, a, b, c, d) \
	VFMADD231PS (p), Z4, a;        \
	VFMADD231PS (p)(R10*1), Z4, b; \
	VFMADD231PS (p)(R10*2), Z4, c; \
	VFMADD231PS (p)(R12*1), Z4, d

// Moves on to the next tap, back to label while taps are left.
#define NEXTTAP(label) \
	ADDQ $8, DX;  \
	ADDQ $64, AX; \
	DECQ BX;      \
	JNZ  label

// Stores a..d as four positions from off(DI).
#define PUT4(off, a, b, c, d) \
	VMOVUPS a, off(DI);    \
	VMOVUPS b, off+64(DI); \
	VMOVUPS c, off+128(DI); \
	VMOVUPS d, off+192(DI)

// func depthwiseChannels16(o, x, w, b *float32, offs *int, ntaps, n, step int)
//
// For j < n: o[16j+l] = b[l] + Σ_t w[16t+l]·x[16·step·j + offs[t]/4 + l],
// the taps t < ntaps (ntaps ≥ 1) added in order; offs are byte offsets.
// Eight positions at a time (then four, then one), each in its own
// accumulator.
TEXT ·depthwiseChannels16(SB), NOSPLIT, $0-64
	MOVQ    o+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    b+24(FP), AX
	VMOVUPS (AX), Z31
	MOVQ    ntaps+40(FP), R8
	MOVQ    n+48(FP), CX
	MOVQ    step+56(FP), R10
	SHLQ    $6, R10
	LEAQ    (R10)(R10*2), R12

oct:
	CMPQ CX, $8
	JLT  quad
	BIAS4(Z0, Z1, Z2, Z3)
	BIAS4(Z5, Z6, Z7, Z8)
	TAPS

otap:
	TAP
	LEAQ (R13)(R10*4), R9
	FMA4(R13, Z0, Z1, Z2, Z3)
	FMA4(R9, Z5, Z6, Z7, Z8)
	NEXTTAP(otap)
	PUT4(0, Z0, Z1, Z2, Z3)
	PUT4(256, Z5, Z6, Z7, Z8)
	ADDQ $512, DI
	LEAQ (SI)(R10*8), SI
	SUBQ $8, CX
	JMP  oct

quad:
	CMPQ CX, $4
	JLT  single
	BIAS4(Z0, Z1, Z2, Z3)
	TAPS

qtap:
	TAP
	FMA4(R13, Z0, Z1, Z2, Z3)
	NEXTTAP(qtap)
	PUT4(0, Z0, Z1, Z2, Z3)
	ADDQ $256, DI
	LEAQ (SI)(R10*4), SI
	SUBQ $4, CX
	JMP  quad

single:
	TESTQ   CX, CX
	JEQ     done
	VMOVAPS Z31, Z0
	TAPS

stap:
	TAP
	VFMADD231PS (R13), Z4, Z0
	NEXTTAP(stap)
	VMOVUPS Z0, (DI)
	ADDQ    $64, DI
	ADDQ    R10, SI
	DECQ    CX
	JMP     single

done:
	VZEROUPPER
	RET

// Loads source row i (pointer at off(SI)) into z under the mask K1.
#define TRLOAD(off, z) \
	MOVQ      off(SI), AX; \
	VMOVUPS.Z (AX), K1, z

// Stores z to destination row j (pointer at off(DI)) under the mask K2.
#define TRSTORE(z, off) \
	MOVQ    off(DI), AX; \
	VMOVUPS z, K2, (AX)

// Interleaves the 32-bit values of rows a and b into lo and hi.
#define TRPS(a, b, lo, hi) \
	VUNPCKLPS b, a, lo; \
	VUNPCKHPS b, a, hi

// Interleaves the 64-bit values of t0, t2 and of t1, t3 into u0..u3.
#define TRPD(t0, t1, t2, t3, u0, u1, u2, u3) \
	VUNPCKLPD t2, t0, u0; \
	VUNPCKHPD t2, t0, u1; \
	VUNPCKLPD t3, t1, u2; \
	VUNPCKHPD t3, t1, u3

// Gathers the 128-bit lanes of a (rows 0-3), b (4-7), c (8-11) and d
// (12-15), which hold column 4k+m in lane k, into the columns m, 4+m, 8+m
// and 12+m (Z20..Z23), and stores them to the destination rows at offm
// (then +32, +64, +96 bytes on in DI's pointer table).
#define TRCOLS(a, b, c, d, offm) \
	VSHUFF32X4 $0x44, b, a, Z16;    \
	VSHUFF32X4 $0xEE, b, a, Z17;    \
	VSHUFF32X4 $0x44, d, c, Z18;    \
	VSHUFF32X4 $0xEE, d, c, Z19;    \
	VSHUFF32X4 $0x88, Z18, Z16, Z20; \
	VSHUFF32X4 $0xDD, Z18, Z16, Z21; \
	VSHUFF32X4 $0x88, Z19, Z17, Z22; \
	VSHUFF32X4 $0xDD, Z19, Z17, Z23; \
	TRSTORE(Z20, offm);             \
	TRSTORE(Z21, offm+32);          \
	TRSTORE(Z22, offm+64);          \
	TRSTORE(Z23, offm+96)

// func tr16(dst *[16]*float32, src *[16]*float32, loadMask, storeMask int)
//
// Transposes a 16×16 block: row j of the result, the j-th values of the
// sixteen source rows (src[i], loaded under the lane mask loadMask, the
// other lanes read as 0), is stored to dst[j] under the lane mask
// storeMask.
TEXT ·tr16(SB), NOSPLIT, $0-32
	MOVQ  src+8(FP), SI
	MOVQ  dst+0(FP), DI
	MOVQ  loadMask+16(FP), AX
	KMOVW AX, K1
	MOVQ  storeMask+24(FP), AX
	KMOVW AX, K2
	TRLOAD(0, Z0)
	TRLOAD(8, Z1)
	TRLOAD(16, Z2)
	TRLOAD(24, Z3)
	TRLOAD(32, Z4)
	TRLOAD(40, Z5)
	TRLOAD(48, Z6)
	TRLOAD(56, Z7)
	TRLOAD(64, Z8)
	TRLOAD(72, Z9)
	TRLOAD(80, Z10)
	TRLOAD(88, Z11)
	TRLOAD(96, Z12)
	TRLOAD(104, Z13)
	TRLOAD(112, Z14)
	TRLOAD(120, Z15)

	// Z16+2k, Z17+2k: rows 2k and 2k+1 interleaved.
	TRPS(Z0, Z1, Z16, Z17)
	TRPS(Z2, Z3, Z18, Z19)
	TRPS(Z4, Z5, Z20, Z21)
	TRPS(Z6, Z7, Z22, Z23)
	TRPS(Z8, Z9, Z24, Z25)
	TRPS(Z10, Z11, Z26, Z27)
	TRPS(Z12, Z13, Z28, Z29)
	TRPS(Z14, Z15, Z30, Z31)

	// Z(4g+m) holds, in each 128-bit lane k, column 4k+m of rows
	// 4g..4g+3.
	TRPD(Z16, Z17, Z18, Z19, Z0, Z1, Z2, Z3)
	TRPD(Z20, Z21, Z22, Z23, Z4, Z5, Z6, Z7)
	TRPD(Z24, Z25, Z26, Z27, Z8, Z9, Z10, Z11)
	TRPD(Z28, Z29, Z30, Z31, Z12, Z13, Z14, Z15)

	TRCOLS(Z0, Z4, Z8, Z12, 0)
	TRCOLS(Z1, Z5, Z9, Z13, 8)
	TRCOLS(Z2, Z6, Z10, Z14, 16)
	TRCOLS(Z3, Z7, Z11, Z15, 24)
	VZEROUPPER
	RET
