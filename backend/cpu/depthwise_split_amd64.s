//go:build !noasm

#include "textflag.h"
#include "dw9_amd64.h"

// The stride-2 row-vector depthwise kernels. A filter row's input row is
// loaded (zero outside the plane) and split into its even and odd
// columns by two VPERMT2PS; the taps are those vectors and the ones
// shifted by a lane (VALIGND). No padded copy, no transposes. depthwiseSplit3 (3×3,
// any width, below) runs an output row sixteen columns at a time; depthwiseSplit5
// (5×5) one output row of at most sixteen columns a vector, from input
// rows of at most thirty-two.
//
// depthwiseSplit5's registers: Z0..Z24 the channel's weights, Z25 and Z26 the even
// and odd column indices, Z27 an input row's first sixteen columns and
// then its odd columns, Z28 its next sixteen, Z29 its even columns, Z30 a
// shifted vector, Z31 the accumulator. K1 all lanes but 0, K2 all but
// 15, K3 and K4 a row's load masks, K5 the store mask.

// depthwiseSplit5's arguments: DI the output planes, SI the input
// planes, DX the filters, R8 the biases, R10 the table, R12 the input row
// pitch in bytes, R14 the channels; the index vectors and K1, K2.
#define SARGS \
	PLANEARGS(tab+40(FP), row+56(FP), nch+80(FP)); \
	MOVQ      idx+88(FP), AX;  \
	VMOVDQU32 (AX), Z25;       \
	VMOVDQU32 64(AX), Z26;     \
	MOVQ      $0xFFFE, AX;     \
	KMOVW     AX, K1;          \
	MOVQ      $0x7FFF, AX;     \
	KMOVW     AX, K2

// Starts a channel: R9 the table, R11 its vectors.
#define SCHANNEL \
	MOVQ R10, R9; \
	MOVQ nvec+48(FP), R11

// Starts an output vector: R13 its first input row, CX its byte offset
// in the output plane, Z31 the bias.
#define SVECTOR \
	MOVQ         (R9), R13;       \
	ADDQ         SI, R13;         \
	MOVQ         8(R9), CX;       \
	VBROADCASTSS (R8), Z31

// Loads filter row i's input row and splits it: Z29 its even columns,
// Z27 its odd ones; moves R13 to the next input row.
#define SROW(i) \
	KMOVW     18+2*i(R9), K3;      \
	KMOVW     28+2*i(R9), K4;      \
	VMOVUPS.Z (R13), K3, Z27;      \
	VMOVUPS.Z 64(R13), K4, Z28;    \
	VMOVAPS   Z27, Z29;            \
	VPERMT2PS Z28, Z25, Z29;       \
	VPERMT2PS Z28, Z26, Z27;       \
	ADDQ      R12, R13

// Taps: column 2j−2 (even, one lane back), 2j−1 (odd, one lane back),
// 2j, 2j+1, 2j+2 (even, one lane on).
#define SEVENM1(w) VALIGND.Z $15, Z29, Z29, K1, Z30; VFMADD231PS Z30, w, Z31
#define SODDM1(w) VALIGND.Z $15, Z27, Z27, K1, Z30; VFMADD231PS Z30, w, Z31
#define SEVEN(w) VFMADD231PS Z29, w, Z31
#define SODD(w) VFMADD231PS Z27, w, Z31
#define SEVENP1(w) VALIGND.Z $1, Z29, Z29, K2, Z30; VFMADD231PS Z30, w, Z31

// Clamps Z31 if lim is set (the bounds through Z30, as the Clip kernels
// compare: a NaN passes through) and stores it under the vector's store mask;
// then the next vector, back to label while there are more.
#define SSTORE(label) \
	MOVQ        lim+96(FP), AX;      \
	TESTQ       AX, AX;              \
	JEQ         5(PC);               \
	VBROADCASTSS (AX), Z30;          \
	VMAXPS      Z31, Z30, Z31;       \
	VBROADCASTSS 4(AX), Z30;         \
	VMINPS      Z31, Z30, Z31;       \
	KMOVW       16(R9), K5;          \
	VMOVUPS     Z31, K5, (DI)(CX*1); \
	ADDQ        $48, R9;             \
	DECQ        R11;                 \
	JNZ         label

// The next channel: planes (sp floats out, isp in), filter (taps
// floats) and bias (bstep bytes on); back to label while channels are
// left.
#define SNEXT(taps, label) \
	MOVQ sp+64(FP), AX;    \
	SHLQ $2, AX;           \
	ADDQ AX, DI;           \
	MOVQ isp+72(FP), AX;   \
	SHLQ $2, AX;           \
	ADDQ AX, SI;           \
	ADDQ $4*taps, DX;      \
	ADDQ bstep+32(FP), R8; \
	DECQ R14;              \
	JNZ  label

// depthwiseSplit3 runs an output row sixteen columns (a chunk) at a time, from
// thirty-two input columns of each of its three input rows: AX, BX, CX
// the rows (the zero row for one outside the plane), Z21..Z23 the odd
// columns of each row's last chunk (column 2j−1 of lane 0 is lane 15 of
// those), Z24 the bias, Z19 and Z20 the clamp bounds, R12 the chunk's
// byte offset in the input rows, R13 the output.

// One filter row of a chunk: row p's 32 columns (load: plain, or under
// K3/K4 with the lanes past the row zeroed) split into even (Z29) and
// odd (Z27) columns, the odd ones one lane back (Z30, lane 0 from prev),
// times w0, w1, w2.
#define ROW3(p, prev, w0, w1, w2) \
	VMOVUPS     (p)(R12*1), Z27;     \
	VMOVUPS     64(p)(R12*1), Z28;   \
	ROW3SPLIT(prev, w0, w1, w2)

#define ROW3T(p, prev, w0, w1, w2) \
	VMOVUPS.Z   (p)(R12*1), K3, Z27;   \
	VMOVUPS.Z   64(p)(R12*1), K4, Z28; \
	ROW3SPLIT(prev, w0, w1, w2)

#define ROW3SPLIT(prev, w0, w1, w2) \
	VMOVAPS     Z27, Z29;            \
	VPERMT2PS   Z28, Z25, Z29;       \
	VPERMT2PS   Z28, Z26, Z27;       \
	VALIGND     $15, prev, Z27, Z30; \
	VMOVAPS     Z27, prev;           \
	VFMADD231PS Z30, w0, Z31;        \
	VFMADD231PS Z29, w1, Z31;        \
	VFMADD231PS Z27, w2, Z31

// A chunk: the bias, three filter rows through row, the clamp if lim is
// set.
#define CHUNK3(row) \
	VMOVAPS Z24, Z31;                  \
	row(AX, Z21, Z0, Z1, Z2);          \
	row(BX, Z22, Z3, Z4, Z5);          \
	row(CX, Z23, Z6, Z7, Z8);          \
	CMPQ    lim+104(FP), $0;           \
	JEQ     3(PC);                     \
	VMAXPS  Z31, Z19, Z31;             \
	VMINPS  Z31, Z20, Z31

// Row r's pointer into reg: the input plane plus the table's offset, or
// the zero row where the offset is negative.
#define INROW(off, reg) \
	MOVQ    off(R9), reg;        \
	LEAQ    (SI)(reg*1), reg;    \
	CMPQ    off(R9), $0;         \
	CMOVQLT R15, reg

// func depthwiseSplit3(o, x, w, b *float32, bstep int, rows *int64, oh, full int, masks uint64, sp, isp, nch int, idx *[32]int32, lim, zero *float32)
//
// For each of nch ≥ 1 channels (output planes of sp floats at o, input
// planes of isp at x, nine weights each at w, one bias each at b,
// bstep bytes apart) and each of its oh output rows i (rows: the byte
// offsets of input rows 2i−1, 2i, 2i+1, negative for a row outside the
// plane, then of the output row): output column j = bias + Σ_r Σ_c
// w[3r+c]·x[row 2i+r−1][column 2j+c−1], the taps added in order (a tap
// outside the plane adds w·0), clamped to [lim[0], lim[1]] if lim is
// not nil. full chunks of sixteen outputs (32 input columns) lie inside
// the rows; a last one, if masks' bits 32-47 are not 0, loads under bits
// 0-15 and 16-31 and stores under 32-47. zero is a row of zeros as long
// as the rows' chunks reach; idx the even and odd column indices.
TEXT ·depthwiseSplit3(SB), NOSPLIT, $8-120
	MOVQ      o+0(FP), DI
	MOVQ      x+8(FP), SI
	MOVQ      w+16(FP), DX
	MOVQ      b+24(FP), R8
	MOVQ      rows+40(FP), R10
	MOVQ      nch+88(FP), R14
	MOVQ      zero+112(FP), R15
	MOVQ      idx+96(FP), AX
	VMOVDQU32 (AX), Z25
	VMOVDQU32 64(AX), Z26
	MOVQ      masks+64(FP), AX
	KMOVW     AX, K3
	SHRQ      $16, AX
	KMOVW     AX, K4
	SHRQ      $16, AX
	KMOVW     AX, K5
	MOVQ      full+56(FP), AX
	SHLQ      $7, AX
	MOVQ      AX, fb-8(SP)       // the full chunks' input bytes
	MOVQ      lim+104(FP), AX
	TESTQ     AX, AX
	JEQ       chan3
	VBROADCASTSS (AX), Z19
	VBROADCASTSS 4(AX), Z20

chan3:
	BCAST9(DX)
	VBROADCASTSS (R8), Z24
	MOVQ      R10, R9
	MOVQ      oh+48(FP), R11

row3:
	INROW(0, AX)
	INROW(8, BX)
	INROW(16, CX)
	MOVQ   24(R9), R13
	ADDQ   DI, R13
	VXORPS Z21, Z21, Z21
	VXORPS Z22, Z22, Z22
	VXORPS Z23, Z23, Z23
	XORQ   R12, R12
	CMPQ   R12, fb-8(SP)
	JGE    tail3

chunk3:
	CHUNK3(ROW3)
	VMOVUPS Z31, (R13)
	ADDQ    $64, R13
	ADDQ    $128, R12
	CMPQ    R12, fb-8(SP)
	JLT     chunk3

tail3:
	KORTESTW K5, K5
	JEQ      rowdone3
	CHUNK3(ROW3T)
	VMOVUPS  Z31, K5, (R13)

rowdone3:
	ADDQ $32, R9
	DECQ R11
	JNZ  row3
	// The next channel: planes, filter and bias.
	MOVQ sp+72(FP), AX
	LEAQ (DI)(AX*4), DI
	MOVQ isp+80(FP), AX
	LEAQ (SI)(AX*4), SI
	ADDQ $36, DX
	ADDQ bstep+32(FP), R8
	DECQ R14
	JNZ  chan3
	VZEROUPPER
	RET

// One filter row of a 5×5 filter, w0..w4 its weights.
#define SROW5(i, w0, w1, w2, w3, w4) \
	SROW(i);      \
	SEVENM1(w0);  \
	SODDM1(w1);   \
	SEVEN(w2);    \
	SODD(w3);     \
	SEVENP1(w4)

// func depthwiseSplit5(o, x, w, b *float32, bstep int, tab *depthwiseSplitVec, nvec, row, sp, isp, nch int, idx *[32]int32, lim *float32)
//
// depthwiseSplit3 for 5×5 filters: column 2j+c−2, row 2i+r−2.
TEXT ·depthwiseSplit5(SB), NOSPLIT, $0-104
	SARGS

chan5:
	BCAST25(DX)
	SCHANNEL

vec5:
	SVECTOR
	ROWS5(SROW5)
	SSTORE(vec5)
	SNEXT(25, chan5)
	VZEROUPPER
	RET
