package cpu

// The Winograd path on channel-blocked activations (NCHW16c, see
// conv_blocked.go): input and output both blocked. The transforms take a
// tile of sixteen channels a call, a channel a lane (wgInB4, wgOutB4 and
// F(2×2, 3×3)'s wgInB2, wgOutB2), reading and writing the blocked planes in
// place; V and M are held blocked too, V_ξ as rows of tiles (V[ξ][c/16]
// [tile][16]) and M_ξ likewise, so that each product M_ξᵀ = V_ξᵀ·U_ξᵀ runs
// on the blocked pointwise kernel (pointwiseBlocked12x32) with the tiles as
// the rows of A read in place and U_ξᵀ, the transformed filters transposed,
// as B. Only the patches that cross the padding or the plane's edge, and
// the output tiles that do, go through a patch in scratch.

// wgBlockedFloats is the scratch one share of the transforms takes: a
// 6×6 input patch, the transforms' rows, and a 4×4 output patch.
const wgBlockedFloats = (36 + 36 + 16) * blockLanes

// winogradBlockFits reports whether k, on the Winograd path, can run on
// channel-blocked activations: channels in whole blocks, whole 32-channel
// panels of output, and no epilogue but a clamp.
func (k *convKernel) winogradBlockFits() bool {
	return k.wg != nil && k.c%blockLanes == 0 && k.m%pointwiseBlockedNR == 0 &&
		(k.fuse == nil || len(k.fuse.ep.instrs) == 0 && k.fuse.temp == 0) && k.res == 0
}

// blockWinograd returns a copy of g for the blocked path, its filters
// transformed and transposed from the weights w.
func (k *convKernel) blockWinograd(w []byte) *winograd {
	g := *k.wg
	src := f32src{b: w}
	jbs := k.m / pointwiseBlockedNR
	// Into the memory of the filters packed for the planes, which no
	// copy of the kernel reads any more.
	g.ut = k.weights.relayout(g.u, nil, w, "blocked winograd U", [8]int{g.r, g.xis, k.m, k.c}, g.xis*k.m*k.c, func(ut []float32) {
		for xi := range g.xis {
			for jb := range jbs {
				panel := ut[(xi*jbs+jb)*k.c*pointwiseBlockedNR:][:k.c*pointwiseBlockedNR]
				for j := range pointwiseBlockedNR {
					for ci := range k.c {
						panel[ci*pointwiseBlockedNR+j] = g.filter(src, (jb*pointwiseBlockedNR+j)*k.c+ci, xi)
					}
				}
			}
		}
	})
	g.u = nil
	return &g
}

// Phases of the blocked Winograd path, in args[0] (args as for
// phaseWgIn).
const (
	phaseWgInB  = 21 // input transform, items are shares of (channel block, tile row)
	phaseWgMulB = 22 // products, items are (ξ, 32-channel panel)
	phaseWgOutB = 23 // output transform, items are shares of (channel block, tile row)
)

// runWinogradBlocked runs k on w image by image and block by block.
func (k *convKernel) runWinogradBlocked(w *Workers, in, out [][]byte, scratch []byte) {
	g := k.wg
	parts := max(1, min(w.Threads(), (len(scratch)/4-g.sOff)/g.splitFloats()))
	for n := 0; n < k.nb; n++ {
		for t0 := 0; t0 < g.t; t0 += g.tb {
			a := args{phaseWgInB, int64(n), int64(parts), int64(t0)}
			w.forArgs(parts, parts, k, a, in, out, scratch)
			a[0] = phaseWgMulB
			w.forArgs(g.xis*k.m/pointwiseBlockedNR, w.Threads(), k, a, in, out, scratch)
			a[0] = phaseWgOutB
			w.forArgs(parts, parts, k, a, in, out, scratch)
		}
	}
}

// wgBlockedRange runs items [lo, hi) of a blocked Winograd phase.
func (k *convKernel) wgBlockedRange(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	g := k.wg
	sc := f32s(scratch)
	n, parts, t0 := int(a[1]), int(a[2]), int(a[3])
	t1 := min(g.t, t0+g.tb)
	ty0, ty1 := t0/g.tw, (t1-1)/g.tw+1
	tbB := roundUp(g.tb, pointwiseBlockedMR)
	switch a[0] {
	case phaseWgInB:
		x := f32s(in[0])
		cb := k.c / blockLanes
		items := cb * (ty1 - ty0)
		for share := lo; share < hi; share++ {
			buf := sc[g.sOff+share*g.splitFloats():][:wgBlockedFloats]
			for it := share * items / parts; it < (share+1)*items/parts; it++ {
				b, ty := it%cb, ty0+it/cb
				xb := x[(n*cb+b)*k.inSp*blockLanes:][:k.inSp*blockLanes]
				v := sc[g.vOff+b*tbB*blockLanes:]
				k.wgInRow(v, xb, buf, 4*cb*tbB*blockLanes, ty, max(0, t0-ty*g.tw), min(g.tw, t1-ty*g.tw), t0)
			}
		}
	case phaseWgMulB:
		cb, jbs := k.c/blockLanes, k.m/pointwiseBlockedNR
		mb := k.m / blockLanes
		for it := lo; it < hi; it++ {
			xi, jb := it/jbs, it%jbs
			v := sc[g.vOff+xi*cb*tbB*blockLanes:]
			m := sc[g.mOff+(xi*mb+2*jb)*tbB*blockLanes:]
			bp := &g.ut[(xi*jbs+jb)*k.c*pointwiseBlockedNR]
			// The first call asks for the next item's filters, which
			// come from memory.
			var pf *float32
			if it+1 < hi {
				pf = &g.ut[(it+1)*k.c*pointwiseBlockedNR]
			}
			for p0 := 0; p0 < t1-t0; p0 += pointwiseBlockedMR {
				if t1-t0-p0 == pointwiseBlockedMR+1 {
					// 12n+1 tiles (49: 14² planes): the last
					// one rides with the twelve before it.
					pointwiseBlocked13x32(cb, &v[p0*blockLanes], 4*tbB*blockLanes, bp, &m[p0*blockLanes], 4*tbB*blockLanes, nil, nil, nil)
					break
				}
				pointwiseBlocked12x32(cb, &v[p0*blockLanes], 4*tbB*blockLanes, 0, bp, &m[p0*blockLanes], 4*tbB*blockLanes, nil, nil, nil, pf)
				pf = nil
			}
		}
	case phaseWgOutB:
		y := k.result(out)
		bias, lim := k.biasLim(in)
		mb := k.m / blockLanes
		items := mb * (ty1 - ty0)
		for share := lo; share < hi; share++ {
			buf := sc[g.sOff+share*g.splitFloats():][:wgBlockedFloats]
			for it := share * items / parts; it < (share+1)*items/parts; it++ {
				b, ty := it%mb, ty0+it/mb
				bs := vecAt(bias, b*blockLanes)
				yb := y[(n*mb+b)*k.outSp*blockLanes:][:k.outSp*blockLanes]
				m := sc[g.mOff+b*tbB*blockLanes:]
				k.wgOutRow(yb, m, buf, 4*mb*tbB*blockLanes, ty, max(0, t0-ty*g.tw), min(g.tw, t1-ty*g.tw), t0, bs, lim)
			}
		}
	}
}

// wgInRow transforms tiles [tx0, tx1) of tile row ty of one block of
// sixteen input channels xb into v (this block's rows of V_0, ξ vxi
// bytes apart; tile t at row t−t0): in place where the patch lies inside
// the plane, through a zero-padded patch in buf elsewhere.
func (k *convKernel) wgInRow(v, xb, buf []float32, vxi, ty, tx0, tx1, t0 int) {
	g := k.wg
	H, W, s := k.in[1], k.in[2], g.r+2
	y0 := g.r*ty - k.pad[1]
	in := wgInB2
	if g.r == 4 {
		in = wgInB4
	}
	patch, tmp := buf[:36*blockLanes], buf[36*blockLanes:][:36*blockLanes]
	// Tiles whose patch columns [r·tx − pad, r·tx − pad + s) lie inside.
	ia, ib := tx1, tx1
	if y0 >= 0 && y0+s <= H && W+k.pad[2] >= s {
		ia = max(tx0, ceilDiv(k.pad[2], g.r))
		ib = max(ia, min(tx1, (W+k.pad[2]-s)/g.r+1))
	}
	row := ty*g.tw - t0
	if ib > ia {
		x0 := g.r*ia - k.pad[2]
		in(&v[(row+ia)*blockLanes], vxi, &xb[(y0*W+x0)*blockLanes], 4*W*blockLanes, 4*g.r*blockLanes, ib-ia, &tmp[0])
	}
	for tx := tx0; tx < tx1; tx++ {
		if tx >= ia && tx < ib {
			continue
		}
		x0 := g.r*tx - k.pad[2]
		for i := range s {
			for j := range s {
				d := (*[blockLanes]float32)(patch[(i*s+j)*blockLanes:])
				yy, xx := y0+i, x0+j
				if yy < 0 || yy >= H || xx < 0 || xx >= W {
					*d = [blockLanes]float32{}
					continue
				}
				*d = *(*[blockLanes]float32)(xb[(yy*W+xx)*blockLanes:])
			}
		}
		in(&v[(row+tx)*blockLanes], vxi, &patch[0], 4*s*blockLanes, 0, 1, &tmp[0])
	}
}

// wgOutRow transforms tiles [tx0, tx1) of tile row ty of one block of
// sixteen output channels from m (this block's rows of M_0, ξ mxi bytes
// apart) into yb: in place where the tile lies inside the plane, through
// a patch in buf elsewhere.
func (k *convKernel) wgOutRow(yb, m, buf []float32, mxi, ty, tx0, tx1, t0 int, bias, lim *float32) {
	g := k.wg
	OH, OW, r := k.out[1], k.out[2], g.r
	out := wgOutB2
	if r == 4 {
		out = wgOutB4
	}
	tmp, patch := buf[36*blockLanes:][:36*blockLanes], buf[72*blockLanes:][:16*blockLanes]
	row := ty*g.tw - t0
	full := tx1
	if r*ty+r > OH {
		full = tx0
	}
	full = max(tx0, min(full, OW/r))
	if full > tx0 {
		out(&yb[(r*ty*OW+r*tx0)*blockLanes], 4*OW*blockLanes, 4*r*blockLanes, &m[(row+tx0)*blockLanes], mxi, full-tx0, bias, lim, &tmp[0])
	}
	for tx := full; tx < tx1; tx++ {
		out(&patch[0], 4*r*blockLanes, 0, &m[(row+tx)*blockLanes], mxi, 1, bias, lim, &tmp[0])
		for i := range min(r, OH-r*ty) {
			for j := range min(r, OW-r*tx) {
				*(*[blockLanes]float32)(yb[((r*ty+i)*OW+r*tx+j)*blockLanes:]) = *(*[blockLanes]float32)(patch[(i*r+j)*blockLanes:])
			}
		}
	}
}
