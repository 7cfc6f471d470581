// The pieces the dot, tile and AMX kernels share: prefetches, broadcasts,
// reductions, the loop over pairs of blocks, the scales of the K blocks,
// and the tables of constants (each kernel file keeps its own copy of a
// table under its own name, written by the macro here).

// NOSETUP: a kernel's setup where it needs none.
#define NOSETUP

// PREFETCH1–4: the weights 2 KiB ahead, one to four lines from there (as
// many as a step of the loop reads). The hardware's streams stop at page
// boundaries; without these the kernels wait for memory when their
// weights do not fit the cache.
#define PREFETCH1 \
	PREFETCHT0 2048(SI)

#define PREFETCH2 \
	PREFETCHT0 2048(SI); \
	PREFETCHT0 2112(SI)

#define PREFETCH3 \
	PREFETCH2; \
	PREFETCHT0 2176(SI)

#define PREFETCH4 \
	PREFETCH3; \
	PREFETCHT0 2240(SI)

// BCAST8(v, Y, X): every dword of Y is v.
#define BCAST8(v, Y, X) \
	MOVL         v, AX; \
	VMOVD        AX, X; \
	VPBROADCASTD X, Y

// REDUCE8(Y, X, T): X's lane 0 becomes reduce8 of Y's lanes; T is spoilt.
#define REDUCE8(Y, X, T) \
	VEXTRACTF128 $1, Y, T; \
	VADDPS       T, X, X; \
	VMOVHLPS     X, X, T; \
	VADDPS       T, X, X; \
	VMOVSHDUP    X, T; \
	VADDSS       T, X, X

// ZERO16: Z0–Z15 are zero.
#define ZERO16 \
	VPXORD Z0, Z0, Z0;    VPXORD Z1, Z1, Z1;    \
	VPXORD Z2, Z2, Z2;    VPXORD Z3, Z3, Z3;    \
	VPXORD Z4, Z4, Z4;    VPXORD Z5, Z5, Z5;    \
	VPXORD Z6, Z6, Z6;    VPXORD Z7, Z7, Z7;    \
	VPXORD Z8, Z8, Z8;    VPXORD Z9, Z9, Z9;    \
	VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; \
	VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15

// PAIRMASKS: the masks of the AVX-512 kernels of 32-value blocks, K1 the
// high qwords, K2 the words of 128-bit lanes 1 and 3, K7 the low eight
// dwords.
#define PAIRMASKS \
	MOVL  $0xf0, AX; \
	KMOVW AX, K1; \
	MOVL  $0xff00ff00, AX; \
	KMOVD AX, K2; \
	MOVL  $0xff, AX; \
	KMOVW AX, K7

// KERNEL32(HEAD, SETUP, PAIR, LAST, size, FIN): a dot kernel of 32-value
// blocks: HEAD its arguments and constants, SETUP more of them, then the
// loop over the CX blocks at SI, PAIR a pair of blocks (size bytes) and
// LAST an odd last block, and FIN leaving the result in X8. BX is four
// times the block's index (the offset of its scale, an eighth of that of
// its values).
#define KERNEL32(HEAD, SETUP, PAIR, LAST, size, FIN) \
	HEAD; \
	SETUP; \
	XORQ BX, BX; \
	MOVQ CX, R10; \
	ANDQ $-2, R10; \
	SHLQ $2, R10; \
	JEQ  last; \
pairs:; \
	PREFETCH2; \
	PAIR; \
	ADDQ $size, SI; \
	ADDQ $8, BX; \
	CMPQ BX, R10; \
	JLT  pairs; \
last:; \
	TESTQ $1, CX; \
	JEQ   done; \
	LAST; \
done:; \
	FIN; \
	MOVSS X8, ret+48(FP); \
	VZEROUPPER; \
	RET

// RUNS(ZERO, STEP, SUM): the F16 and BF16 dot kernels over the n runs of
// 32 values at SI (64 bytes) and DI (128): ZERO clears the accumulators,
// STEP takes a run, SUM leaves the result in X8.
#define RUNS(ZERO, STEP, SUM) \
	MOVQ  w+0(FP), SI; \
	MOVQ  x+8(FP), DI; \
	MOVQ  n+16(FP), CX; \
	ZERO; \
	TESTQ CX, CX; \
	JEQ   done; \
loop:; \
	PREFETCH1; \
	STEP; \
	ADDQ  $64, SI; \
	ADDQ  $128, DI; \
	DECQ  CX; \
	JNZ   loop; \
done:; \
	SUM; \
	MOVSS X8, ret+24(FP); \
	VZEROUPPER; \
	RET

// F16RUN(off, xo, V, A): A += the f16 at off(SI), widened into V, times
// the float32 at xo(DI), as many as V holds. BF16RUN: the same for bf16.
#define F16RUN(off, xo, V, A) \
	VCVTPH2PS off(SI), V; \
	VMULPS    xo(DI), V, V; \
	VADDPS    V, A, A

#define BF16RUN(off, xo, V, A) \
	VPMOVZXWD off(SI), V; \
	VPSLLD    $16, V, V; \
	VMULPS    xo(DI), V, V; \
	VADDPS    V, A, A

// YROWS: R8 = y, R10 = its row's bytes (ldy floats), for a tile's outputs.
#define YROWS \
	MOVQ y+0(FP), R8; \
	MOVQ ldy+8(FP), R10; \
	SHLQ $2, R10

// TILEROWS(SUMS): the activation rows of a tile kernel, DI their values
// and DX their scales, row i's at i·aRow past (R11 = aRow, R12 = 3·aRow);
// SUMS loads their sums if the kernel has any; CX the blocks.
#define TILEROWS(SUMS) \
	MOVQ q+32(FP), DI; \
	MOVQ d+40(FP), DX; \
	SUMS; \
	MOVQ aRow+56(FP), R11; \
	LEAQ (R11)(R11*2), R12; \
	MOVQ nb+64(FP), CX

// BIASR9: R9 = the rows' sums of fours (Q8_0B rows).
#define BIASR9 MOVQ bias+48(FP), R9

// TILEPAIRS(PAIR, NEXT, LAST): the loop of the tile kernels of 32-value
// blocks over the CX blocks, PAIR a pair of them, NEXT the weights past
// it, LAST an odd last block.
#define TILEPAIRS(PAIR, NEXT, LAST) \
	SHRQ  $1, CX; \
	JEQ   last; \
pairs:; \
	PAIR; \
	NEXT; \
	ADDQ  $64, DI; \
	ADDQ  $64, R9; \
	ADDQ  $8, DX; \
	DECQ  CX; \
	JNZ   pairs; \
last:; \
	MOVQ  nb+64(FP), AX; \
	TESTQ $1, AX; \
	JEQ   done; \
	LAST; \
done:

// KCHUNKS(CHUNK, qo, H0, H1, H2, H3): the four chunks of 64 values of a
// Q4_K or Q5_K block, CHUNK one of them: values from qo(SI) on, H0–H3
// their fifth bits (NOHI for Q4_K).
#define KCHUNKS(CHUNK, qo, H0, H1, H2, H3) \
	CHUNK(qo, 0, 32, 0, 32, H0); \
	CHUNK(qo+32, 64, 96, 64, 96, H1); \
	CHUNK(qo+64, 128, 160, 128, 160, H2); \
	CHUNK(qo+96, 192, 224, 192, 224, H3)

#define NOHI

// KNEXT(size): SI, DI, DX and R8 past a K block of size bytes, and the
// loop on while CX blocks are left.
#define KNEXT(size) \
	ADDQ $size, SI; \
	ADDQ $256, DI; \
	ADDQ $4, DX; \
	ADDQ $16, R8; \
	DECQ CX; \
	JNZ  loop

// KSCALES(T): the eight 6-bit scales and minimums of the Q4_K/Q5_K block
// at SI (get_scale_min_k4, as ggml's utmp arithmetic): AX = the scales,
// BX the minimums, a byte each. R9, R10 and T are spoilt.
#define KSCALES(T) \
	MOVL  4(SI), AX; \
	MOVL  8(SI), BX; \
	MOVL  12(SI), R9; \
	MOVL  R9, R10; \
	SHRL  $4, R10; \
	ANDL  $0x0f0f0f0f, R10; \
	MOVL  BX, T; \
	SHRL  $6, T; \
	ANDL  $0x03030303, T; \
	SHLL  $4, T; \
	ORL   T, R10; \
	ANDL  $0x3f3f3f3f, BX; \
	ANDL  $0x0f0f0f0f, R9; \
	MOVL  AX, T; \
	SHRL  $6, T; \
	ANDL  $0x03030303, T; \
	SHLL  $4, T; \
	ORL   T, R9; \
	ANDL  $0x3f3f3f3f, AX; \
	SHLQ  $32, R9; \
	ORQ   R9, AX; \
	SHLQ  $32, R10; \
	ORQ   R10, BX

// The tables. QWORDS4(name, o, v): the four qwords at name+o are v.
#define QWORDS4(name, o, v) \
	DATA name<>+(o)(SB)/8, v; \
	DATA name<>+(o+8)(SB)/8, v; \
	DATA name<>+(o+16)(SB)/8, v; \
	DATA name<>+(o+24)(SB)/8, v

// BYTES32(name, v): 32 bytes v, each qword v.
#define BYTES32(name, v) \
	QWORDS4(name, 0, v); \
	GLOBL name<>(SB), RODATA|NOPTR, $32

// WORDBCAST(name): name + 32·i broadcasts word i of each 128-bit lane
// over it.
#define WORDBCAST(name) \
	QWORDS4(name, 0, $0x0100010001000100); \
	QWORDS4(name, 32, $0x0302030203020302); \
	QWORDS4(name, 64, $0x0504050405040504); \
	QWORDS4(name, 96, $0x0706070607060706); \
	QWORDS4(name, 128, $0x0908090809080908); \
	QWORDS4(name, 160, $0x0b0a0b0a0b0a0b0a); \
	QWORDS4(name, 192, $0x0d0c0d0c0d0c0d0c); \
	QWORDS4(name, 224, $0x0f0e0f0e0f0e0f0e); \
	GLOBL name<>(SB), RODATA|NOPTR, $256

// PAIRBCAST(name): name + 32·i broadcasts word 2i over the low 128-bit
// lane and word 2i+1 over the high one.
#define PAIRBCAST(name) \
	DATA name<>+0(SB)/8, $0x0100010001000100; \
	DATA name<>+8(SB)/8, $0x0100010001000100; \
	DATA name<>+16(SB)/8, $0x0302030203020302; \
	DATA name<>+24(SB)/8, $0x0302030203020302; \
	DATA name<>+32(SB)/8, $0x0504050405040504; \
	DATA name<>+40(SB)/8, $0x0504050405040504; \
	DATA name<>+48(SB)/8, $0x0706070607060706; \
	DATA name<>+56(SB)/8, $0x0706070607060706; \
	DATA name<>+64(SB)/8, $0x0908090809080908; \
	DATA name<>+72(SB)/8, $0x0908090809080908; \
	DATA name<>+80(SB)/8, $0x0b0a0b0a0b0a0b0a; \
	DATA name<>+88(SB)/8, $0x0b0a0b0a0b0a0b0a; \
	DATA name<>+96(SB)/8, $0x0d0c0d0c0d0c0d0c; \
	DATA name<>+104(SB)/8, $0x0d0c0d0c0d0c0d0c; \
	DATA name<>+112(SB)/8, $0x0f0e0f0e0f0e0f0e; \
	DATA name<>+120(SB)/8, $0x0f0e0f0e0f0e0f0e; \
	GLOBL name<>(SB), RODATA|NOPTR, $128

// SPREAD(name, v): VPERMPS's index taking lane 0 into the low eight
// lanes and lane v into the high eight (v, as two dwords, the qword).
#define SPREAD(name, v) \
	QWORDS4(name, 0, $0); \
	QWORDS4(name, 32, v); \
	GLOBL name<>(SB), RODATA|NOPTR, $64
