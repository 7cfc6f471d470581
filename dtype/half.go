package dtype

import "math"

// F16FromF32 rounds a float32 to the nearest IEEE 754 binary16 value (ties to
// even). Values beyond the half range become ±Inf; NaN stays NaN.
func F16FromF32(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	case exp == 0 && mant == 0:
		return sign
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or underflow to zero).
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		half := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is correct (up to Inf)
	}
	return sign | uint16(half)
}

// F32FromF16 widens an IEEE binary16 value to float32 exactly.
func F32FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Normalise the subnormal.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		mant &= 0x3ff
		return math.Float32frombits(sign | e<<23 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// BF16FromF32 rounds a float32 to the nearest bfloat16 (ties to even); NaN
// stays a quiet NaN.
func BF16FromF32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F32FromBF16 widens a bfloat16 value to float32 exactly.
func F32FromBF16(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F16sFromF32s converts src into dst (len(dst) must be at least len(src)).
func F16sFromF32s(dst []uint16, src []float32) { convert(dst, src, F16FromF32) }

// F32sFromF16s converts src into dst (len(dst) must be at least len(src)).
func F32sFromF16s(dst []float32, src []uint16) { convert(dst, src, F32FromF16) }

// BF16sFromF32s converts src into dst (len(dst) must be at least len(src)).
func BF16sFromF32s(dst []uint16, src []float32) { convert(dst, src, BF16FromF32) }

// F32sFromBF16s converts src into dst (len(dst) must be at least len(src)).
func F32sFromBF16s(dst []float32, src []uint16) { convert(dst, src, F32FromBF16) }

// convert applies one to each value of src, into dst (len(dst) must be at
// least len(src)).
func convert[D, S any](dst []D, src []S, one func(S) D) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = one(v)
	}
}
