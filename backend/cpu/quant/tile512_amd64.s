//go:build !noasm

#include "textflag.h"
#include "kernels_amd64.h"

// The AVX-512 tile kernels: four activation rows by four weight rows of
// Q4_0 and Q8_0 blocks, four by two of F16 and BF16. Every output keeps
// the accumulators of its dot kernel (dot512_amd64.s) and takes its
// steps in its order; a weight block is unpacked once for the four
// activation rows, an activation row's scales spread once for the four
// weight rows.
//
// Registers of the 32-value blocks: BX, SI, R13, R14 the four weight
// rows; DI the activation values, R9 their sums of fours, DX their
// scales, row i's at i·aRow past (R11 = aRow, R12 = 3·aRow); CX the
// pairs of blocks left. Z0–Z15 the accumulators, output (i, j) in
// Z(4i+j), block b in the low half and b+1 in the high one as in the dot
// kernels; Z16–Z19 the weight rows' values, Z20–Z23 their scales, K3–K6
// their signs (Q8_0 without VNNI); Z24 the activation row's scales; Z25
// its integer sums with one weight row; Z26 the product of their scales;
// Z27 bytes 0x0f; Z28 VPERMPS's index spreading a pair; Z29 scratch;
// Z30 the activation row's sums of fours (times −8 for Q4_0, −128 for
// Q8_0; 0 where there are none); Z31 words 1 or bytes 0x80. K1, K2, K7
// as in dot512_amd64.s.

// WSCALE(o1, R, ZD): ZD = the f16 scales at (R) and o1(R), the first in
// the low eight lanes, the second in the high eight.
#define WSCALE(o1, R, ZD) \
	VMOVD     (R), X29; \
	VPINSRW   $1, o1(R), X29, X29; \
	VCVTPH2PS X29, X29; \
	VPERMPS   Z29, Z28, ZD

// The weights: a pair of blocks at (R), the second o1 bytes on and its
// values q1 bytes on, as bytes in ZW, their scales in ZD.
#define W4_0(q1, o1, R, ZW, ZD, KW) \
	VBROADCASTI32X4 2(R), ZW; \
	VBROADCASTI32X4 q1(R), Z29; \
	VPBLENDMQ       Z29, ZW, K1, ZW; \
	VPSRLW          $4, ZW, K2, ZW; \
	VPANDD          Z27, ZW, ZW; \
	WSCALE(o1, R, ZD)

// W8_0VNNI: w+128, unsigned (the sign bit flipped).
#define W8_0VNNI(q1, o1, R, ZW, ZD, KW) \
	VBROADCASTI64X4 2(R), ZW; \
	VINSERTI64X4    $1, q1(R), ZW, ZW; \
	VPXORD          Z31, ZW, ZW; \
	WSCALE(o1, R, ZD)

// W8_0BW: |w|, and the signs in KW.
#define W8_0BW(q1, o1, R, ZW, ZD, KW) \
	VBROADCASTI64X4 2(R), ZW; \
	VINSERTI64X4    $1, q1(R), ZW, ZW; \
	VPMOVB2M        ZW, KW; \
	VPABSB          ZW, ZW; \
	WSCALE(o1, R, ZD)

// The activation row's sums of fours at B, into Z30.
#define BIAS4_0(B) \
	VMOVDQU32 B, Z30

#define BIAS8_0(B) \
	VMOVDQU32 B, Z30; \
	VPSLLD    $4, Z30, Z30

#define NOBIAS(B)

// The integer sums Z25 of the weights ZW by the activation values at Q.
#define PVNNI(Q, ZW, KW) \
	VMOVDQA32 Z30, Z25; \
	VPDPBUSD  Q, ZW, Z25

#define PBW(Q, ZW, KW) \
	VPMADDUBSW Q, ZW, Z29; \
	VPMADDWD   Z31, Z29, Z29; \
	VPADDD     Z29, Z30, Z25

// P8_0BW: |w| by x·sign(w); Z30 is 0.
#define P8_0BW(Q, ZW, KW) \
	VMOVDQU8   Q, Z29; \
	VPSUBB     Z29, Z30, KW, Z29; \
	VPMADDUBSW Z29, ZW, Z29; \
	VPMADDWD   Z31, Z29, Z25

// SCALED(ZD, A, ADD): A += float32(d·float32(Z25)), d = ZD·Z24; ADD
// adds both halves (PAIRADD) or the low one (LOWADD).
#define SCALED(ZD, A, ADD) \
	VMULPS    ZD, Z24, Z26; \
	VCVTDQ2PS Z25, Z25; \
	VMULPS    Z26, Z25, Z25; \
	ADD(Z25, A)

#define PAIRADD(S, A) \
	VADDPS S, A, A

#define LOWADD(S, A) \
	VADDPS S, A, K7, A

// ROW(P, BIAS, Q, B, D, A0, A1, A2, A3, ADD): one activation row, its
// values at Q, sums of fours at B and scales at D, by the four weight
// rows, into A0–A3.
#define ROW(P, BIAS, Q, B, D, A0, A1, A2, A3, ADD) \
	VPERMPS D, Z28, Z24; \
	BIAS(B); \
	P(Q, Z16, K3); \
	SCALED(Z20, A0, ADD); \
	P(Q, Z17, K4); \
	SCALED(Z21, A1, ADD); \
	P(Q, Z18, K5); \
	SCALED(Z22, A2, ADD); \
	P(Q, Z19, K6); \
	SCALED(Z23, A3, ADD)

// STEP4(W, P, BIAS, q1, o1, ADD): a pair of blocks (or, with ADD LOWADD,
// a last block) of the four weight rows by the four activation rows.
#define STEP4(W, P, BIAS, q1, o1, ADD) \
	W(q1, o1, BX, Z16, Z20, K3); \
	W(q1, o1, SI, Z17, Z21, K4); \
	W(q1, o1, R13, Z18, Z22, K5); \
	W(q1, o1, R14, Z19, Z23, K6); \
	ROW(P, BIAS, (DI), (R9), (DX), Z0, Z1, Z2, Z3, ADD); \
	ROW(P, BIAS, (DI)(R11*1), (R9)(R11*1), (DX)(R11*1), Z4, Z5, Z6, Z7, ADD); \
	ROW(P, BIAS, (DI)(R11*2), (R9)(R11*2), (DX)(R11*2), Z8, Z9, Z10, Z11, ADD); \
	ROW(P, BIAS, (DI)(R12*1), (R9)(R12*1), (DX)(R12*1), Z12, Z13, Z14, Z15, ADD)

// NEXT4(size): the four weight rows past a pair of blocks.
#define NEXT4(size) \
	ADDQ $size, BX; \
	ADDQ $size, SI; \
	ADDQ $size, R13; \
	ADDQ $size, R14

// REDUCE(Z, Y, X): X's lane 0 = reduce8 of the sum of Z's halves, as
// RESULT in dot512_amd64.s.
#define REDUCE(Z, Y, X) \
	VEXTRACTF64X4 $1, Z, Y29; \
	VADDPS        Y29, Y, Y; \
	VEXTRACTF32X4 $1, Y, X29; \
	VADDPS        X29, X, X; \
	VMOVHLPS      X, X, X29; \
	VADDPS        X29, X, X; \
	VMOVSHDUP     X, X29; \
	VADDSS        X29, X, X

// STORE4(Z0, Z1, Z2, Z3, Y0, …, X0, …): the four outputs of a row of
// the tile, reduced, to (R8); R8 on to the next row.
#define STORE4(Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, X0, X1, X2, X3) \
	REDUCE(Z0, Y0, X0); \
	VMOVSS X0, (R8); \
	REDUCE(Z1, Y1, X1); \
	VMOVSS X1, 4(R8); \
	REDUCE(Z2, Y2, X2); \
	VMOVSS X2, 8(R8); \
	REDUCE(Z3, Y3, X3); \
	VMOVSS X3, 12(R8); \
	ADDQ   R10, R8

// TILE32(SETUP, W, P, BIAS, q1, o1, size): the kernel; SETUP sets Z31
// and Z30, q1 and o1 are as for W, size is the bytes of two blocks.
#define TILE32(SETUP, W, P, BIAS, q1, o1, size) \
	MOVQ         w+16(FP), BX; \
	MOVQ         wRow+24(FP), AX; \
	LEAQ         (BX)(AX*1), SI; \
	LEAQ         (SI)(AX*1), R13; \
	LEAQ         (R13)(AX*1), R14; \
	TILEROWS(BIASR9); \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z27; \
	PAIRMASKS; \
	VMOVDQU32    tileSpread<>(SB), Z28; \
	SETUP; \
	ZERO16; \
	TILEPAIRS(STEP4(W, P, BIAS, q1, o1, PAIRADD), NEXT4(size), STEP4(W, P, BIAS, 2, 0, LOWADD)); \
	YROWS; \
	STORE4(Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, X0, X1, X2, X3); \
	STORE4(Z4, Z5, Z6, Z7, Y4, Y5, Y6, Y7, X4, X5, X6, X7); \
	STORE4(Z8, Z9, Z10, Z11, Y8, Y9, Y10, Y11, X8, X9, X10, X11); \
	STORE4(Z12, Z13, Z14, Z15, Y12, Y13, Y14, Y15, X12, X13, X14, X15); \
	VZEROUPPER; \
	RET

// tileSpread: VPERMPS's index taking lane 0 into the low eight lanes and
// lane 1 into the high eight.
SPREAD(tileSpread, $0x0000000100000001)

// The constants: Z31 words 1 (VPMADDWD) or bytes 0x80, Z30 zero where
// the rows have no sums of fours.
#define ONES31 \
	MOVL         $0x00010001, AX; \
	VPBROADCASTD AX, Z31

#define SIGN31 \
	MOVL         $0x80808080, AX; \
	VPBROADCASTD AX, Z31

#define ONES31ZERO30 \
	ONES31; \
	VPXORD Z30, Z30, Z30

// The F16 and BF16 tiles: SI and BX the two weight rows, DI the
// activation rows (R11 = xRow, R12 = 3·xRow), CX the runs of 32 values
// left. Output (i, j) keeps its lanes 0–15 in Z(4i+2j) and 16–31 in
// Z(4i+2j+1), as the dot kernels' Z8 and Z9; Z16–Z19 the weight rows'
// runs, widened; Z20–Z23 the products.

// WIDENF16(o, R, Z), WIDENBF16: Z = the 16 values at o(R) as float32.
#define WIDENF16(o, R, Z) \
	VCVTPH2PS o(R), Z

#define WIDENBF16(o, R, Z) \
	VPMOVZXWD o(R), Z; \
	VPSLLD    $16, Z, Z

// FROW(X0, X1, A0, A1, A2, A3): the run of the activation row at X0 (its
// second half at X1) by the two weight rows' runs.
#define FROW(X0, X1, A0, A1, A2, A3) \
	VMULPS X0, Z16, Z20; \
	VADDPS Z20, A0, A0; \
	VMULPS X1, Z17, Z21; \
	VADDPS Z21, A1, A1; \
	VMULPS X0, Z18, Z22; \
	VADDPS Z22, A2, A2; \
	VMULPS X1, Z19, Z23; \
	VADDPS Z23, A3, A3

// FSTORE(o, ZL, ZH, YL, XL): an output's 32 lanes reduced as reduce32,
// as RUNS32 in dot512_amd64.s, to o(R8).
#define FSTORE(o, ZL, ZH, YL, XL) \
	VADDPS ZH, ZL, ZL; \
	REDUCE(ZL, YL, XL); \
	VMOVSS XL, o(R8)

#define TILEF(WIDEN) \
	MOVQ   w+16(FP), SI; \
	MOVQ   wRow+24(FP), BX; \
	ADDQ   SI, BX; \
	MOVQ   x+32(FP), DI; \
	MOVQ   xRow+40(FP), R11; \
	LEAQ   (R11)(R11*2), R12; \
	MOVQ   n+48(FP), CX; \
	ZERO16; \
	TESTQ  CX, CX; \
	JEQ    done; \
loop:; \
	WIDEN(0, SI, Z16); \
	WIDEN(32, SI, Z17); \
	WIDEN(0, BX, Z18); \
	WIDEN(32, BX, Z19); \
	FROW((DI), 64(DI), Z0, Z1, Z2, Z3); \
	FROW((DI)(R11*1), 64(DI)(R11*1), Z4, Z5, Z6, Z7); \
	FROW((DI)(R11*2), 64(DI)(R11*2), Z8, Z9, Z10, Z11); \
	FROW((DI)(R12*1), 64(DI)(R12*1), Z12, Z13, Z14, Z15); \
	ADDQ   $64, SI; \
	ADDQ   $64, BX; \
	ADDQ   $128, DI; \
	DECQ   CX; \
	JNZ    loop; \
done:; \
	YROWS; \
	FSTORE(0, Z0, Z1, Y0, X0); \
	FSTORE(4, Z2, Z3, Y2, X2); \
	ADDQ   R10, R8; \
	FSTORE(0, Z4, Z5, Y4, X4); \
	FSTORE(4, Z6, Z7, Y6, X6); \
	ADDQ   R10, R8; \
	FSTORE(0, Z8, Z9, Y8, X8); \
	FSTORE(4, Z10, Z11, Y10, X10); \
	ADDQ   R10, R8; \
	FSTORE(0, Z12, Z13, Y12, X12); \
	FSTORE(4, Z14, Z15, Y14, X14); \
	VZEROUPPER; \
	RET

// func tileQ4_0VNNI(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ4_0VNNI(SB), NOSPLIT, $0-72
	TILE32(ONES31, W4_0, PVNNI, BIAS4_0, 20, 18, 36)

// func tileQ4_0BW(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ4_0BW(SB), NOSPLIT, $0-72
	TILE32(ONES31, W4_0, PBW, BIAS4_0, 20, 18, 36)

// func tileQ8_0VNNI(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ8_0VNNI(SB), NOSPLIT, $0-72
	TILE32(SIGN31, W8_0VNNI, PVNNI, BIAS8_0, 36, 34, 68)

// func tileQ8_0BW(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ8_0BW(SB), NOSPLIT, $0-72
	TILE32(ONES31ZERO30, W8_0BW, P8_0BW, NOBIAS, 36, 34, 68)

// func tileF16AVX512(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)
TEXT ·tileF16AVX512(SB), NOSPLIT, $0-56
	TILEF(WIDENF16)

// func tileBF16AVX512(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)
TEXT ·tileBF16AVX512(SB), NOSPLIT, $0-56
	TILEF(WIDENBF16)
