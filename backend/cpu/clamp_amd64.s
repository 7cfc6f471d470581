//go:build !noasm

#include "textflag.h"

// func reluAVX2(d, s []float32)
//
// d[i] = s[i] < 0 ? 0 : s[i] for the first len(d)&^7 elements, without
// branches: a NaN or −0 passes through, as in reluLoop.
TEXT ·reluAVX2(SB), NOSPLIT, $0-48
	MOVQ   d_base+0(FP), DI
	MOVQ   d_len+8(FP), CX
	MOVQ   s_base+24(FP), SI
	ANDQ   $-8, CX
	VXORPS Y1, Y1, Y1
	XORQ   AX, AX

relu:
	CMPQ    AX, CX
	JGE     reludone
	VMOVUPS (SI)(AX*4), Y0
	VCMPPS  $0x11, Y1, Y0, Y2 // Y2 = Y0 < 0 (ordered, quiet)
	VANDNPS Y0, Y2, Y3        // Y3 = Y0 where not Y2, else 0
	VMOVUPS Y3, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     relu

reludone:
	VZEROUPPER
	RET

// func clipAVX2(d, s []float32, lo, hi float32)
//
// d[i] = min(max(s[i], lo), hi) in clipLoop's order and with its
// comparisons (a NaN passes through) for the first len(d)&^7 elements.
TEXT ·clipAVX2(SB), NOSPLIT, $0-56
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         s_base+24(FP), SI
	ANDQ         $-8, CX
	VBROADCASTSS lo+48(FP), Y4
	VBROADCASTSS hi+52(FP), Y5
	XORQ         AX, AX

clip:
	CMPQ      AX, CX
	JGE       clipdone
	VMOVUPS   (SI)(AX*4), Y0
	VCMPPS    $0x11, Y4, Y0, Y2 // x < lo
	VBLENDVPS Y2, Y4, Y0, Y0    // x = lo where x < lo
	VCMPPS    $0x1e, Y5, Y0, Y3 // x > hi (ordered, quiet)
	VBLENDVPS Y3, Y5, Y0, Y0    // x = hi where x > hi
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       clip

clipdone:
	VZEROUPPER
	RET

// func powAVX2(d, s []float32, cube bool)
//
// d[i] = s[i]·s[i] (·s[i] when cube, as (x·x)·x) for the first
// len(d)&^7 elements.
TEXT ·powAVX2(SB), NOSPLIT, $0-49
	MOVQ  d_base+0(FP), DI
	MOVQ  d_len+8(FP), CX
	MOVQ  s_base+24(FP), SI
	MOVBQZX cube+48(FP), R8
	ANDQ  $-8, CX
	XORQ  AX, AX

pow:
	CMPQ    AX, CX
	JGE     powdone
	VMOVUPS (SI)(AX*4), Y0
	VMULPS  Y0, Y0, Y1
	CMPQ    R8, $0
	JEQ     powstore
	VMULPS  Y0, Y1, Y1

powstore:
	VMOVUPS Y1, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     pow

powdone:
	VZEROUPPER
	RET

// func maxIntoAVX2(d, s []float32)
//
// d[i] = max(d[i], s[i]) for the first len(d)&^7 elements, bit for bit
// as the compiler computes the builtin max (a NaN, a +0 over a −0): on
// the negated operands x' = −x, y' = −y, m = MINPS(x', y') (y' where
// either is a NaN), then −(m | MINPS(m, x')).
TEXT ·maxIntoAVX2(SB), NOSPLIT, $0-48
	MOVQ         d_base+0(FP), DI
	MOVQ         d_len+8(FP), CX
	MOVQ         s_base+24(FP), SI
	ANDQ         $-8, CX
	XORQ         AX, AX
	MOVL         $0x80000000, DX
	MOVD         DX, X5
	VPBROADCASTD X5, Y5

mxloop:
	CMPQ    AX, CX
	JGE     mxdone
	VXORPS  (DI)(AX*4), Y5, Y0 // x'
	VXORPS  (SI)(AX*4), Y5, Y1 // y'
	VMINPS  Y1, Y0, Y2         // m = x' < y' ? x' : y'
	VMINPS  Y0, Y2, Y3         // m < x' ? m : x'
	VORPS   Y3, Y2, Y2
	VXORPS  Y5, Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     mxloop

mxdone:
	VZEROUPPER
	RET
