// Lists of vector registers for the kernels' macros. A list applies a
// macro m to each of its registers in turn as m(a, b, i, r): a and b are
// passed on (bounds, a pointer, a width), i is the register's index in
// the list. A list of pairs (row i of a two-vector tile in registers 2i
// and 2i+1) calls m(a, b, i, r0, r1). v picks the width where a list has
// both: VY for ymm registers, VZ for zmm.

#ifndef REGS_AMD64_H
#define REGS_AMD64_H

#define VY(y, z) y
#define VZ(y, z) z

// x four, six and twelve times.
#define REP4(x) x; x; x; x
#define REP6(x) x; x; x; x; x; x
#define REP12(x) REP6(x); REP6(x)

// Registers 0-7, 0-11 and (zmm only) 0-23.
#define REGS8(m, v, a, b) \
	m(a, b, 0, v(Y0, Z0)); \
	m(a, b, 1, v(Y1, Z1)); \
	m(a, b, 2, v(Y2, Z2)); \
	m(a, b, 3, v(Y3, Z3)); \
	m(a, b, 4, v(Y4, Z4)); \
	m(a, b, 5, v(Y5, Z5)); \
	m(a, b, 6, v(Y6, Z6)); \
	m(a, b, 7, v(Y7, Z7))

#define REGS12(m, v, a, b) \
	REGS8(m, v, a, b);        \
	m(a, b, 8, v(Y8, Z8));    \
	m(a, b, 9, v(Y9, Z9));    \
	m(a, b, 10, v(Y10, Z10)); \
	m(a, b, 11, v(Y11, Z11))

#define REGS24(m, a, b) \
	REGS12(m, VZ, a, b); \
	m(a, b, 12, Z12);    \
	m(a, b, 13, Z13);    \
	m(a, b, 14, Z14);    \
	m(a, b, 15, Z15);    \
	m(a, b, 16, Z16);    \
	m(a, b, 17, Z17);    \
	m(a, b, 18, Z18);    \
	m(a, b, 19, Z19);    \
	m(a, b, 20, Z20);    \
	m(a, b, 21, Z21);    \
	m(a, b, 22, Z22);    \
	m(a, b, 23, Z23)

// Pairs 0-5 (registers 0-11), 6-11 (zmm 12-23) and 0-11.
#define PAIRS6(m, v, a, b) \
	m(a, b, 0, v(Y0, Z0), v(Y1, Z1)); \
	m(a, b, 1, v(Y2, Z2), v(Y3, Z3)); \
	m(a, b, 2, v(Y4, Z4), v(Y5, Z5)); \
	m(a, b, 3, v(Y6, Z6), v(Y7, Z7)); \
	m(a, b, 4, v(Y8, Z8), v(Y9, Z9)); \
	m(a, b, 5, v(Y10, Z10), v(Y11, Z11))

#define PAIRS6HI(m, a, b) \
	m(a, b, 6, Z12, Z13);  \
	m(a, b, 7, Z14, Z15);  \
	m(a, b, 8, Z16, Z17);  \
	m(a, b, 9, Z18, Z19);  \
	m(a, b, 10, Z20, Z21); \
	m(a, b, 11, Z22, Z23)

#define PAIRS12(m, a, b) \
	PAIRS6(m, VZ, a, b); \
	PAIRS6HI(m, a, b)

// Rows of three (zmm 0-23, row i in 3i..3i+2) and of four vectors (zmm
// 0-23, row i in 4i..4i+3).
#define TRIPLES8(m, a, b) \
	m(a, b, 0, Z0, Z1, Z2); \
	m(a, b, 1, Z3, Z4, Z5); \
	m(a, b, 2, Z6, Z7, Z8); \
	m(a, b, 3, Z9, Z10, Z11); \
	m(a, b, 4, Z12, Z13, Z14); \
	m(a, b, 5, Z15, Z16, Z17); \
	m(a, b, 6, Z18, Z19, Z20); \
	m(a, b, 7, Z21, Z22, Z23)

#define QUADS6(m, a, b) \
	m(a, b, 0, Z0, Z1, Z2, Z3); \
	m(a, b, 1, Z4, Z5, Z6, Z7); \
	m(a, b, 2, Z8, Z9, Z10, Z11); \
	m(a, b, 3, Z12, Z13, Z14, Z15); \
	m(a, b, 4, Z16, Z17, Z18, Z19); \
	m(a, b, 5, Z20, Z21, Z22, Z23)

// Indices 0-7 and 0-15 through m(a, b, i), for tables of lanes.
#define IDX8(m, a, b) \
	m(a, b, 0); \
	m(a, b, 1); \
	m(a, b, 2); \
	m(a, b, 3); \
	m(a, b, 4); \
	m(a, b, 5); \
	m(a, b, 6); \
	m(a, b, 7)

#define IDX16(m, a, b) \
	IDX8(m, a, b); \
	m(a, b, 8);    \
	m(a, b, 9);    \
	m(a, b, 10);   \
	m(a, b, 11);   \
	m(a, b, 12);   \
	m(a, b, 13);   \
	m(a, b, 14);   \
	m(a, b, 15)

// Broadcasts the float32 of the given bits into z (clobbers AX).
#define BCASTK(bits, z) \
	MOVL         $bits, AX; \
	VPBROADCASTD AX, z

// Zeroes r (VXORPS on ymm registers, VPXORD on zmm).
#define ZEROPS(a, b, i, r) VXORPS r, r, r
#define ZEROD(a, b, i, r) VPXORD r, r, r

// Clamps r to [lo, hi] (the bounds broadcast), with Clip's comparisons:
// VMAXPS x, lo, x keeps x unless lo > x, so a NaN passes through.
#define CLAMPR(lo, hi, r) \
	VMAXPS r, lo, r; \
	VMINPS r, hi, r

#define CLAMPI(lo, hi, i, r) CLAMPR(lo, hi, r)
#define CLAMP2(lo, hi, i, r0, r1) CLAMPR(lo, hi, r0); CLAMPR(lo, hi, r1)

#endif
