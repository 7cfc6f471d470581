package cpu

import "unsafe"

// Single-precision matrix product C = A·B on packed operands.
//
// A (m×k) is packed in panels of gemmMR rows: panel p holds rows
// [p·MR, p·MR+MR) as k groups of MR values, so the micro-kernel reads it
// sequentially. B (k×n) is packed in panels of gemmNR columns the same way.
// Short edge panels are padded with zeros.
//
// C is tiled into blocks of about mt×nt panels; tiles are independent, so
// workers share them out. Within a tile the k dimension is cut into slices
// of at most gemmKC steps. For each slice the tile walks its B panels and,
// for each, all of its A panels: the B panel slice (KC·NR floats, 16 KiB)
// stays in L1 while the tile's A panel slices (mt·MR·KC floats, about
// 144 KiB) stay in L2 across the B panels.
//
// The micro-kernel multiplies one MR×KC A slice by one KC×NR B slice. On
// amd64 with AVX2 and FMA it is assembly (gemm_amd64.s) and writes full
// tiles straight into C; elsewhere, and for tiles clipped by C's edges,
// the product goes through a 6×16 array and store. On amd64 with AVX-512
// the tile walks its panels in pairs instead (slice2x2): each 2×2 block of
// panels is one 12×32 micro-tile of 24 zmm accumulators (sgemm12x32,
// gemm512_amd64.s), on the same packed layout, and the 6×16 kernel covers
// what is left at the tile's and C's edges. Large products pack B in
// quads of four panels side by side instead (gemm_quads.go), which the
// 6×64 kernel reads one A panel at a time.

const (
	gemmMR = 6   // rows of a micro-tile (A panel width)
	gemmNR = 16  // columns of a micro-tile (B panel width)
	gemmKC = 256 // most k steps per slice
	gemmMT = 24  // A panels per tile, at most (L2 blocking)
	gemmNT = 32  // B panels per tile, at most
)

// packedASize is the number of floats a packed m×k A operand takes.
func packedASize(m, k int) int { return roundUp(m, gemmMR) * k }

// packedBSize is the number of floats a packed k×n B operand takes.
func packedBSize(k, n int) int { return roundUp(n, gemmNR) * k }

// packA packs panels [p0, p1) of the m×k matrix whose element (i, l) is
// alpha·src[i·rs + l·cs]. Its fast paths are unrolled for gemmMR = 6
// (gemm_kernel.go fails to compile for another value).
func packA(dst, src []float32, m, k, rs, cs int, alpha float32, p0, p1 int) {
	if full := min(p1, m/gemmMR) - p0; useAsmKernel && rs == 1 && alpha == 1 && full > 0 && k > 0 {
		// Whole panels of contiguous columns in one pass over the
		// columns (the transposed activations of runT).
		_ = src[(k-1)*cs+(p0+full)*gemmMR-1]
		_ = dst[(p0+full)*k*gemmMR-1]
		packA6Cols(&dst[p0*k*gemmMR], &src[p0*gemmMR], k, cs, full)
		p0 += full
	}
	for p := p0; p < p1; p++ {
		d := dst[p*k*gemmMR : (p+1)*k*gemmMR]
		i0 := p * gemmMR
		rows := min(gemmMR, m-i0)
		if rows < gemmMR {
			clear(d)
		}
		switch {
		case rs == 1 && rows == gemmMR:
			// Columns of A are contiguous: one MR-wide copy per l.
			for l := 0; l < k; l++ {
				s := (*[gemmMR]float32)(src[i0+l*cs:])
				dd := (*[gemmMR]float32)(d[l*gemmMR:])
				dd[0], dd[1], dd[2] = alpha*s[0], alpha*s[1], alpha*s[2]
				dd[3], dd[4], dd[5] = alpha*s[3], alpha*s[4], alpha*s[5]
			}
		case cs == 1 && rows == gemmMR:
			// Rows of A are contiguous: read the panel's six rows side
			// by side and write each group of MR once.
			r0, r1, r2 := src[i0*rs:][:k], src[(i0+1)*rs:][:k], src[(i0+2)*rs:][:k]
			r3, r4, r5 := src[(i0+3)*rs:][:k], src[(i0+4)*rs:][:k], src[(i0+5)*rs:][:k]
			l0 := 0
			if k4 := k &^ 3; useAsmKernel && alpha == 1 && k4 > 0 {
				packA6Rows(&d[0], &r0[0], k4, rs)
				l0 = k4
			}
			for l := l0; l < k; l++ {
				dd := (*[gemmMR]float32)(d[l*gemmMR:])
				dd[0], dd[1], dd[2] = alpha*r0[l], alpha*r1[l], alpha*r2[l]
				dd[3], dd[4], dd[5] = alpha*r3[l], alpha*r4[l], alpha*r5[l]
			}
		case cs == 1:
			for i := 0; i < rows; i++ {
				row := src[(i0+i)*rs : (i0+i)*rs+k]
				for l, v := range row {
					d[l*gemmMR+i] = alpha * v
				}
			}
		default:
			for i := 0; i < rows; i++ {
				base := (i0 + i) * rs
				for l := 0; l < k; l++ {
					d[l*gemmMR+i] = alpha * src[base+l*cs]
				}
			}
		}
	}
}

// packB packs panels [q0, q1) of the k×n matrix whose element (l, j) is
// src[l·rs + j·cs].
func packB(dst, src []float32, k, n, rs, cs int, q0, q1 int) {
	packBPanels(dst, src, k, n, rs, cs, q0, q1, false)
}

// packBPanels is packB, or, where wide is set, packB for a B packed in
// quads: panel q of B goes where panelPlace puts it.
func packBPanels(dst, src []float32, k, n, rs, cs int, q0, q1 int, wide bool) {
	if k == 0 {
		return
	}
	if cs == 1 {
		// Rows of B: a few rows at a time across the panels, so that
		// each row is read as one run of memory (panel by panel, every
		// row would start a new page and stream).
		const rows = 16
		for l0 := 0; l0 < k; l0 += rows {
			packBRowRange(dst, src, k, n, rs, q0, q1, l0, min(l0+rows, k), wide)
		}
		return
	}
	for q := q0; q < q1; q++ {
		start, step := panelPlace(q, k, n, wide)
		d := dst[start : start+(k-1)*step+gemmNR]
		j0 := q * gemmNR
		cols := min(gemmNR, n-j0)
		if cols < gemmNR {
			for l := 0; l < k; l++ {
				clear(d[l*step+cols : l*step+gemmNR])
			}
		}
		for j := 0; j < cols; j++ {
			base := (j0 + j) * cs
			if rs == 1 {
				col := src[base : base+k]
				for l, v := range col {
					d[l*step+j] = v
				}
				continue
			}
			for l := 0; l < k; l++ {
				d[l*step+j] = src[base+l*rs]
			}
		}
	}
}

// packBRowRange packs rows [l0, l1) of panels [q0, q1) of the k×n
// matrix whose element (l, j) is src[l·rs + j] to where packBPanels puts
// them (in quads where wide is set), a last panel cut short padded with
// zeros.
func packBRowRange(dst, src []float32, k, n, rs, q0, q1, l0, l1 int, wide bool) {
	if full := min(q1, n/gemmNR); useAsmKernel && q0 < full && l1 > l0 {
		// The whole panels in as few calls as their places allow (one
		// for panels of packB's layout, one per quad), each checked
		// here at both ends.
		for q := q0; q < full; {
			end, dp := full, k*gemmNR
			start, step := panelPlace(q, k, n, wide)
			if step != gemmNR {
				end, dp = min(full, q&^3+4), gemmNR
			}
			_ = src[(l1-1)*rs+end*gemmNR-1]
			_ = dst[start+(end-1-q)*dp+(l1-1)*step+gemmNR-1]
			packB16Rows(&dst[start+l0*step], &src[l0*rs+q*gemmNR], end-q, l1-l0, rs, dp, step)
			q = end
		}
		q0 = full
	}
	for q := q0; q < q1; q++ {
		start, step := panelPlace(q, k, n, wide)
		j0 := q * gemmNR
		if cols := n - j0; cols < gemmNR {
			for l := l0; l < l1; l++ {
				row := dst[start+l*step:][:gemmNR]
				copy(row[:cols], src[l*rs+j0:])
				clear(row[cols:])
			}
			continue
		}
		// Through a local: a direct array assignment between two
		// slices that may overlap compiles to a memmove call per row.
		for l := l0; l < l1; l++ {
			v := *(*[gemmNR]float32)(src[l*rs+j0:])
			*(*[gemmNR]float32)(dst[start+l*step:]) = v
		}
	}
}

// gemm is one product C = A·B (+ biases, or += when acc) over packed
// operands, cut into tiles of at most mt×nt panels.
type gemm struct {
	m, n, k int
	a, b    []float32 // packed operands
	c       []float32
	ldc     int
	rowBias []float32 // added to every element of row i (length m), or nil
	colBias []float32 // added to every element of column j (length n), or nil
	acc     bool      // accumulate into C instead of overwriting it
	mt, nt  int       // tile size in panels
	kc      int       // depth of run's k slices (0: sliceDepth(k))
	// bDepth, when set, is the depth B was packed with, larger than k:
	// b then starts at the product's first k step of B's first panel,
	// and its panels are bDepth·NR floats apart.
	bDepth int
	// aSliced: a holds only the k slice being computed, panel p of a
	// kb-step slice at p·kb·MR, instead of the whole packed A. bSliced:
	// likewise b, panel q at q·kb·NR.
	aSliced, bSliced bool
	// bWide: B's panels are packed in quads (see wideB), read by the
	// 6×64 kernel. Tiles then start at multiples of four B panels.
	bWide bool
	// aRaw, when set with bWide, is A unpacked, element (i, l) at
	// aRaw[i·lda + l]: the 6×64 kernel reads its whole panels from there
	// instead of from a, which then need hold only a last panel cut
	// short. B must lie in quads whole.
	aRaw []float32
	lda  int
	// bRaw, when set, is B unpacked, element (l, j) at bRaw[l·ldb + j]:
	// the AVX-512 kernels read the first rawPanels() panels of B from it
	// and only the rest from b, which need not hold the first ones. Tiles
	// must then start at even B panels.
	bRaw []float32
	ldb  int
	// lim, when set, clamps C to [lim[0], lim[1]] as it is stored after
	// the last k step (a Relu or Clip run by the kernels).
	lim *[2]float32
	// res, when set, is a residual laid out as C (element (i, j) at
	// res[i·ldc + j]) that the kernels add after the last k step, before
	// the clamp. It may be C's memory only where k is one slice deep.
	res []float32
}

// rawPanels is how many B panels, from the first, the kernels read from
// bRaw: the whole pairs of panels inside B (none without bRaw or AVX-512).
func (g *gemm) rawPanels() int {
	if g.bRaw == nil || !useAVX512Kernel {
		return 0
	}
	return 2 * (g.n / (2 * gemmNR))
}

// gemmTiles chooses a tile size, in panels: about gemmMT×gemmNT panels
// with the panels spread evenly over the tiles, cut smaller while threads
// would get fewer than three tiles each.
func gemmTiles(m, n, threads int) (mt, nt int) {
	pm, pn := max(ceilDiv(m, gemmMR), 1), max(ceilDiv(n, gemmNR), 1)
	mt, nt = ceilDiv(pm, ceilDiv(pm, gemmMT)), ceilDiv(pn, ceilDiv(pn, gemmNT))
	if threads <= 1 {
		return mt, nt
	}
	for ceilDiv(pm, mt)*ceilDiv(pn, nt) < 3*threads {
		switch {
		case nt > 2 && (nt*gemmNR >= mt*gemmMR || mt <= 2):
			nt = ceilDiv(nt, 2)
		case mt > 1:
			mt = ceilDiv(mt, 2)
		case nt > 1:
			nt = ceilDiv(nt, 2)
		default:
			return mt, nt
		}
	}
	return mt, nt
}

// tiles is the number of tiles of C.
func (g *gemm) tiles() int {
	return ceilDiv(ceilDiv(g.m, gemmMR), g.mt) * ceilDiv(ceilDiv(g.n, gemmNR), g.nt)
}

// tilePanels is the A panels [p0, p1) and B panels [q0, q1) of tile t.
// Tile (ti, tj) of the tm×tn grid covers B panels [tj·pn/tn,
// (tj+1)·pn/tn), and A panels from ti·pm/tm to (ti+1)·pm/tm, each bound
// but the last taken down to an even panel where every tile has two
// panels at least: the AVX-512 kernels take A panels in pairs, and a
// tile of an odd number leaves one to the 6×32 kernel.
// Tiles differ in size by two panels at most; none exceeds mt+1 by nt.
func (g *gemm) tilePanels(t int) (p0, p1, q0, q1 int) {
	pm, pn := ceilDiv(g.m, gemmMR), ceilDiv(g.n, gemmNR)
	tm, tn := ceilDiv(pm, g.mt), ceilDiv(pn, g.nt)
	ti, tj := t/tn, t%tn
	bound := func(i int) int {
		b := i * pm / tm
		if i < tm && pm >= 2*tm {
			b &^= 1
		}
		return b
	}
	if g.bWide {
		// Whole tiles of nt panels (a multiple of four), the last one
		// cut short.
		return bound(ti), bound(ti + 1), tj * g.nt, min(pn, (tj+1)*g.nt)
	}
	return bound(ti), bound(ti + 1), tj * pn / tn, (tj + 1) * pn / tn
}

// sliceDepth is the depth of the k slices of a k-deep product: equal
// slices of at most gemmKC steps (300 runs as 150+150 rather than
// 256+44). Every packing that slices k does so, so that its sums are
// those of gemm.run bit for bit.
func sliceDepth(k int) int {
	return ceilDiv(k, max(ceilDiv(k, gemmKC), 1))
}

// Large products slice k deeper: at least deepRows rows and deepElems
// elements of C take slices of up to gemmKCDeep steps.
const (
	gemmKCDeep = 1024
	deepRows   = 512
	deepElems  = 1 << 20
)

// productDepth is the depth of the k slices of an m×k by k×n product
// (MatMul and Gemm; every packing of one product takes the same). A
// large C is read and written once a slice, and each slice costs every
// micro-tile a call: for those, slices of up to gemmKCDeep steps, whose
// pair of B panels (128 KiB) the AVX-512 kernel streams from L2 instead
// of holding in L1. Small products, whose weights stream from memory,
// keep gemmKC.
func productDepth(m, n, k int) int {
	if deepProduct(m, n) {
		return ceilDiv(k, max(ceilDiv(k, gemmKCDeep), 1))
	}
	return sliceDepth(k)
}

// deepProduct reports whether an m×n C is large enough for deep slices.
func deepProduct(m, n int) bool { return m >= deepRows && m*n >= deepElems }

// run computes tiles [lo, hi) (see tilePanels).
func (g *gemm) run(lo, hi int) {
	kc := g.kc
	if kc == 0 {
		kc = sliceDepth(g.k)
	}
	var acc [gemmMR][gemmNR]float32
	for t := lo; t < hi; t++ {
		p0, p1, q0, q1 := g.tilePanels(t)
		if g.k == 0 {
			for q := q0; q < q1; q++ {
				for p := p0; p < p1; p++ {
					acc = [gemmMR][gemmNR]float32{} // store changes it
					g.store(p, q, &acc, storeMode{first: !g.acc, last: true})
				}
			}
			continue
		}
		for k0 := 0; k0 < g.k; k0 += kc {
			kb := min(kc, g.k-k0)
			g.slice(p0, p1, q0, q1, k0, kb, &acc, storeMode{first: k0 == 0 && !g.acc, last: k0+kb == g.k})
		}
	}
}

// storeMode says how a k slice's product goes into C: first writes it
// (with the biases) instead of adding it, last clamps the result to lim.
type storeMode struct{ first, last bool }

// slice is one k slice (steps [k0, k0+kb), kb ≥ 1) of the tile of A
// panels [p0, p1) and B panels [q0, q1): it writes or adds the slice's
// product into C as sm says.
func (g *gemm) slice(p0, p1, q0, q1, k0, kb int, acc *[gemmMR][gemmNR]float32, sm storeMode) {
	if useAVX512Kernel {
		if qr := g.quadPanels(); q0 < qr {
			g.sliceQuads(p0, p1, q0, min(q1, qr), k0, kb, sm)
			q0 = min(q1, qr)
		}
		if q0 < q1 {
			g.slice2x2(p0, p1, q0, q1, k0, kb, acc, sm)
		}
		return
	}
	if g.bWide {
		panic("cpu: B packed in quads needs the AVX-512 kernel")
	}
	for q := q0; q < q1; q++ {
		bp := g.bPanel(q, k0, kb)
		for p := p0; p < p1; p++ {
			g.micro(p, q, g.aPanel(p, k0, kb), bp, acc, sm)
		}
	}
}

// aPanel is k steps [k0, k0+kb) of packed A panel p.
func (g *gemm) aPanel(p, k0, kb int) []float32 {
	if g.aSliced {
		return g.a[p*kb*gemmMR:][:kb*gemmMR]
	}
	return g.a[p*g.k*gemmMR+k0*gemmMR:][:kb*gemmMR]
}

// bPanel is k steps [k0, k0+kb) of packed B panel q.
func (g *gemm) bPanel(q, k0, kb int) []float32 {
	if g.bSliced {
		return g.b[q*kb*gemmNR:][:kb*gemmNR]
	}
	depth := g.k
	if g.bDepth > 0 {
		depth = g.bDepth
	}
	return g.b[q*depth*gemmNR+k0*gemmNR:][:kb*gemmNR]
}

// slice2x2 is one k slice (steps [k0, k0+kb), kb ≥ 1) of the tile of A
// panels [p0, p1) and B panels [q0, q1) for the AVX-512 kernels. It walks
// the B panels in pairs and, for each pair, the A panels in pairs: each
// 2×2 block of panels is one 12×32 micro-tile (sgemm12x32), a last odd A
// panel a 6×32 one (sgemm6x32; a last pair with eight rows inside C one
// 8×32), a last odd B panel a 12×16 one (sgemm12x16), and a last odd
// pair of both goes through micro. Pairs of
// B panels below rawPanels are read from the unpacked bRaw. A
// micro-tile that lies inside C is written there by the kernel; one that
// C's bottom or right edge clips is computed by the same kernel into a
// local buffer, from which the part inside C is copied (the packed panels
// are zero-padded, so the kernel may run whole). The B pair slice
// (KC·2·NR floats, 32 KiB) stays in L1 while the A panels stream from L2.
func (g *gemm) slice2x2(p0, p1, q0, q1, k0, kb int, acc *[gemmMR][gemmNR]float32, sm storeMode) {
	const mr2, nr2 = 2 * gemmMR, 2 * gemmNR
	// A micro-tile has up to mr2+1 rows (sgemm12x32's a2).
	var buf [(mr2 + 1) * nr2]float32
	var rbuf [mr2 + 1]float32
	var cbuf [nr2]float32
	// tile returns where the kernel computes the rows×cols micro-tile at
	// row i0, column j0: in C, or, where C's edges clip it, in buf, set up
	// so that the kernel's store there (biases, accumulation, clamp) is
	// what C needs; clipped then copies the part inside C back.
	tile := func(i0, j0, rows, cols int) (c *float32, ld int, rb, cb *float32, mode int, lim, res *float32, inside bool) {
		if i0+rows <= g.m && j0+cols <= g.n {
			c, rb, cb, mode, lim, res = g.direct(i0, j0, rows, cols, sm)
			return c, g.ldc, rb, cb, mode, lim, res, true
		}
		r, w := min(rows, g.m-i0), min(cols, g.n-j0)
		if sm.last && g.lim != nil && g.res == nil {
			// With a residual, clipped adds it and clamps.
			lim = &g.lim[0]
		}
		if !sm.first {
			for i := range r {
				copy(buf[i*nr2:][:w], g.c[(i0+i)*g.ldc+j0:])
			}
			return &buf[0], nr2, nil, nil, 1, lim, nil, false
		}
		if g.rowBias != nil {
			rbuf = [mr2 + 1]float32{}
			copy(rbuf[:r], g.rowBias[i0:])
			rb = &rbuf[0]
		}
		if g.colBias != nil {
			cbuf = [nr2]float32{}
			copy(cbuf[:w], g.colBias[j0:])
			cb = &cbuf[0]
		}
		return &buf[0], nr2, rb, cb, 0, lim, nil, false
	}
	clipped := func(i0, j0, rows, cols int) {
		w := min(cols, g.n-j0)
		for i := range min(rows, g.m-i0) {
			c := g.c[(i0+i)*g.ldc+j0:][:w]
			if sm.last && g.res != nil {
				g.finish(c, buf[i*nr2:][:w], g.res[(i0+i)*g.ldc+j0:][:w])
				continue
			}
			copy(c, buf[i*nr2:])
		}
	}
	raw := g.rawPanels()
	// A last A panel of C with one row (49 rows: four pairs and one)
	// rides with the pair before it as its thirteenth row: the A panels
	// run in pairs up to pairs, and from there on only where pairs is p1.
	pairs := p1
	if (p1-p0)%2 == 1 && p1-p0 >= 3 && g.m-(p1-1)*gemmMR == 1 {
		pairs = p1 - 1
	}
	// shares is how many parts the next pair of B panels is hinted in:
	// one for each kernel call over the A panels, which run in pairs up
	// to pairs (a thirteenth row rides with the pair before it).
	shares := ceilDiv(pairs-p0, 2)
	q := q0
	for ; q+1 < q1; q += 2 {
		j0 := q * gemmNR
		var b0, b1 *float32
		bstep := gemmNR
		if q+1 < raw {
			// Both panels inside B: read its rows where they are.
			r := g.bRaw[k0*g.ldb+j0:][:(kb-1)*g.ldb+nr2]
			b0, b1, bstep = &r[0], &r[gemmNR], g.ldb
		} else {
			b0, b1 = &g.bPanel(q, k0, kb)[0], &g.bPanel(q+1, k0, kb)[0]
		}
		// While this pair runs, bring the next packed pair into L2 a
		// part at a time (weights stream from memory).
		var next0, next1 *float32
		per := 0
		if q+3 < q1 && q+2 >= raw {
			next0, next1 = &g.bPanel(q+2, k0, kb)[0], &g.bPanel(q+3, k0, kb)[0]
			per = ceilDiv(kb, shares)
		}
		// part is the part of the next pair that goes with the
		// micro-tile of A panel p: n lines from pf0 and from pf1.
		part := func(p int) (pf0, pf1 *float32, n int) {
			off := (p - p0) / 2 * per
			return (*float32)(unsafe.Add(unsafe.Pointer(next0), 64*off)), (*float32)(unsafe.Add(unsafe.Pointer(next1), 64*off)), max(0, min(per, kb-off))
		}
		// A next pair read from bRaw is rows of 32 columns, which the
		// hardware does not bring in ahead (each row is in another
		// page): each micro-tile of this pair asks for its share of
		// them, as the kernel's hints where it has enough steps for
		// them, two rows a hint where rows are whole cache lines and
		// one (two lines 60 bytes apart) elsewhere.
		rawNext := q+3 < raw && q+3 < q1
		rowsPer, rowsHint := 0, 1
		if rawNext {
			rowsPer = ceilDiv(kb, shares)
			if g.ldb%16 == 0 && uintptr(unsafe.Pointer(&g.bRaw[k0*g.ldb+j0+nr2]))%64 == 0 {
				rowsHint = 2
			}
		}
		// rawHints is micro-tile p's share of the next raw pair as the
		// kernel's hints, or ok false where they do not fit its steps.
		rawHints := func(p int) (pf0, pf1 *float32, pfn, step int, ok bool) {
			r0 := (p - p0) / 2 * rowsPer
			n := min(rowsPer, kb-r0)
			if n <= 0 {
				return nil, nil, 0, 0, true
			}
			if ceilDiv(n, rowsHint) > kb/4 {
				return nil, nil, 0, 0, false
			}
			row := g.bRaw[(k0+r0)*g.ldb+j0+nr2:]
			if rowsHint == 2 && n >= 2 {
				return &row[0], &row[g.ldb], ceilDiv(n, 2), 8 * g.ldb, true
			}
			return &row[0], &row[15], n, 4 * g.ldb, true
		}
		// prefetch asks for it in one burst.
		prefetch := func(p int) {
			if rawNext {
				if r0 := (p - p0) / 2 * rowsPer; r0 < kb {
					prefetchRowsL2(&g.bRaw[(k0+r0)*g.ldb+j0+nr2], g.ldb, min(rowsPer, kb-r0))
				}
				return
			}
			if per > 0 {
				pf0, pf1, n := part(p)
				prefetchL2(pf0, n)
				prefetchL2(pf1, n)
			}
		}
		// hintB is the kernels' hints for that part, lines lines of
		// each panel every four steps, or ok false where the kernel has
		// too few steps for them.
		hintB := func(p, lines int) (pf0, pf1 *float32, pfn int, ok bool) {
			if per == 0 || ceilDiv(per, lines) > kb/4 {
				return nil, nil, 0, false
			}
			pf0, pf1, n := part(p)
			return pf0, pf1, ceilDiv(n, lines), true
		}
		// A last pair that C's bottom edge cuts inside its second panel
		// (32 rows: the pair of rows 24-35) runs as two 6×32 tiles, the
		// first written in place: only the second goes through the
		// buffer and back (a shallow product such as a 27-deep stem
		// spent a tenth of its time copying clipped tiles).
		pairEnd := pairs
		if pairs == p1 && pairs-p0 >= 2 && (pairs-p0)%2 == 0 && (pairs-1)*gemmMR < g.m && g.m < pairs*gemmMR {
			pairEnd = pairs - 2
		}
		p := p0
		for ; p+1 < pairEnd; p += 2 {
			ap0, ap1 := g.aPanel(p, k0, kb), g.aPanel(p+1, k0, kb)
			i0 := p * gemmMR
			rows, a2 := mr2, (*float32)(nil)
			if p+2 == pairs && pairs < p1 {
				rows, a2 = mr2+1, &g.aPanel(p+2, k0, kb)[0]
			}
			// The kernel brings lines in as it goes (pfn times two lines
			// of each of pf0 and pf1, one time every four steps): over
			// the first pair of B panels, the next pair of A panels,
			// whose slice comes from memory there when A is the
			// weights; over the others, this call's part of the next
			// pair of B panels.
			var pf0, pf1 *float32
			pfn, pfstep := 0, 128
			if q == q0 && p+3 < p1 {
				pf0, pf1, pfn = g.nextAPair(p, k0, kb)
				prefetch(p)
			} else if h0, h1, n, ok := hintB(p, 2); ok {
				pf0, pf1, pfn = h0, h1, n
			} else if h0, h1, n, st, ok := rawHints(p); rawNext && ok {
				pf0, pf1, pfn, pfstep = h0, h1, n, st
			} else {
				prefetch(p)
			}
			c, ld, rb, cb, mode, lim, res, inside := tile(i0, j0, rows, nr2)
			sgemm12x32(kb, &ap0[0], &ap1[0], b0, b1, bstep, c, ld, rb, cb, mode, lim, res, pf0, pf1, pfn, a2, pfstep)
			if !inside {
				clipped(i0, j0, rows, nr2)
			}
		}
		for ; p < pairs; p++ {
			ap, i0 := g.aPanel(p, k0, kb), p*gemmMR
			// Four lines of each panel every four steps.
			pf0, pf1, pfn, ok := hintB(p, 4)
			if !ok {
				prefetch(p)
			}
			// A last pair of eight rows (128: rows 120-127) is one 8×32
			// tile in place rather than 6×32 tiles of twelve rows.
			rows, a1 := gemmMR, (*float32)(nil)
			if pairEnd < pairs && p+2 == pairs && g.m-(p+1)*gemmMR == 2 {
				rows, a1 = gemmMR+2, &g.aPanel(p+1, k0, kb)[0]
			}
			c, ld, rb, cb, mode, lim, res, inside := tile(i0, j0, rows, nr2)
			sgemm6x32(kb, &ap[0], b0, b1, bstep, c, ld, rb, cb, mode, lim, res, pf0, pf1, pfn, a1)
			if !inside {
				clipped(i0, j0, rows, nr2)
			}
			if a1 != nil {
				p++
			}
		}
	}
	if q < q1 {
		bp, j0 := g.bPanel(q, k0, kb), q*gemmNR
		p := p0
		for ; p+1 < p1; p += 2 {
			ap0, ap1 := g.aPanel(p, k0, kb), g.aPanel(p+1, k0, kb)
			i0 := p * gemmMR
			// Where the lone B panel is the tile's only one, the next
			// pair of A panels, as over a first pair above.
			var pf0, pf1 *float32
			pfn := 0
			if q == q0 && p+3 < p1 {
				pf0, pf1, pfn = g.nextAPair(p, k0, kb)
			}
			c, ld, rb, cb, mode, lim, res, inside := tile(i0, j0, mr2, gemmNR)
			sgemm12x16(kb, &ap0[0], &ap1[0], &bp[0], c, ld, rb, cb, mode, lim, res, pf0, pf1, pfn)
			if !inside {
				clipped(i0, j0, mr2, gemmNR)
			}
		}
		if p < p1 {
			g.micro(p, q, g.aPanel(p, k0, kb), bp, acc, sm)
		}
	}
}

// nextAPair is the kernels' hints for the k slice (k0, kb steps) of the
// pair of A panels after p, p+1: all of both, two lines of each every
// four steps.
func (g *gemm) nextAPair(p, k0, kb int) (pf0, pf1 *float32, pfn int) {
	return &g.aPanel(p+2, k0, kb)[0], &g.aPanel(p+3, k0, kb)[0], ceilDiv(kb*gemmMR*4, 128)
}

// micro computes the micro-tile (p, q) of one k slice, kb = len(ap)/MR ≥ 1
// steps deep, and writes or adds it into C as sm says. The assembly kernel
// writes full tiles itself; other tiles go through acc and store.
func (g *gemm) micro(p, q int, ap, bp []float32, acc *[gemmMR][gemmNR]float32, sm storeMode) {
	if !useAsmKernel {
		microGo(ap, bp, acc)
		g.store(p, q, acc, sm)
		return
	}
	kb := len(ap) / gemmMR
	i0, j0 := p*gemmMR, q*gemmNR
	if i0+gemmMR > g.m || j0+gemmNR > g.n {
		sgemm6x16(kb, &ap[0], &bp[0], &acc[0][0], gemmNR, nil, nil, 0, nil, nil)
		g.store(p, q, acc, sm)
		return
	}
	c, rb, cb, mode, lim, res := g.direct(i0, j0, gemmMR, gemmNR, sm)
	_ = bp[kb*gemmNR-1]
	sgemm6x16(kb, &ap[0], &bp[0], c, g.ldc, rb, cb, mode, lim, res)
}

// direct returns the arguments with which an assembly kernel writes the
// rows×cols tile of C at row i0, column j0 itself: the tile's corner in
// C, the row and column biases (nil unless first and present), the store
// mode (0: store with biases, 1: add into C), the clamp and the tile's
// corner in the residual (nil unless last and set). The slice expressions
// check that the tile lies inside C, the residual and the biases.
func (g *gemm) direct(i0, j0, rows, cols int, sm storeMode) (c, rb, cb *float32, mode int, lim, res *float32) {
	c = &g.c[i0*g.ldc+j0:][:(rows-1)*g.ldc+cols][0]
	if sm.last && g.lim != nil {
		lim = &g.lim[0]
	}
	if sm.last && g.res != nil {
		res = &g.res[i0*g.ldc+j0:][:(rows-1)*g.ldc+cols][0]
	}
	if !sm.first {
		return c, nil, nil, 1, lim, res
	}
	if g.rowBias != nil {
		rb = &g.rowBias[i0:][:rows][0]
	}
	if g.colBias != nil {
		cb = &g.colBias[j0:][:cols][0]
	}
	return c, rb, cb, 0, lim, res
}

// store writes or adds one micro-tile into C as sm says, clipped to C's
// edges.
func (g *gemm) store(p, q int, acc *[gemmMR][gemmNR]float32, sm storeMode) {
	i0, j0 := p*gemmMR, q*gemmNR
	g.clip(i0, j0, min(gemmMR, g.m-i0), min(gemmNR, g.n-j0), unsafe.Slice(&acc[0][0], gemmMR*gemmNR), gemmNR, sm)
}

// clip writes (first, with the biases) or adds the rows×cols product in
// buf (row i at buf[i·ld:]) into C at row i0, column j0, and adds the
// residual and clamps the result when last. It changes buf.
func (g *gemm) clip(i0, j0, rows, cols int, buf []float32, ld int, sm storeMode) {
	for i := 0; i < rows; i++ {
		c := g.c[(i0+i)*g.ldc+j0:][:cols]
		a := buf[i*ld:][:cols]
		switch {
		case !sm.first:
			for j, v := range c {
				a[j] += v
			}
		case g.colBias != nil:
			var rb float32
			if g.rowBias != nil {
				rb = g.rowBias[i0+i]
			}
			cb := g.colBias[j0:][:cols]
			for j, v := range a {
				a[j] = v + cb[j] + rb // the kernels' order
			}
		default:
			var rb float32
			if g.rowBias != nil {
				rb = g.rowBias[i0+i]
			}
			for j, v := range a {
				a[j] = v + rb
			}
		}
		if !sm.last {
			copy(c, a)
			continue
		}
		var res []float32
		if g.res != nil {
			res = g.res[(i0+i)*g.ldc+j0:][:cols]
		}
		g.finish(c, a, res)
	}
}

// finish stores a piece a of the last store's values into c, adding the
// piece res of the residual (nil without one) and clamping as the kernels
// do. Each element of res is read before the same element of c is
// written, so res may be c's memory.
func (g *gemm) finish(c, a, res []float32) {
	if res != nil {
		// Vectors, then the Go loop: addF32, a function value, would
		// move the callers' tile buffers to the heap.
		a, res = a[:len(c)], res[:len(c)]
		n := arithVectors(arithAdd, c, a, res, 1, 1)
		addLoop(c[n:], a[n:], res[n:], 1, 1)
	} else {
		copy(c, a)
	}
	if g.lim != nil {
		clampF32s(c, g.lim[0], g.lim[1])
	}
}
