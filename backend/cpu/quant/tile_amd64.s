//go:build !noasm

#include "textflag.h"

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

// REDUCEA(Y, X, T): as REDUCE8 in dot_amd64.s.
#define REDUCEA(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// STOREA(YE, YO, XE): a row's output, reduce8 of the sum of its even and
// odd accumulators, to (R8); R8 on to the next row.
#define STOREA(YE, YO, XE) \
	VADDPS YO, YE, YE; \
	REDUCEA(YE, XE, X9); \
	VMOVSS XE, (R8); \
	ADDQ   R10, R8

// TILEA(W, P, qo0, wo1, qo1, size): the kernel; qo0 is the offset of a
// block's values, wo1 and qo1 those of the second block of a pair and
// its values, size the bytes of two blocks.
#define TILEA(W, P, qo0, wo1, qo1, size) \
	MOVQ         w+16(FP), SI; \
	MOVQ         q+32(FP), DI; \
	MOVQ         d+40(FP), DX; \
	MOVQ         bias+48(FP), R9; \
	MOVQ         aRow+56(FP), R11; \
	LEAQ         (R11)(R11*2), R12; \
	MOVQ         nb+64(FP), CX; \
	MOVL         $0x00010001, AX; \
	VMOVD        AX, X15; \
	VPBROADCASTD X15, Y15; \
	MOVL         $0x0f0f0f0f, AX; \
	VMOVD        AX, X14; \
	VPBROADCASTD X14, Y14; \
	VXORPS       Y0, Y0, Y0; \
	VXORPS       Y1, Y1, Y1; \
	VXORPS       Y2, Y2, Y2; \
	VXORPS       Y3, Y3, Y3; \
	VXORPS       Y4, Y4, Y4; \
	VXORPS       Y5, Y5, Y5; \
	VXORPS       Y6, Y6, Y6; \
	VXORPS       Y7, Y7, Y7; \
	SHRQ         $1, CX; \
	JEQ          last; \
pairs:; \
	BLOCKA(W, P, 0, qo0, 0, 0, Y0, Y2, Y4, Y6); \
	BLOCKA(W, P, wo1, qo1, 32, 4, Y1, Y3, Y5, Y7); \
	ADDQ         $size, SI; \
	ADDQ         $64, DI; \
	ADDQ         $64, R9; \
	ADDQ         $8, DX; \
	DECQ         CX; \
	JNZ          pairs; \
last:; \
	MOVQ         nb+64(FP), AX; \
	TESTQ        $1, AX; \
	JEQ          done; \
	BLOCKA(W, P, 0, qo0, 0, 0, Y0, Y2, Y4, Y6); \
done:; \
	MOVQ         y+0(FP), R8; \
	MOVQ         ldy+8(FP), R10; \
	SHLQ         $2, R10; \
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
	REDUCEA(A0, X0, X12); \
	VMOVSS X0, (R8); \
	ADDQ   R10, R8

#define TILEFA(WIDEN) \
	MOVQ   w+16(FP), SI; \
	MOVQ   x+32(FP), DI; \
	MOVQ   xRow+40(FP), R11; \
	MOVQ   n+48(FP), CX; \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
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
	MOVQ   y+0(FP), R8; \
	MOVQ   ldy+8(FP), R10; \
	SHLQ   $2, R10; \
	FSTOREA(Y0, Y1, Y2, Y3, X0); \
	FSTOREA(Y4, Y5, Y6, Y7, X4); \
	FSTOREA(Y8, Y9, Y10, Y11, X8); \
	VZEROUPPER; \
	RET

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
