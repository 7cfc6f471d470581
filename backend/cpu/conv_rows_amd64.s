//go:build !noasm

#include "textflag.h"
#include "zmm_amd64.h"
#include "gemm_amd64.h"

// The stem kernel into planes (pwr8x48): eight output channels by 48
// positions of an output row, Z0..Z23 the accumulators (channel i's
// positions 0-15, 16-31, 32-47 in Z(3i), Z(3i+1), Z(3i+2)), Z24..Z26 a
// step's 48 input values, Z27..Z30 the broadcast weights; the store
// clamps with the bounds in Z24, Z25 (zmm_amd64.h).

// One channel of a step: its weight at off(DI) broadcast into t, times
// the step's inputs, into the channel's accumulators r0..r2.
#define R8CH(off, t, r0, r1, r2) \
	VBROADCASTSS off(DI), t; \
	VFMADD231PS  Z24, t, r0; \
	VFMADD231PS  Z25, t, r1; \
	VFMADD231PS  Z26, t, r2

// func pwr8x48(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)
TEXT ·pwr8x48(SB), NOSPLIT, $0-64
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   offs+16(FP), R11
	MOVQ   w+24(FP), DI
	ZERO24
	TESTQ  CX, CX
	JEQ    r8store

r8step:
	MOVQ    (R11), AX
	VMOVUPS (SI)(AX*1), Z24
	VMOVUPS 64(SI)(AX*1), Z25
	VMOVUPS 128(SI)(AX*1), Z26
	R8CH(0, Z27, Z0, Z1, Z2)
	R8CH(4, Z28, Z3, Z4, Z5)
	R8CH(8, Z29, Z6, Z7, Z8)
	R8CH(12, Z30, Z9, Z10, Z11)
	R8CH(16, Z27, Z12, Z13, Z14)
	R8CH(20, Z28, Z15, Z16, Z17)
	R8CH(24, Z29, Z18, Z19, Z20)
	R8CH(28, Z30, Z21, Z22, Z23)
	ADDQ    $8, R11
	ADDQ    $32, DI
	DECQ    CX
	JNZ     r8step

r8store:
	MOVQ  c+32(FP), DX
	MOVQ  ldc+40(FP), R8
	NILJMPQ(bias+48(FP), R9, r8lim)
	TRIPLES8(ROWBIAS3, Z27, 0)

r8lim:
	NILJMPQ(lim+56(FP), BX, r8put)
	CLAMP24

r8put:
	TRIPLES8(PUTC3, 0, 0)
	VZEROUPPER
	RET

// func pwr8x16(k int, a *float32, offs *int, w *float32, c *float32, ldc int, bias, lim *float32)
TEXT ·pwr8x16(SB), NOSPLIT, $0-64
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   offs+16(FP), R11
	MOVQ   w+24(FP), DI
	ZERO8
	TESTQ  CX, CX
	JEQ    r16store

r16step:
	MOVQ    (R11), AX
	VMOVUPS (SI)(AX*1), Z24
	ROWFMA1(0(DI), Z27, Z24, Z0)
	ROWFMA1(4(DI), Z28, Z24, Z1)
	ROWFMA1(8(DI), Z29, Z24, Z2)
	ROWFMA1(12(DI), Z30, Z24, Z3)
	ROWFMA1(16(DI), Z27, Z24, Z4)
	ROWFMA1(20(DI), Z28, Z24, Z5)
	ROWFMA1(24(DI), Z29, Z24, Z6)
	ROWFMA1(28(DI), Z30, Z24, Z7)
	ADDQ    $8, R11
	ADDQ    $32, DI
	DECQ    CX
	JNZ     r16step

r16store:
	MOVQ  c+32(FP), DX
	MOVQ  ldc+40(FP), R8
	NILJMPQ(bias+48(FP), R9, r16lim)
	REGS8(ROWBIAS1, VZ, Z27, 0)

r16lim:
	NILJMPQ(lim+56(FP), BX, r16put)
	CLAMP8

r16put:
	PUT8
	VZEROUPPER
	RET
