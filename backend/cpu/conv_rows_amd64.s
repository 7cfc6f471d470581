//go:build !noasm

#include "textflag.h"
#include "zmm_amd64.h"
#include "gemm_amd64.h"

// The stem kernel into planes (stemRows8x48): eight output channels by 48
// positions of an output row, Z0..Z23 the accumulators (channel i's
// positions 0-15, 16-31, 32-47 in Z(3i), Z(3i+1), Z(3i+2)), Z24..Z26 a
// step's 48 input values, Z27..Z30 the broadcast weights; the store
// clamps with the bounds in Z24, Z25 (zmm_amd64.h). stemRows8x16 is the same
// kernel for 16 positions: channel i in Z(i), a step's inputs in Z24.

// One channel of a step of stemRows8x48: its weight at off(DI) broadcast into
// t, times the step's inputs, into the channel's accumulators r0..r2.
#define R8CH(off, t, r0, r1, r2) \
	VBROADCASTSS off(DI), t; \
	VFMADD231PS  Z24, t, r0; \
	VFMADD231PS  Z25, t, r1; \
	VFMADD231PS  Z26, t, r2

// The eight channels of a step, each through m(off, t, r0, r1, r2, r):
// its weight at off(DI), broadcast into t (Z27..Z30 in turn), and its
// accumulators, r0..r2 in stemRows8x48 (CH48) and r in stemRows8x16 (CH16).
#define CH8(m) \
	m(0, Z27, Z0, Z1, Z2, Z0);     \
	m(4, Z28, Z3, Z4, Z5, Z1);     \
	m(8, Z29, Z6, Z7, Z8, Z2);     \
	m(12, Z30, Z9, Z10, Z11, Z3);  \
	m(16, Z27, Z12, Z13, Z14, Z4); \
	m(20, Z28, Z15, Z16, Z17, Z5); \
	m(24, Z29, Z18, Z19, Z20, Z6); \
	m(28, Z30, Z21, Z22, Z23, Z7)

#define CH48(off, t, r0, r1, r2, r) R8CH(off, t, r0, r1, r2)
#define CH16(off, t, r0, r1, r2, r) ROWFMA1(off(DI), t, Z24, r)

// A step's 48 (16) input values at SI+AX into Z24..Z26 (Z24); the biases
// and the store of the eight channels.
#define LOAD48 \
	VMOVUPS (SI)(AX*1), Z24;   \
	VMOVUPS 64(SI)(AX*1), Z25; \
	VMOVUPS 128(SI)(AX*1), Z26

#define LOAD16 VMOVUPS (SI)(AX*1), Z24
#define BIAS48 TRIPLES8(ROWBIAS3, Z27, 0)
#define BIAS16 REGS8(ROWBIAS1, VZ, Z27, 0)
#define PUT48 TRIPLES8(PUTC3, 0, 0)

// The body of stemRows8x48 and stemRows8x16: zero the accumulators, k steps (load
// a step's inputs, add its channels through ch), then the biases, the
// clamp and the store.
#define PWR(zero, load, ch, rbias, clampop, putop) \
	MOVQ   k+0(FP), CX;             \
	MOVQ   a+8(FP), SI;             \
	MOVQ   offs+16(FP), R11;        \
	MOVQ   w+24(FP), DI;            \
	zero;                           \
	TESTQ  CX, CX;                  \
	JEQ    pstore;                  \
pstep:                              \
	MOVQ    (R11), AX;              \
	load;                           \
	CH8(ch);                        \
	ADDQ    $8, R11;                \
	ADDQ    $32, DI;                \
	DECQ    CX;                     \
	JNZ     pstep;                  \
pstore:                             \
	MOVQ  c+32(FP), DX;             \
	MOVQ  ldc+40(FP), R8;           \
	NILJMPQ(bias+48(FP), R9, plim); \
	rbias;                          \
plim:                               \
	NILJMPQ(lim+56(FP), BX, pput);  \
	clampop;                        \
pput:                               \
	putop;                          \
	VZEROUPPER;                     \
	RET

// func stemRows8x48(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)
TEXT ·stemRows8x48(SB), NOSPLIT, $0-64
	PWR(ZERO24, LOAD48, CH48, BIAS48, CLAMP24, PUT48)

// func stemRows8x16(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)
TEXT ·stemRows8x16(SB), NOSPLIT, $0-64
	PWR(ZERO8, LOAD16, CH16, BIAS16, CLAMP8, PUT8)
