package quant

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/weights/ggml"
)

// The prepared activation rows. A row of k values becomes, from a
// 64-byte aligned start:
//
//	Q8_0 kind: k int8 values; k/32 float32 scales d (f16 values, as
//	           ggml stores them); k/32 float32 d·Σq, the block's sum.
//	Q8_0B:     the same, with k/4 int32 after the values: −8 times the
//	           sum of each four values (the AVX-512 kernels start their
//	           sums of four products of unsigned weights there).
//	Q8_K kind: k int8 values; k/256 float32 scales d; k/32 int16 sums
//	           of 32 values.
//
// and 64 bytes more, which the vector kernels may read past the end.
//
// The values are ggml's: quantizeQ8_0 is quantize_row_q8_0 of ggml's x86
// code (AVX2), whose values and scales quantize_row_q8_1 shares (ggml
// keeps Q8_1's d·Σq as an f16 of the unrounded d; here it is float32,
// from the stored d), and quantizeQ8_K is quantize_row_q8_K_ref, which
// x86 uses.

// kind is the form in which a weight type takes its activations.
type kind uint8

const (
	kindNone  kind = iota
	kindQ8_0       // Q8_0 rows (with block sums)
	kindQ8_0B      // Q8_0 rows with the sums of fours
	kindQ8_K       // Q8_K rows (with sums of 32)
	kindFloat      // x as it is, float32
)

// quantizeQ8_0 quantises x (whole blocks of 32) into the Q8_0 row a:
// per block d = max|x|/127, rounded to f16, and q = x·(127/max|x|)
// rounded to the nearest integer, ties to even.
//
// With bias, it also stores −8 times the sum of each four q.
func quantizeQ8_0(a []byte, x []float32, bias bool) {
	if !quantizeQ8_0Asm(a, x, bias, nil, nil) {
		quantizeQ8_0Go(a, x, bias)
	}
}

// quantizeQ8_0Go is quantizeQ8_0 in Go, the definition of the assembly.
func quantizeQ8_0Go(a []byte, x []float32, bias bool) {
	k := len(x)
	nb := k / 32
	od, os := q8Offsets(k, bias)
	qs := a[:k]
	ds := f32s(a[od:], nb)
	ss := f32s(a[os:], nb)
	for b := range nb {
		xb := x[32*b : 32*b+32 : 32*b+32]
		var amax float32
		for _, v := range xb {
			amax = max(amax, abs32(v))
		}
		d := half(dtype.F16FromF32(amax / 127))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[32*b : 32*b+32 : 32*b+32]
		sum := int32(0)
		for j, v := range xb {
			r := int32(math.RoundToEven(float64(v * id)))
			q[j] = byte(int8(r))
			sum += r
		}
		ds[b] = d
		ss[b] = d * float32(sum)
	}
	if bias {
		bs := i32s(a[k:], k/4)
		for i := range bs {
			q := qs[4*i : 4*i+4]
			bs[i] = -8 * (int32(int8(q[0])) + int32(int8(q[1])) + int32(int8(q[2])) + int32(int8(q[3])))
		}
	}
}

// q8Offsets is where the scales and the sums of a Q8_0 row of k values
// start, after its values and, with bias, their sums of fours.
func q8Offsets(k int, bias bool) (od, os int) {
	od = k
	if bias {
		od = 2 * k
	}
	return od, od + 4*(k/32)
}

// quantizeQ8_K quantises x (whole blocks of 256) into the Q8_K row a:
// per block, with v the value of largest magnitude (the first of
// equals), q = x·(−127/v) rounded to the nearest integer, ties to even,
// at most 127, and d = 1/(−127/v); d = 0 and q = 0 for a block of zeros.
func quantizeQ8_K(a []byte, x []float32) {
	k := len(x)
	nb := k / 256
	qs := a[:k]
	ds := f32s(a[k:], nb)
	sums := a[k+4*nb : k+4*nb+2*(k/32)]
	for b := range nb {
		xb := x[256*b : 256*b+256 : 256*b+256]
		q := qs[256*b : 256*b+256 : 256*b+256]
		var amax, vmax float32
		for _, v := range xb {
			if av := abs32(v); av > amax {
				amax, vmax = av, v
			}
		}
		if amax == 0 {
			ds[b] = 0
			clear(q)
			clear(sums[16*b : 16*b+16])
			continue
		}
		iscale := -127 / vmax
		for j, v := range xb {
			r := int32(math.RoundToEven(float64(iscale * v)))
			q[j] = byte(int8(min(127, r)))
		}
		for g := range 8 {
			s := int16(0)
			for _, v := range q[32*g : 32*g+32] {
				s += int16(int8(v))
			}
			binary.LittleEndian.PutUint16(sums[16*b+2*g:], uint16(s))
		}
		ds[b] = 1 / iscale
	}
}

// f32s views the first 4n bytes of b, which start 4-byte aligned, as n
// float32s.
func f32s(b []byte, n int) []float32 {
	if n == 0 {
		return nil
	}
	_ = b[4*n-1]
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// i32s views the first 4n bytes of b, 4-byte aligned, as n int32s.
func i32s(b []byte, n int) []int32 {
	if n == 0 {
		return nil
	}
	_ = b[4*n-1]
	return unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// i16s views the first 2n bytes of b, 2-byte aligned, as n int16s.
func i16s(b []byte, n int) []int16 {
	if n == 0 {
		return nil
	}
	_ = b[2*n-1]
	return unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// half widens an f16 exactly, a signalling NaN becoming quiet as the
// CPU's conversion (and ggml) does.
func half(h uint16) float32 { return ggml.F32FromF16(h) }

// scale reads the f16 at b[0:2].
func scale(b []byte) float32 { return half(binary.LittleEndian.Uint16(b)) }
