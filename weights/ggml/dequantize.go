package ggml

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/dtype"
)

// Dequantize converts the first len(dst) elements held in src, packed as
// type t, to float32 in dst. len(dst) must be a multiple of t's block
// size and src must hold at least RowSize(len(dst)) bytes; bytes beyond
// those are not read. To convert a range of a row starting at element i
// (a multiple of the block size), pass src[RowSize(i):].
//
// It does not allocate, except for the error when the arguments are
// wrong; the values are ggml's own, bit for bit.
func Dequantize(t Type, dst []float32, src []byte) error {
	if !t.CanDequantize() {
		return fmt.Errorf("ggml: cannot dequantize %s", t)
	}
	need, err := t.RowSize(int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) < need {
		return fmt.Errorf("ggml: %d elements of %s need %d bytes, have %d", len(dst), t, need, len(src))
	}
	src = src[:need]
	switch t {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case F16:
		for i := range dst {
			dst[i] = F32FromF16(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = dtype.F32FromBF16(binary.LittleEndian.Uint16(src[2*i:]))
		}
	case Q4_0:
		q4_0(dst, src)
	case Q4_1:
		q4_1(dst, src)
	case Q5_0:
		q5_0(dst, src)
	case Q5_1:
		q5_1(dst, src)
	case Q8_0:
		q8_0(dst, src)
	case Q4_K:
		q4_K(dst, src)
	case Q5_K:
		q5_K(dst, src)
	case Q6_K:
		q6_K(dst, src)
	case Q8_K:
		q8_K(dst, src)
	}
	return nil
}

// F32FromF16 widens an IEEE binary16 value exactly, as ggml does: a
// signalling NaN becomes quiet (the widening instructions of CPUs do the
// same; dtype.F32FromF16 keeps it signalling).
func F32FromF16(h uint16) float32 {
	f := dtype.F32FromF16(h)
	if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
		return math.Float32frombits(math.Float32bits(f) | 1<<22)
	}
	return f
}

// scale reads the f16 at b[0:2].
func scale(b []byte) float32 { return F32FromF16(binary.LittleEndian.Uint16(b)) }

// The block formats below are those of ggml-common.h; each function
// converts whole blocks, len(dst) elements from exactly the bytes they
// take. Products are converted to float32 before a sum so that no
// compiler fuses them: ggml's reference rounds each one.

// q4_0: d (f16), then 16 bytes of 4-bit values, low nibbles first half.
func q4_0(dst []float32, src []byte) {
	for len(dst) >= 32 {
		b, y := src[:18:18], dst[:32:32]
		d := scale(b)
		q := b[2:18]
		for j := range 16 {
			y[j] = float32(int32(q[j]&0xf)-8) * d
			y[j+16] = float32(int32(q[j]>>4)-8) * d
		}
		src, dst = src[18:], dst[32:]
	}
}

// q4_1: d and m (f16), then 16 bytes of 4-bit values; x = q·d + m.
func q4_1(dst []float32, src []byte) {
	for len(dst) >= 32 {
		b, y := src[:20:20], dst[:32:32]
		d, m := scale(b), scale(b[2:])
		q := b[4:20]
		for j := range 16 {
			y[j] = float32(float32(q[j]&0xf)*d) + m
			y[j+16] = float32(float32(q[j]>>4)*d) + m
		}
		src, dst = src[20:], dst[32:]
	}
}

// q5_0: d (f16), 32 high bits, then 16 bytes of low nibbles.
func q5_0(dst []float32, src []byte) {
	for len(dst) >= 32 {
		b, y := src[:22:22], dst[:32:32]
		d := scale(b)
		qh := binary.LittleEndian.Uint32(b[2:6])
		q := b[6:22]
		for j := range 16 {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(int32(q[j]&0xf|h0)-16) * d
			y[j+16] = float32(int32(q[j]>>4|h1)-16) * d
		}
		src, dst = src[22:], dst[32:]
	}
}

// q5_1: d and m (f16), 32 high bits, then 16 bytes of low nibbles.
func q5_1(dst []float32, src []byte) {
	for len(dst) >= 32 {
		b, y := src[:24:24], dst[:32:32]
		d, m := scale(b), scale(b[2:])
		qh := binary.LittleEndian.Uint32(b[4:8])
		q := b[8:24]
		for j := range 16 {
			h0 := byte(qh>>j<<4) & 0x10
			h1 := byte(qh>>(j+12)) & 0x10
			y[j] = float32(float32(q[j]&0xf|h0)*d) + m
			y[j+16] = float32(float32(q[j]>>4|h1)*d) + m
		}
		src, dst = src[24:], dst[32:]
	}
}

// q8_0: d (f16), then 32 signed bytes.
func q8_0(dst []float32, src []byte) {
	for len(dst) >= 32 {
		b, y := src[:34:34], dst[:32:32]
		d := scale(b)
		q := b[2:34]
		for j := range 32 {
			y[j] = float32(int8(q[j])) * d
		}
		src, dst = src[34:], dst[32:]
	}
}

// scaleMin is get_scale_min_k4: the j-th 6-bit scale and minimum of a
// Q4_K or Q5_K block's 12 scale bytes.
func scaleMin(j int, s []byte) (sc, m float32) {
	s = s[:12]
	if j < 4 {
		return float32(s[j] & 63), float32(s[j+4] & 63)
	}
	return float32(s[j+4]&0xf | s[j-4]>>6<<4), float32(s[j+4]>>4 | s[j]>>6<<4)
}

// q4_K: d and dmin (f16), 12 bytes of 6-bit scales and minimums, then
// 128 bytes of 4-bit values; eight sub-blocks of 32.
func q4_K(dst []float32, src []byte) {
	for len(dst) >= 256 {
		b, y := src[:144:144], dst[:256:256]
		d, dmin := scale(b), scale(b[2:])
		s := b[4:16]
		for j := range 4 {
			sc, m := scaleMin(2*j, s)
			d1, m1 := d*sc, dmin*m
			sc, m = scaleMin(2*j+1, s)
			d2, m2 := d*sc, dmin*m
			q := b[16+32*j : 48+32*j]
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l := range 32 {
				lo[l] = float32(d1*float32(q[l]&0xf)) - m1
				hi[l] = float32(d2*float32(q[l]>>4)) - m2
			}
		}
		src, dst = src[144:], dst[256:]
	}
}

// q5_K: as q4_K, with 32 bytes of fifth bits before the 4-bit values.
func q5_K(dst []float32, src []byte) {
	for len(dst) >= 256 {
		b, y := src[:176:176], dst[:256:256]
		d, dmin := scale(b), scale(b[2:])
		s := b[4:16]
		qh := b[16:48]
		for j := range 4 {
			sc, m := scaleMin(2*j, s)
			d1, m1 := d*sc, dmin*m
			sc, m = scaleMin(2*j+1, s)
			d2, m2 := d*sc, dmin*m
			q := b[48+32*j : 80+32*j]
			u1, u2 := byte(1)<<(2*j), byte(2)<<(2*j)
			lo, hi := y[64*j:64*j+32], y[64*j+32:64*j+64]
			for l := range 32 {
				v1, v2 := q[l]&0xf, q[l]>>4
				if qh[l]&u1 != 0 {
					v1 += 16
				}
				if qh[l]&u2 != 0 {
					v2 += 16
				}
				lo[l] = float32(d1*float32(v1)) - m1
				hi[l] = float32(d2*float32(v2)) - m2
			}
		}
		src, dst = src[176:], dst[256:]
	}
}

// q6_K: 128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16
// signed 8-bit scales, then d (f16); two halves of 128.
func q6_K(dst []float32, src []byte) {
	for len(dst) >= 256 {
		b, y := src[:210:210], dst[:256:256]
		d := scale(b[208:])
		for n := range 2 {
			ql := b[64*n : 64*n+64]
			qh := b[128+32*n : 160+32*n]
			sc := b[192+8*n : 200+8*n]
			o := y[128*n : 128*n+128]
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&0xf|qh[l]&3<<4) - 32
				q2 := int32(ql[l+32]&0xf|qh[l]>>2&3<<4) - 32
				q3 := int32(ql[l]>>4|qh[l]>>4&3<<4) - 32
				q4 := int32(ql[l+32]>>4|qh[l]>>6&3<<4) - 32
				o[l] = float32(d*float32(int8(sc[is]))) * float32(q1)
				o[l+32] = float32(d*float32(int8(sc[is+2]))) * float32(q2)
				o[l+64] = float32(d*float32(int8(sc[is+4]))) * float32(q3)
				o[l+96] = float32(d*float32(int8(sc[is+6]))) * float32(q4)
			}
		}
		src, dst = src[210:], dst[256:]
	}
}

// q8_K: d (float32), 256 signed bytes, then 16 int16 sums (not needed).
func q8_K(dst []float32, src []byte) {
	for len(dst) >= 256 {
		b, y := src[:292:292], dst[:256:256]
		d := math.Float32frombits(binary.LittleEndian.Uint32(b))
		q := b[4:260]
		for j := range 256 {
			y[j] = d * float32(int8(q[j]))
		}
		src, dst = src[292:], dst[256:]
	}
}
