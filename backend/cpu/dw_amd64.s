//go:build !noasm

#include "textflag.h"
#include "dwrows_amd64.h"
#include "regs_amd64.h"

// The accumulators of the depthwise kernels below, k of them, each
// through m(acc, off, b, w): acc the register, off the byte offset of its
// outputs, and b, w passed on (the bias and the weight registers). v picks
// the width (VY or VZ, regs_amd64.h).
#define ACC1(m, v, b, w) m(v(Y0, Z0), 0*v(32, 64), b, w)
#define ACC2(m, v, b, w) ACC1(m, v, b, w); m(v(Y1, Z1), 1*v(32, 64), b, w)
#define ACC3(m, v, b, w) ACC2(m, v, b, w); m(v(Y2, Z2), 2*v(32, 64), b, w)
#define ACC4(m, v, b, w) ACC3(m, v, b, w); m(v(Y3, Z3), 3*v(32, 64), b, w)
#define ACC5(m, v, b, w) ACC4(m, v, b, w); m(v(Y4, Z4), 4*v(32, 64), b, w)
#define ACC6(m, v, b, w) ACC5(m, v, b, w); m(v(Y5, Z5), 5*v(32, 64), b, w)
#define ACC7(m, v, b, w) ACC6(m, v, b, w); m(v(Y6, Z6), 6*v(32, 64), b, w)
#define ACC8(m, v, b, w) ACC7(m, v, b, w); m(v(Y7, Z7), 7*v(32, 64), b, w)

// The steps of one accumulator: start from the bias b; add the weight w
// times the tap row at R11 (dwS1AVX2) or at R11 from output AX on
// (dwTaps*); store at output AX.
#define ACCBIAS(a, off, b, w) VMOVAPS b, a
#define ACCROW(a, off, b, w) VFMADD231PS off(R11), w, a
#define ACCTAP(a, off, b, w) VFMADD231PS off(R11)(AX*4), w, a
#define ACCPUT(a, off, b, w) VMOVUPS a, off(DI)(AX*4)

// One block of dwS1AVX2: while at least n outputs remain (else on to
// next), the accumulators of accs summed over the kh·kw taps (rows and
// cols the loops' labels), stored, and AX moved on by n.
#define S1BLOCK(accs, n, top, next, rows, cols) \
top:                            \
	MOVQ CX, BX;                \
	SUBQ AX, BX;                \
	CMPQ BX, $n;                \
	JLT  next;                  \
	accs(ACCBIAS, VY, Y15, Y4); \
	XORQ R10, R10;              \
	MOVQ DX, R12;               \
rows:                           \
	MOVQ (SI)(R10*8), R11;      \
	LEAQ (R11)(AX*4), R11;      \
	XORQ R13, R13;              \
cols:                           \
	VBROADCASTSS (R12), Y4;     \
	accs(ACCROW, VY, Y15, Y4);  \
	ADDQ         $4, R12;       \
	ADDQ         $4, R11;       \
	INCQ         R13;           \
	CMPQ         R13, R9;       \
	JLT          cols;          \
	INCQ         R10;           \
	CMPQ         R10, R8;       \
	JLT          rows;          \
	accs(ACCPUT, VY, Y15, Y4);  \
	ADDQ         $n, AX;        \
	JMP          top

// One pass of dwTaps* over the ntaps taps for the accumulators of accs
// (bias b, weight w): from the bias, every tap added at loop, stored at
// store.
#define TAPSPASS(accs, v, b, w, loop, store) \
	accs(ACCBIAS, v, b, w);        \
	XORQ R10, R10;                 \
	CMPQ R8, $0;                   \
	JEQ  store;                    \
loop:                              \
	MOVQ         (SI)(R10*8), R11; \
	VBROADCASTSS (DX)(R10*4), w;   \
	accs(ACCTAP, v, b, w);         \
	INCQ         R10;              \
	CMPQ         R10, R8;          \
	JLT          loop;             \
store:                             \
	accs(ACCPUT, v, b, w)

// TAPSPASS at label top, then on to vdone.
#define TAPSREST(accs, v, b, w, top, loop, store) \
top:                                      \
	TAPSPASS(accs, v, b, w, loop, store); \
	JMP vdone

// The body of dwTapsAVX2 (VY, bias bv = Y15, weight wv = Y8, n8 = 64
// outputs a block of eight vectors, shift 3) and of dwTapsAVX512 (VZ,
// Z15, Z8, 128, 4): blocks of eight accumulators while n allows, then one
// pass of the one to seven that the rest needs.
#define DWTAPS(v, bv, wv, n8, shift) \
	MOVQ o+0(FP), DI;                        \
	MOVQ tp+8(FP), SI;                       \
	MOVQ w+16(FP), DX;                       \
	MOVQ ntaps+24(FP), R8;                   \
	MOVQ n+32(FP), CX;                       \
	VBROADCASTSS bias+40(FP), bv;            \
	XORQ AX, AX;                             \
v8:                                          \
	MOVQ CX, BX;                             \
	SUBQ AX, BX;                             \
	CMPQ BX, $n8;                            \
	JLT  vrest;                              \
	TAPSPASS(ACC8, v, bv, wv, v8k, v8s);     \
	ADDQ    $n8, AX;                         \
	JMP     v8;                              \
vrest:                                       \
	SHRQ $shift, BX;                         \
	CMPQ BX, $7;                             \
	JEQ  v7;                                 \
	CMPQ BX, $6;                             \
	JEQ  v6;                                 \
	CMPQ BX, $5;                             \
	JEQ  v5;                                 \
	CMPQ BX, $4;                             \
	JEQ  v4;                                 \
	CMPQ BX, $3;                             \
	JEQ  v3;                                 \
	CMPQ BX, $2;                             \
	JEQ  v2;                                 \
	CMPQ BX, $1;                             \
	JEQ  v1;                                 \
	JMP  vdone;                              \
	TAPSREST(ACC7, v, bv, wv, v7, v7k, v7s); \
	TAPSREST(ACC6, v, bv, wv, v6, v6k, v6s); \
	TAPSREST(ACC5, v, bv, wv, v5, v5k, v5s); \
	TAPSREST(ACC4, v, bv, wv, v4, v4k, v4s); \
	TAPSREST(ACC3, v, bv, wv, v3, v3k, v3s); \
	TAPSREST(ACC2, v, bv, wv, v2, v2k, v2s); \
	TAPSREST(ACC1, v, bv, wv, v1, v1k, v1s); \
vdone:                                       \
	VZEROUPPER;                              \
	RET

// func dwS1AVX2(o *float32, rp *[7]*float32, w *float32, kh, kw, n int, bias float32)
//
// o[x] = bias + Σ_r Σ_c w[r·kw+c]·rp[r][x+c] for x in [0, n), n a multiple
// of 8: 32 outputs at a time in four accumulators, then 8 at a time. The
// taps are added in row-major order, each with one fused multiply-add.
TEXT ·dwS1AVX2(SB), NOSPLIT, $0-52
	MOVQ o+0(FP), DI
	MOVQ rp+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ kh+24(FP), R8
	MOVQ kw+32(FP), R9
	MOVQ n+40(FP), CX
	VBROADCASTSS bias+48(FP), Y15
	XORQ AX, AX
	S1BLOCK(ACC4, 32, loop32, loop8, rows32, cols32)
	S1BLOCK(ACC1, 8, loop8, done, rows8, cols8)

done:
	VZEROUPPER
	RET


// func dwTapsAVX2(o *float32, tp *[49]*float32, w *float32, ntaps, n int, bias float32)
//
// o[x] = bias + Σ_t w[t]·tp[t][x] for x in [0, n), n a multiple of 8: 64
// outputs at a time in eight accumulators (enough independent chains to
// hide the latency of the fused multiply-adds), then the rest (8 to 56
// outputs) in one pass of one to seven accumulators, so that short rows
// take one pass over the taps. The taps are added in order t = 0, 1, …,
// each with one fused multiply-add.
TEXT ·dwTapsAVX2(SB), NOSPLIT, $0-44
	DWTAPS(VY, Y15, Y8, 64, 3)

// dwMask<>+4·(8−r) is the mask of the first r of 8 values.
DATA dwMask<>+0(SB)/8, $0xffffffffffffffff
DATA dwMask<>+8(SB)/8, $0xffffffffffffffff
DATA dwMask<>+16(SB)/8, $0xffffffffffffffff
DATA dwMask<>+24(SB)/8, $0xffffffffffffffff
DATA dwMask<>+32(SB)/8, $0
DATA dwMask<>+40(SB)/8, $0
DATA dwMask<>+48(SB)/8, $0
DATA dwMask<>+56(SB)/8, $0
GLOBL dwMask<>(SB), RODATA|NOPTR, $64

// dwPadRows's zeros before or after a row: n floats at DX on (DX moves
// past them, AX counts them), then on to done.
#define PADZEROS(loop, n, done) \
loop:              \
	CMPQ AX, n;    \
	JGE  done;     \
	MOVL $0, (DX); \
	ADDQ $4, DX;   \
	INCQ AX;       \
	JMP  loop

// func dwPadRows(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int)
//
// For each of rows rows: pre zeros, then cols values of the source row,
// then post zeros; rows are ldd floats apart in dst and lds in src. The
// last cols mod 8 values of a row are moved with masked loads and stores,
// which touch nothing past the row.
TEXT ·dwPadRows(SB), NOSPLIT, $0-64
	PADARGS
	MOVQ R12, R14
	ANDQ $-8, R14 // whole vectors of a row
	// Y6: the mask of the last cols mod 8 values of a row.
	MOVQ R12, CX
	ANDQ $7, CX
	NEGQ CX
	LEAQ dwMask<>(SB), BX
	VMOVDQU 32(BX)(CX*4), Y6

prow:
	CMPQ R10, $0
	JLE  pdone
	MOVQ DI, DX
	XORQ AX, AX

	PADZEROS(ppre, R11, pcopy)

pcopy:
	XORQ AX, AX

	PADVEC(pvec, ptail, Y0, 8)

ptail:
	CMPQ       AX, R12
	JGE        ppost0
	VMASKMOVPS (SI)(AX*4), Y6, Y0
	VMASKMOVPS Y0, Y6, (DX)(AX*4)

ppost0:
	LEAQ (DX)(R12*4), DX
	XORQ AX, AX

	PADZEROS(ppost, R13, pnext)

pnext:
	PADNEXT(prow, pdone)

// func dwSplitRows(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int)
//
// For each of rows rows (ld floats apart in e and o, ldx in x): zeros in
// e[0, p) and o[0, p) (whole vectors: up to 7 more values are written
// past p), then e[lo+j] = x[off+2j] and o[lo+j] = x[off+2j+1] for
// j < pairs, then o[lo−1] = x[0] if head is not 0, and e[lo+pairs] =
// x[tail] if tail is not negative.
TEXT ·dwSplitRows(SB), NOSPLIT, $0-96
	SPLITARGS
	MOVQ p+48(FP), R11
	MOVQ lo+56(FP), R12
	MOVQ off+64(FP), R13
	MOVQ pairs+72(FP), R14
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R12
	VXORPS Y5, Y5, Y5

srow:
	CMPQ R10, $0
	JLE  sdone
	XORQ AX, AX
	CMPQ R12, $32
	JGT  szero

	// lo ≤ 8: one vector of zeros covers [0, lo), and the zeros after
	// the pairs start at the vector that holds e[lo+pairs]; the values
	// written below cover the rest.
	VMOVUPS Y5, (DI)
	VMOVUPS Y5, (SI)
	MOVQ    R12, AX
	SHRQ    $2, AX
	ADDQ    R14, AX
	ANDQ    $-8, AX

szero:
	CMPQ    AX, R11
	JGE     score
	VMOVUPS Y5, (DI)(AX*4)
	VMOVUPS Y5, (SI)(AX*4)
	ADDQ    $8, AX
	JMP     szero

score:
	ADDQ R12, DI
	ADDQ R12, SI
	LEAQ (DX)(R13*4), CX
	MOVQ R14, BX
	ANDQ $-8, BX
	XORQ AX, AX

svec:
	CMPQ    AX, BX
	JGE     sscal
	VMOVUPS (CX)(AX*8), Y0
	VMOVUPS 32(CX)(AX*8), Y1
	VSHUFPS $0x88, Y1, Y0, Y2
	VSHUFPS $0xDD, Y1, Y0, Y3
	VPERMPD $0xD8, Y2, Y2
	VPERMPD $0xD8, Y3, Y3
	VMOVUPS Y2, (DI)(AX*4)
	VMOVUPS Y3, (SI)(AX*4)
	ADDQ    $8, AX
	JMP     svec

sscal:
	CMPQ AX, R14
	JGE  sfix
	MOVL (CX)(AX*8), BX
	MOVL BX, (DI)(AX*4)
	MOVL 4(CX)(AX*8), BX
	MOVL BX, (SI)(AX*4)
	INCQ AX
	JMP  sscal

sfix:
	SPLITHEAD(SI, stail)

stail:
	SPLITTAILQ(tail+88(FP), snext)
	MOVL BX, (DI)(R14*4)

snext:
	SUBQ R12, DI
	SUBQ R12, SI
	SPLITNEXT(srow, sdone)

// func dwTapsAVX512(o *float32, tp *[49]*float32, w *float32, ntaps, n int, bias float32)
//
// dwTapsAVX2 on zmm registers, n a multiple of 16: 128 outputs at a time
// in eight accumulators, then the rest (16 to 112 outputs) in one pass of
// one to seven accumulators, so that short rows take one pass over the
// taps; the same order of taps, so the same results.
TEXT ·dwTapsAVX512(SB), NOSPLIT, $0-44
	DWTAPS(VZ, Z15, Z8, 128, 4)

// func copyRuns(dst, src unsafe.Pointer, taps *int, n int, ro, rd *int, nr int)
//
// For r < n, for i < nr in order: copies the 16 floats at src +
// 4·taps[r] + ro[i] to dst + 64·r + rd[i] (ro, rd in bytes).
TEXT ·copyRuns(SB), NOSPLIT, $0-56
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  taps+16(FP), R8
	MOVQ  n+24(FP), CX
	MOVQ  ro+32(FP), R9
	MOVQ  rd+40(FP), R10
	MOVQ  nr+48(FP), R11
	TESTQ CX, CX
	JLE   crdone

crrow:
	MOVQ (R8), AX
	SHLQ $2, AX
	ADDQ SI, AX
	XORQ BX, BX

crrun:
	MOVQ    (R9)(BX*8), DX
	MOVQ    (R10)(BX*8), R12
	VMOVUPS (AX)(DX*1), Y0
	VMOVUPS 32(AX)(DX*1), Y1
	VMOVUPS Y0, (DI)(R12*1)
	VMOVUPS Y1, 32(DI)(R12*1)
	INCQ    BX
	CMPQ    BX, R11
	JLT     crrun
	ADDQ    $8, R8
	ADDQ    $64, DI
	DECQ    CX
	JNZ     crrow

crdone:
	VZEROUPPER
	RET
