// The arguments common to the row-table kernels (depthwise_rows_amd64.s,
// depthwise_split_amd64.s): DI o, SI x, DX w, R8 b, then R10 tab, R12 row (in bytes)
// and R14 nch, the three at the offsets given.
#define PLANEARGS(tab, row, nch) \
	MOVQ o+0(FP), DI;  \
	MOVQ x+8(FP), SI;  \
	MOVQ w+16(FP), DX; \
	MOVQ b+24(FP), R8; \
	MOVQ tab, R10;     \
	MOVQ row, R12;     \
	SHLQ $2, R12;      \
	MOVQ nch, R14

// Broadcasts the four floats from byte off of register r into a..d.
#define BCAST4(r, off, a, b, c, d) \
	VBROADCASTSS off(r), a;    \
	VBROADCASTSS off+4(r), b;  \
	VBROADCASTSS off+8(r), c;  \
	VBROADCASTSS off+12(r), d

// Broadcasts the nine floats at register r (a 3×3 filter, or the first
// rows of a larger one) into Z0..Z8.
#define BCAST9(r) \
	BCAST4(r, 0, Z0, Z1, Z2, Z3);  \
	BCAST4(r, 16, Z4, Z5, Z6, Z7); \
	VBROADCASTSS 32(r), Z8

// Broadcasts the 25 floats at register r (a 5×5 filter) into Z0..Z24.
#define BCAST25(r) \
	BCAST9(r);                        \
	BCAST4(r, 36, Z9, Z10, Z11, Z12);  \
	BCAST4(r, 52, Z13, Z14, Z15, Z16); \
	BCAST4(r, 68, Z17, Z18, Z19, Z20); \
	BCAST4(r, 84, Z21, Z22, Z23, Z24)

// The five filter rows of a 5×5 filter whose weights are in Z0..Z24, each
// through the macro row(i, w0, w1, w2, w3, w4).
#define ROWS5(row) \
	row(0, Z0, Z1, Z2, Z3, Z4);      \
	row(1, Z5, Z6, Z7, Z8, Z9);      \
	row(2, Z10, Z11, Z12, Z13, Z14); \
	row(3, Z15, Z16, Z17, Z18, Z19); \
	row(4, Z20, Z21, Z22, Z23, Z24)
