package quant

import (
	"bytes"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// amxTypes are the weight types with an AMX path.
var amxTypes = []ggml.Type{ggml.Q4_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K}

// amxK is k of about n blocks of 32 that weights of type t take.
func amxK(t ggml.Type, n int) int {
	if t.BlockSize() == 256 {
		return (n + 7) / 8 * 256
	}
	return 32 * n
}

// needAMX skips a test where this CPU, build or process has no AMX tiles.
func needAMX(t testing.TB) {
	t.Helper()
	if !AMX(ggml.Q4_0) {
		t.Skip("no AMX tiles here")
	}
}

// runAMXParts computes the product on the AMX path, each range of parts
// on a goroutine of its own, at once, with its own work space, as
// workers do; and checks that the path was taken.
func runAMXParts(t *testing.T, typ ggml.Type, x []float32, m, k int, w []byte, n int, parts [][2]int) []float32 {
	t.Helper()
	y := make([]float32, m*n)
	for i := range y {
		y[i] = float32(math.NaN()) // every output must be written
	}
	scratch := make([]byte, ScratchBytes(typ, m, k))
	p, err := Prepare(y, x, m, k, w, n, typ, scratch)
	if err != nil {
		t.Fatal(err)
	}
	if p.xv == nil {
		t.Fatalf("%s m=%d k=%d: not prepared for AMX", typ, m, k)
	}
	var wg sync.WaitGroup
	for _, r := range parts {
		q, err := Prepared(y, x, m, k, w, n, typ, scratch)
		if err != nil {
			t.Fatal(err)
		}
		work := make([]byte, WorkBytes(typ, m, k))
		wg.Go(func() { q.RunWith(r[0], r[1], work) })
	}
	wg.Wait()
	return y
}

// amxCheck compares y, the AMX path's product, with ref.go's dot of each
// output, and returns the largest error in units of u·S (see below).
//
// Q4_0 and Q8_0:
//
// Both take the same integer block sums (exact) and the same scales
// d = d_w·d_x (one float32 product); they differ in the float32 steps
// after. ref.go rounds each lane's d·s (eight lanes a block), adds it
// into one of 16 lane accumulators, nb/2 terms each, and sums those in
// four steps; the AMX path adds d·s of each block with one rounding
// (FMA) into one accumulator, a slice of at most amxSliceBlocks blocks
// after another, and adds the slices. An error of a float32 step is at
// most u = 2⁻²⁴ of its result, which is at most S, the sum of the
// magnitudes of the lane terms |d·s_lane| (at least that of the block
// terms |d·s|); each term passes through at most nb/2+5 steps in ref.go
// and min(nb, amxSliceBlocks)+⌈nb/amxSliceBlocks⌉ in the AMX path. So
// to first order
//
//	|y − ref| ≤ (nb/2 + 5 + min(nb, 64) + ⌈nb/64⌉)·u·S,
//
// the bound checked. It is a worst case: the test logs the largest error
// seen, in units of u·S, which is typically a few.
//
// Q4_K: ref.go takes each block of 256 as float32(isum), times d = d_w·d_x,
// less float32(msum) times dm = dmin·d_x, into one accumulator, nsb =
// k/256 terms; S sums |d_w·sc·d_x·s| and |dmin·m·d_x·Σq_x| over the
// sub-blocks of 32, and a term passes through at most nsb+5 steps. The
// AMX path adds two products a sub-block (the minimums' second), each
// with one rounding of its scale and one of the FMA: at most
// 2·min(nb, 64)+2+⌈nb/64⌉ steps. So
//
//	|y − ref| ≤ (nsb + 7 + 2·min(nb, 64) + ⌈nb/64⌉)·u·S.
//
// Q6_K: ref.go takes each block of 256 as float32(isum) times d =
// d_w·d_x into one accumulator, at most nsb+3 steps; the AMX path adds
// each block of 16 (nb16 = k/16 of them) with one rounding of its scale
// and one of the FMA, a slice of at most 128 after another, and S sums
// |d_w·sc·d_x·s| over the blocks of 16:
//
//	|y − ref| ≤ (nsb + 4 + min(nb16, 128) + ⌈nb16/128⌉)·u·S.
func amxCheck(t *testing.T, typ ggml.Type, name string, x []float32, m, k int, w []byte, n int, y []float32) float64 {
	t.Helper()
	im := goImpls[typ]
	scratch := make([]byte, 64+m*actStride(im.kind, k))
	p, err := prepare(make([]float32, m*n), x, m, k, w, n, typ, scratch, im, true)
	if err != nil {
		t.Fatal(err)
	}
	nb := k / 32
	size := p.wRow / nb
	steps := float64(nb)/2 + 5 + float64(min(nb, amxSliceBlocks)) + math.Ceil(float64(nb)/amxSliceBlocks)
	switch typ {
	case ggml.Q4_K:
		steps = float64(k/256) + 7 + 2*float64(min(nb, amxSliceBlocks)) + math.Ceil(float64(nb)/amxSliceBlocks)
	case ggml.Q6_K:
		steps = float64(k/256) + 4 + float64(min(k/16, 2*amxSliceBlocks)) + math.Ceil(float64(k/16)/(2*amxSliceBlocks))
	}
	const u = 1.0 / (1 << 24)
	worst := 0.0
	for i := range m {
		a := p.row(i)
		for j := range n {
			wr := w[j*p.wRow : (j+1)*p.wRow]
			ref := p.dot(wr, a, k)
			var s float64
			switch typ {
			case ggml.Q4_K:
				s = magnitudeQ4_K(wr, a, k)
			case ggml.Q6_K:
				s = magnitudeQ6_K(wr, a, k)
			default:
				xq, xd, _ := q8Row(a, k)
				for b := range nb {
					blk := wr[size*b : size*(b+1)]
					v := weightValues(typ, blk)
					d := scale(blk) * xd[b]
					for l := range 8 {
						var sl int32
						for e := 4 * l; e < 4*l+4; e++ {
							sl += v[e] * int32(int8(xq[32*b+e]))
						}
						s += math.Abs(float64(d) * float64(sl))
					}
				}
			}
			got := y[i*n+j]
			diff := math.Abs(float64(got) - float64(ref))
			if !(diff <= steps*u*s) {
				t.Errorf("%s %s m=%d k=%d n=%d: y[%d,%d] = %g, ref.go %g: off by %.3g, more than %.0f·u·S = %.3g",
					typ, name, m, k, n, i, j, got, ref, diff, steps, steps*u*s)
				return worst
			}
			if s > 0 {
				worst = max(worst, diff/(u*s))
			}
		}
	}
	return worst
}

// magnitudeQ4_K is S of amxCheck for a Q4_K row w by a Q8_K row a.
func magnitudeQ4_K(w, a []byte, k int) (s float64) {
	xq, xd, sums := qkRow(a, k)
	for b := range k / 256 {
		blk := w[144*b : 144*b+144]
		sc, mn := scalesMins(blk[4:16])
		d, dmin := float64(scale(blk)), float64(scale(blk[2:]))
		for j := range 8 {
			var sj int64
			q := blk[16+32*(j/2) : 48+32*(j/2)]
			for l, v := range q {
				if j%2 == 1 {
					v >>= 4
				}
				sj += int64(v&15) * int64(int8(xq[256*b+32*j+l]))
			}
			dx := float64(xd[b])
			s += math.Abs(d*float64(sc[j])*dx*float64(sj)) + math.Abs(dmin*float64(mn[j])*dx*float64(sums[8*b+j]))
		}
	}
	return s
}

// magnitudeQ6_K is S of amxCheck for a Q6_K row w by a Q8_K row a.
func magnitudeQ6_K(w, a []byte, k int) (s float64) {
	xq, xd, _ := qkRow(a, k)
	for b := range k / 256 {
		blk := w[210*b : 210*b+210]
		var v [256]int64
		for h := range 2 {
			ql, qh := blk[64*h:64*h+64], blk[128+32*h:160+32*h]
			for l := range 32 {
				v[128*h+l] = int64(ql[l]&15|qh[l]&3<<4) - 32
				v[128*h+32+l] = int64(ql[l+32]&15|qh[l]>>2&3<<4) - 32
				v[128*h+64+l] = int64(ql[l]>>4|qh[l]>>4&3<<4) - 32
				v[128*h+96+l] = int64(ql[l+32]>>4|qh[l]>>6&3<<4) - 32
			}
		}
		d := float64(scale(blk[208:])) * float64(xd[b])
		for g := range 16 {
			var sg int64
			for e := 16 * g; e < 16*g+16; e++ {
				sg += v[e] * int64(int8(xq[256*b+e]))
			}
			s += math.Abs(d * float64(int8(blk[192+g])) * float64(sg))
		}
	}
	return s
}

// weightValues are the 32 integer values of a Q4_0 or Q8_0 block.
func weightValues(typ ggml.Type, blk []byte) (v [32]int32) {
	if typ == ggml.Q8_0 {
		for j, q := range blk[2:34] {
			v[j] = int32(int8(q))
		}
		return v
	}
	for j, q := range blk[2:18] {
		v[j], v[j+16] = int32(q&15)-8, int32(q>>4)-8
	}
	return v
}

// amxShapes are products of awkward sizes for the AMX path: rows not a
// multiple of 16 (and fewer than a tile past the first), more rows than
// one chunk of tiles; weight rows fewer than 16, not a multiple of 16;
// k of one block, of a slice and a block, of several slices (k in
// blocks of 32, rounded up to whole blocks of the type; see amxK).
func amxShapes() (s [][3]int) {
	for _, m := range []int{amxMinRows, 9, 16, 17, 31, 40} {
		for _, k := range []int{1, 3, amxSliceBlocks + 1} {
			for _, n := range []int{1, 5, 16, 17, 40} {
				s = append(s, [3]int{m, k, n})
			}
		}
	}
	// And a product of a 1.1B LLaMA's feed-forward down projection.
	return append(s, [3]int{16*amxChunkTiles + 3, 8, 33}, [3]int{70, 2*amxSliceBlocks + 7, 20}, [3]int{37, 5632 / 32, 48})
}

// The AMX path computes every output within the bound of amxCheck of
// ref.go's dot, whatever the ranges workers take (as Split gives them,
// and ranges not a multiple of 16 long).
func TestAMXMatchesReference(t *testing.T) {
	needAMX(t)
	for _, typ := range amxTypes {
		worst := 0.0
		for _, sh := range amxShapes() {
			m, k, n := sh[0], amxK(typ, sh[1]), sh[2]
			r := rand.New(rand.NewPCG(uint64(typ), uint64(m*k*n+7)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, m, k)
			ranges := map[string][][2]int{"whole": {{0, n}}}
			for _, parts := range []int{2, 3} {
				var rs [][2]int
				for i := range parts {
					if lo, hi := Split(n, parts, i); lo < hi {
						rs = append(rs, [2]int{lo, hi})
					}
				}
				ranges["split"+string(rune('0'+parts))] = rs
			}
			if n > 2 {
				ranges["odd"] = [][2]int{{0, 1}, {1, n - 1}, {n - 1, n}}
			}
			for name, parts := range ranges {
				y := runAMXParts(t, typ, x, m, k, w, n, parts)
				worst = max(worst, amxCheck(t, typ, name, x, m, k, w, n, y))
			}
		}
		t.Logf("%s: largest error %.3g·u·S", typ, worst)
	}
}

// The AMX path on extreme values: weights at their limits, activations
// of ±127 after quantisation and of the largest f16 scale, tiny ones
// that quantise to zero, and zeros.
func TestAMXOnExtremes(t *testing.T) {
	needAMX(t)
	const m, n = 20, 18
	for _, typ := range amxTypes {
		k := amxK(typ, amxSliceBlocks+3)
		x := make([]float32, m*k)
		for e := range k {
			x[e] = 1e3 * float32(1-2*(e&1))
			x[2*k+e] = 1e-30
			x[5*k+e] = -1e3
			x[7*k+e] = 65504 * 127
			x[9*k+e] = float32(e%32) - 16
		}
		for _, fill := range []byte{0x00, 0xff, 0x80, 0x7f, 0x88} {
			w := extremeWeights(typ, n, k, fill, 8)
			y := runAMXParts(t, typ, x, m, k, w, n, [][2]int{{0, n}})
			amxCheck(t, typ, "extremes", x, m, k, w, n, y)
		}
	}
}

// With the AMX path switched off (amxOff), or without a work space,
// products take the vector kernels and return their bits.
func TestAMXFallback(t *testing.T) {
	needAMX(t)
	const m, k, n = 40, 256, 37
	for _, typ := range amxTypes {
		r := rand.New(rand.NewPCG(uint64(typ), 9))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		want := runRange(t, typ, impls[typ], true, x, m, k, w, n, [][2]int{{0, n}})
		check := func(name string, y []float32) {
			t.Helper()
			for i := range y {
				if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
					t.Errorf("%s %s: y[%d] = %g, the vector kernels' %g", typ, name, i, y[i], want[i])
					return
				}
			}
		}

		// No work space: Run.
		y := make([]float32, m*n)
		scratch := make([]byte, ScratchBytes(typ, m, k))
		p, err := Prepare(y, x, m, k, w, n, typ, scratch)
		if err != nil {
			t.Fatal(err)
		}
		p.RunWith(0, n, make([]byte, WorkBytes(typ, m, k)-1))
		check("short work space", y)

		// A scratch without room for the AMX layout.
		small := make([]byte, ScratchBytes(typ, m, k)-amxActBytes(typ, m, k))
		y = make([]float32, m*n)
		if p, err = Prepare(y, x, m, k, w, n, typ, small); err != nil {
			t.Fatal(err)
		}
		if p.xv != nil {
			t.Errorf("%s: prepared for AMX in a scratch too short", typ)
		}
		p.RunWith(0, n, make([]byte, WorkBytes(typ, m, k)))
		check("short scratch", y)

		// Switched off.
		amxOff = true
		if AMX(typ) || WorkBytes(typ, m, k) != 0 || ScratchBytes(typ, m, k) != len(small) {
			t.Errorf("%s: AMX switched off, but AMX = %v, WorkBytes %d, ScratchBytes %d (want %d)", typ, AMX(typ), WorkBytes(typ, m, k), ScratchBytes(typ, m, k), len(small))
		}
		y = make([]float32, m*n)
		if p, err = Prepare(y, x, m, k, w, n, typ, scratch); err != nil {
			t.Fatal(err)
		}
		p.RunWith(0, n, make([]byte, amxWorkBytes(k)))
		amxOff = false
		if p.xv != nil {
			t.Errorf("%s: prepared for AMX while it is off", typ)
		}
		check("switched off", y)

		// Too few rows.
		if WorkBytes(typ, amxMinRows-1, k) != 0 {
			t.Errorf("%s: a work space for %d rows", typ, amxMinRows-1)
		}
	}
}

// MatMul takes the AMX path given room for a work space, and allocates
// nothing.
func TestAMXMatMul(t *testing.T) {
	needAMX(t)
	const m, n = 33, 24
	for _, typ := range amxTypes {
		k := amxK(typ, amxSliceBlocks+5)
		r := rand.New(rand.NewPCG(uint64(typ), 10))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		y := make([]float32, m*n)
		scratch := make([]byte, ScratchBytes(typ, m, k)+WorkBytes(typ, m, k))
		if err := MatMul(y, x, m, k, w, n, typ, scratch); err != nil {
			t.Fatal(err)
		}
		want := runRange(t, typ, impls[typ], true, x, m, k, w, n, [][2]int{{0, n}})
		same := true
		for i := range y {
			same = same && math.Float32bits(y[i]) == math.Float32bits(want[i])
		}
		if same {
			t.Errorf("%s: MatMul's results are the vector kernels' bits: no AMX?", typ)
		}
		amxCheck(t, typ, "MatMul", x, m, k, w, n, y)
		if a := testing.AllocsPerRun(5, func() { MatMul(y, x, m, k, w, n, typ, scratch) }); a != 0 {
			t.Errorf("%s: %v allocations a call", typ, a)
		}
	}
}

// The assembly unpacking of Q6_K weights for the tiles writes what the
// Go one writes.
func TestAMXPackQ6_K(t *testing.T) {
	needAMX(t)
	const rows, nsb = 11, 3
	r := rand.New(rand.NewPCG(16, 17))
	w := randomWeights(r, ggml.Q6_K, rows, 256*nsb)
	want, got := make([]byte, 256*16*nsb), make([]byte, 256*16*nsb)
	amxPackQ6_KGo(want, w, 210*nsb, rows, nsb)
	amxPackQ6_K(&got[0], &w[0], 210*nsb, rows, nsb)
	if !bytes.Equal(got, want) {
		t.Error("the assembly unpacks Q6_K differently")
	}
}
