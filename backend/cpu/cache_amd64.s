//go:build !noasm

#include "textflag.h"
#include "regs_amd64.h"

// func dotRowsAVX2(s, q, k *float32, rows, stride, d int)
//
// s[j] = Σ_c q[c]·k[j·stride+c] for j < rows, c < d; d is a positive
// multiple of 8. Eight rows at a time, each in an accumulator of its own,
// then the rows left one at a time.
TEXT ·dotRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ k+16(FP), DX
	MOVQ rows+24(FP), CX
	MOVQ stride+32(FP), R8
	MOVQ d+40(FP), R9
	SHLQ $2, R8               // a row's stride in bytes
	SHLQ $2, R9               // d in bytes
	LEAQ (R8)(R8*2), R12      // 3 rows
	LEAQ (R8)(R8*4), R13      // 5 rows
	LEAQ (R12)(R8*4), R11     // 7 rows

eight:
	CMPQ CX, $8
	JL   one
	REGS8(ZEROPS, VY, 0, 0)
	XORQ AX, AX

eightLoop:
	LEAQ        (DX)(AX*1), R10
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (R10), Y8, Y0
	VFMADD231PS (R10)(R8*1), Y8, Y1
	VFMADD231PS (R10)(R8*2), Y8, Y2
	VFMADD231PS (R10)(R12*1), Y8, Y3
	VFMADD231PS (R10)(R8*4), Y8, Y4
	VFMADD231PS (R10)(R13*1), Y8, Y5
	VFMADD231PS (R10)(R12*2), Y8, Y6
	VFMADD231PS (R10)(R11*1), Y8, Y7
	ADDQ        $32, AX
	CMPQ        AX, R9
	JL          eightLoop

	// The eight sums, side by side.
	VHADDPS    Y1, Y0, Y0
	VHADDPS    Y3, Y2, Y2
	VHADDPS    Y5, Y4, Y4
	VHADDPS    Y7, Y6, Y6
	VHADDPS    Y2, Y0, Y0
	VHADDPS    Y6, Y4, Y4
	VPERM2F128 $0x20, Y4, Y0, Y1
	VPERM2F128 $0x31, Y4, Y0, Y2
	VADDPS     Y2, Y1, Y1
	VMOVUPS    Y1, (DI)
	ADDQ       $32, DI
	LEAQ       (DX)(R8*8), DX
	SUBQ       $8, CX
	JMP        eight

one:
	TESTQ  CX, CX
	JLE    done
	VXORPS Y0, Y0, Y0
	XORQ   AX, AX

oneLoop:
	VMOVUPS     (SI)(AX*1), Y8
	VFMADD231PS (DX)(AX*1), Y8, Y0
	ADDQ        $32, AX
	CMPQ        AX, R9
	JL          oneLoop
	VEXTRACTF128 $1, Y0, X1
	VADDPS      X1, X0, X0
	VHADDPS     X0, X0, X0
	VHADDPS     X0, X0, X0
	VMOVSS      X0, (DI)
	ADDQ        $4, DI
	ADDQ        R8, DX
	DECQ        CX
	JMP         one

done:
	VZEROUPPER
	RET

// weightRowsAVX2's steps on accumulator r, columns 8i.. of the block:
// add the weight in Y8 times the row at R10; store at R10.
#define WFMA(a, b, i, r) VFMADD231PS 32*i(R10), Y8, r
#define WPUT(a, b, i, r) VMOVUPS r, 32*i(R10)

// The accumulator Y0 alone, as a register list.
#define WACC1(m, v, a, b) m(a, b, 0, Y0)

// The rows of a block of weightRowsAVX2 into the accumulators of list
// (REGS8 or WACC1): the weight broadcast into Y8, its row at R10 (R8
// bytes on each row), then on to store.
#define WROWS(loop, store, list) \
loop:                             \
	CMPQ         R11, CX;         \
	JGE          store;           \
	VBROADCASTSS (SI)(R11*4), Y8; \
	list(WFMA, VY, 0, 0);         \
	ADDQ         R8, R10;         \
	INCQ         R11;             \
	JMP          loop

// func weightRowsAVX2(o, p, v *float32, rows, stride, d int)
//
// o[c] = Σ_j p[j]·v[j·stride+c] for c < d, j < rows; d is a positive
// multiple of 8. Blocks of 64 columns in eight accumulators, then of 8.
TEXT ·weightRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ o+0(FP), DI
	MOVQ p+8(FP), SI
	MOVQ v+16(FP), DX
	MOVQ rows+24(FP), CX
	MOVQ stride+32(FP), R8
	MOVQ d+40(FP), R9
	SHLQ $2, R8
	SHLQ $2, R9
	XORQ AX, AX               // the block's first column, in bytes

wide:
	MOVQ   R9, BX
	SUBQ   AX, BX
	CMPQ   BX, $256
	JL     narrow
	REGS8(ZEROPS, VY, 0, 0)
	LEAQ   (DX)(AX*1), R10
	XORQ   R11, R11

	WROWS(wideRows, wideStore, REGS8)

wideStore:
	LEAQ    (DI)(AX*1), R10
	REGS8(WPUT, VY, 0, 0)
	ADDQ    $256, AX
	JMP     wide

narrow:
	CMPQ   AX, R9
	JGE    wdone
	VXORPS Y0, Y0, Y0
	LEAQ   (DX)(AX*1), R10
	XORQ   R11, R11

	WROWS(narrowRows, narrowStore, WACC1)

narrowStore:
	VMOVUPS Y0, (DI)(AX*1)
	ADDQ    $32, AX
	JMP     narrow

wdone:
	VZEROUPPER
	RET

// func widenF16AVX2(dst *float32, src *uint16, n int)
//
// dst[i] = the f16 src[i] as float32 (exact; a NaN keeps its payload,
// quieted), n a positive multiple of 8. Needs F16C.
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

widen:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JG        widen
	VZEROUPPER
	RET
