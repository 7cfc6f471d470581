// The arguments and row ends shared by the row copies of the depthwise
// kernels: dwPadRows (dw_amd64.s) and dwPadRows512 (dw3_amd64.s),
// dwSplitRows and dwSplitRows512.

// dwPadRows's arguments: DI dst, R8 ldd and R9 lds (bytes), SI src, R10
// rows, R11 pre, R12 cols, R13 post.
#define PADARGS \
	MOVQ dst+0(FP), DI;    \
	MOVQ ldd+8(FP), R8;    \
	MOVQ src+16(FP), SI;   \
	MOVQ lds+24(FP), R9;   \
	MOVQ rows+32(FP), R10; \
	MOVQ pre+40(FP), R11;  \
	MOVQ cols+48(FP), R12; \
	MOVQ post+56(FP), R13; \
	SHLQ $2, R8;           \
	SHLQ $2, R9

// dwSplitRows's first arguments: DI e, SI o, R8 ld, DX x, R9 ldx, R10
// rows.
#define SPLITARGS \
	MOVQ e+0(FP), DI;    \
	MOVQ o+8(FP), SI;    \
	MOVQ ld+16(FP), R8;  \
	MOVQ x+24(FP), DX;   \
	MOVQ ldx+32(FP), R9; \
	MOVQ rows+40(FP), R10

// o[lo−1] = x[0] (o + lo at p) when head is not 0, then on to next.
#define SPLITHEAD(p, next) \
	CMPQ head+80(FP), $0; \
	JEQ  next;            \
	MOVL (DX), BX;        \
	MOVL BX, -4(p)

// x[tail] into BX when tail (the int argument: Q, for vet) is not
// negative, else on to next.
#define SPLITTAILQ(tail, next) \
	MOVQ tail, BX;        \
	CMPQ BX, $0;          \
	JLT  next;            \
	MOVL (DX)(BX*4), BX

// dwSplitRows's end of a row: on to the next rows of e and o (R8 bytes)
// and of x (R9) while R10 rows are left, then done.
#define SPLITNEXT(row, done) \
	ADDQ R8, DI; \
	ADDQ R8, SI; \
	ADDQ R9, DX; \
	DECQ R10;    \
	JMP  row;    \
done:;           \
	VZEROUPPER;  \
	RET

// dwPadRows's copy of a row's whole vectors: the first R14 floats (a
// multiple of lanes) from SI to DX, through r, AX counting them from 0;
// then on to tail.
#define PADVEC(loop, tail, r, lanes) \
loop:;                     \
	CMPQ    AX, R14;        \
	JGE     tail;           \
	VMOVUPS (SI)(AX*4), r;  \
	VMOVUPS r, (DX)(AX*4);  \
	ADDQ    $lanes, AX;     \
	JMP     loop

// dwPadRows's end of a row: on to the next row of dst (R8 bytes) and
// of src (R9) while R10 rows are left, then done.
#define PADNEXT(row, done) \
	ADDQ R8, DI; \
	ADDQ R9, SI; \
	DECQ R10;    \
	JMP  row;    \
done:;           \
	VZEROUPPER;  \
	RET
