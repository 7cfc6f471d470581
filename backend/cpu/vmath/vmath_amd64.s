//go:build !noasm

#include "textflag.h"

// AVX2+FMA float32 math; the algorithms and constants are described in
// vmath.go. Every loop handles eight elements per iteration and expects
// lengths that are multiples of eight (the Go wrappers handle tails).
//
// The constants are read from ·vk, eight copies of each; the offsets below
// are 32 × the constant's index in vmath.go and must follow its order.

#define K_ABS ·vk+0(SB)
#define K_SIGN ·vk+32(SB)
#define K_ONE ·vk+64(SB)
#define K_HALF ·vk+96(SB)
#define K_TWO ·vk+128(SB)
#define K_EXPHI ·vk+160(SB)
#define K_EXPLO ·vk+192(SB)
#define K_LOG2E ·vk+224(SB)
#define K_LN2HI ·vk+256(SB)
#define K_LN2LO ·vk+288(SB)
#define K_EXPP0 ·vk+320(SB)
#define K_EXPP1 ·vk+352(SB)
#define K_EXPP2 ·vk+384(SB)
#define K_EXPP3 ·vk+416(SB)
#define K_EXPP4 ·vk+448(SB)
#define K_EXPP5 ·vk+480(SB)
#define K_BIAS ·vk+512(SB)
#define K_TANHT ·vk+544(SB)
#define K_TANHP0 ·vk+576(SB)
#define K_TANHP1 ·vk+608(SB)
#define K_TANHP2 ·vk+640(SB)
#define K_TANHP3 ·vk+672(SB)
#define K_TANHP4 ·vk+704(SB)
#define K_ERFMAX ·vk+736(SB)
#define K_ERFT ·vk+768(SB)
#define K_ERFA0 ·vk+800(SB)
#define K_ERFA1 ·vk+832(SB)
#define K_ERFA2 ·vk+864(SB)
#define K_ERFA3 ·vk+896(SB)
#define K_ERFA4 ·vk+928(SB)
#define K_ERFA5 ·vk+960(SB)
#define K_ERFB0 ·vk+992(SB)
#define K_ERFB1 ·vk+1024(SB)
#define K_ERFB2 ·vk+1056(SB)
#define K_ERFB3 ·vk+1088(SB)
#define K_ERFB4 ·vk+1120(SB)
#define K_ERFB5 ·vk+1152(SB)
#define K_ERFB6 ·vk+1184(SB)
#define K_ERFB7 ·vk+1216(SB)
#define K_ERFB8 ·vk+1248(SB)
#define K_RSQRT2 ·vk+1280(SB)
#define K_NEGINF ·vk+1312(SB)
#define K_GELUT1 ·vk+1344(SB)
#define K_GELUT3 ·vk+1376(SB)

// The Horner steps of the polynomials below after their first
// coefficient: t = t·x + c for c = K_EXPP1..K_EXPP5 (EXP8's), K_TANHP1..
// K_TANHP4, K_ERFA1..K_ERFA5 and K_ERFB1..K_ERFB8 in turn, f the fused
// multiply-add (VFMADD213PS, or VFMADD213PS.BCST on zmm registers).
#define HORNER_EXPP(f, x, t) \
	f K_EXPP1, x, t; \
	f K_EXPP2, x, t; \
	f K_EXPP3, x, t; \
	f K_EXPP4, x, t; \
	f K_EXPP5, x, t

#define HORNER_TANHP(f, x, t) \
	f K_TANHP1, x, t; \
	f K_TANHP2, x, t; \
	f K_TANHP3, x, t; \
	f K_TANHP4, x, t

#define HORNER_ERFA(f, x, t) \
	f K_ERFA1, x, t; \
	f K_ERFA2, x, t; \
	f K_ERFA3, x, t; \
	f K_ERFA4, x, t; \
	f K_ERFA5, x, t

#define HORNER_ERFB(f, x, t) \
	f K_ERFB1, x, t; \
	f K_ERFB2, x, t; \
	f K_ERFB3, x, t; \
	f K_ERFB4, x, t; \
	f K_ERFB5, x, t; \
	f K_ERFB6, x, t; \
	f K_ERFB7, x, t; \
	f K_ERFB8, x, t

// EXP8 sets X = e^X; T1..T4 are clobbered. The clamps keep NaN (it is the
// second source operand of VMINPS/VMAXPS). Lanes below K_EXPLO get 0 by
// zeroing their last scale factor rather than by an underflowing multiply,
// which is many times slower (masked attention scores hit this).
#define EXP8(X, T1, T2, T3, T4) \
	VCMPPS       $1, K_EXPLO, X, T4; \
	VMOVUPS      K_EXPHI, T1; \
	VMINPS       X, T1, X; \
	VMOVUPS      K_EXPLO, T1; \
	VMAXPS       X, T1, X; \
	VMULPS       K_LOG2E, X, T1; \
	VROUNDPS     $0, T1, T1; \
	VFNMADD231PS K_LN2HI, T1, X; \
	VFNMADD231PS K_LN2LO, T1, X; \
	VMOVUPS      K_EXPP0, T2; \
	HORNER_EXPP(VFMADD213PS, X, T2); \
	VMULPS       X, X, T3; \
	VFMADD213PS  X, T3, T2; \
	VADDPS       K_ONE, T2, X; \
	VCVTPS2DQ    T1, T1; \
	VPSRAD       $1, T1, T2; \
	VPSUBD       T2, T1, T1; \
	VPADDD       K_BIAS, T2, T2; \
	VPADDD       K_BIAS, T1, T1; \
	VPSLLD       $23, T2, T2; \
	VPSLLD       $23, T1, T1; \
	VANDNPS      T1, T4, T1; \
	VMULPS       T2, X, X; \
	VMULPS       T1, X, X

// SIGMOID8 sets Y0 = 1/(1+e^−Y0); Y1..Y5 are clobbered.
#define SIGMOID8 \
	VORPS     K_SIGN, Y0, Y1; \
	EXP8(Y1, Y2, Y3, Y4, Y5); \
	VADDPS    K_ONE, Y1, Y2; \
	VMOVUPS   K_ONE, Y3; \
	VBLENDVPS Y0, Y1, Y3, Y3; \
	VDIVPS    Y2, Y3, Y0

// TANH8 sets Y0 = tanh(Y0); Y1..Y9 are clobbered.
#define TANH8 \
	VANDPS      K_SIGN, Y0, Y8; \
	VANDPS      K_ABS, Y0, Y1; \
	VMULPS      Y1, Y1, Y2; \
	VMOVUPS     K_TANHP0, Y3; \
	HORNER_TANHP(VFMADD213PS, Y2, Y3); \
	VMULPS      Y2, Y3, Y3; \
	VFMADD213PS Y1, Y1, Y3; \
	VADDPS      Y1, Y1, Y4; \
	EXP8(Y4, Y5, Y6, Y7, Y9); \
	VADDPS      K_ONE, Y4, Y4; \
	VMOVUPS     K_TWO, Y5; \
	VDIVPS      Y4, Y5, Y5; \
	VMOVUPS     K_ONE, Y4; \
	VSUBPS      Y5, Y4, Y4; \
	VCMPPS      $1, K_TANHT, Y1, Y2; \
	VBLENDVPS   Y2, Y3, Y4, Y0; \
	VORPS       Y8, Y0, Y0

// ERFCORE takes a = |u| in Y1, a² = Y2 + Y5 (Y2 rounded, Y5 the exact
// rest) and the sign of u in Y8, and leaves Y1 = a clamped to K_ERFMAX,
// Y2 = the mask of a < K_ERFT, Y3 = erf(a) by the small-argument
// polynomial and Y6 = erfc(a) by the large-argument form (0 beyond
// K_ERFMAX); Y0, Y4, Y7, Y9, Y11 and Y12 are clobbered.
#define ERFCORE \
	VCMPPS       $14, K_ERFMAX, Y1, Y12; \
	VMOVUPS      K_ERFMAX, Y4; \
	VMINPS       Y1, Y4, Y1; \
	VMOVUPS      K_ERFA0, Y3; \
	HORNER_ERFA(VFMADD213PS, Y2, Y3); \
	VFMADD213PS  Y1, Y1, Y3; \
	VMULPS       K_HALF, Y1, Y4; \
	VADDPS       K_ONE, Y4, Y4; \
	VMOVUPS      K_ONE, Y0; \
	VDIVPS       Y4, Y0, Y0; \
	VMOVUPS      K_ERFB0, Y4; \
	HORNER_ERFB(VFMADD213PS, Y0, Y4); \
	VXORPS       K_SIGN, Y2, Y6; \
	EXP8(Y6, Y0, Y7, Y9, Y11); \
	VFNMADD231PS Y5, Y6, Y6; \
	VMULPS       Y4, Y6, Y6; \
	VANDNPS      Y6, Y12, Y6; \
	VCMPPS       $1, K_ERFT, Y1, Y2

// ERF8 sets Y0 = erf(Y0); Y1..Y9, Y11 and Y12 are clobbered.
#define ERF8 \
	VANDPS      K_SIGN, Y0, Y8; \
	VANDPS      K_ABS, Y0, Y1; \
	VMULPS      Y1, Y1, Y2; \
	VMOVAPS     Y2, Y5; \
	VFMSUB231PS Y1, Y1, Y5; \
	ERFCORE; \
	VMOVUPS     K_ONE, Y7; \
	VSUBPS      Y6, Y7, Y7; \
	VBLENDVPS   Y2, Y3, Y7, Y0; \
	VORPS       Y8, Y0, Y0

// GELU8 sets Y0 = Y0/2·(1 + erf(Y0/√2)), as Y0/2·erfc(|Y0|/√2) for
// negative Y0 in the large-argument range, with (Y0/√2)² = Y0²/2 split
// from Y0 itself; Y1..Y12 are clobbered.
#define GELU8 \
	VMULPS      K_HALF, Y0, Y10; \
	VANDPS      K_SIGN, Y0, Y8; \
	VMULPS      Y0, Y0, Y2; \
	VMOVAPS     Y2, Y5; \
	VFMSUB231PS Y0, Y0, Y5; \
	VMULPS      K_HALF, Y2, Y2; \
	VMULPS      K_HALF, Y5, Y5; \
	VMULPS      K_RSQRT2, Y0, Y1; \
	VANDPS      K_ABS, Y1, Y1; \
	ERFCORE; \
	VMOVUPS     K_ONE, Y7; \
	VSUBPS      Y6, Y7, Y7; \
	VBLENDVPS   Y2, Y3, Y7, Y7; \
	VORPS       Y8, Y7, Y7; \
	VFMADD213PS Y10, Y10, Y7; \
	VMULPS      Y10, Y6, Y6; \
	VANDNPS     Y8, Y2, Y9; \
	VBLENDVPS   Y9, Y6, Y7, Y0

// GELUTANH8 sets Y0 = Y0·sigmoid(Y0·(K_GELUT1 + K_GELUT3·Y0²)); Y1..Y5
// and Y10 are clobbered.
#define GELUTANH8 \
	VMOVAPS     Y0, Y10; \
	VMULPS      Y0, Y0, Y1; \
	VMOVUPS     K_GELUT3, Y2; \
	VFMADD213PS K_GELUT1, Y1, Y2; \
	VMULPS      Y2, Y0, Y0; \
	SIGMOID8; \
	VMULPS      Y10, Y0, Y0

// HSUMPD sets X0's low double to the sum of the four doubles of Y0 and
// the four of Y1.
#define HSUMPD \
	VADDPD       Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPD       X1, X0, X0; \
	VPERMILPD    $1, X0, X1; \
	VADDSD       X1, X0, X0

// HSUMRET stores HSUMPD's sum at ret and returns; SUMRET does so for
// the two accumulators Y11, Y12 of expSumAVX2, sumSqDevAVX2 and
// expSumAVX512.
#define HSUMRET(ret) \
	HSUMPD;          \
	VMOVSD X0, ret;  \
	VZEROUPPER;      \
	RET

#define SUMRET(ret) \
	VMOVAPD Y11, Y0; \
	VMOVAPD Y12, Y1; \
	HSUMRET(ret)

// EXPSUM8 is one block of eight of the exponential sums (expSumAVX2,
// expSumAVX512): e^(x−m) of the eight floats at SI (m broadcast in Y10)
// stored at DI, their float64 values added into Y11 (floats 0-3) and Y12
// (4-7); Y0..Y4 are clobbered.
#define EXPSUM8 \
	VMOVUPS      (SI), Y0; \
	VSUBPS       Y10, Y0, Y0; \
	EXP8(Y0, Y1, Y2, Y3, Y4); \
	VMOVUPS      Y0, (DI); \
	VEXTRACTF128 $1, Y0, X1; \
	VCVTPS2PD    X0, Y2; \
	VCVTPS2PD    X1, Y3; \
	VADDPD       Y2, Y11, Y11; \
	VADDPD       Y3, Y12, Y12

// MAPV is the loop of a kernel of d, s []float32 on vectors r (shift:
// log2 of their lanes, step: their bytes): r = f(r) for each vector of
// s, into d (BODY computes f). MAP8 is the eight-lane kernel on Y0,
// MAP16 the sixteen-lane one on Z0.
#define MAPV(BODY, r, shift, step) \
	MOVQ    d_base+0(FP), DI; \
	MOVQ    d_len+8(FP), CX; \
	MOVQ    s_base+24(FP), SI; \
	SHRQ    $shift, CX; \
	JZ      done; \
loop:; \
	VMOVUPS (SI), r; \
	BODY; \
	VMOVUPS r, (DI); \
	ADDQ    $step, SI; \
	ADDQ    $step, DI; \
	DECQ    CX; \
	JNZ     loop; \
done:; \
	VZEROUPPER; \
	RET

#define MAP8(BODY) MAPV(BODY, Y0, 3, 32)
#define MAP16(BODY) MAPV(BODY, Z0, 4, 64)

// SILU8 sets Y0 = Y0·sigmoid(Y0); SIGMOID8's registers and Y6 are
// clobbered.
#define SILU8 \
	VMOVAPS Y0, Y6; \
	SIGMOID8; \
	VMULPS  Y0, Y6, Y0

// func expAVX2(d, s []float32)
TEXT ·expAVX2(SB), NOSPLIT, $0-48
	MAP8(EXP8(Y0, Y1, Y2, Y3, Y4))

// func sigmoidAVX2(d, s []float32)
TEXT ·sigmoidAVX2(SB), NOSPLIT, $0-48
	MAP8(SIGMOID8)

// func tanhAVX2(d, s []float32)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-48
	MAP8(TANH8)

// func erfAVX2(d, s []float32)
TEXT ·erfAVX2(SB), NOSPLIT, $0-48
	MAP8(ERF8)

// func geluAVX2(d, s []float32)
TEXT ·geluAVX2(SB), NOSPLIT, $0-48
	MAP8(GELU8)

// func geluTanhAVX2(d, s []float32)
TEXT ·geluTanhAVX2(SB), NOSPLIT, $0-48
	MAP8(GELUTANH8)

// func maxAVX2(x []float32) float32
TEXT ·maxAVX2(SB), NOSPLIT, $0-28
	MOVQ    x_base+0(FP), SI
	MOVQ    x_len+8(FP), CX
	VMOVUPS K_NEGINF, Y0
	SHRQ    $3, CX
	JZ      maxdone

maxloop:
	VMOVUPS (SI), Y1
	VMAXPS  Y0, Y1, Y0
	ADDQ    $32, SI
	DECQ    CX
	JNZ     maxloop

maxdone:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+24(FP)
	VZEROUPPER
	RET

// func expSumAVX2(d, x []float32, m float32) float64
TEXT ·expSumAVX2(SB), NOSPLIT, $0-64
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS m+48(FP), Y10
	VXORPD       Y11, Y11, Y11
	VXORPD       Y12, Y12, Y12
	SHRQ         $3, CX
	JZ           expsumdone

expsumloop:
	EXPSUM8
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          expsumloop

expsumdone:
	SUMRET(ret+56(FP))

// func sumAVX2(x []float32) float64
TEXT ·sumAVX2(SB), NOSPLIT, $0-32
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	SHRQ   $3, CX
	JZ     sumdone

sumloop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VADDPD    Y2, Y0, Y0
	VADDPD    Y3, Y1, Y1
	ADDQ      $32, SI
	DECQ      CX
	JNZ       sumloop

sumdone:
	HSUMRET(ret+24(FP))

// func sumAVX512(x []float32) float64
//
// sumAVX2 for lengths that are multiples of 32, on four zmm accumulators
// of eight float64 each.
TEXT ·sumAVX512(SB), NOSPLIT, $0-32
	MOVQ   x_base+0(FP), SI
	MOVQ   x_len+8(FP), CX
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	VXORPD Z2, Z2, Z2
	VXORPD Z3, Z3, Z3
	SHRQ   $5, CX
	JZ     sum512done

sum512loop:
	VCVTPS2PD (SI), Z4
	VCVTPS2PD 32(SI), Z5
	VCVTPS2PD 64(SI), Z6
	VCVTPS2PD 96(SI), Z7
	VADDPD    Z4, Z0, Z0
	VADDPD    Z5, Z1, Z1
	VADDPD    Z6, Z2, Z2
	VADDPD    Z7, Z3, Z3
	ADDQ      $128, SI
	DECQ      CX
	JNZ       sum512loop

sum512done:
	VADDPD        Z2, Z0, Z0
	VADDPD        Z3, Z1, Z1
	VADDPD        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	HSUMRET(ret+24(FP))

// func MeanRows512(y, x *float32, rows, n int, scale float64)
//
// For each of rows rows of n ≥ 1 floats at x (one after the other):
// y[i] = float32(scale·Σ row i), the sum in float64, sixteen values a
// step in two partial sums and the last n mod 16 under a lane mask.
TEXT ·MeanRows512(SB), NOSPLIT, $0-40
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         rows+16(FP), CX
	MOVQ         n+24(FP), DX
	MOVSD        scale+32(FP), X7
	MOVQ         DX, AX
	ANDQ         $15, AX
	MOVQ         $1, BX
	SHLXQ        AX, BX, BX
	DECQ         BX
	KMOVW        BX, K1
	SHLQ         $2, AX        // the tail's bytes
	SHRQ         $4, DX        // whole steps of a row
	TESTQ        CX, CX
	JEQ          meandone

meanrow:
	VXORPD Z0, Z0, Z0
	VXORPD Z1, Z1, Z1
	MOVQ   DX, R8
	TESTQ  R8, R8
	JEQ    meantail

meanstep:
	VCVTPS2PD (SI), Z2
	VCVTPS2PD 32(SI), Z3
	VADDPD    Z2, Z0, Z0
	VADDPD    Z3, Z1, Z1
	ADDQ      $64, SI
	DECQ      R8
	JNZ       meanstep

meantail:
	VMOVUPS.Z     (SI), K1, Z4
	VCVTPS2PD     Y4, Z2
	VEXTRACTF32X8 $1, Z4, Y5
	VCVTPS2PD     Y5, Z3
	VADDPD        Z2, Z0, Z0
	VADDPD        Z3, Z1, Z1
	ADDQ          AX, SI
	VADDPD        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	HSUMPD
	VMULSD        X7, X0, X0
	VCVTSD2SS     X0, X0, X0
	VMOVSS        X0, (DI)
	ADDQ          $4, DI
	DECQ          CX
	JNZ           meanrow

meandone:
	VZEROUPPER
	RET

// func sumSqDevAVX2(x []float32, m float32) float64
TEXT ·sumSqDevAVX2(SB), NOSPLIT, $0-40
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS m+24(FP), Y10
	VXORPD       Y11, Y11, Y11
	VXORPD       Y12, Y12, Y12
	SHRQ         $3, CX
	JZ           ssddone

ssdloop:
	VMOVUPS      (SI), Y0
	VSUBPS       Y10, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VCVTPS2PD    X0, Y2
	VCVTPS2PD    X1, Y3
	VFMADD231PD  Y2, Y2, Y11
	VFMADD231PD  Y3, Y3, Y12
	ADDQ         $32, SI
	DECQ         CX
	JNZ          ssdloop

ssddone:
	SUMRET(ret+32(FP))

// func scaleAVX2(d, s []float32, c float32)
TEXT ·scaleAVX2(SB), NOSPLIT, $0-52
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         s_base+24(FP), SI
	VBROADCASTSS c+48(FP), Y1
	SHRQ         $3, CX
	JZ           scaledone

scaleloop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     scaleloop

scaledone:
	VZEROUPPER
	RET

// func normAffineAVX2(y, x, sc, bi []float32, mean, inv float32)
TEXT ·normAffineAVX2(SB), NOSPLIT, $0-104
	MOVQ         y_base+0(FP), DI
	MOVQ         y_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	MOVQ         sc_base+48(FP), R8
	MOVQ         bi_base+72(FP), R9
	VBROADCASTSS mean+96(FP), Y10
	VBROADCASTSS inv+100(FP), Y11
	SHRQ         $3, CX
	JZ           normdone

normloop:
	VMOVUPS     (SI), Y0
	VSUBPS      Y10, Y0, Y0
	VMULPS      (R8), Y11, Y1
	VFMADD213PS (R9), Y1, Y0
	VMOVUPS     Y0, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	ADDQ        $32, R8
	ADDQ        $32, R9
	DECQ        CX
	JNZ         normloop

normdone:
	VZEROUPPER
	RET

// AVX-512 forms of EXP8 and SIGMOID8 for sixteen lanes: the same
// operations in the same order on the same constants (read as 32-bit
// broadcasts of vk's first copy), so that they give the same bits; the
// masks of the AVX2 code live in mask registers.

// EXPNEG16 sets X = e^X for X ≤ 0 or NaN (SIGMOID16's −|x|); T1..T3 and
// the mask register KM are clobbered. It computes EXP8's bits with fewer
// operations:
//   - EXP8's upper clamp (min with 89) leaves such X as they are, so it
//     is left out;
//   - it scales by 2^n with one VSCALEFPS where EXP8 builds 2^⌊n/2⌋ and
//     2^(n−⌊n/2⌋) and multiplies by both: the first of those products is
//     exact (it stays normal), so both round once, to the same bits;
//   - the lanes below the lower clamp, which EXP8 sets to 0, are zeroed
//     by the scaling's mask (KM: not below it, NaN included).
#define EXPNEG16(X, T1, T2, T3, KM) \
	VCMPPS.BCST       $5, K_EXPLO, X, KM; \
	VBROADCASTSS      K_EXPLO, T1; \
	VMAXPS            X, T1, X; \
	VMULPS.BCST       K_LOG2E, X, T1; \
	VRNDSCALEPS       $0, T1, T1; \
	VFNMADD231PS.BCST K_LN2HI, T1, X; \
	VFNMADD231PS.BCST K_LN2LO, T1, X; \
	VBROADCASTSS      K_EXPP0, T2; \
	HORNER_EXPP(VFMADD213PS.BCST, X, T2); \
	VMULPS            X, X, T3; \
	VFMADD213PS       X, T3, T2; \
	VADDPS.BCST       K_ONE, T2, X; \
	VSCALEFPS.Z       T1, X, KM, X

// SIGMOID16 sets Z0 = 1/(1+e^−Z0); Z1..Z4, K1 and K2 are clobbered. The
// numerator is e^−|x| where x's sign bit is set and 1 elsewhere (one
// masked blend with the broadcast 1).
#define SIGMOID16 \
	VPORD.BCST     K_SIGN, Z0, Z1; \
	EXPNEG16(Z1, Z2, Z3, Z4, K1); \
	VADDPS.BCST    K_ONE, Z1, Z2; \
	VPTESTNMD.BCST K_SIGN, Z0, K2; \
	VBLENDMPS.BCST K_ONE, Z1, K2, Z3; \
	VDIVPS         Z2, Z3, Z0

// SILU16 sets Z0 = Z0·sigmoid(Z0); SIGMOID16's registers and Z5 are
// clobbered.
#define SILU16 \
	VMOVAPS Z0, Z5; \
	SIGMOID16; \
	VMULPS  Z0, Z5, Z0

// func sigmoidAVX512(d, s []float32)
TEXT ·sigmoidAVX512(SB), NOSPLIT, $0-48
	MAP16(SIGMOID16)

// func siluAVX512(d, s []float32)
TEXT ·siluAVX512(SB), NOSPLIT, $0-48
	MAP16(SILU16)

// func siluAVX2(d, s []float32)
TEXT ·siluAVX2(SB), NOSPLIT, $0-48
	MAP8(SILU8)

// ERFCORE16 is ERFCORE for sixteen lanes in Z registers: a in Z1, a² =
// Z2 + Z5, and it leaves Z1 = a clamped, K2 = the mask of a < K_ERFT, Z3 =
// the small-argument polynomial and Z6 = erfc by the large-argument form
// (0 beyond K_ERFMAX: K3 keeps the lanes not above it, NaN included, as
// ERFCORE's and-not of its above-mask does). Z0, Z4, Z7, Z9, K3 and K4
// are clobbered. Its exponential is EXPNEG16's, of −a² ≤ 0.
#define ERFCORE16 \
	VCMPPS.BCST      $10, K_ERFMAX, Z1, K3; \
	VBROADCASTSS     K_ERFMAX, Z4; \
	VMINPS           Z1, Z4, Z1; \
	VBROADCASTSS     K_ERFA0, Z3; \
	HORNER_ERFA(VFMADD213PS.BCST, Z2, Z3); \
	VFMADD213PS      Z1, Z1, Z3; \
	VMULPS.BCST      K_HALF, Z1, Z4; \
	VADDPS.BCST      K_ONE, Z4, Z4; \
	VBROADCASTSS     K_ONE, Z0; \
	VDIVPS           Z4, Z0, Z0; \
	VBROADCASTSS     K_ERFB0, Z4; \
	HORNER_ERFB(VFMADD213PS.BCST, Z0, Z4); \
	VPXORD.BCST      K_SIGN, Z2, Z6; \
	EXPNEG16(Z6, Z0, Z7, Z9, K4); \
	VFNMADD231PS     Z5, Z6, Z6; \
	VMULPS           Z4, Z6, Z6; \
	VMOVAPS.Z        Z6, K3, Z6; \
	VCMPPS.BCST      $1, K_ERFT, Z1, K2

// ERF16 sets Z0 = erf(Z0), ERF8's bits; Z1..Z9 and K2..K4 are clobbered.
#define ERF16 \
	VPANDD.BCST  K_SIGN, Z0, Z8; \
	VPANDD.BCST  K_ABS, Z0, Z1; \
	VMULPS       Z1, Z1, Z2; \
	VMOVAPS      Z2, Z5; \
	VFMSUB231PS  Z1, Z1, Z5; \
	ERFCORE16; \
	VBROADCASTSS K_ONE, Z7; \
	VSUBPS       Z6, Z7, Z7; \
	VBLENDMPS    Z3, Z7, K2, Z0; \
	VPORD        Z8, Z0, Z0

// func erfAVX512(d, s []float32)
TEXT ·erfAVX512(SB), NOSPLIT, $0-48
	MAP16(ERF16)

// EXP16 is EXPNEG16 for any X (EXP8's bits): EXP8's upper clamp first,
// and the single VSCALEFPS rounds as EXP8's two scalings do (the first of
// those is exact while it stays finite; beyond, both overflow).
#define EXP16(X, T1, T2, T3, KM) \
	VBROADCASTSS K_EXPHI, T1; \
	VMINPS       X, T1, X; \
	EXPNEG16(X, T1, T2, T3, KM)

// TANH16 sets Z0 = tanh(Z0), TANH8's bits; Z1..Z9 and K1, K2 are
// clobbered.
#define TANH16 \
	VPANDD.BCST      K_SIGN, Z0, Z8; \
	VPANDD.BCST      K_ABS, Z0, Z1; \
	VMULPS           Z1, Z1, Z2; \
	VBROADCASTSS     K_TANHP0, Z3; \
	HORNER_TANHP(VFMADD213PS.BCST, Z2, Z3); \
	VMULPS           Z2, Z3, Z3; \
	VFMADD213PS      Z1, Z1, Z3; \
	VADDPS           Z1, Z1, Z4; \
	EXP16(Z4, Z5, Z6, Z7, K1); \
	VADDPS.BCST      K_ONE, Z4, Z4; \
	VBROADCASTSS     K_TWO, Z5; \
	VDIVPS           Z4, Z5, Z5; \
	VBROADCASTSS     K_ONE, Z4; \
	VSUBPS           Z5, Z4, Z4; \
	VCMPPS.BCST      $1, K_TANHT, Z1, K2; \
	VBLENDMPS        Z3, Z4, K2, Z0; \
	VPORD            Z8, Z0, Z0

// func tanhAVX512(d, s []float32)
TEXT ·tanhAVX512(SB), NOSPLIT, $0-48
	MAP16(TANH16)

// func expSumAVX512(d, x []float32, m float32) float64
//
// expSumAVX2 on sixteen lanes: the exponentials are EXPNEG16's (x−m ≤ 0
// or NaN: EXP8's bits), and their float64 sums go into expSumAVX2's two
// accumulators of four lanes in its order (floats 0-3 and 8-11 of a
// block into Y11, 4-7 and 12-15 into Y12), a last block of eight through
// EXP8 itself, so that the sum has the same bits too.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-64
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         x_base+24(FP), SI
	VBROADCASTSS m+48(FP), Z10
	VXORPD       Y11, Y11, Y11
	VXORPD       Y12, Y12, Y12
	MOVQ         CX, DX
	SHRQ         $4, CX
	JZ           es16eight

es16loop:
	VMOVUPS        (SI), Z0
	VSUBPS         Z10, Z0, Z0
	EXPNEG16(Z0, Z1, Z2, Z3, K1)
	VMOVUPS        Z0, (DI)
	VCVTPS2PD      X0, Y2
	VADDPD         Y2, Y11, Y11
	VEXTRACTF128   $1, Y0, X1
	VCVTPS2PD      X1, Y3
	VADDPD         Y3, Y12, Y12
	VEXTRACTF32X4  $2, Z0, X1
	VCVTPS2PD      X1, Y2
	VADDPD         Y2, Y11, Y11
	VEXTRACTF32X4  $3, Z0, X1
	VCVTPS2PD      X1, Y3
	VADDPD         Y3, Y12, Y12
	ADDQ           $64, SI
	ADDQ           $64, DI
	DECQ           CX
	JNZ            es16loop

es16eight:
	TESTQ        $8, DX
	JZ           es16done
	EXPSUM8

es16done:
	SUMRET(ret+56(FP))
