//go:build !noasm

#include "textflag.h"
#include "regs_amd64.h"

// Twelve independent multiply-adds, one per accumulator 0..11 of width v
// (VY, VZ), so that no instruction waits for another (12 chains cover an
// FMA latency of up to 6 cycles at 2 FMAs per cycle).
#define FMAI(a, b, i, r) VFMADD231PS a, b, r
#define FMA12(v) REGS12(FMAI, v, v(Y12, Z12), v(Y13, Z13))

// The body of fmaPeakLoop (VY, zeroing with ZEROPS) and fmaPeakLoop512
// (VZ, ZEROD): n times 24 multiply-adds on registers 0..13 of width v,
// zeroed first.
#define FMAPEAK(v, zero) \
	MOVQ   n+0(FP), CX;          \
	REGS12(zero, v, 0, 0);       \
	zero(0, 0, 12, v(Y12, Z12)); \
	zero(0, 0, 13, v(Y13, Z13)); \
	TESTQ  CX, CX;               \
	JLE    done;                 \
loop:;                           \
	FMA12(v);                    \
	FMA12(v);                    \
	DECQ CX;                     \
	JNE  loop;                   \
done:;                           \
	VZEROUPPER;                  \
	RET

// func fmaPeakLoop(n int)
TEXT ·fmaPeakLoop(SB), NOSPLIT, $0-8
	FMAPEAK(VY, ZEROPS)

// func fmaPeakLoop512(n int)
TEXT ·fmaPeakLoop512(SB), NOSPLIT, $0-8
	FMAPEAK(VZ, ZEROD)
