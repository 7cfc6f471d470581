//go:build !noasm

#include "textflag.h"

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

loop32:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $32
	JLT  loop8
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	XORQ R10, R10
	MOVQ DX, R12

rows32:
	MOVQ (SI)(R10*8), R11
	LEAQ (R11)(AX*4), R11
	XORQ R13, R13

cols32:
	VBROADCASTSS (R12), Y4
	VFMADD231PS  (R11), Y4, Y0
	VFMADD231PS  32(R11), Y4, Y1
	VFMADD231PS  64(R11), Y4, Y2
	VFMADD231PS  96(R11), Y4, Y3
	ADDQ         $4, R12
	ADDQ         $4, R11
	INCQ         R13
	CMPQ         R13, R9
	JLT          cols32
	INCQ         R10
	CMPQ         R10, R8
	JLT          rows32
	VMOVUPS      Y0, (DI)(AX*4)
	VMOVUPS      Y1, 32(DI)(AX*4)
	VMOVUPS      Y2, 64(DI)(AX*4)
	VMOVUPS      Y3, 96(DI)(AX*4)
	ADDQ         $32, AX
	JMP          loop32

loop8:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $8
	JLT  done
	VMOVAPS Y15, Y0
	XORQ R10, R10
	MOVQ DX, R12

rows8:
	MOVQ (SI)(R10*8), R11
	LEAQ (R11)(AX*4), R11
	XORQ R13, R13

cols8:
	VBROADCASTSS (R12), Y4
	VFMADD231PS  (R11), Y4, Y0
	ADDQ         $4, R12
	ADDQ         $4, R11
	INCQ         R13
	CMPQ         R13, R9
	JLT          cols8
	INCQ         R10
	CMPQ         R10, R8
	JLT          rows8
	VMOVUPS      Y0, (DI)(AX*4)
	ADDQ         $8, AX
	JMP          loop8

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
	MOVQ o+0(FP), DI
	MOVQ tp+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ ntaps+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS bias+40(FP), Y15
	XORQ AX, AX

y8:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $64
	JLT  yrest
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	VMOVAPS Y15, Y4
	VMOVAPS Y15, Y5
	VMOVAPS Y15, Y6
	VMOVAPS Y15, Y7
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y8s

y8k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	VFMADD231PS  96(R11)(AX*4), Y8, Y3
	VFMADD231PS  128(R11)(AX*4), Y8, Y4
	VFMADD231PS  160(R11)(AX*4), Y8, Y5
	VFMADD231PS  192(R11)(AX*4), Y8, Y6
	VFMADD231PS  224(R11)(AX*4), Y8, Y7
	INCQ         R10
	CMPQ         R10, R8
	JLT          y8k

y8s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	VMOVUPS Y5, 160(DI)(AX*4)
	VMOVUPS Y6, 192(DI)(AX*4)
	VMOVUPS Y7, 224(DI)(AX*4)
	ADDQ    $64, AX
	JMP     y8

yrest:
	SHRQ $3, BX
	CMPQ BX, $7
	JEQ  y7
	CMPQ BX, $6
	JEQ  y6
	CMPQ BX, $5
	JEQ  y5
	CMPQ BX, $4
	JEQ  y4
	CMPQ BX, $3
	JEQ  y3
	CMPQ BX, $2
	JEQ  y2
	CMPQ BX, $1
	JEQ  y1
	JMP  ydone

y7:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	VMOVAPS Y15, Y4
	VMOVAPS Y15, Y5
	VMOVAPS Y15, Y6
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y7s

y7k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	VFMADD231PS  96(R11)(AX*4), Y8, Y3
	VFMADD231PS  128(R11)(AX*4), Y8, Y4
	VFMADD231PS  160(R11)(AX*4), Y8, Y5
	VFMADD231PS  192(R11)(AX*4), Y8, Y6
	INCQ         R10
	CMPQ         R10, R8
	JLT          y7k

y7s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	VMOVUPS Y5, 160(DI)(AX*4)
	VMOVUPS Y6, 192(DI)(AX*4)
	JMP     ydone

y6:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	VMOVAPS Y15, Y4
	VMOVAPS Y15, Y5
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y6s

y6k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	VFMADD231PS  96(R11)(AX*4), Y8, Y3
	VFMADD231PS  128(R11)(AX*4), Y8, Y4
	VFMADD231PS  160(R11)(AX*4), Y8, Y5
	INCQ         R10
	CMPQ         R10, R8
	JLT          y6k

y6s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	VMOVUPS Y5, 160(DI)(AX*4)
	JMP     ydone

y5:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	VMOVAPS Y15, Y4
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y5s

y5k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	VFMADD231PS  96(R11)(AX*4), Y8, Y3
	VFMADD231PS  128(R11)(AX*4), Y8, Y4
	INCQ         R10
	CMPQ         R10, R8
	JLT          y5k

y5s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	VMOVUPS Y4, 128(DI)(AX*4)
	JMP     ydone

y4:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	VMOVAPS Y15, Y3
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y4s

y4k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	VFMADD231PS  96(R11)(AX*4), Y8, Y3
	INCQ         R10
	CMPQ         R10, R8
	JLT          y4k

y4s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	VMOVUPS Y3, 96(DI)(AX*4)
	JMP     ydone

y3:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	VMOVAPS Y15, Y2
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y3s

y3k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	VFMADD231PS  64(R11)(AX*4), Y8, Y2
	INCQ         R10
	CMPQ         R10, R8
	JLT          y3k

y3s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	VMOVUPS Y2, 64(DI)(AX*4)
	JMP     ydone

y2:
	VMOVAPS Y15, Y0
	VMOVAPS Y15, Y1
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y2s

y2k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	VFMADD231PS  32(R11)(AX*4), Y8, Y1
	INCQ         R10
	CMPQ         R10, R8
	JLT          y2k

y2s:
	VMOVUPS Y0, (DI)(AX*4)
	VMOVUPS Y1, 32(DI)(AX*4)
	JMP     ydone

y1:
	VMOVAPS Y15, Y0
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  y1s

y1k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Y8
	VFMADD231PS  (R11)(AX*4), Y8, Y0
	INCQ         R10
	CMPQ         R10, R8
	JLT          y1k

y1s:
	VMOVUPS Y0, (DI)(AX*4)
	JMP     ydone

ydone:
	VZEROUPPER
	RET

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

// func dwPadRows(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int)
//
// For each of rows rows: pre zeros, then cols values of the source row,
// then post zeros; rows are ldd floats apart in dst and lds in src. The
// last cols mod 8 values of a row are moved with masked loads and stores,
// which touch nothing past the row.
TEXT ·dwPadRows(SB), NOSPLIT, $0-64
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), R9
	MOVQ rows+32(FP), R10
	MOVQ pre+40(FP), R11
	MOVQ cols+48(FP), R12
	MOVQ post+56(FP), R13
	SHLQ $2, R8
	SHLQ $2, R9
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

ppre:
	CMPQ AX, R11
	JGE  pcopy
	MOVL $0, (DX)
	ADDQ $4, DX
	INCQ AX
	JMP  ppre

pcopy:
	XORQ AX, AX

pvec:
	CMPQ    AX, R14
	JGE     ptail
	VMOVUPS (SI)(AX*4), Y0
	VMOVUPS Y0, (DX)(AX*4)
	ADDQ    $8, AX
	JMP     pvec

ptail:
	CMPQ       AX, R12
	JGE        ppost0
	VMASKMOVPS (SI)(AX*4), Y6, Y0
	VMASKMOVPS Y0, Y6, (DX)(AX*4)

ppost0:
	LEAQ (DX)(R12*4), DX
	XORQ AX, AX

ppost:
	CMPQ AX, R13
	JGE  pnext
	MOVL $0, (DX)
	ADDQ $4, DX
	INCQ AX
	JMP  ppost

pnext:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JMP  prow

pdone:
	VZEROUPPER
	RET

// func dwSplitRows(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int)
//
// For each of rows rows (ld floats apart in e and o, ldx in x): zeros in
// e[0, p) and o[0, p) (whole vectors: up to 7 more values are written
// past p), then e[lo+j] = x[off+2j] and o[lo+j] = x[off+2j+1] for
// j < pairs, then o[lo−1] = x[0] if head is not 0, and e[lo+pairs] =
// x[tail] if tail is not negative.
TEXT ·dwSplitRows(SB), NOSPLIT, $0-96
	MOVQ e+0(FP), DI
	MOVQ o+8(FP), SI
	MOVQ ld+16(FP), R8
	MOVQ x+24(FP), DX
	MOVQ ldx+32(FP), R9
	MOVQ rows+40(FP), R10
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
	CMPQ head+80(FP), $0
	JEQ  stail
	MOVL (DX), BX
	MOVL BX, -4(SI)

stail:
	MOVQ tail+88(FP), BX
	CMPQ BX, $0
	JLT  snext
	MOVL (DX)(BX*4), BX
	MOVL BX, (DI)(R14*4)

snext:
	SUBQ R12, DI
	SUBQ R12, SI
	ADDQ R8, DI
	ADDQ R8, SI
	ADDQ R9, DX
	DECQ R10
	JMP  srow

sdone:
	VZEROUPPER
	RET

// func dwTapsAVX512(o *float32, tp *[49]*float32, w *float32, ntaps, n int, bias float32)
//
// dwTapsAVX2 on zmm registers, n a multiple of 16: 128 outputs at a time
// in eight accumulators, then the rest (16 to 112 outputs) in one pass of
// one to seven accumulators, so that short rows take one pass over the
// taps; the same order of taps, so the same results.
TEXT ·dwTapsAVX512(SB), NOSPLIT, $0-44
	MOVQ o+0(FP), DI
	MOVQ tp+8(FP), SI
	MOVQ w+16(FP), DX
	MOVQ ntaps+24(FP), R8
	MOVQ n+32(FP), CX
	VBROADCASTSS bias+40(FP), Z15
	XORQ AX, AX

z8:
	MOVQ CX, BX
	SUBQ AX, BX
	CMPQ BX, $128
	JLT  zrest
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	VMOVAPS Z15, Z3
	VMOVAPS Z15, Z4
	VMOVAPS Z15, Z5
	VMOVAPS Z15, Z6
	VMOVAPS Z15, Z7
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z8s

z8k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	VFMADD231PS  192(R11)(AX*4), Z8, Z3
	VFMADD231PS  256(R11)(AX*4), Z8, Z4
	VFMADD231PS  320(R11)(AX*4), Z8, Z5
	VFMADD231PS  384(R11)(AX*4), Z8, Z6
	VFMADD231PS  448(R11)(AX*4), Z8, Z7
	INCQ         R10
	CMPQ         R10, R8
	JLT          z8k

z8s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	VMOVUPS Z4, 256(DI)(AX*4)
	VMOVUPS Z5, 320(DI)(AX*4)
	VMOVUPS Z6, 384(DI)(AX*4)
	VMOVUPS Z7, 448(DI)(AX*4)
	ADDQ    $128, AX
	JMP     z8

zrest:
	SHRQ $4, BX
	CMPQ BX, $7
	JEQ  z7
	CMPQ BX, $6
	JEQ  z6
	CMPQ BX, $5
	JEQ  z5
	CMPQ BX, $4
	JEQ  z4
	CMPQ BX, $3
	JEQ  z3
	CMPQ BX, $2
	JEQ  z2
	CMPQ BX, $1
	JEQ  z1
	JMP  zdone

z7:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	VMOVAPS Z15, Z3
	VMOVAPS Z15, Z4
	VMOVAPS Z15, Z5
	VMOVAPS Z15, Z6
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z7s

z7k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	VFMADD231PS  192(R11)(AX*4), Z8, Z3
	VFMADD231PS  256(R11)(AX*4), Z8, Z4
	VFMADD231PS  320(R11)(AX*4), Z8, Z5
	VFMADD231PS  384(R11)(AX*4), Z8, Z6
	INCQ         R10
	CMPQ         R10, R8
	JLT          z7k

z7s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	VMOVUPS Z4, 256(DI)(AX*4)
	VMOVUPS Z5, 320(DI)(AX*4)
	VMOVUPS Z6, 384(DI)(AX*4)
	JMP     zdone

z6:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	VMOVAPS Z15, Z3
	VMOVAPS Z15, Z4
	VMOVAPS Z15, Z5
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z6s

z6k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	VFMADD231PS  192(R11)(AX*4), Z8, Z3
	VFMADD231PS  256(R11)(AX*4), Z8, Z4
	VFMADD231PS  320(R11)(AX*4), Z8, Z5
	INCQ         R10
	CMPQ         R10, R8
	JLT          z6k

z6s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	VMOVUPS Z4, 256(DI)(AX*4)
	VMOVUPS Z5, 320(DI)(AX*4)
	JMP     zdone

z5:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	VMOVAPS Z15, Z3
	VMOVAPS Z15, Z4
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z5s

z5k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	VFMADD231PS  192(R11)(AX*4), Z8, Z3
	VFMADD231PS  256(R11)(AX*4), Z8, Z4
	INCQ         R10
	CMPQ         R10, R8
	JLT          z5k

z5s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	VMOVUPS Z4, 256(DI)(AX*4)
	JMP     zdone

z4:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	VMOVAPS Z15, Z3
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z4s

z4k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	VFMADD231PS  192(R11)(AX*4), Z8, Z3
	INCQ         R10
	CMPQ         R10, R8
	JLT          z4k

z4s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	VMOVUPS Z3, 192(DI)(AX*4)
	JMP     zdone

z3:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	VMOVAPS Z15, Z2
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z3s

z3k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	VFMADD231PS  128(R11)(AX*4), Z8, Z2
	INCQ         R10
	CMPQ         R10, R8
	JLT          z3k

z3s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	VMOVUPS Z2, 128(DI)(AX*4)
	JMP     zdone

z2:
	VMOVAPS Z15, Z0
	VMOVAPS Z15, Z1
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z2s

z2k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	VFMADD231PS  64(R11)(AX*4), Z8, Z1
	INCQ         R10
	CMPQ         R10, R8
	JLT          z2k

z2s:
	VMOVUPS Z0, (DI)(AX*4)
	VMOVUPS Z1, 64(DI)(AX*4)
	JMP     zdone

z1:
	VMOVAPS Z15, Z0
	XORQ R10, R10
	CMPQ R8, $0
	JEQ  z1s

z1k:
	MOVQ         (SI)(R10*8), R11
	VBROADCASTSS (DX)(R10*4), Z8
	VFMADD231PS  (R11)(AX*4), Z8, Z0
	INCQ         R10
	CMPQ         R10, R8
	JLT          z1k

z1s:
	VMOVUPS Z0, (DI)(AX*4)
	JMP     zdone

zdone:
	VZEROUPPER
	RET

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
