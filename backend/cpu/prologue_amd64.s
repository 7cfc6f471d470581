//go:build !noasm

#include "textflag.h"

// func prologuePanelAVX2(d, s []float32, a, b []float64, rs, mode int)
//
// For each row l < len(a): the 16 floats at s[l·rs:] widened to float64,
// times a[l] plus b[l] (rounded after each, or once with mode&2), narrowed
// to float32 and, with mode&1, set to 0 where < 0 (ordered: −0 and NaN
// pass), stored at d[16·l:]. The operand order of each instruction is that
// of the compiled Go expression float32(float64(v)*a + b), so a NaN comes
// out with the same bits.
TEXT ·prologuePanelAVX2(SB), NOSPLIT, $0-112
	MOVQ   d_base+0(FP), DI
	MOVQ   s_base+24(FP), SI
	MOVQ   a_base+48(FP), R8
	MOVQ   a_len+56(FP), CX
	MOVQ   b_base+72(FP), R9
	MOVQ   rs+96(FP), DX
	MOVQ   mode+104(FP), R10
	SHLQ   $2, DX
	VXORPS Y15, Y15, Y15
	XORQ   AX, AX

row:
	CMPQ         AX, CX
	JGE          done
	VBROADCASTSD (R8)(AX*8), Y8
	VBROADCASTSD (R9)(AX*8), Y9
	VCVTPS2PD    (SI), Y0
	VCVTPS2PD    16(SI), Y1
	VCVTPS2PD    32(SI), Y2
	VCVTPS2PD    48(SI), Y3
	BTQ          $1, R10
	JCS          fused
	VMULPD       Y8, Y0, Y0
	VMULPD       Y8, Y1, Y1
	VMULPD       Y8, Y2, Y2
	VMULPD       Y8, Y3, Y3
	VADDPD       Y9, Y0, Y0
	VADDPD       Y9, Y1, Y1
	VADDPD       Y9, Y2, Y2
	VADDPD       Y9, Y3, Y3
	JMP          narrow

fused:
	VMOVAPD     Y9, Y4
	VMOVAPD     Y9, Y5
	VMOVAPD     Y9, Y6
	VMOVAPD     Y9, Y7
	VFMADD231PD Y8, Y0, Y4
	VFMADD231PD Y8, Y1, Y5
	VFMADD231PD Y8, Y2, Y6
	VFMADD231PD Y8, Y3, Y7
	VMOVAPD     Y4, Y0
	VMOVAPD     Y5, Y1
	VMOVAPD     Y6, Y2
	VMOVAPD     Y7, Y3

narrow:
	VCVTPD2PSY  Y0, X0
	VCVTPD2PSY  Y1, X1
	VCVTPD2PSY  Y2, X2
	VCVTPD2PSY  Y3, X3
	VINSERTF128 $1, X1, Y0, Y0
	VINSERTF128 $1, X3, Y2, Y2
	BTQ         $0, R10
	JCC         store
	VCMPPS      $0x11, Y15, Y0, Y4 // Y4 = Y0 < 0 (ordered, quiet)
	VANDNPS     Y0, Y4, Y0
	VCMPPS      $0x11, Y15, Y2, Y5
	VANDNPS     Y2, Y5, Y2

store:
	VMOVUPS Y0, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ    DX, SI
	ADDQ    $64, DI
	INCQ    AX
	JMP     row

done:
	VZEROUPPER
	RET
