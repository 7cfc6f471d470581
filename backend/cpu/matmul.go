package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// matmulKernel is a batch of products Y[b] = alpha·A[aIdx[b]]·B[bIdx[b]]
// (+ bias), the common form of MatMul and Gemm. A constant operand is
// packed once at build time. The others are packed at run time in one of
// four ways:
//
//   - Bands, when A is an activation and B a constant (a layer applied
//     to activations; k, m, n > 0), C is small or its k slices deep and
//     the whole packed A would be large (see bandsPay). C is cut into
//     row bands of at most gemmMT A panels; for each k slice (sliced as
//     gemm.run slices k, so results are bit for bit those of whole
//     packing) a band's A slice is packed into scratch and all or part
//     of the band's columns swept (see bandSplit). Scratch is one band
//     slice (≤ 144 rows × 256 steps, or 1024 where the slices are deep)
//     per worker, whatever K and M. A large single product of two
//     activations (bandsRun) runs in bands too, over a B that a first
//     phase of the run packs as a constant B is packed.
//   - Pairs, when both operands are activations, each product has its
//     own A and B matrix and there are at least two products per worker
//     (batched attention products, a head each): each worker packs the
//     A and B of one product at a time into its own area and computes
//     it. Scratch is one pair per worker, not the whole batch.
//   - Blocks, when both operands of a single product are activations,
//     there are two workers or more and C is wide enough for every worker
//     to own columns of it (blocksPay): the GotoBLAS loop. Worker i owns
//     blocks of columns; for each k slice (sliced as gemm.run slices k)
//     it packs its block's B slice (at most gemmNT panels) into its own
//     area, then, band after band of at most gemmMT A panels, packs the
//     band's A slice next to it and computes the band by the block. The packed slices are written into and read from the
//     worker's cache instead of a whole packed copy of A and B in memory;
//     scratch is one block and one band slice per worker.
//   - Whole, in every other case: A constant (its packing is done once,
//     and B, packed per run, is what the tiles stream), both operands
//     activations in a small or broadcast batch, or an empty product. A
//     first parallel phase packs the run-time operands whole into
//     scratch, the second computes the tiles.
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
	// lim, when set, clamps the output as the kernels store it: a Relu
	// or Clip taken from the head of the epilogue's chain.
	lim *[2]float32

	// Band packing (per > 0): each worker's scratch area is per floats,
	// room for the A slice of the tallest band, packed kc steps deep; bPre
	// then holds B slice by slice, the slice of k steps [k0, k0+kb) at
	// k0·panelsB·NR with panel q at q·kb·NR, so that a sweep over the
	// panels of one slice reads B in order. Where B is an activation (a
	// large single product, see bandsRun), a first phase of each run packs
	// it so into the first bandBase floats of scratch, and the areas
	// follow.
	per, kc  int
	bandBase int

	// Pair packing (pair > 0): each worker's scratch area is pair floats,
	// a packed A matrix and, from pairB on, a packed B matrix.
	pair, pairB int

	// Block packing (block > 0): each worker's scratch area is block
	// floats, a B block slice and, from blockA on, an A band slice.
	block, blockA int

	// wide: B is packed in quads, for the 6×64 kernel (see wideB), in
	// every packed form above but the pairs' and the blocks' (which
	// products packed in quads do not take: see bandsRun).
	wide bool
}

// Phases of a run, in args[0].
const (
	phasePack = iota
	phaseTiles
	phaseBands   // owned bands (see bandSplit)
	phaseShared  // one step of shared bands
	phasePairs   // products a worker packs and computes one by one
	phaseColumns // column blocks a worker packs and computes (block packing)
	phaseBandsB  // B panels packed slice by slice for bands over a run-time B
	phaseOwnB    // a worker's columns: its B panels packed, then every band
)

func (k *matmulKernel) panelsA() int { return ceilDiv(k.m, gemmMR) }
func (k *matmulKernel) panelsB() int { return ceilDiv(k.n, gemmNR) }

// depth is the depth of the product's k slices (productDepth).
func (k *matmulKernel) depth() int { return productDepth(k.m, k.n, k.k) }

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
	if k.per > 0 {
		k.runBands(w, in, out, scratch)
		return
	}
	if k.block > 0 {
		// One item per worker: each its own area and registers.
		p := min(w.Threads(), len(scratch)/4/k.block, k.panelsB()/2)
		if k.fuse != nil {
			p = min(p, k.fuse.shares)
		}
		p = max(p, 1)
		if k.prefill != nil {
			k.fillC(in[2], out[0])
		}
		w.forArgs(p, p, k, args{phaseColumns, int64(p)}, in, out, scratch)
		return
	}
	if k.pair > 0 {
		// One item per worker: each its own area and registers.
		p := min(w.Threads(), len(scratch)/4/k.pair, k.batch, w.parts(k.batch*k.m*k.n*k.k/8))
		if k.fuse != nil {
			p = min(p, k.fuse.shares)
		}
		p = max(p, 1)
		w.forArgs(p, p, k, args{phasePairs, int64(p)}, in, out, scratch)
		return
	}
	na, nb := k.packItems()
	if na+nb > 0 {
		w.forArgs(na+nb, w.parts((na*gemmMR+nb*gemmNR)*k.k), k, args{phasePack}, in, out, scratch)
	}
	if k.prefill != nil {
		k.fillC(in[2], out[0])
	}
	mt, nt := gemmTiles(k.m, k.n, w.Threads())
	if k.wide {
		nt = roundUp(nt, 4)
	}
	g := gemm{m: k.m, n: k.n, mt: mt, nt: nt, bWide: k.wide}
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
	switch a[0] {
	case phaseBands:
		p := int(a[1])
		sp := k.split(p)
		areas := k.bandAreas(s)
		for wi := lo; wi < hi; wi++ {
			k.ownBands(in, out, k.bandsB(s), areas[wi*k.per:][:k.per], sp, wi*sp.units/p, (wi+1)*sp.units/p, 0, k.panelsB(), wi)
		}
		return
	case phaseShared:
		p := int(a[1])
		for wi := lo; wi < hi; wi++ {
			k.sharedStep(in, out, k.bandsB(s), k.bandAreas(s), k.split(p), int(a[2]), int(a[3]), wi, p)
		}
		return
	case phasePairs:
		p := int(a[1])
		for wi := lo; wi < hi; wi++ {
			k.pairs(in, out, s[wi*k.pair:][:k.pair], wi*k.batch/p, (wi+1)*k.batch/p, wi)
		}
		return
	case phaseOwnB:
		p := int(a[1])
		areas := k.bandAreas(s)
		for wi := lo; wi < hi; wi++ {
			k.ownColumns(in, out, s, areas[wi*k.per:][:k.per], wi, p)
		}
		return
	case phaseBandsB:
		k.packBandsB(in, s, lo, hi)
		return
	case phaseColumns:
		p := int(a[1])
		for wi := lo; wi < hi; wi++ {
			k.columnBlocks(in, out, s[wi*k.block:][:k.block], wi, p)
		}
		return
	}
	if a[0] == phasePack {
		na, _ := k.packItems()
		pa, pb := k.panelsA(), k.panelsB()
		// Items are A panels and then B panels: each call packs the
		// range's panels of one matrix.
		for it := lo; it < hi; {
			if it < na {
				mat, p := it/pa, it%pa
				end := min(hi, na, (mat+1)*pa)
				src := f32s(in[0])[mat*k.m*k.k:]
				packA(s[k.aOff+mat*k.aSize:], src, k.m, k.k, k.aRS, k.aCS, k.alpha, p, p+end-it)
				it = end
				continue
			}
			mat, q := (it-na)/pb, (it-na)%pb
			end := min(hi, na+(mat+1)*pb)
			src := f32s(in[1])[mat*k.k*k.n:]
			packBPanels(s[k.bOff+mat*k.bSize:], src, k.k, k.n, k.bRS, k.bCS, q, q+end-it, k.wide)
			it = end
		}
		return
	}
	g := gemm{m: k.m, n: k.n, k: k.k, ldc: k.n, mt: int(a[1]), nt: int(a[2]), kc: k.depth(), lim: k.lim, bWide: k.wide}
	g.rowBias, g.colBias = k.biases(in)
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

// pairs computes products [lo, hi) one by one on worker wi, packing each
// one's A and B into buf; the epilogue, if any, runs on each finished
// product with the registers of share wi.
func (k *matmulKernel) pairs(in, out [][]byte, buf []float32, lo, hi, wi int) {
	x, w, y := f32s(in[0]), f32s(in[1]), f32s(out[0])
	ap, bp := buf[:k.aSize], buf[k.pairB:][:k.bSize]
	mt, nt := gemmTiles(k.m, k.n, 1)
	for b := lo; b < hi; b++ {
		packA(ap, x[b*k.m*k.k:], k.m, k.k, k.aRS, k.aCS, k.alpha, 0, k.panelsA())
		packB(bp, w[b*k.k*k.n:], k.k, k.n, k.bRS, k.bCS, 0, k.panelsB())
		g := gemm{m: k.m, n: k.n, k: k.k, ldc: k.n, mt: mt, nt: nt, kc: k.depth(), a: ap, b: bp, c: y[b*k.m*k.n:], lim: k.lim}
		g.run(0, g.tiles())
		if k.fuse != nil {
			k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), wi, b*k.m, (b+1)*k.m, 0, k.n)
		}
	}
}

// biases is the row and column biases of a run: the constant ones, or
// Gemm's C term given as a row or column at run time (in[2]).
func (k *matmulKernel) biases(in [][]byte) (row, col []float32) {
	switch k.biasIn {
	case 1:
		return k.rowBias, f32s(in[2])
	case 2:
		return f32s(in[2]), k.colBias
	}
	return k.rowBias, k.colBias
}

// columnBlocks is worker wi's share of a block-packed product on p
// workers (see matmulKernel): column blocks [wi·J/p, (wi+1)·J/p) of J, a
// multiple of p, each at most gemmNT panels wide, packing into buf.
func (k *matmulKernel) columnBlocks(in, out [][]byte, buf []float32, wi, p int) {
	x, w, y := f32s(in[0]), f32s(in[1]), f32s(out[0])
	pm, pn := k.panelsA(), k.panelsB()
	blocks := roundUp(ceilDiv(pn, gemmNT), p)
	bands := ceilDiv(pm, gemmMT)
	kc := k.depth()
	bb, ab := buf[:k.blockA], buf[k.blockA:]
	g := gemm{ldc: k.n, lim: k.lim, aSliced: true, bSliced: true, acc: k.prefill != nil}
	rb, cb := k.biases(in)
	var acc [gemmMR][gemmNR]float32
	for jb := wi * blocks / p; jb < (wi+1)*blocks/p; jb++ {
		q0, q1 := jb*pn/blocks, (jb+1)*pn/blocks
		j0, j1 := q0*gemmNR, min(k.n, q1*gemmNR)
		if j1 <= j0 {
			continue
		}
		for k0 := 0; k0 < k.k; k0 += kc {
			kb := min(kc, k.k-k0)
			packB(bb, w[k0*k.bRS+j0*k.bCS:], kb, j1-j0, k.bRS, k.bCS, 0, q1-q0)
			sm := storeMode{first: k0 == 0 && !g.acc, last: k0+kb == k.k}
			for bi := range bands {
				p0, p1 := bi*pm/bands, (bi+1)*pm/bands
				i0, i1 := p0*gemmMR, min(k.m, p1*gemmMR)
				packA(ab, x[i0*k.aRS+k0*k.aCS:], i1-i0, kb, k.aRS, k.aCS, k.alpha, 0, p1-p0)
				g.m, g.n, g.k, g.a, g.b = i1-i0, j1-j0, kb, ab, bb
				g.c = y[i0*k.n+j0:]
				if rb != nil {
					g.rowBias = rb[i0:]
				}
				if cb != nil {
					g.colBias = cb[j0:]
				}
				g.slice(0, p1-p0, 0, q1-q0, k0, kb, &acc, sm)
				if k.fuse != nil && sm.last {
					k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), wi, i0, i1, j0, j1)
				}
			}
		}
	}
}

// blocksPay reports whether a product of two activations packs by blocks
// of columns on threads workers (see matmulKernel): a single product, two
// or more workers with two B panels each at least, and enough rows and
// depth for the packing into cache to matter. Whole packing shares its
// packed operands between the workers' caches, which block packing
// avoids. On one thread, where block packing packs A once per block of
// columns and whole packing keeps C's tiles in cache across the k
// slices, whole packing is the faster.
func (k *matmulKernel) blocksPay(threads int) bool {
	return threads >= 2 && k.batch == 1 && k.nA == 1 && k.nB == 1 && k.panelsB() >= 2*threads &&
		k.m >= 2*gemmMT*gemmMR && k.k >= 64
}

// bandsRun reports whether a product of two activations packs B whole
// at the start of each run, slice by slice as band packing reads a
// constant B, and then A band by band into each worker's cache: the large
// single products whose B is packed in quads.
// Where bands read A unpacked as well (rawA), each worker packs the B
// panels of its own columns and computes those (ownColumns).
func (k *matmulKernel) bandsRun() bool {
	return k.wide && k.batch == 1 && k.nA == 1 && k.nB == 1 && k.k > 0
}

// bandsPay reports whether band packing (an activation A by a constant B)
// is worth its cost on threads workers. Bands walk the k slices outside
// the columns, so each slice reads and writes all of C again: that stays
// in cache only for a small C (bandC floats in all), or costs little
// where the slices are deep and few (a single large product of one to
// three slices, which packs each band into the worker's cache instead of
// all of A into memory). It pays only where the whole packed A would
// take at least twice the bands' scratch.
func (k *matmulKernel) bandsPay(threads int) bool {
	if bandsAlways {
		return true
	}
	kc := k.depth()
	band := roundUp(min(k.panelsA(), gemmMT)*gemmMR*kc, alignment/4)
	fewSweeps := k.batch*k.m*k.n <= bandC || k.batch == 1 && deepProduct(k.m, k.n)
	return fewSweeps && k.nA*packedASize(k.m, k.k) >= 2*max(threads, 1)*band
}

// releaseBytes is about how many bytes of a large constant B are packed
// between two releases of its source (BuildOptions.Release).
const releaseBytes = 8 << 20

// bandC is the most floats of C for which band packing is used.
const bandC = 256 << 10

// bandsAlways makes every product that can pack in bands do so; tests set
// it to run band packing on shapes that would not pay.
var bandsAlways = false

// pairwise reports whether products of two activations pack pair by pair
// on threads workers: each product has its own A and B matrix, nothing
// else enters C, and there are two products per worker at least.
func (k *matmulKernel) pairwise(threads int) bool {
	if k.nA != k.batch || k.nB != k.batch || k.batch < 2*max(threads, 1) || k.k <= 0 || k.m <= 0 || k.n <= 0 {
		return false
	}
	if k.prefill != nil || k.biasIn != 0 || k.rowBias != nil || k.colBias != nil {
		return false
	}
	for b := range k.batch {
		if int(k.aIdx[b]) != b || int(k.bIdx[b]) != b {
			return false
		}
	}
	return true
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

// finish prepacks constant operands and lays out scratch for c.threads
// workers.
func (k *matmulKernel) finish(a, b *ir.Tensor, c *buildContext) int64 {
	threads := c.threads
	k.aSize, k.bSize = packedASize(k.m, k.k), packedBSize(k.k, k.n)
	k.wide = wideB(k.m, k.n)
	if !a.IsConst() && b.IsConst() && k.k > 0 && k.m > 0 && k.n > 0 && k.bandsPay(threads) {
		// Bands: one A slice of the tallest band per worker, each area
		// on its own cache line.
		k.kc = k.depth()
		src, pn := constSrc(b), k.panelsB()
		layout := [8]int{k.nB, k.bSize, k.k, k.n, k.kc, k.bRS, k.bCS, boolInt(k.wide)}
		k.bPre = c.weights.packed(b.Data, "matmul B by bands", layout, k.nB*k.bSize, func(bPre []float32) {
			for mat := 0; mat < k.nB; mat++ {
				for k0 := 0; k0 < k.k; k0 += k.kc {
					kb := min(k.kc, k.k-k0)
					src.packB(bPre[mat*k.bSize+k0*pn*gemmNR:], mat*k.k*k.n+k0*k.bRS, kb, k.n, k.bRS, k.bCS)
					if k.wide {
						interleaveQuads(bPre[mat*k.bSize+k0*pn*gemmNR:], kb, k.n)
					}
					if k.bCS == 1 && k.bRS == k.n {
						// Rows k0..k0+kb of a row-major B: one run of bytes.
						lo := 4 * (mat*k.k*k.n + k0*k.n)
						c.copied(b.Data[lo : lo+4*kb*k.n])
					}
				}
			}
		})
		k.per = roundUp(min(k.panelsA(), gemmMT)*gemmMR*k.kc, alignment/4)
		return int64(max(threads, 1)*k.per) * 4
	}
	if !a.IsConst() && !b.IsConst() && k.bandsRun() {
		// Bands over B packed by the run: B first, then the areas.
		k.kc = k.depth()
		k.bandBase = roundUp(k.bSize, alignment/4)
		k.per = roundUp(min(k.panelsA(), gemmMT)*gemmMR*k.kc, alignment/4)
		return int64(k.bandBase+max(threads, 1)*k.per) * 4
	}
	if !a.IsConst() && !b.IsConst() && k.blocksPay(threads) {
		kc := k.depth()
		k.blockA = roundUp(min(k.panelsB(), gemmNT)*gemmNR*kc, alignment/4)
		k.block = k.blockA + roundUp(gemmMT*gemmMR*kc, alignment/4)
		return int64(max(threads, 1)*k.block) * 4
	}
	if !a.IsConst() && !b.IsConst() && k.pairwise(threads) {
		k.wide = false
		k.pairB = roundUp(k.aSize, alignment/4)
		k.pair = k.pairB + roundUp(k.bSize, alignment/4)
		return int64(max(threads, 1)*k.pair) * 4
	}
	var floats int
	if a.IsConst() {
		src := constSrc(a)
		layout := [8]int{k.nA, k.aSize, k.m, k.k, k.aRS, k.aCS, int(math.Float32bits(k.alpha))}
		k.aPre = c.weights.packed(a.Data, "matmul A", layout, k.nA*k.aSize, func(aPre []float32) {
			for mat := 0; mat < k.nA; mat++ {
				src.packA(aPre[mat*k.aSize:], mat*k.m*k.k, k.m, k.k, k.aRS, k.aCS, k.alpha)
			}
		})
	} else {
		k.aOff = floats
		floats += k.nA * k.aSize
	}
	if b.IsConst() {
		src := constSrc(b)
		// A large row-major B is packed a run of rows (about
		// releaseBytes) at a time, each run released once copied.
		rows := k.k
		if k.bCS == 1 && k.bRS == k.n && k.n > 0 {
			rows = max(1, releaseBytes/(4*k.n))
		}
		layout := [8]int{k.nB, k.bSize, k.k, k.n, k.bRS, k.bCS, boolInt(k.wide)}
		k.bPre = c.weights.packed(b.Data, "matmul B", layout, k.nB*k.bSize, func(bPre []float32) {
			for mat := 0; mat < k.nB; mat++ {
				if rows >= k.k {
					src.packB(bPre[mat*k.bSize:], mat*k.k*k.n, k.k, k.n, k.bRS, k.bCS)
				} else {
					for l0 := 0; l0 < k.k; l0 += rows {
						l1 := min(l0+rows, k.k)
						src.packBRows(bPre[mat*k.bSize:], mat*k.k*k.n, k.k, k.n, k.n, l0, l1)
						lo := 4 * (mat*k.k*k.n + l0*k.n)
						c.copied(b.Data[lo : lo+4*(l1-l0)*k.n])
					}
				}
				if k.wide {
					interleaveQuads(bPre[mat*k.bSize:], k.k, k.n)
				}
			}
		})
	} else {
		k.bOff = floats
		floats += k.nB * k.bSize
	}
	return int64(floats) * 4
}

func buildMatMul(c *buildContext) (Kernel, int64, error) {
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
	return k, k.finish(a, b, c), nil
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

func buildGemm(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, cc, y := c.in(0), c.in(1), c.in(2), c.out(0)
	if err := c.allFloat32(a, b, cc, y); err != nil {
		return nil, 0, err
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
	return k, k.finish(a, b, c), nil
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

// bandSplit is how a band-packed run shares the product out. The A
// panels of each output matrix are cut into bands bands of at most gemmMT
// panels (sizes differing by one panel at most); band u = b·bands + i is
// band i of output matrix b.
//
//   - Owned bands (shared false): worker i of P runs bands
//     [i·units/P, (i+1)·units/P), packing each k slice of a band into its
//     own scratch area and sweeping all the columns. Each band's A is
//     packed once; with few bands, bands are cut thinner so that every
//     worker gets as many.
//   - Shared bands (shared true: fewer bands than 4P, not a multiple of
//     P, and at least two B panels per worker, as in a Linear layer on
//     one sequence). The workers take the bands one after the other, all
//     together, in steps: in step s each packs its share of the band's
//     A panels for k slice s into area s mod 2, and computes its share
//     of the columns for slice s-1 from area (s-1) mod 2. Each B panel is
//     read by one worker only and A is packed once, at the price of one
//     parallel loop per k slice.
type bandSplit struct {
	bands, units int
	shared       bool
}

// split chooses the bands and the scheme for p workers.
func (k *matmulKernel) split(p int) bandSplit {
	pm := k.panelsA()
	s := bandSplit{bands: ceilDiv(pm, gemmMT)}
	if t := k.batch * s.bands; p > 1 && t < 4*p && t%p != 0 {
		if k.panelsB() >= 2*p {
			s.shared = true
		} else {
			for s.bands < pm && (k.batch*s.bands)%p != 0 {
				s.bands++
			}
		}
	}
	s.units = k.batch * s.bands
	return s
}

// workers is how many workers a band-packed run on w uses: one per
// scratch area and per epilogue share at most, and no more than the work
// deserves.
func (k *matmulKernel) workers(w *Workers, scratch []byte) int {
	p := min(w.Threads(), (len(scratch)/4-k.bandBase)/k.per, w.parts(k.batch*k.m*k.n*k.k/8))
	if k.fuse != nil {
		p = min(p, k.fuse.shares)
	}
	return max(p, 1)
}

// runBands runs a band-packed product. Items are workers: one per worker
// index, so that each knows its scratch area and epilogue share.
func (k *matmulKernel) runBands(w *Workers, in, out [][]byte, scratch []byte) {
	if k.bandBase > 0 && k.rawA() {
		if k.prefill != nil {
			k.fillC(in[2], out[0])
		}
		p := k.workers(w, scratch)
		w.forArgs(p, p, k, args{phaseOwnB, int64(p)}, in, out, scratch)
		return
	}
	if k.bandBase > 0 {
		pn := k.panelsB()
		w.forArgs(pn, w.parts(pn*gemmNR*k.k), k, args{phaseBandsB}, in, out, scratch)
	}
	if k.prefill != nil {
		k.fillC(in[2], out[0])
	}
	p := k.workers(w, scratch)
	sp := k.split(p)
	if !sp.shared {
		w.forArgs(p, p, k, args{phaseBands, int64(p)}, in, out, scratch)
		return
	}
	steps := ceilDiv(k.k, k.kc) + 1
	for u := 0; u < sp.units; u++ {
		for st := 0; st < steps; st++ {
			w.forArgs(p, p, k, args{phaseShared, int64(p), int64(u), int64(st)}, in, out, scratch)
		}
	}
}

// band returns output matrix b and A panels [p0, p1) of band u.
func (k *matmulKernel) band(sp bandSplit, u int) (b, p0, p1 int) {
	b, i := u/sp.bands, u%sp.bands
	pm := k.panelsA()
	return b, i * pm / sp.bands, (i + 1) * pm / sp.bands
}

// bandGemm is the product of the rows of A panels [p0, p1) of output
// matrix b, over the band's A slice packed in buf.
func (k *matmulKernel) bandGemm(in, out [][]byte, bp []float32, b, p0, p1 int, buf []float32) gemm {
	i0 := p0 * gemmMR
	g := gemm{
		m: min(k.m, p1*gemmMR) - i0, n: k.n, k: k.k, ldc: k.n,
		a: buf, aSliced: true, bSliced: true, bWide: k.wide,
		b:   bp[int(k.bIdx[b])*k.bSize:],
		c:   f32s(out[0])[(b*k.m+i0)*k.n:],
		acc: k.prefill != nil, lim: k.lim,
	}
	g.rowBias, g.colBias = k.biases(in)
	if g.rowBias != nil {
		g.rowBias = g.rowBias[i0:]
	}
	if k.rawA() {
		g.aRaw, g.lda = f32s(in[0])[int(k.aIdx[b])*k.m*k.k+i0*k.aRS:], k.aRS
	}
	return g
}

// rawA reports whether bands read A's whole panels where A lies, unpacked
// (gemm.aRaw): B all in quads, A's rows contiguous and alpha 1. The 6×64
// kernel runs as fast on the rows themselves, so packing A's band slices
// would only cost time.
func (k *matmulKernel) rawA() bool {
	return k.wide && k.aCS == 1 && k.alpha == 1 && quadsIn(k.n) == k.panelsB()
}

// packSlice packs panels [r0, r1) of the band of A panels [p0, p1) of
// output matrix b, k steps [k0, k0+kb), into buf (panel r at r·kb·MR).
func (k *matmulKernel) packSlice(in [][]byte, buf []float32, b, p0, p1, r0, r1, k0, kb int) {
	i0 := p0 * gemmMR
	rows := min(k.m, p1*gemmMR) - i0
	if k.rawA() {
		// Whole panels are read unpacked (bandGemm): only a last panel
		// cut short is packed.
		r0 = max(r0, rows/gemmMR)
	}
	if r0 >= r1 {
		return
	}
	src := f32s(in[0])[int(k.aIdx[b])*k.m*k.k+i0*k.aRS+k0*k.aCS:]
	packA(buf, src, rows, kb, k.aRS, k.aCS, k.alpha, r0, r1)
}

// sweep computes k steps [k0, k0+kb) of B panels [q0, q1) of band g (the
// band's rows start at row r0 of Y; g.b is its whole B matrix). After the
// last k slice of a fused product it runs the epilogue on the part of Y
// it swept, with the registers of share wi.
func (k *matmulKernel) sweep(g gemm, in, out [][]byte, q0, q1, k0, kb, r0, wi int, acc *[gemmMR][gemmNR]float32) {
	g.b = g.b[k0*k.panelsB()*gemmNR:]
	g.slice(0, ceilDiv(g.m, gemmMR), q0, q1, k0, kb, acc, storeMode{first: k0 == 0 && !g.acc, last: k0+kb == k.k})
	if k.fuse != nil && k0+kb == k.k {
		k.fuse.tile(f32s(out[1]), f32s(out[0]), in, f32s(out[2]), wi, r0, r0+g.m, q0*gemmNR, min(k.n, q1*gemmNR))
	}
}

// ownBands computes B panels [q0, q1) of bands [lo, hi) of split sp on
// worker wi, packing into buf, its own scratch area.
func (k *matmulKernel) ownBands(in, out [][]byte, bp, buf []float32, sp bandSplit, lo, hi, q0, q1, wi int) {
	var acc [gemmMR][gemmNR]float32
	for u := lo; u < hi; u++ {
		b, p0, p1 := k.band(sp, u)
		g := k.bandGemm(in, out, bp, b, p0, p1, buf)
		for k0 := 0; k0 < k.k; k0 += k.kc {
			kb := min(k.kc, k.k-k0)
			k.packSlice(in, buf, b, p0, p1, 0, p1-p0, k0, kb)
			k.sweep(g, in, out, q0, q1, k0, kb, b*k.m+p0*gemmMR, wi, &acc)
		}
	}
}

// columnShare is the first B panel of worker wi's columns of p in a
// shared band (the end of worker wi-1's): a multiple of four where B is
// packed in quads.
func (k *matmulKernel) columnShare(wi, p int) int {
	pn := k.panelsB()
	if k.wide {
		return min(pn, roundUp(wi*pn/p, 4))
	}
	return wi * pn / p
}

// ownColumns is worker wi's share of a band-packed product over a
// run-time B whose A is read unpacked (rawA), on p workers: it packs B
// panels [columnShare(wi), columnShare(wi+1)) of every k slice into
// scratch s, then computes those columns of every band, packing into
// buf only a last A panel cut short. Each worker reads only the part of
// B it packed, from its own cache: packed by all and read by all, half
// of B would come from the other worker's cache.
func (k *matmulKernel) ownColumns(in, out [][]byte, s, buf []float32, wi, p int) {
	q0, q1 := k.columnShare(wi, p), k.columnShare(wi+1, p)
	k.packBandsB(in, s, q0, q1)
	sp := k.split(1)
	k.ownBands(in, out, k.bandsB(s), buf, sp, 0, sp.units, q0, q1, wi)
}

// packBandsB packs B panels [q0, q1) of every k slice of a run-time B
// into the head of scratch s, where finish packs a constant B for bands.
func (k *matmulKernel) packBandsB(in [][]byte, s []float32, q0, q1 int) {
	src, pn := f32s(in[1]), k.panelsB()
	for k0 := 0; k0 < k.k; k0 += k.kc {
		packBPanels(s[k0*pn*gemmNR:], src[k0*k.bRS:], min(k.kc, k.k-k0), k.n, k.bRS, k.bCS, q0, q1, k.wide)
	}
}

// bandsB is the packed B matrices a band-packed run reads: the constants
// packed when the kernel was built, or B as the run packed it into the
// head of scratch s.
func (k *matmulKernel) bandsB(s []float32) []float32 {
	if k.bPre != nil {
		return k.bPre
	}
	return s[:k.bandBase]
}

// bandAreas is the workers' band areas in scratch s.
func (k *matmulKernel) bandAreas(s []float32) []float32 { return s[k.bandBase:] }

// sharedStep is worker wi's part of step st of shared band u, p workers
// (see bandSplit): pack its A panels of k slice st, compute its columns
// of slice st-1.
func (k *matmulKernel) sharedStep(in, out [][]byte, bp, s []float32, sp bandSplit, u, st, wi, p int) {
	b, p0, p1 := k.band(sp, u)
	if k0 := st * k.kc; k0 < k.k {
		np := p1 - p0
		buf := s[st%2*k.per:][:k.per]
		k.packSlice(in, buf, b, p0, p1, wi*np/p, (wi+1)*np/p, k0, min(k.kc, k.k-k0))
	}
	if st > 0 {
		var acc [gemmMR][gemmNR]float32
		k0 := (st - 1) * k.kc
		g := k.bandGemm(in, out, bp, b, p0, p1, s[(st-1)%2*k.per:][:k.per])
		k.sweep(g, in, out, k.columnShare(wi, p), k.columnShare(wi+1, p), k0, min(k.kc, k.k-k0), b*k.m+p0*gemmMR, wi, &acc)
	}
}
