// The zmm accumulators of the AVX-512 kernels: zeroing, clamping and
// storing them.

// ZERO8 zeroes Z0..Z7.
#define ZERO8 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; \
	VPXORD Z5, Z5, Z5; \
	VPXORD Z6, Z6, Z6; \
	VPXORD Z7, Z7, Z7

// ZERO12 zeroes Z0..Z11.
#define ZERO12 \
	ZERO8;                \
	VPXORD Z8, Z8, Z8;    \
	VPXORD Z9, Z9, Z9;    \
	VPXORD Z10, Z10, Z10; \
	VPXORD Z11, Z11, Z11

// ZERO24 zeroes Z0..Z23.
#define ZERO24 \
	ZERO12;               \
	VPXORD Z12, Z12, Z12; \
	VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; \
	VPXORD Z15, Z15, Z15; \
	VPXORD Z16, Z16, Z16; \
	VPXORD Z17, Z17, Z17; \
	VPXORD Z18, Z18, Z18; \
	VPXORD Z19, Z19, Z19; \
	VPXORD Z20, Z20, Z20; \
	VPXORD Z21, Z21, Z21; \
	VPXORD Z22, Z22, Z22; \
	VPXORD Z23, Z23, Z23

// Clamps the accumulator r to [Z24, Z25] (the bounds broadcast), with
// Clip's comparisons: VMAXPS x, lo, x keeps x unless lo > x, so a NaN
// passes through.
#define CLAMP512(r) \
	VMAXPS r, Z24, r; \
	VMINPS r, Z25, r

// Loads the bounds at BX into Z24, Z25 and clamps Z0-Z7.
#define CLAMP8 \
	VBROADCASTSS (BX), Z24;  \
	VBROADCASTSS 4(BX), Z25; \
	CLAMP512(Z0);            \
	CLAMP512(Z1);            \
	CLAMP512(Z2);            \
	CLAMP512(Z3);            \
	CLAMP512(Z4);            \
	CLAMP512(Z5);            \
	CLAMP512(Z6);            \
	CLAMP512(Z7)

// Loads the bounds at BX into Z24, Z25 and clamps Z0-Z11.
#define CLAMP12 \
	CLAMP8;        \
	CLAMP512(Z8);  \
	CLAMP512(Z9);  \
	CLAMP512(Z10); \
	CLAMP512(Z11)

// Loads the bounds at BX into Z24, Z25 and clamps Z0-Z23.
#define CLAMP24 \
	CLAMP12;       \
	CLAMP512(Z12); \
	CLAMP512(Z13); \
	CLAMP512(Z14); \
	CLAMP512(Z15); \
	CLAMP512(Z16); \
	CLAMP512(Z17); \
	CLAMP512(Z18); \
	CLAMP512(Z19); \
	CLAMP512(Z20); \
	CLAMP512(Z21); \
	CLAMP512(Z22); \
	CLAMP512(Z23)

// Stores the vector r at DX and moves DX on by R8 bytes (a row of C).
#define PUT16(r) \
	VMOVUPS r, (DX); \
	ADDQ    R8, DX

// Stores Z0..Z7 as eight rows of C from DX on (DX moves past them).
#define PUT8 \
	PUT16(Z0); \
	PUT16(Z1); \
	PUT16(Z2); \
	PUT16(Z3); \
	PUT16(Z4); \
	PUT16(Z5); \
	PUT16(Z6); \
	PUT16(Z7)
