package cpu

// B packed in quads, for the 6×64 kernel.
//
// A large product on AVX-512 (wideB) packs its B panels four by four side
// by side: the quad of panels [4Q, 4Q+4) takes the place of those four
// panels in packB's layout, but holds their 64 columns together, k step
// after k step (64 floats a step), so that the 6×64 kernel (sgemm6x64)
// reads one stream. The panels past the last whole quad keep packB's
// layout. sgemm6x64 loads ten values for every 24 multiply-adds against
// sgemm12x32's fourteen.

// wideB reports whether an m×n product packs its B in quads: the deep
// products (deepProduct) with two quads or more, on AVX-512.
func wideB(m, n int) bool {
	return useAVX512Kernel && deepProduct(m, n) && n >= 8*gemmNR
}

// quadsIn is how many panels of a B with n columns lie in quads: the
// whole groups of four.
func quadsIn(n int) int { return 4 * (ceilDiv(n, gemmNR) / 4) }

// panelPlace returns where panel q of a packed k×n B starts (its first k
// step) and how many floats apart its k steps lie: in packB's layout, or,
// where wide is set, in quads up to quadsIn(n).
func panelPlace(q, k, n int, wide bool) (start, step int) {
	if !wide || q >= quadsIn(n) {
		return q * k * gemmNR, gemmNR
	}
	return (q&^3)*k*gemmNR + (q&3)*gemmNR, 4 * gemmNR
}

// interleaveQuads turns the quads of a k×n B packed by packB into quads
// in place, through a buffer of one quad: for constants, packed once.
func interleaveQuads(b []float32, k, n int) {
	qr := quadsIn(n)
	if qr == 0 || k == 0 {
		return
	}
	tmp := make([]float32, 4*k*gemmNR)
	for q := 0; q < qr; q += 4 {
		quad := b[q*k*gemmNR:][:4*k*gemmNR]
		copy(tmp, quad)
		for p := range 4 {
			for l := 0; l < k; l++ {
				copy(quad[(4*l+p)*gemmNR:][:gemmNR], tmp[(p*k+l)*gemmNR:])
			}
		}
	}
}

// quadPanels is how many B panels, from the first, g reads in quads.
func (g *gemm) quadPanels() int {
	if !g.bWide {
		return 0
	}
	return quadsIn(g.n)
}

// bQuad is k steps [k0, k0+kb) of the quad of B panels [q, q+4).
func (g *gemm) bQuad(q, k0, kb int) []float32 {
	if g.bSliced {
		return g.b[q*kb*gemmNR:][:kb*4*gemmNR]
	}
	return g.b[q*g.k*gemmNR+k0*4*gemmNR:][:kb*4*gemmNR]
}

// sliceQuads is one k slice (steps [k0, k0+kb), kb ≥ 1) of the tile of A
// panels [p0, p1) and the quads of B panels [q0, q1) (both multiples of
// four): for each quad, every A panel is one 6×64 micro-tile. A tile that
// C's edges clip is computed into a buffer and clipped from there.
//
// The quad's slice (up to 256 KiB) streams from L2 for every A panel;
// while it runs, each call asks for its share of the next quad to be
// brought into L2. Unlike slice2x2, it does not ask for the next A
// panel.
func (g *gemm) sliceQuads(p0, p1, q0, q1, k0, kb int, sm storeMode) {
	if q0%4 != 0 || q1%4 != 0 {
		panic("cpu: a tile of B packed in quads starts or ends inside a quad")
	}
	const cols = 4 * gemmNR
	var buf [gemmMR * cols]float32
	per := ceilDiv(kb, max(p1-p0, 1)) // k steps of the next quad each call hints
	for q := q0; q < q1; q += 4 {
		bq := g.bQuad(q, k0, kb)
		var next []float32
		if q+4 < q1 {
			next = g.bQuad(q+4, k0, kb)
		}
		j0 := q * gemmNR
		for p := p0; p < p1; p++ {
			var pf *float32
			pfn := 0
			if off := (p - p0) * per; next != nil && off < kb {
				pf, pfn = &next[off*cols], min(per, kb-off)
				if pfn > kb/4 {
					// More than the kernel has steps for: at once.
					prefetchL2(pf, 4*pfn)
					pfn = 0
				}
			}
			i0 := p * gemmMR
			rows, w := min(gemmMR, g.m-i0), min(cols, g.n-j0)
			var ap *float32
			lda := 0
			if g.aRaw != nil && rows == gemmMR {
				ap, lda = &g.aRaw[i0*g.lda+k0:][:(gemmMR-1)*g.lda+kb][0], g.lda
			} else {
				ap = &g.aPanel(p, k0, kb)[0]
			}
			if rows == gemmMR && w == cols {
				c, rb, cb, mode, lim, res := g.direct(i0, j0, rows, cols, sm)
				sgemm6x64(kb, ap, &bq[0], c, g.ldc, rb, cb, mode, lim, res, pf, pfn, lda)
				continue
			}
			sgemm6x64(kb, ap, &bq[0], &buf[0], cols, nil, nil, 0, nil, nil, pf, pfn, lda)
			g.clip(i0, j0, rows, w, buf[:], cols, sm)
		}
	}
}
