//go:build !noasm

#include "textflag.h"
#include "zmm_amd64.h"

// Twelve independent multiply-adds: one per accumulator Y0..Y11, so that
// no instruction waits for another (12 chains cover an FMA latency of up
// to 6 cycles at 2 FMAs per cycle).
#define FMA12 \
	VFMADD231PS Y12, Y13, Y0;  \
	VFMADD231PS Y12, Y13, Y1;  \
	VFMADD231PS Y12, Y13, Y2;  \
	VFMADD231PS Y12, Y13, Y3;  \
	VFMADD231PS Y12, Y13, Y4;  \
	VFMADD231PS Y12, Y13, Y5;  \
	VFMADD231PS Y12, Y13, Y6;  \
	VFMADD231PS Y12, Y13, Y7;  \
	VFMADD231PS Y12, Y13, Y8;  \
	VFMADD231PS Y12, Y13, Y9;  \
	VFMADD231PS Y12, Y13, Y10; \
	VFMADD231PS Y12, Y13, Y11

// func fmaPeakLoop(n int)
TEXT ·fmaPeakLoop(SB), NOSPLIT, $0-8
	MOVQ   n+0(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	TESTQ  CX, CX
	JLE    done

loop:
	FMA12
	FMA12
	DECQ CX
	JNE  loop

done:
	VZEROUPPER
	RET

// Twelve independent 16-lane multiply-adds: one per accumulator Z0..Z11
// (12 chains cover an FMA latency of up to 6 cycles at 2 FMAs per cycle).
#define FMA12Z \
	VFMADD231PS Z12, Z13, Z0;  \
	VFMADD231PS Z12, Z13, Z1;  \
	VFMADD231PS Z12, Z13, Z2;  \
	VFMADD231PS Z12, Z13, Z3;  \
	VFMADD231PS Z12, Z13, Z4;  \
	VFMADD231PS Z12, Z13, Z5;  \
	VFMADD231PS Z12, Z13, Z6;  \
	VFMADD231PS Z12, Z13, Z7;  \
	VFMADD231PS Z12, Z13, Z8;  \
	VFMADD231PS Z12, Z13, Z9;  \
	VFMADD231PS Z12, Z13, Z10; \
	VFMADD231PS Z12, Z13, Z11

// func fmaPeakLoop512(n int)
TEXT ·fmaPeakLoop512(SB), NOSPLIT, $0-8
	MOVQ   n+0(FP), CX
	ZERO12
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	TESTQ  CX, CX
	JLE    done

loop:
	FMA12Z
	FMA12Z
	DECQ CX
	JNE  loop

done:
	VZEROUPPER
	RET
