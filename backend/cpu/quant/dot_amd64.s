//go:build !noasm

#include "textflag.h"
#include "kernels_amd64.h"

// The AVX2 kernels (F16C for the scales). Each computes what its Go
// counterpart in ref.go computes, with the same roundings in the same
// order (see there): the integer sums are exact however they are taken,
// the floating-point steps are the reference's.

// The kernels of 32-value blocks take (w, q, d, s, bias, nb): SI the
// weights, DI the activation values, DX their scales, R8 their block sums,
// R9 their sums of fours times −8 (Q8_0B rows), the last four indexed by
// BX, four times the block's index; CX the blocks. They run the blocks in
// pairs, block b into Y8 and b+1 into Y9, and an odd last one into Y8.

// SCALE32(wo, do): Y5 = the f16 at wo(SI) times the float32 at
// do(DX)(BX*1), in every lane.
#define SCALE32(wo, do) \
	VPBROADCASTW wo(SI), X5; \
	VCVTPH2PS    X5, Y5; \
	VBROADCASTSS do(DX)(BX*1), Y6; \
	VMULPS       Y6, Y5, Y5

// SDOT(xo): Y1 = the lane sums of signed bytes Y1 by the signed bytes at
// xo(DI)(BX*8): |w|·(x·sign w) in pairs, then fours. Y15 holds words of 1.
#define SDOT(xo) \
	VMOVDQU    xo(DI)(BX*8), Y2; \
	VPSIGNB    Y1, Y2, Y2; \
	VPABSB     Y1, Y1; \
	VPMADDUBSW Y2, Y1, Y1; \
	VPMADDWD   Y15, Y1, Y1

// UDOT(xo): the same for unsigned bytes Y1.
#define UDOT(xo) \
	VPMADDUBSW xo(DI)(BX*8), Y1, Y1; \
	VPMADDWD   Y15, Y1, Y1

// BIAS(xo): Y1 += −8 times the sums of four x (for weights q−8).
#define BIAS(xo) \
	VPADDD xo(R9)(BX*8), Y1, Y1

// ACC(A): A += float32(Y5·float32(Y1)), lane by lane.
#define ACC(A) \
	VCVTDQ2PS Y1, Y1; \
	VMULPS    Y5, Y1, Y1; \
	VADDPS    Y1, A, A

// NIBBLES(off): Y1 = the 32 four-bit values of the 16 bytes at off(SI),
// low nibbles first, as bytes. Y14 holds bytes 0x0f.
#define NIBBLES(off) \
	VBROADCASTI128 off(SI), Y1; \
	VPSRLW         $4, Y1, Y2; \
	VPBLENDD       $0xf0, Y2, Y1, Y1; \
	VPAND          Y14, Y1, Y1

// HIBITS(off): Y1 |= 0x10 in byte e where bit e of the 32 bits at off(SI)
// is set. Y12 spreads the bytes, Y11 holds 0x7fbfdfeff7fbfdfe, Y10 all
// ones, Y13 bytes 0x10.
#define HIBITS(off) \
	VPBROADCASTD off(SI), Y3; \
	VPSHUFB      Y12, Y3, Y3; \
	VPOR         Y11, Y3, Y3; \
	VPCMPEQB     Y10, Y3, Y3; \
	VPAND        Y13, Y3, Y3; \
	VPOR         Y3, Y1, Y1

// HIBITSCONST: Y13, Y12, Y11 and Y10 for HIBITS.
#define HIBITSCONST \
	BCAST8($0x10101010, Y13, X13); \
	VMOVDQU      hibitShuf<>(SB), Y12; \
	MOVQ         $0x7fbfdfeff7fbfdfe, AX; \
	VMOVQ        AX, X11; \
	VPBROADCASTQ X11, Y11; \
	VPCMPEQB     Y10, Y10, Y10

// MIN32(mo, so, M): M += m·s, the f16 minimum at mo(SI) by the float32
// at so(R8)(BX*1) (Q4_1, Q5_1).
#define MIN32(mo, so, M) \
	VPBROADCASTW mo(SI), X4; \
	VCVTPH2PS    X4, X4; \
	VMULSS       so(R8)(BX*1), X4, X4; \
	VADDSS       X4, M, M

// The blocks, at wo(SI), their values at xo(DI)(BX*8) and scales at
// do(DX)(BX*1), accumulated into A.
#define Q8_0BLK(wo, qo, xo, do, A) \
	VMOVDQU qo(SI), Y1; \
	SDOT(xo); \
	SCALE32(wo, do); \
	ACC(A)

#define Q4_0BLK(wo, qo, xo, do, A) \
	NIBBLES(qo); \
	UDOT(xo); \
	BIAS(xo); \
	SCALE32(wo, do); \
	ACC(A)

#define Q5_0BLK(wo, ho, qo, xo, do, A) \
	NIBBLES(qo); \
	HIBITS(ho); \
	UDOT(xo); \
	BIAS(xo); \
	BIAS(xo); \
	SCALE32(wo, do); \
	ACC(A)

#define Q4_1BLK(wo, mo, qo, xo, do, A, M) \
	MIN32(mo, do, M); \
	NIBBLES(qo); \
	UDOT(xo); \
	SCALE32(wo, do); \
	ACC(A)

#define Q5_1BLK(wo, mo, ho, qo, xo, do, A, M) \
	MIN32(mo, do, M); \
	NIBBLES(qo); \
	HIBITS(ho); \
	UDOT(xo); \
	SCALE32(wo, do); \
	ACC(A)

// HEAD32: the arguments and the constants all share.
#define HEAD32 \
	MOVQ         w+0(FP), SI; \
	MOVQ         q+8(FP), DI; \
	MOVQ         d+16(FP), DX; \
	MOVQ         s+24(FP), R8; \
	MOVQ         bias+32(FP), R9; \
	MOVQ         nb+40(FP), CX; \
	BCAST8($0x00010001, Y15, X15); \
	BCAST8($0x0f0f0f0f, Y14, X14); \
	VXORPS       Y8, Y8, Y8; \
	VXORPS       Y9, Y9, Y9; \
	VXORPS       X0, X0, X0; \
	VXORPS       X7, X7, X7

// TAIL32: the result, reduce8 of Y8 + Y9, plus the sum of the minimum
// sums X0 and X7 (zero but for Q4_1 and Q5_1), into X8.
#define TAIL32 \
	VADDPS Y9, Y8, Y8; \
	REDUCE8(Y8, X8, X1); \
	VADDSS X7, X0, X0; \
	VADDSS X0, X8, X8

// hibitShuf spreads byte i of a dword over bytes 8i to 8i+7.
DATA hibitShuf<>+0(SB)/8, $0x0000000000000000
DATA hibitShuf<>+8(SB)/8, $0x0101010101010101
DATA hibitShuf<>+16(SB)/8, $0x0202020202020202
DATA hibitShuf<>+24(SB)/8, $0x0303030303030303
GLOBL hibitShuf<>(SB), RODATA|NOPTR, $32

// wordBcast and pairBcast: WORDBCAST and PAIRBCAST.
WORDBCAST(wordBcast)
PAIRBCAST(pairBcast)

// KSETUP: Y12 = the scales as words, in both lanes; X13 = the minimums
// by the sums of x at (R8), four dwords; Y10 = 0.
#define KSETUP \
	KSCALES(R11); \
	VMOVQ       AX, X12; \
	VPMOVZXBW   X12, X12; \
	VINSERTI128 $1, X12, Y12, Y12; \
	VMOVQ       BX, X13; \
	VPMOVZXBW   X13, X13; \
	VPMADDWD    (R8), X13, X13; \
	VPXOR       Y10, Y10, Y10

// KCHUNK(qo, xo, s0, s1): 64 values of 4 bits, the 32 bytes at qo(SI),
// low nibbles by the 32 bytes at xo(DI) and scale s0, high nibbles by
// the next 32 and scale s1 (offsets into wordBcast), added into Y10.
// HI, when not empty, sets the fifth bits (Q5_K) of Y1 and Y2.
#define KCHUNK(qo, xo, xo2, s0, s1, HI) \
	VMOVDQU    qo(SI), Y1; \
	VPSRLW     $4, Y1, Y2; \
	VPAND      Y14, Y1, Y1; \
	VPAND      Y14, Y2, Y2; \
	HI; \
	VPMADDUBSW xo(DI), Y1, Y1; \
	VPMADDUBSW xo2(DI), Y2, Y2; \
	VPSHUFB    wordBcast<>+s0(SB), Y12, Y3; \
	VPMADDWD   Y3, Y1, Y1; \
	VPSHUFB    wordBcast<>+s1(SB), Y12, Y3; \
	VPMADDWD   Y3, Y2, Y2; \
	VPADDD     Y1, Y10, Y10; \
	VPADDD     Y2, Y10, Y10

// KFINISH(dmoff): X8 += float32(d·isum) − float32(dmin·msum), isum the
// dwords of Y10 and msum those of X13, d and dmin the f16 pair at
// dmoff(SI) times the float32 at (DX).
#define KFINISH \
	VEXTRACTI128 $1, Y10, X1; \
	VPADDD       X1, X10, X10; \
	VPHADDD      X13, X10, X10; \
	VPHADDD      X10, X10, X10; \
	VCVTDQ2PS    X10, X10; \
	VMOVD        (SI), X2; \
	VCVTPH2PS    X2, X2; \
	VBROADCASTSS (DX), X3; \
	VMULPS       X3, X2, X2; \
	VMULPS       X2, X10, X10; \
	VMOVSHDUP    X10, X1; \
	VSUBSS       X1, X10, X10; \
	VADDSS       X10, X8, X8

#define KHEAD \
	MOVQ   w+0(FP), SI; \
	MOVQ   q+8(FP), DI; \
	MOVQ   d+16(FP), DX; \
	MOVQ   sums+24(FP), R8; \
	MOVQ   nb+32(FP), CX; \
	BCAST8($0x0f0f0f0f, Y14, X14); \
	VXORPS X8, X8, X8

// Q5HI(lo, hi): the fifth bits of a Q5_K chunk from the bits of Y4 (the
// block's 32 bytes of them): bit 2c for the low nibbles, 2c+1 for the
// high, moved to bit 4 by the shifts lo and hi. Y11 holds bytes 0x10.
#define Q5HI(LO, HI) \
	LO; \
	VPAND Y11, Y5, Y5; \
	VPOR  Y5, Y1, Y1; \
	HI; \
	VPAND Y11, Y5, Y5; \
	VPOR  Y5, Y2, Y2

// Q5BITS: Y4 = the 32 bytes of fifth bits of the Q5_K block at SI.
#define Q5BITS VMOVDQU 16(SI), Y4

#define SL4 VPSLLW $4, Y4, Y5
#define SL3 VPSLLW $3, Y4, Y5
#define SL2 VPSLLW $2, Y4, Y5
#define SL1 VPSLLW $1, Y4, Y5
#define S0 VMOVDQA Y4, Y5
#define SR1 VPSRLW $1, Y4, Y5
#define SR2 VPSRLW $2, Y4, Y5
#define SR3 VPSRLW $3, Y4, Y5

// Q6DOT(xo, so): Y10 += the products of the 32 six-bit values of Y1 (0
// to 63) less 32 by the 32 bytes at xo(DI), the words of each 128-bit
// lane scaled as pairBcast+so picks from Y12. Y11 holds bytes 32.
#define Q6DOT(xo, so) \
	VMOVDQU    xo(DI), Y2; \
	VPMADDUBSW Y2, Y1, Y1; \
	VPMADDUBSW Y2, Y11, Y3; \
	VPSUBW     Y3, Y1, Y1; \
	VPSHUFB    pairBcast<>+so(SB), Y12, Y3; \
	VPMADDWD   Y3, Y1, Y1; \
	VPADDD     Y1, Y10, Y10

// Q6HALF: one half (128 values) of a Q6_K block: low bits at ql(SI)
// and ql+32(SI), high bits at qh(SI), scales at sc(SI), x at xo(DI) on.
// Y14 holds bytes 0x0f, Y13 bytes 0x30.
#define Q6HALF(ql, ql2, qh, sc, x0, x1, x2, x3) \
	VPMOVSXBW   sc(SI), X12; \
	VINSERTI128 $1, X12, Y12, Y12; \
	VMOVDQU     qh(SI), Y4; \
	VMOVDQU     ql(SI), Y5; \
	VMOVDQU     ql2(SI), Y6; \
	VPAND       Y14, Y5, Y1; \
	VPSLLW      $4, Y4, Y2; \
	VPAND       Y13, Y2, Y2; \
	VPOR        Y2, Y1, Y1; \
	Q6DOT(x0, 0); \
	VPAND       Y14, Y6, Y1; \
	VPSLLW      $2, Y4, Y2; \
	VPAND       Y13, Y2, Y2; \
	VPOR        Y2, Y1, Y1; \
	Q6DOT(x1, 32); \
	VPSRLW      $4, Y5, Y1; \
	VPAND       Y14, Y1, Y1; \
	VPAND       Y13, Y4, Y2; \
	VPOR        Y2, Y1, Y1; \
	Q6DOT(x2, 64); \
	VPSRLW      $4, Y6, Y1; \
	VPAND       Y14, Y1, Y1; \
	VPSRLW      $2, Y4, Y2; \
	VPAND       Y13, Y2, Y2; \
	VPOR        Y2, Y1, Y1; \
	Q6DOT(x3, 96)

// REDUCE32: X8 = reduce32 of Y8..Y11 (lanes 0–7, 8–15, 16–23, 24–31).
#define REDUCE32 \
	VADDPS Y10, Y8, Y8; \
	VADDPS Y11, Y9, Y9; \
	VADDPS Y9, Y8, Y8; \
	REDUCE8(Y8, X8, X1)

// DOTK(SETUP, LOAD, CHUNKS, size): the Q4_K and Q5_K kernels, SETUP
// their constants beyond KHEAD's, LOAD what a block needs before its
// scales, CHUNKS its four chunks, size its bytes.
#define DOTK(SETUP, LOAD, CHUNKS, size) \
	KHEAD; \
	SETUP; \
loop:; \
	PREFETCH3; \
	LOAD; \
	KSETUP; \
	CHUNKS; \
	KFINISH; \
	KNEXT(size); \
	MOVSS X8, ret+40(FP); \
	VZEROUPPER; \
	RET

#define Q4KCHUNKS KCHUNKS(KCHUNK, 16, NOHI, NOHI, NOHI, NOHI)
#define Q5KCHUNKS KCHUNKS(KCHUNK, 48, Q5HI(SL4, SL3), Q5HI(SL2, SL1), Q5HI(S0, SR1), Q5HI(SR2, SR3))

// ZERO4: the accumulators Y8–Y11 of RUNS32.
#define ZERO4 \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11

// RUNS32(RUN): the F16 and BF16 kernels, RUN eight values: lanes 8c to
// 8c+7 of the runs in Y(8+c), then reduce32 of them into X8.
#define RUNS32(RUN) \
	RUNS(ZERO4, RUN(0, 0, Y0, Y8); RUN(16, 32, Y1, Y9); RUN(32, 64, Y2, Y10); RUN(48, 96, Y3, Y11), REDUCE32)

// func dotQ8_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-52
	KERNEL32(HEAD32, NOSETUP, Q8_0BLK(0, 2, 0, 0, Y8); Q8_0BLK(34, 36, 32, 4, Y9), Q8_0BLK(0, 2, 0, 0, Y8), 68, TAIL32)

// func dotQ4_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-52
	KERNEL32(HEAD32, NOSETUP, Q4_0BLK(0, 2, 0, 0, Y8); Q4_0BLK(18, 20, 32, 4, Y9), Q4_0BLK(0, 2, 0, 0, Y8), 36, TAIL32)

// func dotQ5_0AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-52
	KERNEL32(HEAD32, HIBITSCONST, Q5_0BLK(0, 2, 6, 0, 0, Y8); Q5_0BLK(22, 24, 28, 32, 4, Y9), Q5_0BLK(0, 2, 6, 0, 0, Y8), 44, TAIL32)

// func dotQ4_1AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $0-52
	KERNEL32(HEAD32, NOSETUP, Q4_1BLK(0, 2, 4, 0, 0, Y8, X0); Q4_1BLK(20, 22, 24, 32, 4, Y9, X7), Q4_1BLK(0, 2, 4, 0, 0, Y8, X0), 40, TAIL32)

// func dotQ5_1AVX2(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $0-52
	KERNEL32(HEAD32, HIBITSCONST, Q5_1BLK(0, 2, 4, 8, 0, 0, Y8, X0); Q5_1BLK(24, 26, 28, 32, 32, 4, Y9, X7), Q5_1BLK(0, 2, 4, 8, 0, 0, Y8, X0), 48, TAIL32)

// func dotQ4_KAVX2(w, q *byte, d *float32, sums *int16, nb int) float32
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-44
	DOTK(NOSETUP, NOHI, Q4KCHUNKS, 144)

// func dotQ5_KAVX2(w, q *byte, d *float32, sums *int16, nb int) float32
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $0-44
	DOTK(BCAST8($0x10101010, Y11, X11), Q5BITS, Q5KCHUNKS, 176)

// func dotQ6_KAVX2(w, q *byte, d *float32, nb int) float32
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-36
	MOVQ   w+0(FP), SI
	MOVQ   q+8(FP), DI
	MOVQ   d+16(FP), DX
	MOVQ   nb+24(FP), CX
	BCAST8($0x0f0f0f0f, Y14, X14)
	BCAST8($0x30303030, Y13, X13)
	BCAST8($0x20202020, Y11, X11)
	VXORPS X8, X8, X8
loop:
	PREFETCH4
	VPXOR Y10, Y10, Y10
	Q6HALF(0, 32, 128, 192, 0, 32, 64, 96)
	Q6HALF(64, 96, 160, 200, 128, 160, 192, 224)
	VEXTRACTI128 $1, Y10, X1
	VPADDD       X1, X10, X10
	VPHADDD      X10, X10, X10
	VPHADDD      X10, X10, X10
	VCVTDQ2PS    X10, X10
	MOVWLZX      208(SI), AX
	VMOVD        AX, X2
	VCVTPH2PS    X2, X2
	VMULSS       (DX), X2, X2
	VMULSS       X2, X10, X10
	VADDSS       X10, X8, X8
	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  loop
	MOVSS X8, ret+32(FP)
	VZEROUPPER
	RET

// func dotF16AVX2(w *byte, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	RUNS32(F16RUN)

// func dotBF16AVX2(w *byte, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	RUNS32(BF16RUN)

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
