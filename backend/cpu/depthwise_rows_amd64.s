//go:build !noasm

#include "textflag.h"
#include "dw9_amd64.h"

// The row-vector depthwise kernels: a plane at most sixteen columns wide,
// unit strides and the same size in and out, is read a few whole rows to
// a vector (depthwiseRowsTable); a tap's row is one masked load that zeroes the
// lanes outside the plane, its columns that row shifted along the lanes
// (VALIGND, zeros shifted in) with the lanes that would wrap from one row
// into the next masked off. No padded copy is made and every input vector
// is loaded once per filter row.

// Arguments common to both kernels: DI the output planes, SI the input
// planes, DX the filters, R8 the biases (or 0), R10 the table, R12 the
// row pitch in bytes, R14 the channels; K2..K5 the column masks of the
// shifts by −1, +1, −2, +2; Z29 zero; Z30, Z31 the clamp bounds.
#define ARGS \
	PLANEARGS(tab+32(FP), row+48(FP), nch+64(FP)); \
	MOVQ   cols+72(FP), AX;  \
	KMOVW  (AX), K2;         \
	KMOVW  2(AX), K3;        \
	KMOVW  4(AX), K4;        \
	KMOVW  6(AX), K5;        \
	VXORPS Z29, Z29, Z29;    \
	MOVQ   lim+80(FP), AX;   \
	TESTQ  AX, AX;           \
	JEQ    3(PC);            \
	VBROADCASTSS (AX), Z30;  \
	VBROADCASTSS 4(AX), Z31

// Starts a channel: Z28 its bias, R9 the table, R11 its vectors.
#define CHANNEL \
	VXORPS Z28, Z28, Z28;       \
	TESTQ  R8, R8;              \
	JEQ    2(PC);               \
	VBROADCASTSS (R8), Z28;     \
	MOVQ   R10, R9;             \
	MOVQ   nvec+40(FP), R11

// Starts a vector: CX its byte offset in the plane, R13 the first row of
// its taps (R15 bytes up: the filter's top padding), Z27 the bias.
#define VECTOR \
	MOVQ    (R9), CX;           \
	LEAQ    (SI)(CX*1), R13;    \
	SUBQ    R15, R13;           \
	VMOVAPS Z28, Z27

// Loads filter row i of the vector into Z25 (the lanes outside the
// plane zero) and moves R13 to the next.
#define LOADROW(i) \
	KMOVW     10+2*i(R9), K1;  \
	VMOVUPS.Z (R13), K1, Z25;  \
	ADDQ      R12, R13

// The taps of a row: Z25 shifted by −2..+2 columns times w.
#define TAPM2(w) VALIGND $14, Z29, Z25, Z26; VFMADD231PS Z26, w, K4, Z27
#define TAPM1(w) VALIGND $15, Z29, Z25, Z26; VFMADD231PS Z26, w, K2, Z27
#define TAP0(w) VFMADD231PS Z25, w, Z27
#define TAPP1(w) VALIGND $1, Z25, Z29, Z26; VFMADD231PS Z26, w, K3, Z27
#define TAPP2(w) VALIGND $2, Z25, Z29, Z26; VFMADD231PS Z26, w, K5, Z27

// Clamps Z27 if lim is set and stores it under the vector's store mask;
// then the next vector, back to label while there are more.
#define STORE(label) \
	MOVQ    lim+80(FP), AX;        \
	TESTQ   AX, AX;                \
	JEQ     3(PC);                 \
	VMAXPS  Z27, Z30, Z27;         \
	VMINPS  Z27, Z31, Z27;         \
	KMOVW   8(R9), K6;             \
	VMOVUPS Z27, K6, (DI)(CX*1);   \
	ADDQ    $32, R9;               \
	DECQ    R11;                   \
	JNZ     label

// The next channel: planes, filter (taps floats) and bias; back to label
// while channels are left.
#define NEXTCHANNEL(taps, label) \
	MOVQ  sp+56(FP), AX;  \
	SHLQ  $2, AX;         \
	ADDQ  AX, SI;         \
	ADDQ  AX, DI;         \
	ADDQ  $4*taps, DX;    \
	TESTQ R8, R8;         \
	JEQ   2(PC);          \
	ADDQ  $4, R8;         \
	DECQ  R14;            \
	JNZ   label

// func depthwiseRows3(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *uint16, lim *float32)
//
// For each of nch ≥ 1 channels (planes of sp floats at x and o, nine
// weights each at w, one bias each at b, or none if b is nil) and each
// of its nvec vectors (tab): output lanes = bias + Σ_r Σ_c w[3r+c]·(row
// r of the vector's taps shifted by c−1 columns), the taps added in
// order, clamped to [lim[0], lim[1]] if lim is not nil, stored under the
// vector's store mask. row is the distance between filter rows, in
// floats (the plane's width).
TEXT ·depthwiseRows3(SB), NOSPLIT, $0-88
	ARGS
	MOVQ R12, R15

chan3:
	BCAST9(DX)
	CHANNEL

vec3:
	VECTOR
	LOADROW(0)
	TAPM1(Z0)
	TAP0(Z1)
	TAPP1(Z2)
	LOADROW(1)
	TAPM1(Z3)
	TAP0(Z4)
	TAPP1(Z5)
	LOADROW(2)
	TAPM1(Z6)
	TAP0(Z7)
	TAPP1(Z8)
	STORE(vec3)
	NEXTCHANNEL(9, chan3)
	VZEROUPPER
	RET

// Loads filter row i of a 5×5 filter, Z(5i)..Z(5i+4) its weights.
#define ROW5(i, w0, w1, w2, w3, w4) \
	LOADROW(i); \
	TAPM2(w0);  \
	TAPM1(w1);  \
	TAP0(w2);   \
	TAPP1(w3);  \
	TAPP2(w4)

// func depthwiseRows5(o, x, w, b *float32, tab *depthwiseRowsVec, nvec, row, sp, nch int, cols *uint16, lim *float32)
//
// depthwiseRows3 for 5×5 filters (25 weights a channel, shifts by c−2 columns).
TEXT ·depthwiseRows5(SB), NOSPLIT, $0-88
	ARGS
	LEAQ (R12)(R12*1), R15

chan5:
	BCAST25(DX)
	CHANNEL

vec5:
	VECTOR
	ROWS5(ROW5)
	STORE(vec5)
	NEXTCHANNEL(25, chan5)
	VZEROUPPER
	RET
