//go:build !noasm

#include "textflag.h"
#include "kernels_amd64.h"

// The AVX-512 kernels of the 32-value blocks: two blocks a step in zmm
// registers, block b in the low half, block b+1 in the high half, so
// that the halves of the float accumulator Z8 are the reference's
// accumulators of even and odd blocks (ref.go) and the results are its
// bits. An odd last block goes into the low half alone (masked by K7).
//
// The integer sums of four products start from the activations' sums
// of fours times −8 (Q8_0B rows, at R9) where the weights are offset:
// q−8 for Q4_0, q−16 for Q5_0 and, for Q8_0, w+128 made unsigned by
// flipping its sign bit. Each kernel comes twice: with VPDPBUSD (VNNI),
// and with VPMADDUBSW and VPMADDWD (AVX-512BW alone), where Q8_0 takes
// |w| and x·sign(w) instead.
//
// Registers: SI weights, DI activation values, DX their scales, R8 their
// block sums (Q4_1, Q5_1), R9 their sums of fours, all but SI indexed by
// BX, four times the block's index; CX the blocks; Z14
// bytes 0x0f, Z15 words 1, Z12 VPERMPS's index spreading the pair of
// scales, K1 the high qwords, K2 the words of 128-bit lanes 1 and 3.

// DOTVNNI, DOTBW: Z3 += the sums of four products of the unsigned bytes
// of Z1 by the signed bytes at (DI).
#define DOTVNNI \
	VPDPBUSD (DI)(BX*8), Z1, Z3

#define DOTBW \
	VPMADDUBSW (DI)(BX*8), Z1, Z1; \
	VPMADDWD   Z15, Z1, Z1; \
	VPADDD     Z1, Z3, Z3

// NIBBLES2(o0, o1): Z1 = the 4-bit values of the 16 bytes at o0(SI) and
// at o1(SI), low nibbles first, as bytes.
#define NIBBLES2(o0, o1) \
	VBROADCASTI32X4 o0(SI), Z1; \
	VBROADCASTI32X4 o1(SI), Z2; \
	VPBLENDMQ       Z2, Z1, K1, Z1; \
	VPSRLW          $4, Z1, K2, Z1; \
	VPANDD          Z14, Z1, Z1

// HIBITS2(o0, o1): bytes 16 added to Z1 where the bits of the dwords at
// o0(SI) and o1(SI) are set. Z13 holds bytes 0x10.
#define HIBITS2(o0, o1) \
	KMOVD    o0(SI), K5; \
	KMOVD    o1(SI), K6; \
	KUNPCKDQ K5, K6, K5; \
	VPADDB   Z13, Z1, K5, Z1

// SCALE2(o1): Z5 = d of block b in the low eight lanes, of block b+1 in
// the high ones: f16 at (SI) and o1(SI) times the float32 at (DX), 4(DX).
#define SCALE2(o1) \
	VMOVD     (SI), X5; \
	VPINSRW   $1, o1(SI), X5, X5; \
	VCVTPH2PS X5, X5; \
	VMULPS    (DX)(BX*1), X5, X5; \
	VPERMPS   Z5, Z12, Z5

// SCALEMIN2(o1, K): the same for blocks with a minimum, dwords [d, m] at
// (SI) and o1(SI), Z12 picking lanes 0 and 2; and m·s of each block
// added into lanes 1 and 3 of X7, those K selects.
#define SCALEMIN2(o1, K) \
	VMOVD     (SI), X5; \
	VPINSRD   $1, o1(SI), X5, X5; \
	VCVTPH2PS X5, X5; \
	VMOVQ     (DX)(BX*1), X6; \
	VMOVQ     (R8)(BX*1), X4; \
	VUNPCKLPS X4, X6, X6; \
	VMULPS    X6, X5, X5; \
	VADDPS    X5, X7, K, X7; \
	VPERMPS   Z5, Z12, Z5

// ACCPAIR: Z8 += float32(Z5·float32(Z3)); ACCLOW: the low half alone.
#define ACCPAIR \
	VCVTDQ2PS Z3, Z3; \
	VMULPS    Z5, Z3, Z3; \
	VADDPS    Z3, Z8, Z8

#define ACCLOW \
	VCVTDQ2PS Z3, Z3; \
	VMULPS    Z5, Z3, Z3; \
	VADDPS    Z3, Z8, K7, Z8

// The pair bodies: o1 is the offset of block b+1 from block b (0 for a
// lone last block), then the offsets of its parts.
#define Q8_0VNNI(o1, q1, ACC) \
	VMOVDQU      2(SI), Y1; \
	VINSERTI64X4 $1, q1(SI), Z1, Z1; \
	VPXORD       Z13, Z1, Z1; \
	VMOVDQU32    (R9)(BX*8), Z3; \
	VPSLLD       $4, Z3, Z3; \
	DOTVNNI; \
	SCALE2(o1); \
	ACC

#define Q8_0BW(o1, q1, ACC) \
	VMOVDQU      2(SI), Y1; \
	VINSERTI64X4 $1, q1(SI), Z1, Z1; \
	VPMOVB2M     Z1, K5; \
	VPABSB       Z1, Z1; \
	VMOVDQU8     (DI)(BX*8), Z2; \
	VPSUBB       Z2, Z0, K5, Z2; \
	VPMADDUBSW   Z2, Z1, Z1; \
	VPMADDWD     Z15, Z1, Z3; \
	SCALE2(o1); \
	ACC

#define Q4_0PAIR(DOT, o1, q1, ACC) \
	NIBBLES2(2, q1); \
	VMOVDQU32 (R9)(BX*8), Z3; \
	DOT; \
	SCALE2(o1); \
	ACC

#define Q5_0PAIR(DOT, o1, q1, h1, ACC) \
	NIBBLES2(6, q1); \
	HIBITS2(2, h1); \
	VMOVDQU32 (R9)(BX*8), Z3; \
	VPADDD    Z3, Z3, Z3; \
	DOT; \
	SCALE2(o1); \
	ACC

#define Q4_1PAIR(DOT, o1, q1, KM, ACC) \
	NIBBLES2(4, q1); \
	VPXORD Z3, Z3, Z3; \
	DOT; \
	SCALEMIN2(o1, KM); \
	ACC

#define Q5_1PAIR(DOT, o1, q1, h1, KM, ACC) \
	NIBBLES2(8, q1); \
	HIBITS2(4, h1); \
	VPXORD Z3, Z3, Z3; \
	DOT; \
	SCALEMIN2(o1, KM); \
	ACC

// HEAD512(frame): the arguments (w, q, d, s, bias, nb) and the constants.
#define HEAD512 \
	MOVQ         w+0(FP), SI; \
	MOVQ         q+8(FP), DI; \
	MOVQ         d+16(FP), DX; \
	MOVQ         s+24(FP), R8; \
	MOVQ         bias+32(FP), R9; \
	MOVQ         nb+40(FP), CX; \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z14; \
	MOVL         $0x00010001, AX; \
	VPBROADCASTD AX, Z15; \
	PAIRMASKS; \
	VMOVDQU32    spread01<>(SB), Z12; \
	VPXORD       Z0, Z0, Z0; \
	VPXORD       Z8, Z8, Z8; \
	VXORPS       X7, X7, X7

// RESULT: X8 = reduce8 of the two halves' sum.
#define RESULT \
	VEXTRACTF64X4 $1, Z8, Y9; \
	VADDPS        Y9, Y8, Y8; \
	REDUCE8(Y8, X8, X1)

// RESULTMIN: RESULT plus the sum of X7's lanes 1 and 3.
#define RESULTMIN \
	RESULT; \
	VMOVSHDUP X7, X7; \
	VMOVHLPS  X7, X7, X1; \
	VADDSS    X1, X7, X7; \
	VADDSS    X7, X8, X8

// SET13(v): every dword of Z13 is v.
#define SET13(v) \
	MOVL         v, AX; \
	VPBROADCASTD AX, Z13

// MINCONST: K3 and K4 pick lanes 1 and 3, and lane 1 alone; Z12 spreads
// lanes 0 and 2.
#define MINCONST \
	MOVL      $0x0a, AX; \
	KMOVW     AX, K3; \
	MOVL      $0x02, AX; \
	KMOVW     AX, K4; \
	VMOVDQU32 spread02<>(SB), Z12

SPREAD(spread01, $0x0000000100000001)

SPREAD(spread02, $0x0000000200000002)


// ZERO2: the accumulators Z8 and Z9 of RUNS32.
#define ZERO2 \
	VXORPS Z8, Z8, Z8; \
	VXORPS Z9, Z9, Z9

// SUM2: reduce32 of Z8 and Z9 into X8.
#define SUM2 \
	VADDPS Z9, Z8, Z8; \
	RESULT

// RUNS32(RUN): the runs of 32 values, lanes 0–15 in Z8 and 16–31 in Z9,
// then reduce32 of them into X8.
#define RUNS32(RUN) \
	RUNS(ZERO2, RUN(0, 0, Z0, Z8); RUN(32, 64, Z1, Z9), SUM2)

// func dotQ8_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ8_0VNNI(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, SET13($0x80808080), Q8_0VNNI(34, 36, ACCPAIR), Q8_0VNNI(0, 2, ACCLOW), 68, RESULT)

// func dotQ8_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ8_0BW(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, NOSETUP, Q8_0BW(34, 36, ACCPAIR), Q8_0BW(0, 2, ACCLOW), 68, RESULT)

// func dotQ4_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_0VNNI(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, NOSETUP, Q4_0PAIR(DOTVNNI, 18, 20, ACCPAIR), Q4_0PAIR(DOTVNNI, 0, 2, ACCLOW), 36, RESULT)

// func dotQ4_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_0BW(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, NOSETUP, Q4_0PAIR(DOTBW, 18, 20, ACCPAIR), Q4_0PAIR(DOTBW, 0, 2, ACCLOW), 36, RESULT)

// func dotQ5_0VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_0VNNI(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, SET13($0x10101010), Q5_0PAIR(DOTVNNI, 22, 28, 24, ACCPAIR), Q5_0PAIR(DOTVNNI, 0, 6, 2, ACCLOW), 44, RESULT)

// func dotQ5_0BW(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_0BW(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, SET13($0x10101010), Q5_0PAIR(DOTBW, 22, 28, 24, ACCPAIR), Q5_0PAIR(DOTBW, 0, 6, 2, ACCLOW), 44, RESULT)

// func dotQ4_1VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_1VNNI(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, MINCONST, Q4_1PAIR(DOTVNNI, 20, 24, K3, ACCPAIR), Q4_1PAIR(DOTVNNI, 0, 4, K4, ACCLOW), 40, RESULTMIN)

// func dotQ4_1BW(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ4_1BW(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, MINCONST, Q4_1PAIR(DOTBW, 20, 24, K3, ACCPAIR), Q4_1PAIR(DOTBW, 0, 4, K4, ACCLOW), 40, RESULTMIN)

// func dotQ5_1VNNI(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_1VNNI(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, SET13($0x10101010); MINCONST, Q5_1PAIR(DOTVNNI, 24, 32, 28, K3, ACCPAIR), Q5_1PAIR(DOTVNNI, 0, 8, 4, K4, ACCLOW), 48, RESULTMIN)

// func dotQ5_1BW(w, q *byte, d, s *float32, bias *int32, nb int) float32
TEXT ·dotQ5_1BW(SB), NOSPLIT, $0-52
	KERNEL32(HEAD512, SET13($0x10101010); MINCONST, Q5_1PAIR(DOTBW, 24, 32, 28, K3, ACCPAIR), Q5_1PAIR(DOTBW, 0, 8, 4, K4, ACCLOW), 48, RESULTMIN)

// func dotF16AVX512(w *byte, x *float32, n int) float32
TEXT ·dotF16AVX512(SB), NOSPLIT, $0-28
	RUNS32(F16RUN)

// func dotBF16AVX512(w *byte, x *float32, n int) float32
TEXT ·dotBF16AVX512(SB), NOSPLIT, $0-28
	RUNS32(BF16RUN)
