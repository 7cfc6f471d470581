//go:build !noasm

#include "textflag.h"
#include "kernels_amd64.h"

// The AVX2 tile kernels: four activation rows by one weight row of Q4_0
// and Q8_0 blocks, three by one of F16 and BF16. Every output keeps the
// accumulators of its dot kernel (dot_amd64.s) and takes its steps in
// its order; a weight block is unpacked once for all the rows.
//
// Registers of the 32-value blocks: SI the weight row; DI the activation
// values, R9 their sums of fours, DX their scales, row i's at i·aRow past
// (R11 = aRow, R12 = 3·aRow); CX the pairs of blocks left. Y0–Y7 the
// accumulators, row i's of even blocks in Y(2i), of odd ones in Y(2i+1);
// Y8 the weights' values, Y9 their magnitudes (Q8_0), Y10 their scale,
// Y11 the product of the scales, Y12 the integer sums, Y14 bytes 0x0f,
// Y15 words 1.

// The weights: the block at wo(SI), its values at qo(SI).
#define A4_0(wo, qo) \
	VBROADCASTI128 qo(SI), Y8; \
	VPSRLW         $4, Y8, Y9; \
	VPBLENDD       $0xf0, Y9, Y8, Y8; \
	VPAND          Y14, Y8, Y8; \
	VPBROADCASTW   wo(SI), X10; \
	VCVTPH2PS      X10, Y10

#define A8_0(wo, qo) \
	VMOVDQU      qo(SI), Y8; \
	VPABSB       Y8, Y9; \
	VPBROADCASTW wo(SI), X10; \
	VCVTPH2PS    X10, Y10

// The integer sums Y12 of the weights by the activation values at Q (and
// the sums of fours at B).
#define PA4_0(Q, B) \
	VPMADDUBSW Q, Y8, Y12; \
	VPMADDWD   Y15, Y12, Y12; \
	VPADDD     B, Y12, Y12

#define PA8_0(Q, B) \
	VMOVDQU    Q, Y12; \
	VPSIGNB    Y8, Y12, Y12; \
	VPMADDUBSW Y12, Y9, Y12; \
	VPMADDWD   Y15, Y12, Y12

// ROWA(P, Q, B, D, A): A += float32(d·float32(sums)), d the weights'
// scale by the activation row's at D.
#define ROWA(P, Q, B, D, A) \
	VBROADCASTSS D, Y11; \
	VMULPS       Y11, Y10, Y11; \
	P(Q, B); \
	VCVTDQ2PS    Y12, Y12; \
	VMULPS       Y11, Y12, Y12; \
	VADDPS       Y12, A, A

// BLOCKA(W, P, wo, qo, xo, do, A0, A1, A2, A3): one block of the weight
// row by the four activation rows.
#define BLOCKA(W, P, wo, qo, xo, do, A0, A1, A2, A3) \
	W(wo, qo); \
	ROWA(P, xo(DI), xo(R9), do(DX), A0); \
	ROWA(P, xo(DI)(R11*1), xo(R9)(R11*1), do(DX)(R11*1), A1); \
	ROWA(P, xo(DI)(R11*2), xo(R9)(R11*2), do(DX)(R11*2), A2); \
	ROWA(P, xo(DI)(R12*1), xo(R9)(R12*1), do(DX)(R12*1), A3)

// STOREA(YE, YO, XE): a row's output, reduce8 of the sum of its even and
// odd accumulators, to (R8); R8 on to the next row.
#define STOREA(YE, YO, XE) \
	VADDPS YO, YE, YE; \
	REDUCE8(YE, XE, X9); \
	VMOVSS XE, (R8); \
	ADDQ   R10, R8

// ZEROY8: Y0–Y7 are zero.
#define ZEROY8 \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// NEXTA(size): the weight row past a pair of blocks.
#define NEXTA(size) ADDQ $size, SI

// TILEA(W, P, qo0, wo1, qo1, size): the kernel; qo0 is the offset of a
// block's values, wo1 and qo1 those of the second block of a pair and
// its values, size the bytes of two blocks.
#define TILEA(W, P, qo0, wo1, qo1, size) \
	MOVQ         w+16(FP), SI; \
	TILEROWS(BIASR9); \
	BCAST8($0x00010001, Y15, X15); \
	BCAST8($0x0f0f0f0f, Y14, X14); \
	ZEROY8; \
	TILEPAIRS(BLOCKA(W, P, 0, qo0, 0, 0, Y0, Y2, Y4, Y6); BLOCKA(W, P, wo1, qo1, 32, 4, Y1, Y3, Y5, Y7), NEXTA(size), BLOCKA(W, P, 0, qo0, 0, 0, Y0, Y2, Y4, Y6)); \
	YROWS; \
	STOREA(Y0, Y1, X0); \
	STOREA(Y2, Y3, X2); \
	STOREA(Y4, Y5, X4); \
	STOREA(Y6, Y7, X6); \
	VZEROUPPER; \
	RET

// The F16 and BF16 tiles: SI the weight row, DI the activation rows (R11
// = xRow), CX the runs of 32 values left. Row i's lanes 8c to 8c+7 in
// Y(4i+c), as the dot kernels' Y8–Y11; Y12 eight weights widened, Y13
// their products.

#define WIDENAF16(o) \
	VCVTPH2PS o(SI), Y12

#define WIDENABF16(o) \
	VPMOVZXWD o(SI), Y12; \
	VPSLLD    $16, Y12, Y12

// FRUNA(WIDEN, o, xo, A0, A1, A2): eight values of the weight row, at
// o(SI), by those of the three activation rows at xo(DI) on.
#define FRUNA(WIDEN, o, xo, A0, A1, A2) \
	WIDEN(o); \
	VMULPS xo(DI), Y12, Y13; \
	VADDPS Y13, A0, A0; \
	VMULPS xo(DI)(R11*1), Y12, Y13; \
	VADDPS Y13, A1, A1; \
	VMULPS xo(DI)(R11*2), Y12, Y13; \
	VADDPS Y13, A2, A2

// FSTOREA(A0, A1, A2, A3, X0): a row's output, reduce32 of its lanes as
// REDUCE32 in dot_amd64.s, to (R8); R8 on to the next row.
#define FSTOREA(A0, A1, A2, A3, X0) \
	VADDPS A2, A0, A0; \
	VADDPS A3, A1, A1; \
	VADDPS A1, A0, A0; \
	REDUCE8(A0, X0, X12); \
	VMOVSS X0, (R8); \
	ADDQ   R10, R8

#define TILEFA(WIDEN) \
	MOVQ   w+16(FP), SI; \
	MOVQ   x+32(FP), DI; \
	MOVQ   xRow+40(FP), R11; \
	MOVQ   n+48(FP), CX; \
	ZEROY8; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	TESTQ  CX, CX; \
	JEQ    done; \
loop:; \
	FRUNA(WIDEN, 0, 0, Y0, Y4, Y8); \
	FRUNA(WIDEN, 16, 32, Y1, Y5, Y9); \
	FRUNA(WIDEN, 32, 64, Y2, Y6, Y10); \
	FRUNA(WIDEN, 48, 96, Y3, Y7, Y11); \
	ADDQ   $64, SI; \
	ADDQ   $128, DI; \
	DECQ   CX; \
	JNZ    loop; \
done:; \
	YROWS; \
	FSTOREA(Y0, Y1, Y2, Y3, X0); \
	FSTOREA(Y4, Y5, Y6, Y7, X4); \
	FSTOREA(Y8, Y9, Y10, Y11, X8); \
	VZEROUPPER; \
	RET

// The Q6_K tile: four activation rows by one weight row. SI the weight
// row, DI the activation values and DX their scales (row i's at i·aRow
// past: R11 = aRow, R12 = 3·aRow), CX the blocks left. Y0–Y3 each row's
// integer sums of a block, X4–X7 each row's result; Y8 32 six-bit
// values, Y9 their scales as words, Y10 the block half's high bits, Y11
// bytes 32, Y12 the half's scales as words, Y15 bytes 0x0f. The steps
// are dotQ6_KAVX2's (dot_amd64.s).

// OUT4: the four rows' results X4–X7 to y, and the return.
#define OUT4 \
	YROWS; \
	VMOVSS X4, (R8); \
	ADDQ   R10, R8; \
	VMOVSS X5, (R8); \
	ADDQ   R10, R8; \
	VMOVSS X6, (R8); \
	ADDQ   R10, R8; \
	VMOVSS X7, (R8); \
	VZEROUPPER; \
	RET

// Q6ROW(X, A): A += the products of Y8 less 32 by the 32 values at X,
// scaled by Y9.
#define Q6ROW(X, A) \
	VPMADDUBSW X, Y8, Y13; \
	VPMADDUBSW X, Y11, Y14; \
	VPSUBW     Y14, Y13, Y13; \
	VPMADDWD   Y9, Y13, Y13; \
	VPADDD     Y13, A, A

// Q6CHUNK(VALUES, xo, so): 32 values of the block, VALUES putting them
// in Y8, by the activation rows' at xo(DI), scaled as pairBcast+so picks.
#define Q6CHUNK(VALUES, xo, so) \
	VALUES; \
	VPSHUFB tilePairBcast<>+so(SB), Y12, Y9; \
	Q6ROW(xo(DI), Y0); \
	Q6ROW(xo(DI)(R11*1), Y1); \
	Q6ROW(xo(DI)(R11*2), Y2); \
	Q6ROW(xo(DI)(R12*1), Y3)

// The four runs of 32 values of a half: low bits from the 32 bytes at
// o(SI) (low or high nibbles), high bits from Y10 (bits 0–1, 2–3, 4–5,
// 6–7).
#define Q6V0(o) \
	VMOVDQU o(SI), Y8; \
	VPAND   Y15, Y8, Y8; \
	VPSLLW  $4, Y10, Y13; \
	VPAND   tileMask30<>(SB), Y13, Y13; \
	VPOR    Y13, Y8, Y8

#define Q6V1(o) \
	VMOVDQU o(SI), Y8; \
	VPAND   Y15, Y8, Y8; \
	VPSLLW  $2, Y10, Y13; \
	VPAND   tileMask30<>(SB), Y13, Y13; \
	VPOR    Y13, Y8, Y8

#define Q6V2(o) \
	VMOVDQU o(SI), Y8; \
	VPSRLW  $4, Y8, Y8; \
	VPAND   Y15, Y8, Y8; \
	VPAND   tileMask30<>(SB), Y10, Y13; \
	VPOR    Y13, Y8, Y8

#define Q6V3(o) \
	VMOVDQU o(SI), Y8; \
	VPSRLW  $4, Y8, Y8; \
	VPAND   Y15, Y8, Y8; \
	VPSRLW  $2, Y10, Y13; \
	VPAND   tileMask30<>(SB), Y13, Y13; \
	VPOR    Y13, Y8, Y8

// Q6HALFT(ql, ql2, qh, sc, xo): a half of the block (128 values).
#define Q6HALFT(ql, ql2, qh, sc, xo) \
	VPMOVSXBW   sc(SI), X12; \
	VINSERTI128 $1, X12, Y12, Y12; \
	VMOVDQU     qh(SI), Y10; \
	Q6CHUNK(Q6V0(ql), xo, 0); \
	Q6CHUNK(Q6V1(ql2), xo+32, 32); \
	Q6CHUNK(Q6V2(ql), xo+64, 64); \
	Q6CHUNK(Q6V3(ql2), xo+96, 96)

// Q6FIN(A, XA, R, D): R += float32(d·float32(Σ A)), d the block's scale
// (X9) by the row's at D.
#define Q6FIN(A, XA, R, D) \
	VEXTRACTI128 $1, A, X13; \
	VPADDD       X13, XA, XA; \
	VPHADDD      XA, XA, XA; \
	VPHADDD      XA, XA, XA; \
	VCVTDQ2PS    XA, XA; \
	VMULSS       D, X9, X13; \
	VMULSS       X13, XA, XA; \
	VADDSS       XA, R, R

// tilePairBcast and tileMask30: PAIRBCAST, bytes 0x30.
PAIRBCAST(tilePairBcast)
BYTES32(tileMask30, $0x3030303030303030)

// The Q4_K and Q5_K tiles: four activation rows by one weight row. SI
// the weight row, DI the activation values, DX their scales, R8 their
// sums of 32 (row i's at i·aRow past: R11 = aRow, R12 = 3·aRow), CX the
// blocks left. Y0–Y3 each row's integer sums of a block, X4–X7 each
// row's result; Y8 and Y9 the low and high nibbles of 32 bytes, Y10 and
// Y11 their scales as words, Y12 the block's scales as words, then its
// d and dmin; Y15 its minimums as words; Y14 bytes 0x0f. The steps are
// dotQ4_KAVX2's and dotQ5_KAVX2's (dot_amd64.s).

// SUMSR8: R8 = the rows' sums of 32.
#define SUMSR8 MOVQ sums+48(FP), R8

// KROW(X, X2, A): A += the low nibbles Y8 by the 32 values at X, scaled
// by Y10, and the high ones Y9 by those at X2, scaled by Y11.
#define KROW(X, X2, A) \
	VPMADDUBSW X, Y8, Y13; \
	VPMADDWD   Y10, Y13, Y13; \
	VPADDD     Y13, A, A; \
	VPMADDUBSW X2, Y9, Y13; \
	VPMADDWD   Y11, Y13, Y13; \
	VPADDD     Y13, A, A

// KCHUNKT(qo, xo, xo2, s0, s1, HI): 64 values, from the 32 bytes at
// qo(SI), by the activation rows' at xo(DI) and xo2(DI), as KCHUNK.
#define KCHUNKT(qo, xo, xo2, s0, s1, HI) \
	VMOVDQU qo(SI), Y8; \
	VPSRLW  $4, Y8, Y9; \
	VPAND   Y14, Y8, Y8; \
	VPAND   Y14, Y9, Y9; \
	HI; \
	VPSHUFB tileWordBcast<>+s0(SB), Y12, Y10; \
	VPSHUFB tileWordBcast<>+s1(SB), Y12, Y11; \
	KROW(xo(DI), xo2(DI), Y0); \
	KROW(xo(DI)(R11*1), xo2(DI)(R11*1), Y1); \
	KROW(xo(DI)(R11*2), xo2(DI)(R11*2), Y2); \
	KROW(xo(DI)(R12*1), xo2(DI)(R12*1), Y3)

// Q5HIT(LO, HI): the fifth bits of a Q5_K chunk from the 32 bytes at
// 16(SI), moved to bit 4 by LO for Y8 and by HI for Y9.
#define Q5HIT(LO, HI) \
	VMOVDQU 16(SI), Y13; \
	LO; \
	VPAND   tileMask10<>(SB), Y13, Y13; \
	VPOR    Y13, Y8, Y8; \
	VMOVDQU 16(SI), Y13; \
	HI; \
	VPAND   tileMask10<>(SB), Y13, Y13; \
	VPOR    Y13, Y9, Y9

#define TSL4 VPSLLW $4, Y13, Y13
#define TSL3 VPSLLW $3, Y13, Y13
#define TSL2 VPSLLW $2, Y13, Y13
#define TSL1 VPSLLW $1, Y13, Y13
#define TS0
#define TSR1 VPSRLW $1, Y13, Y13
#define TSR2 VPSRLW $2, Y13, Y13
#define TSR3 VPSRLW $3, Y13, Y13

// KFIN(A, XA, R, D, S): R += float32(d·float32(isum)) − float32(dmin·
// float32(msum)), isum the dwords of A, msum the minimums (X15) by the
// row's sums at S, d and dmin X12 by the row's scale at D, as KFINISH.
#define KFIN(A, XA, R, D, S) \
	VPMADDWD     S, X15, X13; \
	VEXTRACTI128 $1, A, X10; \
	VPADDD       X10, XA, XA; \
	VPHADDD      X13, XA, XA; \
	VPHADDD      XA, XA, XA; \
	VCVTDQ2PS    XA, XA; \
	VBROADCASTSS D, X11; \
	VMULPS       X11, X12, X11; \
	VMULPS       X11, XA, XA; \
	VMOVSHDUP    XA, X10; \
	VSUBSS       X10, XA, XA; \
	VADDSS       XA, R, R

// TILEK(CHUNKS, size): the kernel, CHUNKS the four chunks of a block of
// size bytes.
#define TILEK(CHUNKS, size) \
	MOVQ         w+16(FP), SI; \
	TILEROWS(SUMSR8); \
	BCAST8($0x0f0f0f0f, Y14, X14); \
	VXORPS       X4, X4, X4; \
	VXORPS       X5, X5, X5; \
	VXORPS       X6, X6, X6; \
	VXORPS       X7, X7, X7; \
loop:; \
	KSCALES(R13); \
	VMOVQ        AX, X12; \
	VPMOVZXBW    X12, X12; \
	VINSERTI128  $1, X12, Y12, Y12; \
	VMOVQ        BX, X15; \
	VPMOVZXBW    X15, X15; \
	VPXOR        Y0, Y0, Y0; \
	VPXOR        Y1, Y1, Y1; \
	VPXOR        Y2, Y2, Y2; \
	VPXOR        Y3, Y3, Y3; \
	CHUNKS; \
	VMOVD        (SI), X12; \
	VCVTPH2PS    X12, X12; \
	KFIN(Y0, X0, X4, (DX), (R8)); \
	KFIN(Y1, X1, X5, (DX)(R11*1), (R8)(R11*1)); \
	KFIN(Y2, X2, X6, (DX)(R11*2), (R8)(R11*2)); \
	KFIN(Y3, X3, X7, (DX)(R12*1), (R8)(R12*1)); \
	KNEXT(size); \
	OUT4

#define Q4KCHUNKS KCHUNKS(KCHUNKT, 16, TS0, TS0, TS0, TS0)
#define Q5KCHUNKS KCHUNKS(KCHUNKT, 48, Q5HIT(TSL4, TSL3), Q5HIT(TSL2, TSL1), Q5HIT(TS0, TSR1), Q5HIT(TSR2, TSR3))

// tileWordBcast and tileMask10: WORDBCAST, bytes 0x10.
WORDBCAST(tileWordBcast)
BYTES32(tileMask10, $0x1010101010101010)

// func tileQ4_0AVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ4_0AVX2(SB), NOSPLIT, $0-72
	TILEA(A4_0, PA4_0, 2, 18, 20, 36)

// func tileQ8_0AVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, bias *int32, aRow int, nb int)
TEXT ·tileQ8_0AVX2(SB), NOSPLIT, $0-72
	TILEA(A8_0, PA8_0, 2, 34, 36, 68)

// func tileF16AVX2(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)
TEXT ·tileF16AVX2(SB), NOSPLIT, $0-56
	TILEFA(WIDENAF16)

// func tileBF16AVX2(y *float32, ldy int, w *byte, wRow int, x *byte, xRow int, n int)
TEXT ·tileBF16AVX2(SB), NOSPLIT, $0-56
	TILEFA(WIDENABF16)

// func tileQ6_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)
TEXT ·tileQ6_KAVX2(SB), NOSPLIT, $0-72
	MOVQ         w+16(FP), SI
	TILEROWS(NOSETUP)
	BCAST8($0x0f0f0f0f, Y15, X15)
	BCAST8($0x20202020, Y11, X11)
	VXORPS       X4, X4, X4
	VXORPS       X5, X5, X5
	VXORPS       X6, X6, X6
	VXORPS       X7, X7, X7
loop:
	VPXOR        Y0, Y0, Y0
	VPXOR        Y1, Y1, Y1
	VPXOR        Y2, Y2, Y2
	VPXOR        Y3, Y3, Y3
	Q6HALFT(0, 32, 128, 192, 0)
	Q6HALFT(64, 96, 160, 200, 128)
	MOVWLZX      208(SI), AX
	VMOVD        AX, X9
	VCVTPH2PS    X9, X9
	Q6FIN(Y0, X0, X4, (DX))
	Q6FIN(Y1, X1, X5, (DX)(R11*1))
	Q6FIN(Y2, X2, X6, (DX)(R11*2))
	Q6FIN(Y3, X3, X7, (DX)(R12*1))
	ADDQ         $210, SI
	ADDQ         $256, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          loop
	OUT4

// func tileQ4_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)
TEXT ·tileQ4_KAVX2(SB), NOSPLIT, $0-72
	TILEK(Q4KCHUNKS, 144)

// func tileQ5_KAVX2(y *float32, ldy int, w *byte, wRow int, q *byte, d *float32, sums *int16, aRow int, nb int)
TEXT ·tileQ5_KAVX2(SB), NOSPLIT, $0-72
	TILEK(Q5KCHUNKS, 176)
