// The zmm accumulators of the AVX-512 kernels: zeroing, clamping and
// storing them.

#include "regs_amd64.h"

// ZERO8 zeroes Z0..Z7, ZERO12 Z0..Z11 and ZERO24 Z0..Z23.
#define ZERO8 REGS8(ZEROD, VZ, 0, 0)
#define ZERO12 REGS12(ZEROD, VZ, 0, 0)
#define ZERO24 REGS24(ZEROD, 0, 0)

// Clamps the accumulator r to [Z24, Z25] (the bounds broadcast).
#define CLAMP512(r) CLAMPR(Z24, Z25, r)

// Loads the bounds at BX into Z24, Z25.
#define BOUNDS512 \
	VBROADCASTSS (BX), Z24; \
	VBROADCASTSS 4(BX), Z25

// Loads the bounds at BX into Z24, Z25 and clamps Z0-Z7, Z0-Z11 or
// Z0-Z23.
#define CLAMP8 BOUNDS512; REGS8(CLAMPI, VZ, Z24, Z25)
#define CLAMP12 BOUNDS512; REGS12(CLAMPI, VZ, Z24, Z25)
#define CLAMP24 BOUNDS512; REGS24(CLAMPI, Z24, Z25)

// Stores the vector r at DX and moves DX on by R8 bytes (a row of C).
#define PUT16(r) \
	VMOVUPS r, (DX); \
	ADDQ    R8, DX

#define PUTI(a, b, i, r) PUT16(r)

// Stores Z0..Z7 as eight rows of C from DX on (DX moves past them).
#define PUT8 REGS8(PUTI, VZ, 0, 0)
