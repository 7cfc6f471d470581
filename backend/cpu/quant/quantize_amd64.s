//go:build !noasm

#include "textflag.h"

DATA q8consts<>+0(SB)/4, $0x7fffffff // |x|
DATA q8consts<>+4(SB)/4, $127.0
DATA q8consts<>+8(SB)/4, $0x7fc00000 // a quiet NaN
DATA q8consts<>+12(SB)/4, $0x01010101
DATA q8consts<>+16(SB)/4, $0x00010001
DATA q8consts<>+20(SB)/4, $0
DATA q8consts<>+24(SB)/4, $64
DATA q8consts<>+28(SB)/4, $128
DATA q8consts<>+32(SB)/4, $192
DATA q8consts<>+36(SB)/4, $256
DATA q8consts<>+40(SB)/4, $320
DATA q8consts<>+44(SB)/4, $384
DATA q8consts<>+48(SB)/4, $448
GLOBL q8consts<>(SB), RODATA|NOPTR, $52

// func quantizeQ8_0AVX512(q *byte, d, s *float32, bias *int32, x *float32, nb int, xv *byte, xs *float32)
//
// quantizeQ8_0 (activations.go) of nb blocks of x, step for step: per
// block amax = max|x| (NaN if x holds one), d = amax/127 rounded to f16
// and back, q = x·(127/amax) (0 for amax = 0) rounded to the nearest
// integer, ties to even, into q; d and d·Σq into d and s; and, where
// bias is not nil, −8 times each sum of four q into bias. Where xv is
// not nil, each block's eight fours of q also go to xv, 64 bytes apart,
// and d to xs (the row's place in the AMX layout, amx.go); both then
// move on 512 and 64 bytes a block.
TEXT ·quantizeQ8_0AVX512(SB), NOSPLIT, $0-64
	MOVQ q+0(FP), DI
	MOVQ d+8(FP), R8
	MOVQ s+16(FP), R9
	MOVQ bias+24(FP), R10
	MOVQ x+32(FP), SI
	MOVQ nb+40(FP), CX
	MOVQ xv+48(FP), R11
	MOVQ xs+56(FP), R12
	VMOVDQU32 q8consts<>+20(SB), Y26 // offsets of the fours in the layout
	VBROADCASTSS q8consts<>+0(SB), Z31
	VMOVSS       q8consts<>+4(SB), X30
	VPBROADCASTD q8consts<>+12(SB), Y29
	VPBROADCASTD q8consts<>+16(SB), Y28
	VXORPS       X27, X27, X27

block:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VANDPS  Z31, Z0, Z2
	VANDPS  Z31, Z1, Z3
	VMAXPS  Z3, Z2, Z2
	VEXTRACTF32X8 $1, Z2, Y3
	VMAXPS  Y3, Y2, Y2
	VEXTRACTF128 $1, Y2, X3
	VMAXPS  X3, X2, X2
	VPERMILPS $0x4e, X2, X3
	VMAXPS  X3, X2, X2
	VPERMILPS $0xb1, X2, X3
	VMAXPS  X3, X2, X2 // amax in lane 0
	VCMPPS  $3, Z0, Z0, K2 // unordered: NaN
	VCMPPS  $3, Z1, Z1, K3
	KORTESTW K2, K3
	JZ      scale
	VMOVSS  q8consts<>+8(SB), X2

scale:
	VDIVSS     X30, X2, X4 // amax/127
	VCVTPS2PH  $0, X4, X4  // to f16, to nearest even
	VCVTPH2PS  X4, X4
	VMOVSS     X4, (R8)
	VXORPS     X5, X5, X5
	VUCOMISS   X27, X2
	JNE        inverse
	JP         inverse
	JMP        values // amax = 0: id = 0

inverse:
	VDIVSS X2, X30, X5 // 127/amax

values:
	VBROADCASTSS X5, Z5
	VMULPS     Z5, Z0, Z0
	VMULPS     Z5, Z1, Z1
	VCVTPS2DQ  Z0, Z0
	VCVTPS2DQ  Z1, Z1
	VPMOVDB    Z0, X6
	VPMOVDB    Z1, X7
	VMOVDQU    X6, (DI)
	VMOVDQU    X7, 16(DI)
	VPADDD     Z1, Z0, Z8
	VEXTRACTI64X4 $1, Z8, Y9
	VPADDD     Y9, Y8, Y8
	VEXTRACTI128 $1, Y8, X9
	VPADDD     X9, X8, X8
	VPSHUFD    $0x4e, X8, X9
	VPADDD     X9, X8, X8
	VPSHUFD    $0xb1, X8, X9
	VPADDD     X9, X8, X8
	VCVTDQ2PS  X8, X8
	VMULSS     X8, X4, X8 // d·Σq
	VMOVSS     X8, (R9)
	VINSERTI128 $1, X7, Y6, Y6
	TESTQ      R11, R11
	JZ         sums
	KXNORW     K4, K4, K4
	VPSCATTERDD Y6, K4, (R11)(Y26*1)
	VMOVSS     X4, (R12)
	ADDQ       $512, R11
	ADDQ       $64, R12

sums:
	TESTQ      R10, R10
	JZ         next
	VPMADDUBSW Y6, Y29, Y6 // sums of pairs
	VPMADDWD   Y28, Y6, Y6 // of fours
	VPSLLD     $3, Y6, Y6
	VPXOR      Y7, Y7, Y7
	VPSUBD     Y6, Y7, Y6
	VMOVDQU    Y6, (R10)
	ADDQ       $32, R10

next:
	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNZ  block
	VZEROUPPER
	RET
