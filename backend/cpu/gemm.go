package cpu

// Single-precision matrix product C = A·B on packed operands.
//
// A (m×k) is packed in panels of gemmMR rows: panel p holds rows
// [p·MR, p·MR+MR) as k groups of MR values, so the micro-kernel reads it
// sequentially. B (k×n) is packed in panels of gemmNR columns the same way.
// Short edge panels are padded with zeros. C is tiled into blocks of whole
// panels; tiles are independent, so workers share them out. Within a tile
// the k dimension is cut into gemmKC-deep slices that keep the current B
// panel in L1 and the tile's A panels in L2.

const (
	gemmMR = 4
	gemmNR = 8
	gemmKC = 256
)

// packedASize is the number of floats a packed m×k A operand takes.
func packedASize(m, k int) int { return roundUp(m, gemmMR) * k }

// packedBSize is the number of floats a packed k×n B operand takes.
func packedBSize(k, n int) int { return roundUp(n, gemmNR) * k }

// packA packs panels [p0, p1) of the m×k matrix whose element (i, l) is
// alpha·src[i·rs + l·cs].
func packA(dst, src []float32, m, k, rs, cs int, alpha float32, p0, p1 int) {
	for p := p0; p < p1; p++ {
		d := dst[p*k*gemmMR : (p+1)*k*gemmMR]
		i0 := p * gemmMR
		rows := min(gemmMR, m-i0)
		if rows < gemmMR {
			clear(d)
		}
		switch {
		case rs == 1 && rows == gemmMR:
			// Columns of A are contiguous: one 4-wide copy per l.
			for l := 0; l < k; l++ {
				s := (*[gemmMR]float32)(src[i0+l*cs:])
				dd := (*[gemmMR]float32)(d[l*gemmMR:])
				dd[0], dd[1], dd[2], dd[3] = alpha*s[0], alpha*s[1], alpha*s[2], alpha*s[3]
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
	for q := q0; q < q1; q++ {
		d := dst[q*k*gemmNR : (q+1)*k*gemmNR]
		j0 := q * gemmNR
		cols := min(gemmNR, n-j0)
		switch {
		case cs == 1 && cols == gemmNR:
			for l := 0; l < k; l++ {
				*(*[gemmNR]float32)(d[l*gemmNR:]) = *(*[gemmNR]float32)(src[l*rs+j0:])
			}
		case cs == 1:
			clear(d)
			for l := 0; l < k; l++ {
				copy(d[l*gemmNR:l*gemmNR+cols], src[l*rs+j0:])
			}
		default:
			if cols < gemmNR {
				clear(d)
			}
			for j := 0; j < cols; j++ {
				base := (j0 + j) * cs
				if rs == 1 {
					col := src[base : base+k]
					for l, v := range col {
						d[l*gemmNR+j] = v
					}
					continue
				}
				for l := 0; l < k; l++ {
					d[l*gemmNR+j] = src[base+l*rs]
				}
			}
		}
	}
}

// gemm is one product C = A·B (+ biases, or += when acc) over packed
// operands, cut into tiles of mt×nt panels.
type gemm struct {
	m, n, k int
	a, b    []float32 // packed operands
	c       []float32
	ldc     int
	rowBias []float32 // added to every element of row i (length m), or nil
	colBias []float32 // added to every element of column j (length n), or nil
	acc     bool      // accumulate into C instead of overwriting it
	mt, nt  int       // tile size in panels
}

// gemmTiles chooses a tile size, in panels, that gives every worker a few
// tiles while keeping tiles large enough to amortise the loop overhead.
func gemmTiles(m, n, threads int) (mt, nt int) {
	pm, pn := ceilDiv(m, gemmMR), ceilDiv(n, gemmNR)
	mt, nt = min(max(pm, 1), 16), min(max(pn, 1), 32)
	for ceilDiv(pm, mt)*ceilDiv(pn, nt) < 3*threads {
		switch {
		case nt > 4 && (nt*gemmNR >= mt*gemmMR || mt <= 4):
			nt = ceilDiv(nt, 2)
		case mt > 2:
			mt = ceilDiv(mt, 2)
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

// run computes tiles [lo, hi).
func (g *gemm) run(lo, hi int) {
	pm, pn := ceilDiv(g.m, gemmMR), ceilDiv(g.n, gemmNR)
	tn := ceilDiv(pn, g.nt)
	var acc [gemmMR][gemmNR]float32
	for t := lo; t < hi; t++ {
		ti, tj := t/tn, t%tn
		p0, p1 := ti*g.mt, min((ti+1)*g.mt, pm)
		q0, q1 := tj*g.nt, min((tj+1)*g.nt, pn)
		if g.k == 0 {
			acc = [gemmMR][gemmNR]float32{}
			for q := q0; q < q1; q++ {
				for p := p0; p < p1; p++ {
					g.store(p, q, &acc, !g.acc)
				}
			}
			continue
		}
		for k0 := 0; k0 < g.k; k0 += gemmKC {
			kb := min(gemmKC, g.k-k0)
			first := k0 == 0 && !g.acc
			for q := q0; q < q1; q++ {
				bp := g.b[q*g.k*gemmNR+k0*gemmNR:][:kb*gemmNR]
				for p := p0; p < p1; p++ {
					ap := g.a[p*g.k*gemmMR+k0*gemmMR:][:kb*gemmMR]
					micro4x8(ap, bp, &acc)
					g.store(p, q, &acc, first)
				}
			}
		}
	}
}

// store writes (first) or adds one micro-tile into C, clipped to C's edges.
func (g *gemm) store(p, q int, acc *[gemmMR][gemmNR]float32, first bool) {
	i0, j0 := p*gemmMR, q*gemmNR
	rows, cols := min(gemmMR, g.m-i0), min(gemmNR, g.n-j0)
	for i := 0; i < rows; i++ {
		c := g.c[(i0+i)*g.ldc+j0:][:cols]
		a := acc[i][:cols]
		if !first {
			for j, v := range a {
				c[j] += v
			}
			continue
		}
		var rb float32
		if g.rowBias != nil {
			rb = g.rowBias[i0+i]
		}
		if g.colBias != nil {
			cb := g.colBias[j0:][:cols]
			for j, v := range a {
				c[j] = v + rb + cb[j]
			}
			continue
		}
		for j, v := range a {
			c[j] = v + rb
		}
	}
}
