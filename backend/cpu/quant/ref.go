package quant

import (
	"encoding/binary"
	"math"

	"github.com/berth-ml/berth/weights/ggml"
)

// The reference kernels, in Go: the semantics every assembly kernel
// reproduces bit for bit, and the kernels of builds without assembly.
//
// Each dot returns the product of one weight row w (k values of its
// type) by one activation row a (prepared, or k float32 values for F16
// and BF16). Integer sums are exact; the floating-point steps are fixed
// so that vector code can take them in the same order:
//
//   - Blocks of 32 (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1): lane l of block b is
//     the integer sum of q·x over values 4l to 4l+3; the block adds
//     float32(d·lane) into lane l of accumulator b mod 2, d = dw·dx. The
//     result is reduce8 of the two accumulators' sum. Q4_1 and Q5_1 add
//     m·(dx·Σx) of block b into scalar b mod 2, summed last.
//   - Blocks of 256 (Q4_K, Q5_K, Q6_K): the block's integer sums (its
//     scaled products, and for Q4_K and Q5_K its minimums by the sums of
//     x) become one float32 added to a single accumulator, block after
//     block.
//   - F16, BF16: value e of each whole run of 32 adds w·x into lane e
//     mod 32 of one accumulator; the lanes are reduced as reduce32 does
//     and the values after the last whole run added one by one.
//
// No product is fused with a sum (each is converted to float32 first).

// dotFunc is the product of one weight row by one activation row.
type dotFunc func(w, a []byte, k int) float32

// lanes are the two eight-lane accumulators of the 32-value blocks.
type lanes [2][8]float32

// add adds block b's lane sums s, scaled by d.
func (acc *lanes) add(b int, d float32, s *[8]int32) {
	a := &acc[b&1]
	for l := range 8 {
		a[l] += float32(d * float32(s[l]))
	}
}

func (acc *lanes) sum() float32 {
	var v [8]float32
	for l := range 8 {
		v[l] = acc[0][l] + acc[1][l]
	}
	return reduce8(&v)
}

// reduce8 sums eight lanes as a vector unit does: halves, then halves.
func reduce8(v *[8]float32) float32 {
	h0, h1, h2, h3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (h0 + h2) + (h1 + h3)
}

// reduce32 sums 32 lanes: lanes l and l+16, then l and l+8, then reduce8.
func reduce32(acc *[32]float32) float32 {
	var v [8]float32
	for l := range 8 {
		v[l] = (acc[l] + acc[l+16]) + (acc[l+8] + acc[l+24])
	}
	return reduce8(&v)
}

// dot4 sums v·x over each run of four values.
func dot4(v *[32]int32, x []byte) (s [8]int32) {
	x = x[:32]
	for l := range 8 {
		for i := 4 * l; i < 4*l+4; i++ {
			s[l] += v[i] * int32(int8(x[i]))
		}
	}
	return s
}

// q8Row splits a prepared Q8_0 row of k values.
func q8Row(a []byte, k int) (q []byte, d, s []float32) {
	od, os := q8Offsets(k, false)
	return a[:k], f32s(a[od:], k/32), f32s(a[os:], k/32)
}

// qkRow splits a prepared Q8_K row of k values.
func qkRow(a []byte, k int) (q []byte, d []float32, sums []int16) {
	nb := k / 256
	return a[:k], f32s(a[k:], nb), i16s(a[k+4*nb:], k/32)
}

// unpackQ8_0 sets v to the 32 values of a Q8_0 block (34 bytes).
func unpackQ8_0(v *[32]int32, blk []byte) {
	for j, q := range blk[2:34] {
		v[j] = int32(int8(q))
	}
}

// unpackQ4_0 sets v to the 32 values of a Q4_0 block (18 bytes), each
// less 8.
func unpackQ4_0(v *[32]int32, blk []byte) {
	for j, q := range blk[2:18] {
		v[j], v[j+16] = int32(q&15)-8, int32(q>>4)-8
	}
}

// unpackQ4_1 sets v to the 32 values of a Q4_1 block (20 bytes).
func unpackQ4_1(v *[32]int32, blk []byte) {
	for j, q := range blk[4:20] {
		v[j], v[j+16] = int32(q&15), int32(q>>4)
	}
}

// unpackQ5_0 sets v to the 32 values of a Q5_0 block (22 bytes), each
// less 16.
func unpackQ5_0(v *[32]int32, blk []byte) {
	qh := binary.LittleEndian.Uint32(blk[2:6])
	for j, q := range blk[6:22] {
		v[j] = int32(q&15|byte(qh>>j&1)<<4) - 16
		v[j+16] = int32(q>>4|byte(qh>>(j+16)&1)<<4) - 16
	}
}

// unpackQ5_1 sets v to the 32 values of a Q5_1 block (24 bytes).
func unpackQ5_1(v *[32]int32, blk []byte) {
	qh := binary.LittleEndian.Uint32(blk[4:8])
	for j, q := range blk[8:24] {
		v[j] = int32(q&15 | byte(qh>>j&1)<<4)
		v[j+16] = int32(q>>4 | byte(qh>>(j+16)&1)<<4)
	}
}

// hasMin reports whether blocks of t (Q4_1, Q5_1) carry a minimum, an
// f16 after the scale.
func hasMin(t ggml.Type) bool { return t == ggml.Q4_1 || t == ggml.Q5_1 }

// dot32Go is the dot of a weight row of 32-value blocks of t (Q8_0,
// Q4_0, Q4_1, Q5_0 or Q5_1): lanes of integer sums scaled into the two
// accumulators and, for blocks with a minimum, m·(dx·Σx) into the two
// scalars.
func dot32Go(w, a []byte, k int, t ggml.Type) float32 {
	size := int(t.TypeSize())
	mins := hasMin(t)
	xq, xd, xs := q8Row(a, k)
	var acc lanes
	var ms [2]float32
	var v [32]int32
	for b := range k / 32 {
		blk := w[size*b : size*(b+1) : size*(b+1)]
		switch t {
		case ggml.Q8_0:
			unpackQ8_0(&v, blk)
		case ggml.Q4_0:
			unpackQ4_0(&v, blk)
		case ggml.Q4_1:
			unpackQ4_1(&v, blk)
		case ggml.Q5_0:
			unpackQ5_0(&v, blk)
		case ggml.Q5_1:
			unpackQ5_1(&v, blk)
		}
		s := dot4(&v, xq[32*b:])
		acc.add(b, scale(blk)*xd[b], &s)
		if mins {
			ms[b&1] += float32(scale(blk[2:]) * xs[b])
		}
	}
	if mins {
		return acc.sum() + (ms[0] + ms[1])
	}
	return acc.sum()
}

func dotQ8_0Go(w, a []byte, k int) float32 { return dot32Go(w, a, k, ggml.Q8_0) }
func dotQ4_0Go(w, a []byte, k int) float32 { return dot32Go(w, a, k, ggml.Q4_0) }
func dotQ4_1Go(w, a []byte, k int) float32 { return dot32Go(w, a, k, ggml.Q4_1) }
func dotQ5_0Go(w, a []byte, k int) float32 { return dot32Go(w, a, k, ggml.Q5_0) }
func dotQ5_1Go(w, a []byte, k int) float32 { return dot32Go(w, a, k, ggml.Q5_1) }

// scalesMins unpacks the eight 6-bit scales and minimums of a Q4_K or
// Q5_K block (get_scale_min_k4).
func scalesMins(s []byte) (sc, mn [8]int32) {
	s = s[:12]
	for j := range 4 {
		sc[j], mn[j] = int32(s[j]&63), int32(s[j+4]&63)
		sc[j+4] = int32(s[j+8]&15 | s[j]>>6<<4)
		mn[j+4] = int32(s[j+8]>>4 | s[j+4]>>6<<4)
	}
	return sc, mn
}

// dotKGo is the dot of a weight row of Q4_K or Q5_K blocks (t): the
// block's chunks of 64 values, low nibbles by its scale 2j and high ones
// by 2j+1 (with their fifth bits for Q5_K), and its minimums by the sums
// of x, into one float32 a block.
func dotKGo(w, a []byte, k int, t ggml.Type) float32 {
	size := int(t.TypeSize())
	five := t == ggml.Q5_K
	xq, xd, sums := qkRow(a, k)
	var acc float32
	for b := range k / 256 {
		blk := w[size*b : size*(b+1) : size*(b+1)]
		x := xq[256*b : 256*b+256 : 256*b+256]
		sc, mn := scalesMins(blk[4:16])
		var isum, msum int32
		for j := range 4 {
			var s1, s2 int32
			if five {
				qh := blk[16:48]
				q := blk[48+32*j : 80+32*j]
				for l, v := range q {
					v1, v2 := int32(v&15), int32(v>>4)
					v1 |= int32(qh[l]>>(2*j)&1) << 4
					v2 |= int32(qh[l]>>(2*j+1)&1) << 4
					s1 += v1 * int32(int8(x[64*j+l]))
					s2 += v2 * int32(int8(x[64*j+32+l]))
				}
			} else {
				q := blk[16+32*j : 48+32*j]
				for l, v := range q {
					s1 += int32(v&15) * int32(int8(x[64*j+l]))
					s2 += int32(v>>4) * int32(int8(x[64*j+32+l]))
				}
			}
			isum += sc[2*j]*s1 + sc[2*j+1]*s2
		}
		for j := range 8 {
			msum += mn[j] * int32(sums[8*b+j])
		}
		d, dm := scale(blk)*xd[b], scale(blk[2:])*xd[b]
		acc += float32(d*float32(isum)) - float32(dm*float32(msum))
	}
	return acc
}

func dotQ4_KGo(w, a []byte, k int) float32 { return dotKGo(w, a, k, ggml.Q4_K) }
func dotQ5_KGo(w, a []byte, k int) float32 { return dotKGo(w, a, k, ggml.Q5_K) }

func dotQ6_KGo(w, a []byte, k int) float32 {
	xq, xd, _ := qkRow(a, k)
	var acc float32
	for b := range k / 256 {
		blk := w[210*b : 210*b+210 : 210*b+210]
		x := xq[256*b : 256*b+256 : 256*b+256]
		var isum int32
		for n := range 2 {
			ql := blk[64*n : 64*n+64]
			qh := blk[128+32*n : 160+32*n]
			sc := blk[192+8*n : 200+8*n]
			o := x[128*n : 128*n+128]
			var s [8]int32 // per group of 16: sc index is + 2·(quarter)
			for l := range 32 {
				is := l / 16
				q1 := int32(ql[l]&15|qh[l]&3<<4) - 32
				q2 := int32(ql[l+32]&15|qh[l]>>2&3<<4) - 32
				q3 := int32(ql[l]>>4|qh[l]>>4&3<<4) - 32
				q4 := int32(ql[l+32]>>4|qh[l]>>6&3<<4) - 32
				s[is] += q1 * int32(int8(o[l]))
				s[is+2] += q2 * int32(int8(o[l+32]))
				s[is+4] += q3 * int32(int8(o[l+64]))
				s[is+6] += q4 * int32(int8(o[l+96]))
			}
			for g := range 8 {
				isum += int32(int8(sc[g])) * s[g]
			}
		}
		d := scale(blk[208:]) * xd[b]
		acc += float32(d * float32(isum))
	}
	return acc
}

// dotF32Go is the product of float32 weights and activations, summed in
// 32 lanes as the F16 kernels sum.
func dotF32Go(w, a []byte, k int) float32 {
	x, wf := f32s(a, k), f32s(w, k)
	var acc [32]float32
	k32 := k &^ 31
	for e := 0; e < k32; e += 32 {
		for l := range 32 {
			acc[l] += wf[e+l] * x[e+l]
		}
	}
	var t float32
	for e := k32; e < k; e++ {
		t += wf[e] * x[e]
	}
	return reduce32(&acc) + t
}

// dot16Go is the dot of a weight row of F16 or BF16 values (t).
func dot16Go(w, a []byte, k int, t ggml.Type) float32 {
	x := f32s(a, k)
	w = w[:2*k]
	var acc [32]float32
	k32 := k &^ 31
	for e := 0; e < k32; e += 32 {
		if t == ggml.BF16 {
			for l := range 32 {
				acc[l] += float32(bf16(w[2*(e+l):]) * x[e+l])
			}
		} else {
			for l := range 32 {
				acc[l] += float32(half(binary.LittleEndian.Uint16(w[2*(e+l):])) * x[e+l])
			}
		}
	}
	return reduce32(&acc) + tail16(w, x, k32, t)
}

func dotF16Go(w, a []byte, k int) float32  { return dot16Go(w, a, k, ggml.F16) }
func dotBF16Go(w, a []byte, k int) float32 { return dot16Go(w, a, k, ggml.BF16) }

// tailF16 and tailBF16 are tail16 of F16 and BF16 values.
func tailF16(w []byte, x []float32, k32 int) float32  { return tail16(w, x, k32, ggml.F16) }
func tailBF16(w []byte, x []float32, k32 int) float32 { return tail16(w, x, k32, ggml.BF16) }

// tail16 sums the products of the F16 or BF16 values (t) from k32 on,
// one by one.
func tail16(w []byte, x []float32, k32 int, t ggml.Type) float32 {
	var s float32
	if t == ggml.BF16 {
		for e := k32; e < len(x); e++ {
			s += float32(bf16(w[2*e:]) * x[e])
		}
		return s
	}
	for e := k32; e < len(x); e++ {
		s += float32(half(binary.LittleEndian.Uint16(w[2*e:])) * x[e])
	}
	return s
}

func bf16(b []byte) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16) }
