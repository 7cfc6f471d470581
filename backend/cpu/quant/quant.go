package quant

import (
	"fmt"
	"unsafe"

	"github.com/berth-ml/berth/weights/ggml"
)

// Supports reports whether MatMul takes weights of type t.
func Supports(t ggml.Type) bool { return t < ggml.TypeCount && impls[t].kind != 0 }

// ScratchBytes is the scratch MatMul and Prepare need for m activation
// rows of k elements against weights of type t: the quantised rows (Q8_0
// for Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights, Q8_K for the K-quants),
// plus 64 bytes to align them, and where the product takes the AMX tiles
// (see RunWith) the rows once more, laid out for them. F16 and BF16
// weights need none. It is 0 for a type MatMul does not take.
func ScratchBytes(t ggml.Type, m, k int) int {
	if !Supports(t) || m <= 0 || k <= 0 {
		return 0
	}
	s := actStride(impls[t].kind, k)
	if s == 0 {
		return 0
	}
	n := 64 + m*s
	if amxFor(t, m) {
		n += amxActBytes(t, m, k)
	}
	return n
}

// actStride is the bytes one prepared activation row of k elements takes
// (a multiple of 64), 0 where rows are not prepared.
func actStride(kind kind, k int) int {
	var n int
	switch kind {
	case kindQ8_0:
		n = k + 8*(k/32) // int8 values, then per block d and d·Σq as float32
	case kindQ8_0B:
		n = 2*k + 8*(k/32) // the same with the sums of fours
	case kindQ8_K:
		n = k + 4*(k/256) + 2*(k/32) // int8 values, per block d, int16 sums of 32
	default:
		return 0
	}
	return (n + 64 + 63) &^ 63
}

// Product is one prepared product y = x·Wᵀ: its operands checked and
// the activation rows quantised. Run computes any range of its output
// columns (rows of W) and may be called from several goroutines at once
// on ranges that do not overlap. A Product holds the caller's slices; it
// is valid while they are.
type Product struct {
	y, x    []float32
	w       []byte
	act     []byte // the prepared activation rows, 64-byte aligned
	dot     dotFunc
	tile    tiling
	m, k, n int
	wRow    int // bytes per weight row
	aRow    int // bytes per prepared activation row (0: x is read as it is)
	wType   ggml.Type
	kind    kind      // of the prepared activation rows
	xv      []byte    // for the AMX tiles: the activation rows as they take them (amx.go)
	xs      []float32 // and their scales
}

// Prepare checks the operands of y[m,n] = x[m,k]·Wᵀ, where W is n rows
// of k elements of type t stored row after row in w (as in a GGUF file),
// and quantises the rows of x into scratch, which must hold at least
// ScratchBytes(t, m, k) bytes. k must be a multiple of t's block size.
// It does not allocate, except for the error.
func Prepare(y, x []float32, m, k int, w []byte, n int, t ggml.Type, scratch []byte) (Product, error) {
	if !Supports(t) {
		return Product{}, fmt.Errorf("quant: no product with %s weights", t)
	}
	return prepare(y, x, m, k, w, n, t, scratch, impls[t], true)
}

// Prepared is Prepare for activation rows that scratch already holds,
// quantised by a Prepare of the same operands: it checks them and
// quantises nothing, so that the goroutines that share out a product's
// weight rows can each take it. It does not allocate, except for the
// error.
func Prepared(y, x []float32, m, k int, w []byte, n int, t ggml.Type, scratch []byte) (Product, error) {
	if !Supports(t) {
		return Product{}, fmt.Errorf("quant: no product with %s weights", t)
	}
	return prepare(y, x, m, k, w, n, t, scratch, impls[t], false)
}

// prepare is Prepare with the kernel im, quantising the activations only
// where quantise says so.
func prepare(y, x []float32, m, k int, w []byte, n int, t ggml.Type, scratch []byte, im impl, quantise bool) (Product, error) {
	if m < 0 || k < 0 || n < 0 {
		return Product{}, fmt.Errorf("quant: negative size %d×%d·(%d×%d)ᵀ", m, k, n, k)
	}
	wRow, err := t.RowSize(int64(k))
	if err != nil {
		return Product{}, fmt.Errorf("quant: %w", err)
	}
	switch {
	case len(y) < m*n:
		return Product{}, fmt.Errorf("quant: y holds %d values, need %d×%d", len(y), m, n)
	case len(x) < m*k:
		return Product{}, fmt.Errorf("quant: x holds %d values, need %d×%d", len(x), m, k)
	case int64(len(w)) < int64(n)*wRow:
		return Product{}, fmt.Errorf("quant: w holds %d bytes, %d rows of %d %s need %d", len(w), n, k, t, int64(n)*wRow)
	}
	p := Product{y: y, x: x, w: w, dot: im.dot, tile: im.tile, m: m, k: k, n: n, wRow: int(wRow), aRow: actStride(im.kind, k), wType: t, kind: im.kind}
	if p.aRow == 0 || m == 0 || k == 0 {
		return p, nil
	}
	need := 64 + m*p.aRow
	if len(scratch) < need {
		return Product{}, fmt.Errorf("quant: scratch holds %d bytes, need %d", len(scratch), need)
	}
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(scratch))) & 63)
	p.act = scratch[off : off+m*p.aRow]
	if amxFor(t, m) && im.kind != kindFloat && len(scratch) >= need+amxActBytes(t, m, k) {
		v := scratch[off+m*p.aRow : off+m*p.aRow+amxActBytes(t, m, k)]
		tiles := (m + 15) / 16
		p.xv = v[:tiles*16*k]
		p.xs = f32s(v[tiles*16*k:], tiles*(k/amxBlock(t))*amxScales(t))
	}
	if quantise {
		p.Quantize(0, m)
	}
	return p, nil
}

// Quantize quantises activation rows [lo, hi) into the scratch, as
// Prepare does every row, so that the goroutines sharing out a product
// can share this out too: each takes the product from Prepared and
// quantises its rows, and all have done so before any calls Run. It
// does not allocate.
func (p *Product) Quantize(lo, hi int) {
	if p.act == nil {
		return
	}
	lo, hi = max(lo, 0), min(hi, p.m)
	for i := lo; i < hi; i++ {
		a := p.act[i*p.aRow : (i+1)*p.aRow]
		xi := p.x[i*p.k : (i+1)*p.k]
		switch p.kind {
		case kindQ8_0, kindQ8_0B:
			if p.xv != nil {
				p.amxQuantize(i, a, xi, p.kind == kindQ8_0B)
			} else {
				quantizeQ8_0(a, xi, p.kind == kindQ8_0B)
			}
		case kindQ8_K:
			if p.xv != nil {
				p.amxQuantizeK(i, a, xi)
			} else {
				quantizeQ8_K(a, xi)
			}
		}
	}
	if hi == p.m && lo < hi && p.xv != nil {
		p.amxPad()
	}
}

// Run computes the output columns [lo, hi) of every row of y: the
// products of the activation rows by weight rows lo to hi-1. It does not
// allocate.
func (p *Product) Run(lo, hi int) {
	if lo < 0 || hi > p.n || lo >= hi || p.m == 0 {
		return
	}
	if p.k == 0 {
		for i := range p.m {
			clear(p.y[i*p.n+lo : i*p.n+hi])
		}
		return
	}
	// The activation rows are taken a chunk at a time, a chunk small
	// enough to stay in L2 while every weight row of the range passes
	// by it once; a weight row stays in L1 while the chunk's rows use it.
	// Where the kernel has tiles, they take the chunk's rows mr at a time
	// and the range's weight rows nr at a time; the rows and weight rows
	// left over go one by one.
	stride := p.aRow
	if stride == 0 {
		stride = 4 * p.k
	}
	chunk := max(1, (192<<10)/stride)
	t := p.tile
	if t.f != nil {
		chunk = max(t.mr, chunk/t.mr*t.mr)
	}
	for i0 := 0; i0 < p.m; i0 += chunk {
		i1 := min(p.m, i0+chunk)
		it, jt := i0, lo // the tiles cover rows [i0, it) by weight rows [lo, jt)
		if t.f != nil && i1-i0 >= t.mr && hi-lo >= t.nr {
			it, jt = i1-(i1-i0)%t.mr, hi-(hi-lo)%t.nr
			a := p.rows()
			for j := lo; j < jt; j += t.nr {
				wt := p.w[j*p.wRow : (j+t.nr)*p.wRow]
				for i := i0; i < it; i += t.mr {
					t.f(p.y[i*p.n+j:], p.n, wt, p.wRow, a[i*stride:], stride, p.k)
				}
			}
		}
		p.oneByOne(i0, i1, jt, hi)
		p.oneByOne(it, i1, lo, jt)
	}
}

// oneByOne computes outputs [j0, j1) of activation rows [i0, i1) with
// the dot kernel, one by one.
func (p *Product) oneByOne(i0, i1, j0, j1 int) {
	for j := j0; j < j1; j++ {
		wr := p.w[j*p.wRow : (j+1)*p.wRow]
		for i := i0; i < i1; i++ {
			p.y[i*p.n+j] = p.dot(wr, p.row(i), p.k)
		}
	}
}

// rows are the activation rows as the kernels read them, one after the
// other: prepared, or x's own.
func (p *Product) rows() []byte {
	if p.aRow != 0 {
		return p.act
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p.x))), 4*p.m*p.k)
}

// row is activation row i as the kernels read it: prepared, or x's own.
func (p *Product) row(i int) []byte {
	if p.aRow != 0 {
		return p.act[i*p.aRow : (i+1)*p.aRow]
	}
	xi := p.x[i*p.k : (i+1)*p.k]
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(xi))), 4*len(xi))
}

// MatMul sets y[m,n] = x[m,k]·Wᵀ for the n rows of k elements of type t
// in w, on the calling goroutine: Prepare, then Run over every row of W.
// scratch must hold ScratchBytes(t, m, k) bytes; the WorkBytes(t, m, k)
// after them, where it holds them too, serve RunWith instead. It does
// not allocate, except for the error.
func MatMul(y, x []float32, m, k int, w []byte, n int, t ggml.Type, scratch []byte) error {
	p, err := Prepare(y, x, m, k, w, n, t, scratch)
	if err != nil {
		return err
	}
	p.RunWith(0, n, scratch[min(len(scratch), ScratchBytes(t, m, k)):])
	return nil
}

// Split returns the i-th of parts contiguous ranges [lo, hi) that share
// out n weight rows among workers, each range (but the last) a multiple
// of 16 rows, so that no two workers write into one 64-byte line of a
// 64-byte aligned y. Some ranges are empty when n is small.
func Split(n, parts, i int) (lo, hi int) {
	if parts < 1 || i < 0 || i >= parts || n <= 0 {
		return 0, 0
	}
	g := (n + 15) / 16
	lo = min(n, i*g/parts*16)
	hi = min(n, (i+1)*g/parts*16)
	return lo, hi
}
