#include "textflag.h"
#include "dw9_amd64.h"

// The stride-2 row-vector depthwise kernels: one output row of at most
// sixteen columns a vector, from input rows of at most thirty-two. A
// filter row's input row is two masked loads (zero outside the plane),
// split into its even and odd columns by two VPERMT2PS; the taps are
// those vectors and the ones shifted by a lane (VALIGND, the lane shifted
// in zeroed by K1 or K2). No padded copy, no transposes.
//
// Registers: Z0..Z8 (3×3) or Z0..Z24 (5×5) the channel's weights, Z25 and
// Z26 the even and odd column indices, Z27 an input row's first sixteen
// columns and then its odd columns, Z28 its next sixteen, Z29 its even
// columns, Z30 a shifted vector, Z31 the accumulator. K1 all lanes but 0,
// K2 all but 15, K3 and K4 a row's load masks, K5 the store mask.

// Arguments common to both kernels: DI the output planes, SI the input
// planes, DX the filters, R8 the biases, R10 the table, R12 the input row
// pitch in bytes, R14 the channels; the index vectors and K1, K2.
#define SARGS \
	MOVQ      o+0(FP), DI;     \
	MOVQ      x+8(FP), SI;     \
	MOVQ      w+16(FP), DX;    \
	MOVQ      b+24(FP), R8;    \
	MOVQ      tab+40(FP), R10; \
	MOVQ      row+56(FP), R12; \
	SHLQ      $2, R12;         \
	MOVQ      nch+80(FP), R14; \
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

// func dws3(o, x, w, b *float32, bstep int, tab *dwsVec, nvec, row, sp, isp, nch int, idx *[32]int32, lim *float32)
//
// For each of nch ≥ 1 channels (output planes of sp floats at o, input
// planes of isp at x, nine weights each at w, one bias each at b,
// bstep bytes apart) and each of its nvec output rows (tab): output
// column j = bias + Σ_r Σ_c w[3r+c]·x[row 2i+r−1][column 2j+c−1], the
// taps added in order, clamped to [lim[0], lim[1]] if lim is not nil.
// row is the input plane's width; idx the even and odd column indices.
TEXT ·dws3(SB), NOSPLIT, $0-104
	SARGS

chan3:
	BCAST9(DX)
	SCHANNEL

vec3:
	SVECTOR
	SROW(0)
	SODDM1(Z0)
	SEVEN(Z1)
	SODD(Z2)
	SROW(1)
	SODDM1(Z3)
	SEVEN(Z4)
	SODD(Z5)
	SROW(2)
	SODDM1(Z6)
	SEVEN(Z7)
	SODD(Z8)
	SSTORE(vec3)
	SNEXT(9, chan3)
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

// func dws5(o, x, w, b *float32, bstep int, tab *dwsVec, nvec, row, sp, isp, nch int, idx *[32]int32, lim *float32)
//
// dws3 for 5×5 filters: column 2j+c−2, row 2i+r−2.
TEXT ·dws5(SB), NOSPLIT, $0-104
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
