//go:build !noasm

#include "textflag.h"
#include "kernels_amd64.h"

// The AMX kernels (see amx.go). Go's assembler has no AMX mnemonics, so
// the tile instructions are spelled out as bytes, each with the
// instruction it encodes (Intel SDM vol. 2, VEX.128 map 0F38, W0):
//
//	LDTILECFG m512        NP 49 /0 (memory)
//	TILERELEASE           NP 49 C0
//	TILEZERO tmm          F2 49 11:tmm:000
//	TILELOADD tmm, sib    F2 4B 00:tmm:100 + SIB
//	TILESTORED sib, tmm   F3 4B 00:tmm:100 + SIB
//	TDPBSSD tmm1, tmm2, tmm3   F2 5E 11:tmm1:tmm2, tmm3 in VEX.vvvv
//
// after the three-byte VEX prefix C4 E2 (R̄X̄B̄ = 111: no register above
// 7; map 0F38) and W0 v̄v̄v̄v̄ L0 pp, the last byte 0x78 (NP), 0x7A (F3)
// or 0x7B (F2) where vvvv is unused. TDPBSSD tmm1 += tmm2·tmm3: the
// int8 rows of tmm2 by the int8 pairs of fours of tmm3, signed by
// signed, into the int32 of tmm1.

// TRANSPOSE16 transposes the 16×16 float32 matrix whose rows are Z0-Z15
// into Z0-Z15, through Z16-Z31: pairs of 32-bit lanes, pairs of 64-bit
// lanes, then 128-bit lanes twice.
#define TRANSPOSE16 \
	VUNPCKLPS Z1, Z0, Z16;    VUNPCKHPS Z1, Z0, Z17;    \
	VUNPCKLPS Z3, Z2, Z18;    VUNPCKHPS Z3, Z2, Z19;    \
	VUNPCKLPS Z5, Z4, Z20;    VUNPCKHPS Z5, Z4, Z21;    \
	VUNPCKLPS Z7, Z6, Z22;    VUNPCKHPS Z7, Z6, Z23;    \
	VUNPCKLPS Z9, Z8, Z24;    VUNPCKHPS Z9, Z8, Z25;    \
	VUNPCKLPS Z11, Z10, Z26;  VUNPCKHPS Z11, Z10, Z27;  \
	VUNPCKLPS Z13, Z12, Z28;  VUNPCKHPS Z13, Z12, Z29;  \
	VUNPCKLPS Z15, Z14, Z30;  VUNPCKHPS Z15, Z14, Z31;  \
	VUNPCKLPD Z18, Z16, Z0;   VUNPCKHPD Z18, Z16, Z1;   \
	VUNPCKLPD Z19, Z17, Z2;   VUNPCKHPD Z19, Z17, Z3;   \
	VUNPCKLPD Z22, Z20, Z4;   VUNPCKHPD Z22, Z20, Z5;   \
	VUNPCKLPD Z23, Z21, Z6;   VUNPCKHPD Z23, Z21, Z7;   \
	VUNPCKLPD Z26, Z24, Z8;   VUNPCKHPD Z26, Z24, Z9;   \
	VUNPCKLPD Z27, Z25, Z10;  VUNPCKHPD Z27, Z25, Z11;  \
	VUNPCKLPD Z30, Z28, Z12;  VUNPCKHPD Z30, Z28, Z13;  \
	VUNPCKLPD Z31, Z29, Z14;  VUNPCKHPD Z31, Z29, Z15;  \
	VSHUFF32X4 $0x44, Z4, Z0, Z16;   VSHUFF32X4 $0xee, Z4, Z0, Z20;   \
	VSHUFF32X4 $0x44, Z12, Z8, Z24;  VSHUFF32X4 $0xee, Z12, Z8, Z28;  \
	VSHUFF32X4 $0x44, Z5, Z1, Z17;   VSHUFF32X4 $0xee, Z5, Z1, Z21;   \
	VSHUFF32X4 $0x44, Z13, Z9, Z25;  VSHUFF32X4 $0xee, Z13, Z9, Z29;  \
	VSHUFF32X4 $0x44, Z6, Z2, Z18;   VSHUFF32X4 $0xee, Z6, Z2, Z22;   \
	VSHUFF32X4 $0x44, Z14, Z10, Z26; VSHUFF32X4 $0xee, Z14, Z10, Z30; \
	VSHUFF32X4 $0x44, Z7, Z3, Z19;   VSHUFF32X4 $0xee, Z7, Z3, Z23;   \
	VSHUFF32X4 $0x44, Z15, Z11, Z27; VSHUFF32X4 $0xee, Z15, Z11, Z31; \
	VSHUFF32X4 $0x88, Z24, Z16, Z0;  VSHUFF32X4 $0xdd, Z24, Z16, Z4;  \
	VSHUFF32X4 $0x88, Z28, Z20, Z8;  VSHUFF32X4 $0xdd, Z28, Z20, Z12; \
	VSHUFF32X4 $0x88, Z25, Z17, Z1;  VSHUFF32X4 $0xdd, Z25, Z17, Z5;  \
	VSHUFF32X4 $0x88, Z29, Z21, Z9;  VSHUFF32X4 $0xdd, Z29, Z21, Z13; \
	VSHUFF32X4 $0x88, Z26, Z18, Z2;  VSHUFF32X4 $0xdd, Z26, Z18, Z6;  \
	VSHUFF32X4 $0x88, Z30, Z22, Z10; VSHUFF32X4 $0xdd, Z30, Z22, Z14; \
	VSHUFF32X4 $0x88, Z27, Z19, Z3;  VSHUFF32X4 $0xdd, Z27, Z19, Z7;  \
	VSHUFF32X4 $0x88, Z31, Z23, Z11; VSHUFF32X4 $0xdd, Z31, Z23, Z15

// SCALE adds row n of the int32 tile at o(CX) (64 bytes a row), times
// the weight scale n at w(DI) and the activation scales in Z16, into acc.
#define SCALE(o, w, n, acc) \
	VMULPS.BCST (w+4*n)(DI), Z16, Z17; \
	VCVTDQ2PS   (o+64*n)(CX), Z18;     \
	VFMADD231PS Z18, Z17, acc

// BLOCK adds the int32 tile at o(CX), a block's products, scaled by the
// block's weight scales at w(DI) and activation scales at w(R8), into
// Z0-Z15.
#define BLOCK(o, w) \
	VMOVUPS w(R8), Z16;      \
	SCALE(o, w, 0, Z0);      \
	SCALE(o, w, 1, Z1);      \
	SCALE(o, w, 2, Z2);      \
	SCALE(o, w, 3, Z3);      \
	SCALE(o, w, 4, Z4);      \
	SCALE(o, w, 5, Z5);      \
	SCALE(o, w, 6, Z6);      \
	SCALE(o, w, 7, Z7);      \
	SCALE(o, w, 8, Z8);      \
	SCALE(o, w, 9, Z9);      \
	SCALE(o, w, 10, Z10);    \
	SCALE(o, w, 11, Z11);    \
	SCALE(o, w, 12, Z12);    \
	SCALE(o, w, 13, Z13);    \
	SCALE(o, w, 14, Z14);    \
	SCALE(o, w, 15, Z15)

// The tile instructions of the kernel. Tiles 0 and 2 hold weights
// (A0, A1), 1 and 3 activations (B0, B1), 4-7 int32 products (C0-C3).
#define TILEZERO_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE0 // TILEZERO TMM4
#define TILEZERO_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xE8 // TILEZERO TMM5
#define TILEZERO_C2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF0 // TILEZERO TMM6
#define TILEZERO_C3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x49; BYTE $0xF8 // TILEZERO TMM7
#define LOAD_A0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x04; BYTE $0x16 // TILELOADD TMM0, (SI)(DX*1)
#define LOAD_B0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x0C; BYTE $0x03 // TILELOADD TMM1, (BX)(AX*1)
#define LOAD_A1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x14; BYTE $0x16 // TILELOADD TMM2, (SI)(DX*1)
#define LOAD_B1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7B; BYTE $0x4B; BYTE $0x1C; BYTE $0x03 // TILELOADD TMM3, (BX)(AX*1)
#define DP_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xE0 // TDPBSSD TMM4, TMM0, TMM1
#define DP_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x63; BYTE $0x5E; BYTE $0xEA // TDPBSSD TMM5, TMM2, TMM3
#define DP_C2 BYTE $0xC4; BYTE $0xE2; BYTE $0x73; BYTE $0x5E; BYTE $0xF0 // TDPBSSD TMM6, TMM0, TMM1
#define DP_C3 BYTE $0xC4; BYTE $0xE2; BYTE $0x63; BYTE $0x5E; BYTE $0xFA // TDPBSSD TMM7, TMM2, TMM3
#define STORE_C0 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0x24; BYTE $0x01 // TILESTORED (CX)(AX*1), TMM4
#define STORE_C1 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xAC; BYTE $0x01; LONG $0x400 // TILESTORED 1024(CX)(AX*1), TMM5
#define STORE_C2 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xB4; BYTE $0x01; LONG $0x800 // TILESTORED 2048(CX)(AX*1), TMM6
#define STORE_C3 BYTE $0xC4; BYTE $0xE2; BYTE $0x7A; BYTE $0x4B; BYTE $0xBC; BYTE $0x01; LONG $0xC00 // TILESTORED 3072(CX)(AX*1), TMM7

// SCALEM is SCALE with the minimums: it also adds weight n's term at
// w+64(DI) times the activations' at Z19.
#define SCALEM(o, w, n, acc) \
	SCALE(o, w, n, acc); \
	VFMADD231PS.BCST (w+64+4*n)(DI), Z19, acc

// BLOCKM is BLOCK for blocks of weights with minimums: 128 bytes of
// scales a block on both sides, the scales then the minimums' terms.
#define BLOCKM(o, w) \
	VMOVUPS w(R8), Z16;       \
	VMOVUPS (w+64)(R8), Z19;  \
	SCALEM(o, w, 0, Z0);      \
	SCALEM(o, w, 1, Z1);      \
	SCALEM(o, w, 2, Z2);      \
	SCALEM(o, w, 3, Z3);      \
	SCALEM(o, w, 4, Z4);      \
	SCALEM(o, w, 5, Z5);      \
	SCALEM(o, w, 6, Z6);      \
	SCALEM(o, w, 7, Z7);      \
	SCALEM(o, w, 8, Z8);      \
	SCALEM(o, w, 9, Z9);      \
	SCALEM(o, w, 10, Z10);    \
	SCALEM(o, w, 11, Z11);    \
	SCALEM(o, w, 12, Z12);    \
	SCALEM(o, w, 13, Z13);    \
	SCALEM(o, w, 14, Z14);    \
	SCALEM(o, w, 15, Z15)

// AMXTILES(BLK, bs): the body of amxTiles and amxTilesMin, BLK scaling a
// block's products into Z0-Z15 and bs the bytes of scales a block takes
// on either side.
#define AMXTILES(BLK, bs) \
	MOVQ work+112(FP), CX; \
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0x01 /* LDTILECFG (CX) */; \
	ADDQ $64, CX /* the int32 tiles */; \
	MOVQ mask+16(FP), AX; \
	KMOVW AX, K1; \
	MOVQ $64, AX /* bytes a row of the activation and int32 tiles */; \
	MOVQ step+80(FP), R15 /* bytes of a block on either side */; \
	MOVQ R15, DX; \
	SHRQ $4, DX /* bytes a row of the weight tile */; \
	MOVQ y+0(FP), R10; \
	MOVQ ldy+8(FP), R11; \
	SHLQ $2, R11; \
	MOVQ xv+48(FP), R12; \
	MOVQ xs+56(FP), R13; \
tile:; \
	ZERO16; \
	MOVQ panel+32(FP), SI; \
	MOVQ ws+40(FP), DI; \
	MOVQ R12, BX; \
	MOVQ R13, R8; \
	MOVQ nb+88(FP), R9; \
	CMPQ R9, $4; \
	JLT  one; \
four:; \
	TILEZERO_C0; \
	TILEZERO_C1; \
	TILEZERO_C2; \
	TILEZERO_C3; \
	LOAD_A0; \
	LOAD_B0; \
	DP_C0; \
	ADDQ R15, SI; \
	ADDQ R15, BX; \
	LOAD_A1; \
	LOAD_B1; \
	DP_C1; \
	ADDQ R15, SI; \
	ADDQ R15, BX; \
	LOAD_A0; \
	LOAD_B0; \
	DP_C2; \
	ADDQ R15, SI; \
	ADDQ R15, BX; \
	LOAD_A1; \
	LOAD_B1; \
	DP_C3; \
	ADDQ R15, SI; \
	ADDQ R15, BX; \
	STORE_C0; \
	STORE_C1; \
	STORE_C2; \
	STORE_C3; \
	BLK(0, 0); \
	BLK(1024, bs); \
	BLK(2048, 2*bs); \
	BLK(3072, 3*bs); \
	ADDQ $(4*bs), DI; \
	ADDQ $(4*bs), R8; \
	SUBQ $4, R9; \
	CMPQ R9, $4; \
	JGE  four; \
one:; \
	TESTQ R9, R9; \
	JZ    done; \
	TILEZERO_C0; \
	LOAD_A0; \
	LOAD_B0; \
	DP_C0; \
	STORE_C0; \
	BLK(0, 0); \
	ADDQ R15, SI; \
	ADDQ R15, BX; \
	ADDQ $bs, DI; \
	ADDQ $bs, R8; \
	DECQ R9; \
	JMP  one; \
done:; \
	TRANSPOSE16 /* Zn, weight row n's products, into the rows of y */; \
	LEAQ 4096(CX), SI; \
	VMOVUPS Z0, 0(SI); \
	VMOVUPS Z1, 64(SI); \
	VMOVUPS Z2, 128(SI); \
	VMOVUPS Z3, 192(SI); \
	VMOVUPS Z4, 256(SI); \
	VMOVUPS Z5, 320(SI); \
	VMOVUPS Z6, 384(SI); \
	VMOVUPS Z7, 448(SI); \
	VMOVUPS Z8, 512(SI); \
	VMOVUPS Z9, 576(SI); \
	VMOVUPS Z10, 640(SI); \
	VMOVUPS Z11, 704(SI); \
	VMOVUPS Z12, 768(SI); \
	VMOVUPS Z13, 832(SI); \
	VMOVUPS Z14, 896(SI); \
	VMOVUPS Z15, 960(SI); \
	MOVQ $16, R9; \
	CMPQ tiles+96(FP), $1; \
	JNE  rows; \
	MOVQ last+24(FP), R9; \
rows:; \
	MOVQ R10, DI; \
	MOVQ add+104(FP), BX; \
row:; \
	VMOVUPS (SI), Z16; \
	TESTQ   BX, BX; \
	JZ      set; \
	VMOVUPS.Z (DI), K1, Z17; \
	VADDPS  Z17, Z16, Z16; \
set:; \
	VMOVUPS Z16, K1, (DI); \
	ADDQ    $64, SI; \
	ADDQ    R11, DI; \
	DECQ    R9; \
	JNZ     row; \
	MOVQ R11, BX; \
	SHLQ $4, BX; \
	ADDQ BX, R10; \
	ADDQ xStride+64(FP), R12; \
	ADDQ xsStride+72(FP), R13; \
	DECQ tiles+96(FP); \
	JNZ  tile; \
	BYTE $0xC4; BYTE $0xE2; BYTE $0x78; BYTE $0x49; BYTE $0xC0 /* TILERELEASE */; \
	VZEROUPPER; \
	RET

// Q6STORE(o): the 32 values of Y3 (low bits) and Y4 (high bits) less 32
// to o(CX), 16 there and 16 256 bytes on.
#define Q6STORE(o) \
	VPOR    Y4, Y3, Y3; \
	VPSUBB  Y13, Y3, Y3; \
	VMOVDQU X3, o(CX); \
	VEXTRACTI128 $1, Y3, (o+256)(CX)

// Q6HALF unpacks half h of the Q6_K block at BX (values 128h to 128h+127)
// into the panel at CX: value e as q−32 at 256·(e/16) + e%16.
#define Q6HALF(h) \
	VMOVDQU (64*h)(BX), Y0;       \
	VMOVDQU (64*h+32)(BX), Y1;    \
	VMOVDQU (128+32*h)(BX), Y2;   \
	VPAND   Y15, Y0, Y3;          \
	VPSLLW  $4, Y2, Y4;           \
	VPAND   Y14, Y4, Y4;          \
	Q6STORE(2048*h);              \
	VPAND   Y15, Y1, Y3;          \
	VPSLLW  $2, Y2, Y4;           \
	VPAND   Y14, Y4, Y4;          \
	Q6STORE(2048*h+512);          \
	VPSRLW  $4, Y0, Y3;           \
	VPAND   Y15, Y3, Y3;          \
	VPAND   Y14, Y2, Y4;          \
	Q6STORE(2048*h+1024);         \
	VPSRLW  $4, Y1, Y3;           \
	VPAND   Y15, Y3, Y3;          \
	VPSRLW  $2, Y2, Y4;           \
	VPAND   Y14, Y4, Y4;          \
	Q6STORE(2048*h+1536)

// The packing of weight rows for the AMX tiles (amx.go): each kernel
// walks the rows (wRow bytes apart from w) and their blocks.

// The arguments all the packings share, at the offsets given: SI w, R9
// wRow, R10 rows and R11 the blocks of a row (n).
#define PACKARGS(w, wRow, rows, n) \
	MOVQ w, SI;    \
	MOVQ wRow, R9; \
	MOVQ rows, R10; \
	MOVQ n, R11

// PACK32(SETUP, VALUES, size): amxPackQ4_0 and amxPackQ8_0, SETUP their
// constants, VALUES the block at BX unpacked to the panel at CX, size
// the bytes of a block. The f16 scale is copied to DX.
#define PACK32(SETUP, VALUES, size) \
	MOVQ panel+0(FP), DI; \
	MOVQ halves+8(FP), R8; \
	PACKARGS(w+16(FP), wRow+24(FP), rows+32(FP), nb+40(FP)); \
	SETUP; \
row:; \
	MOVQ SI, BX /* this row's blocks */; \
	MOVQ DI, CX /* its values in the panel */; \
	MOVQ R8, DX /* its scales */; \
	MOVQ R11, R12; \
block:; \
	MOVWLZX (BX), AX; \
	MOVW    AX, (DX); \
	VALUES; \
	ADDQ    $size, BX; \
	ADDQ    $512, CX; \
	ADDQ    $32, DX; \
	DECQ    R12; \
	JNZ     block; \
	ADDQ R9, SI; \
	ADDQ $32, DI; \
	ADDQ $2, R8; \
	DECQ R10; \
	JNZ  row; \
	VZEROUPPER; \
	RET

// BCAST15(v), BCAST14(v), BCAST13(v): every dword of Y15, Y14, Y13 is v.
#define BCAST15(v) MOVL v, AX; VPBROADCASTD AX, Y15
#define BCAST14(v) MOVL v, AX; VPBROADCASTD AX, Y14
#define BCAST13(v) MOVL v, AX; VPBROADCASTD AX, Y13

// Q4_0CONST: Y15 bytes 0x0f, Y14 bytes 8.
#define Q4_0CONST BCAST15($0x0f0f0f0f); BCAST14($0x08080808)

// Q4_0VALUES: the 32 values q−8 of the Q4_0 block at BX to (CX): low
// nibbles (values 0-15), then high (16-31).
#define Q4_0VALUES \
	VMOVDQU 2(BX), X0; \
	VPSRLW  $4, X0, X1; \
	VINSERTI128 $1, X1, Y0, Y0; \
	VPAND   Y15, Y0, Y0; \
	VPSUBB  Y14, Y0, Y0; \
	VMOVDQU Y0, (CX)

// Q8_0VALUES: the 32 values of the Q8_0 block at BX, copied to (CX).
#define Q8_0VALUES \
	VMOVDQU 2(BX), Y0; \
	VMOVDQU Y0, (CX)

// PACKK(SETUP, FIRST, VALUES, size, step): amxPackQ4_K and amxPackQ6_K,
// SETUP their constants, FIRST setting BX to what VALUES reads of the
// row's first block at SI, VALUES a block's values at BX unpacked to the
// panel at CX, size the bytes of a block, step the bytes of a row in the
// panel.
#define PACKK(SETUP, FIRST, VALUES, size, step) \
	MOVQ panel+0(FP), DI; \
	PACKARGS(w+8(FP), wRow+16(FP), rows+24(FP), nsb+32(FP)); \
	SETUP; \
row:; \
	FIRST; \
	MOVQ DI, CX; \
	MOVQ R11, R12; \
block:; \
	VALUES; \
	ADDQ $size, BX; \
	ADDQ $4096, CX; \
	DECQ R12; \
	JNZ  block; \
	ADDQ R9, SI; \
	ADDQ $step, DI; \
	DECQ R10; \
	JNZ  row; \
	VZEROUPPER; \
	RET

// Q4_KQUARTER(o): the 64 values of the 32 bytes at o(BX), low nibbles to
// (32·o)(CX), high ones 512 bytes on.
#define Q4_KQUARTER(o) \
	VMOVDQU o(BX), Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   Y15, Y0, Y0; \
	VPAND   Y15, Y1, Y1; \
	VMOVDQU Y0, (32*o)(CX); \
	VMOVDQU Y1, (32*o+512)(CX)

// Q4_KVALUES: the 256 values q (0 to 15) of a Q4_K block (its eight
// sub-blocks 512 bytes apart in the panel).
#define Q4_KVALUES Q4_KQUARTER(0); Q4_KQUARTER(32); Q4_KQUARTER(64); Q4_KQUARTER(96)

// Q4_KFIRST: BX = the values of the Q4_K block at SI, past its scales.
#define Q4_KFIRST LEAQ 16(SI), BX

// Q6_KCONST: Y15 bytes 0x0f, Y14 bytes 0x30, Y13 bytes 32.
#define Q6_KCONST BCAST15($0x0f0f0f0f); BCAST14($0x30303030); BCAST13($0x20202020)

// Q6_KFIRST: BX = the Q6_K block at SI; Q6_KVALUES: its 256 values.
#define Q6_KFIRST MOVQ SI, BX
#define Q6_KVALUES Q6HALF(0); Q6HALF(1)

// func cpuid7EDX() uint32
TEXT ·cpuid7EDX(SB), NOSPLIT, $0-4
	MOVL $7, AX
	XORL CX, CX
	CPUID
	MOVL DX, ret+0(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	XORL CX, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET

// func amxPackQ4_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int)
//
// For each of rows weight rows (wRow bytes apart from w) and each of nb
// blocks: the 32 values q−8 as int8 at panel[512·b + 32·r], and the
// block's f16 scale at halves[16·b + r].
TEXT ·amxPackQ4_0(SB), NOSPLIT, $0-48
	PACK32(Q4_0CONST, Q4_0VALUES, 18)

// func amxPackQ8_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int)
//
// amxPackQ4_0 for Q8_0 blocks: the values are copied as they are.
TEXT ·amxPackQ8_0(SB), NOSPLIT, $0-48
	PACK32(NOSETUP, Q8_0VALUES, 34)

// func amxPackQ4_K(panel *byte, w *byte, wRow int, rows int, nsb int)
//
// For each of rows weight rows (wRow bytes apart from w) and each of nsb
// Q4_K blocks of 256 values: the values q (0 to 15) of its eight
// sub-blocks as int8, sub-block j at panel[512·(8·b+j) + 32·r].
TEXT ·amxPackQ4_K(SB), NOSPLIT, $0-40
	PACKK(BCAST15($0x0f0f0f0f), Q4_KFIRST, Q4_KVALUES, 144, 32)

// func amxPackQ6_K(panel *byte, w *byte, wRow int, rows int, nsb int)
//
// For each of rows weight rows (wRow bytes apart from w) and each of nsb
// Q6_K blocks of 256 values: the values q−32 of its sixteen blocks of 16
// as int8, block g at panel[256·(16·b+g) + 16·r].
TEXT ·amxPackQ6_K(SB), NOSPLIT, $0-40
	PACKK(Q6_KCONST, Q6_KFIRST, Q6_KVALUES, 210, 16)

// func amxHalves(ws *float32, halves *uint16, n int)
//
// ws[i] = halves[i] widened, for i < 16·n.
TEXT ·amxHalves(SB), NOSPLIT, $0-24
	MOVQ ws+0(FP), DI
	MOVQ halves+8(FP), SI
	MOVQ n+16(FP), CX

halfLoop:
	VCVTPH2PS (SI), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       halfLoop
	VZEROUPPER
	RET

// func amxTiles(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte)
//
// For each of tiles tiles of 16 activation rows (xv, xs, then xStride
// and xsStride bytes on): the products of the tile's rows by up to 16
// weight rows over nb blocks, into y (ldy floats a row; set, or added
// to where add is not 0). A block is 32 values, step = 512 bytes a side,
// or 16, step = 256 bytes. The weights are nb blocks at panel (16 rows
// of 32 or 16 int8 values) with 16 scales each at ws; each activation
// block is at xv (eight or four rows of 16 fours, as TDPBSSD takes
// them) with 16 scales at xs. The tile configuration is at
// work (64 bytes; the weight rows it names are those computed), then
// four int32 tiles and a float32 one (5 KiB). Only the columns of mask
// are written, and of the last tile only its first last rows.
//
// Four blocks go at once, each into its own int32 tile, so that the tile
// unit works on the next while the vector unit scales the last; their
// scaled products are added in order, block after block.
TEXT ·amxTiles(SB), NOSPLIT, $0-120
	AMXTILES(BLOCK, 64)

// func amxTilesMin(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte)
//
// amxTiles for weights with minimums (Q4_K): each block's 16 weight
// scales at ws are followed by 16 terms of the minimums, and its 16
// activation scales at xs by 16 terms of the activation sums, whose
// products are added too: 128 bytes a block on both sides.
TEXT ·amxTilesMin(SB), NOSPLIT, $0-120
	AMXTILES(BLOCKM, 128)
