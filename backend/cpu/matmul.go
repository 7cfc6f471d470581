package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// matmulKernel is a batch of products Y[b] = alpha·A[aIdx[b]]·B[bIdx[b]]
// (+ bias), the common form of MatMul and Gemm. A constant operand is
// packed once at build time; the others are packed into scratch by the
// first parallel phase of each run, the second phase computes the tiles.
type matmulKernel struct {
	m, n, k    int
	batch      int     // output matrices
	aIdx, bIdx []int32 // per output matrix: which A and B matrix it uses
	nA, nB     int     // matrices in A and B
	aRS, aCS   int     // element (i, l) of an A matrix is at i·aRS + l·aCS
	bRS, bCS   int     // element (l, j) of a B matrix is at l·bRS + j·bCS
	alpha      float32 // folded into the packed A
	aPre, bPre []float32
	aOff, bOff int // float offsets of the run-time packed operands in scratch
	aSize      int // floats per packed A matrix
	bSize      int // floats per packed B matrix

	// Gemm's C term.
	rowBias, colBias []float32 // constant, already scaled by beta
	biasIn           int       // 1: in[2] is a column bias, 2: a row bias
	prefill          *bplan    // else Y = beta·C before accumulating
	beta             float32

	fuse *fused // an epilogue applied tile by tile, or nil
}

// Phases of a run, in args[0].
const (
	phasePack = iota
	phaseTiles
)

func (k *matmulKernel) panelsA() int { return ceilDiv(k.m, gemmMR) }
func (k *matmulKernel) panelsB() int { return ceilDiv(k.n, gemmNR) }

// packItems is the number of panels to pack per run.
func (k *matmulKernel) packItems() (na, nb int) {
	if k.aPre == nil {
		na = k.nA * k.panelsA()
	}
	if k.bPre == nil {
		nb = k.nB * k.panelsB()
	}
	return na, nb
}

func (k *matmulKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	na, nb := k.packItems()
	if na+nb > 0 {
		w.forArgs(na+nb, w.parts((na*gemmMR+nb*gemmNR)*k.k), k, args{phasePack}, in, out, scratch)
	}
	if k.prefill != nil {
		k.fillC(in[2], out[0])
	}
	mt, nt := gemmTiles(k.m, k.n, w.Threads())
	g := gemm{m: k.m, n: k.n, mt: mt, nt: nt}
	items := k.batch * g.tiles()
	work := k.batch * k.m * k.n * max(k.k, 1)
	parts := w.parts(work / 8)
	if k.fuse != nil {
		// One item per share, so that each share knows its registers.
		parts = min(parts, items, k.fuse.shares)
		w.forArgs(parts, parts, k, args{phaseTiles, int64(mt), int64(nt), int64(parts)}, in, out, scratch)
		return
	}
	w.forArgs(items, parts, k, args{phaseTiles, int64(mt), int64(nt)}, in, out, scratch)
}

func (k *matmulKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	s := f32s(scratch)
	if a[0] == phasePack {
		na, _ := k.packItems()
		pa, pb := k.panelsA(), k.panelsB()
		for it := lo; it < hi; it++ {
			if it < na {
				mat, p := it/pa, it%pa
				src := f32s(in[0])[mat*k.m*k.k:]
				packA(s[k.aOff+mat*k.aSize:], src, k.m, k.k, k.aRS, k.aCS, k.alpha, p, p+1)
			} else {
				mat, q := (it-na)/pb, (it-na)%pb
				src := f32s(in[1])[mat*k.k*k.n:]
				packB(s[k.bOff+mat*k.bSize:], src, k.k, k.n, k.bRS, k.bCS, q, q+1)
			}
		}
		return
	}
	g := gemm{m: k.m, n: k.n, k: k.k, ldc: k.n, mt: int(a[1]), nt: int(a[2])}
	g.rowBias, g.colBias = k.rowBias, k.colBias
	switch k.biasIn {
	case 1:
		g.colBias = f32s(in[2])
	case 2:
		g.rowBias = f32s(in[2])
	}
	g.acc = k.prefill != nil
	y := f32s(out[0])
	tiles := g.tiles()
	if k.fuse != nil {
		// Item lo is share lo of a[3] shares of all the tiles.
		share, shares := lo, int(a[3])
		items := k.batch * tiles
		z := f32s(out[1])
		for it := share * items / shares; it < (share+1)*items/shares; it++ {
			b, t := it/tiles, it%tiles
			k.operands(&g, s, y, b)
			g.run(t, t+1)
			i0, i1, j0, j1 := g.tileRect(t)
			k.fuse.tile(z, y, in, f32s(out[2]), share, b*k.m+i0, b*k.m+i1, j0, j1)
		}
		return
	}
	for it := lo; it < hi; {
		b, t0 := it/tiles, it%tiles
		t1 := min(tiles, t0+hi-it)
		k.operands(&g, s, y, b)
		g.run(t0, t1)
		it += t1 - t0
	}
}

// operands points g at the packed operands and the output of matrix b.
func (k *matmulKernel) operands(g *gemm, s, y []float32, b int) {
	ai, bi := int(k.aIdx[b]), int(k.bIdx[b])
	if k.aPre != nil {
		g.a = k.aPre[ai*k.aSize:]
	} else {
		g.a = s[k.aOff+ai*k.aSize:]
	}
	if k.bPre != nil {
		g.b = k.bPre[bi*k.bSize:]
	} else {
		g.b = s[k.bOff+bi*k.bSize:]
	}
	g.c = y[b*k.m*k.n:]
}

// fillC sets Y = beta·C broadcast (Gemm's general C term).
func (k *matmulKernel) fillC(cb, yb []byte) {
	c, y := f32s(cb), f32s(yb)
	p := k.prefill
	cur := p.seek(0)
	for it := 0; it < p.items(); it++ {
		o, n, off := cur.span()
		d := y[o : o+n]
		if p.step[0] == 1 {
			mulScalar(d, c[off[0]:], k.beta)
		} else {
			fill(d, k.beta*c[off[0]])
		}
		cur.next()
	}
}

// finish prepacks constant operands and lays out scratch.
func (k *matmulKernel) finish(a, b *ir.Tensor) int64 {
	k.aSize, k.bSize = packedASize(k.m, k.k), packedBSize(k.k, k.n)
	var floats int
	if a.IsConst() {
		k.aPre = make([]float32, k.nA*k.aSize)
		src := constSrc(a)
		for mat := 0; mat < k.nA; mat++ {
			src.packA(k.aPre[mat*k.aSize:], mat*k.m*k.k, k.m, k.k, k.aRS, k.aCS, k.alpha)
		}
	} else {
		k.aOff = floats
		floats += k.nA * k.aSize
	}
	if b.IsConst() {
		k.bPre = make([]float32, k.nB*k.bSize)
		src := constSrc(b)
		for mat := 0; mat < k.nB; mat++ {
			src.packB(k.bPre[mat*k.bSize:], mat*k.k*k.n, k.k, k.n, k.bRS, k.bCS)
		}
	} else {
		k.bOff = floats
		floats += k.nB * k.bSize
	}
	return int64(floats) * 4
}

func buildMatMul(c *bctx) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	for _, t := range []*ir.Tensor{a, b, y} {
		if t.DType != ir.Float32 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	if a.Shape.Rank() == 0 || b.Shape.Rank() == 0 {
		return nil, 0, c.errorf("operands must have rank 1 or more, have %v and %v", a.Shape, b.Shape)
	}
	as, bs := ints(a.Shape), ints(b.Shape)
	if len(as) == 1 {
		as = []int{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int{bs[0], 1}
	}
	m, kk := as[len(as)-2], as[len(as)-1]
	k2, n := bs[len(bs)-2], bs[len(bs)-1]
	if kk != k2 {
		return nil, 0, c.errorf("inner dimensions differ: %v × %v", a.Shape, b.Shape)
	}
	aB, bB := as[:len(as)-2], bs[:len(bs)-2]
	k := &matmulKernel{m: m, n: n, k: kk, aRS: kk, aCS: 1, bRS: n, bCS: 1, alpha: 1}
	k.nA, k.nB = prod(aB), prod(bB)
	if k.nB == 1 && len(aB) > 0 {
		// A stack of A matrices times one B matrix is one tall product.
		k.m *= k.nA
		k.nA = 1
		aB = nil
	}
	ob, err := broadcastDims(aB, bB)
	if err != nil {
		return nil, 0, c.errorf("batch dimensions: %v", err)
	}
	k.batch = prod(ob)
	if want := int64(k.batch * k.m * k.n); want != y.Shape.Elements() {
		return nil, 0, c.errorf("output %v does not hold the %d elements of %v × %v", y.Shape, want, a.Shape, b.Shape)
	}
	k.aIdx, k.bIdx = batchIndex(ob, aB), batchIndex(ob, bB)
	return k, k.finish(a, b), nil
}

// broadcastDims is numpy broadcasting of two dimension lists.
func broadcastDims(a, b []int) ([]int, error) {
	as, bs := make(ir.Shape, len(a)), make(ir.Shape, len(b))
	for i, d := range a {
		as[i] = int64(d)
	}
	for i, d := range b {
		bs[i] = int64(d)
	}
	s, err := ir.Broadcast(as, bs)
	if err != nil {
		return nil, err
	}
	return ints(s), nil
}

// batchIndex maps every index of the broadcast batch shape out to the
// index of the matrix of an operand with batch shape dims.
func batchIndex(out, dims []int) []int32 {
	n := prod(out)
	idx := make([]int32, n)
	pos := make([]int, len(out))
	for b := 0; b < n; b++ {
		r, stride := 0, 1
		for i := len(out) - 1; i >= 0; i-- {
			j := i - (len(out) - len(dims))
			if j < 0 {
				break
			}
			if dims[j] != 1 {
				r += pos[i] * stride
			}
			stride *= dims[j]
		}
		idx[b] = int32(r)
		for i := len(out) - 1; i >= 0; i-- {
			pos[i]++
			if pos[i] < out[i] {
				break
			}
			pos[i] = 0
		}
	}
	return idx
}

func buildGemm(c *bctx) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, cc, y := c.in(0), c.in(1), c.in(2), c.out(0)
	for _, t := range []*ir.Tensor{a, b, cc, y} {
		if t != nil && t.DType != ir.Float32 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	if a.Shape.Rank() != 2 || b.Shape.Rank() != 2 {
		return nil, 0, c.errorf("operands must be matrices, have %v and %v", a.Shape, b.Shape)
	}
	at := c.attrs()
	transA, transB := at.Int("transA", 0) != 0, at.Int("transB", 0) != 0
	alpha, beta := at.Float("alpha", 1), at.Float("beta", 1)
	as, bs := ints(a.Shape), ints(b.Shape)
	k := &matmulKernel{batch: 1, nA: 1, nB: 1, aIdx: []int32{0}, bIdx: []int32{0}, alpha: alpha, beta: beta}
	if transA {
		k.m, k.k, k.aRS, k.aCS = as[1], as[0], 1, as[1]
	} else {
		k.m, k.k, k.aRS, k.aCS = as[0], as[1], as[1], 1
	}
	var k2 int
	if transB {
		k2, k.n, k.bRS, k.bCS = bs[1], bs[0], 1, bs[1]
	} else {
		k2, k.n, k.bRS, k.bCS = bs[0], bs[1], bs[1], 1
	}
	if k2 != k.k {
		return nil, 0, c.errorf("inner dimensions differ: %v × %v (transA=%v, transB=%v)", a.Shape, b.Shape, transA, transB)
	}
	if y.Shape.Rank() != 2 || int(y.Shape[0]) != k.m || int(y.Shape[1]) != k.n {
		return nil, 0, c.errorf("output %v, want [%d,%d]", y.Shape, k.m, k.n)
	}
	if cc != nil && beta != 0 {
		cs := ints(cc.Shape)
		el := prod(cs)
		perCol := len(cs) <= 2 && el == k.n && (len(cs) == 0 || cs[len(cs)-1] == k.n)
		perRow := len(cs) == 2 && cs[0] == k.m && cs[1] == 1
		switch {
		case cc.IsConst() && (perCol || perRow || el == 1):
			v := constF32(cc)
			for i := range v {
				v[i] *= beta
			}
			switch {
			case perRow:
				k.rowBias = v
			case perCol:
				k.colBias = v
			default:
				k.colBias = make([]float32, k.n)
				fill(k.colBias, v[0])
			}
		case beta == 1 && perCol:
			k.biasIn = 1
		case beta == 1 && perRow:
			k.biasIn = 2
		default:
			p, err := newBPlan(y.Shape, cc.Shape)
			if err != nil {
				return nil, 0, c.errorf("C: %v", err)
			}
			k.prefill = p
		}
	}
	return k, k.finish(a, b), nil
}

// packABytes is packA of a whole m×k operand read from bytes that may be
// unaligned (a constant in the model file): element (i, l) is
// alpha·src[i·rs + l·cs]. Packing reads the file once, with no float32
// copy of the whole operand.
func packABytes(dst []float32, src []byte, m, k, rs, cs int, alpha float32) {
	for p := 0; p < ceilDiv(m, gemmMR); p++ {
		d := dst[p*k*gemmMR : (p+1)*k*gemmMR]
		i0 := p * gemmMR
		rows := min(gemmMR, m-i0)
		clear(d)
		for i := 0; i < rows; i++ {
			for l := 0; l < k; l++ {
				d[l*gemmMR+i] = alpha * f32At(src, (i0+i)*rs+l*cs)
			}
		}
	}
}

// packBBytes is packB of a whole k×n operand read from bytes that may be
// unaligned: element (l, j) is src[l·rs + j·cs].
func packBBytes(dst []float32, src []byte, k, n, rs, cs int) {
	for q := 0; q < ceilDiv(n, gemmNR); q++ {
		d := dst[q*k*gemmNR : (q+1)*k*gemmNR]
		j0 := q * gemmNR
		cols := min(gemmNR, n-j0)
		clear(d)
		for l := 0; l < k; l++ {
			row := d[l*gemmNR:][:cols]
			for j := range row {
				row[j] = f32At(src, l*rs+(j0+j)*cs)
			}
		}
	}
}
