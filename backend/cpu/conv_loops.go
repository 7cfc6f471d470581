package cpu

import "unsafe"

// im2col packs rows [k0, k0+kb) and columns [j0, j0+ncb) of one group's
// im2col matrix into dst in the packed B layout (panels of gemmNR columns,
// each kb rows deep): row r = ((c·KD + kd)·KH + kh)·KW + kw holds, for
// each output pixel of a column, the input value that kernel tap (kd, kh,
// kw) of channel c reads there, or 0 in the padding.
//
// A 2-D (or 1-D) convolution whose padded input area fits its scratch
// (padOff > 0) goes through im2colPadded; any other one through the
// general per-panel loops, im2colGeneral.
func (k *convKernel) im2col(dst, x []float32, j0, ncb, k0, kb int) {
	if k.padOff > 0 && k.im2colPadded(dst, x, j0, ncb, k0, kb) {
		return
	}
	k.im2colGeneral(dst, x, j0, ncb, k0, kb)
}

// im2colPadMax bounds, in floats, the padded input area that im2colPadded
// keeps after each worker's packed block.
const im2colPadMax = 40960

// im2colPadFloats sets padW and padSplit and returns the floats of the
// padded input area that im2colPadded needs for any block of at most nc
// columns and any k slice of at most kc rows, slack included, or 0 where
// the convolution is not 2-D or 1-D, its k slices are deeper than convKC
// or the area would exceed im2colPadMax.
func (k *convKernel) im2colPadFloats() int {
	if k.in[0] != 1 || k.out[0] != 1 || k.kern[0] != 1 || k.pad[0] != 0 || k.pad[1] < 0 || k.pad[2] < 0 || k.kc > convKC {
		return 0
	}
	OH, OW := k.out[1], k.out[2]
	kv := k.kern[1] * k.kern[2]
	chans := min(k.cg, (k.kc-1)/kv+2)
	orows := min(OH, (k.nc-1)/OW+2)
	pr := (orows-1)*k.stride[1] + (k.kern[1]-1)*k.dil[1] + 1
	pw := max(k.pad[2]+k.in[2], (OW-1)*k.stride[2]+(k.kern[2]-1)*k.dil[2]+1)
	split := k.stride[2] == 2 && k.dil[2] == 1
	if split {
		pw = 2 * ceilDiv(pw, 2)
	}
	n := chans*pr*pw + gemmNR
	if n > im2colPadMax {
		return 0
	}
	k.padW, k.padSplit = pw, split
	return n
}

// im2colPadRows writes rows rows of dst (ldd floats apart), each as pre
// zeros, cols values of the source row (rows lds floats apart in src) and
// post zeros: dwPadRows where the AVX2 kernels run, a Go loop elsewhere.
func im2colPadRows(dst []float32, ldd int, src []float32, lds, rows, pre, cols, post int) {
	if dwAsm {
		// Bounds: the last value written and the last one read.
		_ = dst[(rows-1)*ldd+pre+cols+post-1]
		_ = src[(rows-1)*lds+cols-1]
		zeroPadRows(&dst[0], ldd, &src[0], lds, rows, pre, cols, post)
		return
	}
	for i := range rows {
		d := dst[i*ldd:][:pre+cols+post]
		clear(d[:pre])
		copy(d[pre:pre+cols], src[i*lds:][:cols])
		clear(d[pre+cols:])
	}
}

// splitGeom is how dwSplitRows splits a row of cols values with pre
// zeros before it into halves of h floats (see dwSplitRows): stored
// column j holds padded columns 2j (even half) and 2j+1 (odd half);
// columns [lo, lo+pairs) take both from the row, from its column off, and
// at most one more value goes on each side (head, tail).
type splitGeom struct{ lo, off, pairs, head, tail int }

// splitRowGeom is the splitGeom of a row of cols values after pre zeros,
// in halves of h floats.
func splitRowGeom(pre, cols, h int) splitGeom {
	g := splitGeom{lo: min((pre+1)/2, h), tail: -1}
	hi := max(g.lo, min((cols+pre)/2, h))
	g.off, g.pairs = 2*g.lo-pre, hi-g.lo
	if pre%2 == 1 && (pre+1)/2 <= h {
		g.head = 1 // odd column lo−1 is the row's column 0
	}
	if (cols+pre)%2 == 1 && (cols+pre)/2 < h {
		g.tail = cols - 1 // even column lo+pairs is the row's last column
	}
	return g
}

// zeroPadRows is dwPadRows, on zmm registers where they exist.
func zeroPadRows(dst *float32, ldd int, src *float32, lds, rows, pre, cols, post int) {
	if dw512 {
		dwPadRows512(dst, ldd, src, lds, rows, pre, cols, post)
		return
	}
	dwPadRows(dst, ldd, src, lds, rows, pre, cols, post)
}

// splitRows is dwSplitRows, on zmm registers where they exist.
func splitRows(e, o *float32, ld int, x *float32, ldx, rows, p, lo, off, pairs, head, tail int) {
	if dw512 {
		dwSplitRows512(e, o, ld, x, ldx, rows, p, lo, off, pairs, head, tail)
		return
	}
	dwSplitRows(e, o, ld, x, ldx, rows, p, lo, off, pairs, head, tail)
}

// im2colSplitRows is im2colPadRows for a padded row of pw floats (pw
// even) stored split: its even columns in the first pw/2 floats, its odd
// ones in the last pw/2; dwSplitRows where the AVX2 kernels run.
func im2colSplitRows(dst []float32, ldd int, src []float32, lds, rows, pre, cols, pw int) {
	h := pw / 2
	if dwAsm && rows > 0 && cols > 0 {
		// dwSplitRows with the padded row's halves as its two
		// sub-arrays: padded column p = iw + pre is stored column p/2 of
		// the half of p's parity (dwBandPlane's stride-2 geometry). It
		// zeroes whole vectors past each half; that lands in the next
		// half or row, written after it, or in the slack after the
		// padded area.
		sg := splitRowGeom(pre, cols, h)
		_ = dst[(rows-1)*ldd+pw-1]
		_ = src[(rows-1)*lds+cols-1]
		splitRows(&dst[0], &dst[h], ldd, &src[0], lds, rows, h, sg.lo, sg.off, sg.pairs, sg.head, sg.tail)
		return
	}
	for i := range rows {
		d := dst[i*ldd:][:pw]
		e, o := d[:h], d[h:]
		clear(d)
		xr := src[i*lds:][:cols]
		// Padded column p = iw + pre goes to e[p/2] or o[p/2]: the
		// source columns of each half are every other one, from the
		// first of their parity.
		for par, half := range [2][]float32{e, o} {
			iw := (pre + par) & 1 // first source column of parity par: (iw+pre)&1 == par
			if iw >= cols {
				continue
			}
			n := (cols - iw + 1) / 2
			sv := xr[iw:][:2*(n-1)+1]
			dv := half[(iw+pre)>>1:][:n]
			for j := range dv {
				dv[j] = sv[2*j]
			}
		}
	}
}

// im2colPadded is im2col for a 2-D or 1-D convolution: it copies the input
// rows that the block's columns and the slice's channels read into the
// worker's padded area (dst from padOff, rows padW floats wide, zeros in
// the padding; at stride 2 along the row, even and odd columns apart, so
// that consecutive output columns read consecutive values), so that each
// tap of a panel reads its 16 values at fixed offsets from one base, with
// no padding tests. A panel's columns fall into runs that read
// consecutive values; each run is one 16-float copy (the copies of a row
// run in order, each one overrunning into the next row, which is written
// after it; gemmNR floats of slack follow the panels and the area), or,
// for panels of many runs, the 16 values are gathered one by one. It
// returns false, having written nothing, where the area does not fit.
func (k *convKernel) im2colPadded(dst, x []float32, j0, ncb, k0, kb int) bool {
	H, W := k.in[1], k.in[2]
	OW := k.out[2]
	KH, KW := k.kern[1], k.kern[2]
	s1, s2 := k.stride[1], k.stride[2]
	d1 := k.dil[1]
	kv := KH * KW
	pw := k.padW
	oh0, oh1 := j0/OW, (j0+ncb-1)/OW
	r0 := oh0*s1 - k.pad[1] // input row of padded row 0
	pr := (oh1-oh0)*s1 + (KH-1)*d1 + 1
	plane := pr * pw
	c0, c1 := k0/kv, (k0+kb-1)/kv+1
	np := ceilDiv(ncb, gemmNR)
	// The column offset within a padded row of output column ow's tap 0
	// is ow·cs (tapCol gives tap kw's from there).
	cs := s2
	if k.padSplit {
		cs = 1
	}
	// The area (the channels' planes and gemmNR floats of slack) must
	// fit, and the panels must end gemmNR floats before it. Every read
	// then lies inside it: a plane's last row is read at columns below
	// pw (pw covers the last column's last tap), 16 floats at most from
	// the start of a run.
	if kb > convKC || k.padOff+(c1-c0)*plane+gemmNR > len(dst) || np*kb*gemmNR+gemmNR > k.padOff {
		return false
	}
	pad := dst[k.padOff:][:(c1-c0)*plane+gemmNR]
	lo, hi := max(0, -r0), max(0, min(pr, H-r0))
	lo = min(lo, hi)
	for c := c0; c < c1; c++ {
		p := pad[(c-c0)*plane:][:plane]
		clear(p[:lo*pw])
		clear(p[hi*pw:])
		if hi == lo {
			continue
		}
		if k.padSplit {
			im2colSplitRows(p[lo*pw:], pw, x[c*k.inSp+(r0+lo)*W:], W, hi-lo, k.pad[2], W, pw)
		} else {
			im2colPadRows(p[lo*pw:], pw, x[c*k.inSp+(r0+lo)*W:], W, hi-lo, k.pad[2], W, pw-k.pad[2]-W)
		}
	}
	// taps[r]: the padded-area float offset of row r's tap (c, kh, kw)
	// at a column whose tap (0, 0) is at offset 0 (the same for every
	// panel).
	var taps [convKC]int
	kw := k0 % KW
	kh := k0 / KW % KH
	rb := (k0/kv-c0)*plane + kh*d1*pw // offset of the taps (c, kh, ·)
	for r := range taps[:kb] {
		taps[r] = rb + k.tapCol(kw)
		if kw++; kw == KW {
			kw = 0
			rb += d1 * pw
			if kh++; kh == KH {
				kh = 0
				rb += plane - KH*d1*pw
			}
		}
	}
	base := unsafe.Pointer(unsafe.SliceData(pad))
	oh, ow := oh0, j0%OW
	// Rows of whole panels, and a block of whole panels from the start
	// of one (as convolutions take them): every panel is one run of 16
	// columns of one output row.
	rowPanels := dwAsm && cs == 1 && OW%gemmNR == 0 && j0%gemmNR == 0 && ncb%gemmNR == 0
	for q := range np {
		cols := min(gemmNR, ncb-q*gemmNR)
		d := dst[q*kb*gemmNR:][:kb*gemmNR+gemmNR]
		dp := unsafe.Pointer(unsafe.SliceData(d))
		if rowPanels {
			ro, rd := [4]int{((oh-oh0)*s1*pw + ow) * 4}, [4]int{}
			copyRuns(dp, base, &taps[0], kb, &ro[0], &rd[0], 1)
			if ow += gemmNR; ow == OW {
				ow = 0
				oh++
			}
			continue
		}
		// off[jj]: the padded-area float offset of tap (0, 0) of column
		// jj; runs[i]: the first column of run i.
		var off, runs [gemmNR]int
		nr := 0
		for jj := range cols {
			off[jj] = (oh-oh0)*s1*pw + ow*cs
			if jj == 0 || off[jj] != off[jj-1]+1 {
				runs[nr] = jj
				nr++
			}
			if ow++; ow == OW {
				ow = 0
				oh++
			}
		}
		switch {
		case dwAsm && nr <= 4:
			var ro, rd [4]int
			for i, jj := range runs[:nr] {
				ro[i], rd[i] = off[jj]*4, jj*4
			}
			copyRuns(dp, base, &taps[0], kb, &ro[0], &rd[0], nr)
			if cols < gemmNR {
				for r := range kb {
					clear(d[r*gemmNR+cols : (r+1)*gemmNR])
				}
			}
		case nr == 1 && cols == gemmNR:
			src := unsafe.Add(base, off[0]*4)
			for r, tb := range taps[:kb] {
				copy16(unsafe.Add(dp, r*gemmNR*4), unsafe.Add(src, tb*4))
			}
		case nr <= 4:
			for r, tb := range taps[:kb] {
				for _, jj := range runs[:nr] {
					copy16(unsafe.Add(dp, (r*gemmNR+jj)*4), unsafe.Add(base, (tb+off[jj])*4))
				}
				if cols < gemmNR {
					clear(d[r*gemmNR+cols : (r+1)*gemmNR])
				}
			}
		case cols == gemmNR:
			for r, tb := range taps[:kb] {
				gather16((*[gemmNR]float32)(d[r*gemmNR:]), unsafe.Add(base, tb*4), &off)
			}
		default:
			for r, tb := range taps[:kb] {
				row := d[r*gemmNR:][:gemmNR]
				for jj := range cols {
					row[jj] = *(*float32)(unsafe.Add(base, (tb+off[jj])*4))
				}
				clear(row[cols:])
			}
		}
	}
	return true
}

// tapCol is the offset, within a row of im2colPadded's area, of kernel
// column kw from the column's tap 0.
func (k *convKernel) tapCol(kw int) int {
	if k.padSplit {
		return kw&1*(k.padW/2) + kw>>1
	}
	return kw * k.dil[2]
}

// copy16 copies 16 floats from src to dst, four at a time (a 16-float
// array copy would call memmove).
func copy16(dst, src unsafe.Pointer) {
	*(*[4]float32)(dst) = *(*[4]float32)(src)
	*(*[4]float32)(unsafe.Add(dst, 16)) = *(*[4]float32)(unsafe.Add(src, 16))
	*(*[4]float32)(unsafe.Add(dst, 32)) = *(*[4]float32)(unsafe.Add(src, 32))
	*(*[4]float32)(unsafe.Add(dst, 48)) = *(*[4]float32)(unsafe.Add(src, 48))
}

// gather16 sets row[j] = p[off[j]] for the 16 columns of a panel.
func gather16(row *[gemmNR]float32, p unsafe.Pointer, off *[gemmNR]int) {
	row[0] = *(*float32)(unsafe.Add(p, off[0]*4))
	row[1] = *(*float32)(unsafe.Add(p, off[1]*4))
	row[2] = *(*float32)(unsafe.Add(p, off[2]*4))
	row[3] = *(*float32)(unsafe.Add(p, off[3]*4))
	row[4] = *(*float32)(unsafe.Add(p, off[4]*4))
	row[5] = *(*float32)(unsafe.Add(p, off[5]*4))
	row[6] = *(*float32)(unsafe.Add(p, off[6]*4))
	row[7] = *(*float32)(unsafe.Add(p, off[7]*4))
	row[8] = *(*float32)(unsafe.Add(p, off[8]*4))
	row[9] = *(*float32)(unsafe.Add(p, off[9]*4))
	row[10] = *(*float32)(unsafe.Add(p, off[10]*4))
	row[11] = *(*float32)(unsafe.Add(p, off[11]*4))
	row[12] = *(*float32)(unsafe.Add(p, off[12]*4))
	row[13] = *(*float32)(unsafe.Add(p, off[13]*4))
	row[14] = *(*float32)(unsafe.Add(p, off[14]*4))
	row[15] = *(*float32)(unsafe.Add(p, off[15]*4))
}

// im2colGeneral is im2col for any geometry, panel by panel.
func (k *convKernel) im2colGeneral(dst, x []float32, j0, ncb, k0, kb int) {
	for q := 0; q*gemmNR < ncb; q++ {
		k.im2colPanel(dst[q*kb*gemmNR:][:kb*gemmNR], x, j0+q*gemmNR, min(gemmNR, ncb-q*gemmNR), k0, kb)
	}
}

// colRun is a run of a panel's columns that lie in one output row.
type colRun struct {
	jj, n      int // first column in the panel, and how many
	id, ih, iw int // input position of the first column's tap (0, 0, 0)
}

// im2colPanel writes one panel: rows [k0, k0+kb) of the cols columns from
// j0 (zeros beyond cols).
func (k *convKernel) im2colPanel(d, x []float32, j0, cols, k0, kb int) {
	D, H, W := k.in[0], k.in[1], k.in[2]
	OH, OW := k.out[1], k.out[2]
	sw := k.stride[2]
	// Cut the columns into runs along output rows.
	var runs [gemmNR]colRun
	nr := 0
	for jj := 0; jj < cols; {
		j := j0 + jj
		ow, t := j%OW, j/OW
		oh, od := t%OH, t/OH
		n := min(cols-jj, OW-ow)
		runs[nr] = colRun{jj: jj, n: n, id: od*k.stride[0] - k.pad[0], ih: oh*k.stride[1] - k.pad[1], iw: ow*sw - k.pad[2]}
		nr++
		jj += n
	}
	// The tap of row k0.
	kw := k0 % k.kern[2]
	t := k0 / k.kern[2]
	kh := t % k.kern[1]
	t /= k.kern[1]
	kd := t % k.kern[0]
	c := t / k.kern[0]
	var base [gemmNR]int // per run, the input row that taps (c, kd, kh, ·) read, or -1
	for r := 0; r < kb; {
		xc := x[c*k.inSp:][:k.inSp]
		dd, dh := kd*k.dil[0], kh*k.dil[1]
		for i, cr := range runs[:nr] {
			id, ih := cr.id+dd, cr.ih+dh
			base[i] = -1
			if uint(id) < uint(D) && uint(ih) < uint(H) {
				base[i] = (id*H + ih) * W
			}
		}
		// The taps along the row, which share the input rows.
		for ; kw < k.kern[2] && r < kb; kw, r = kw+1, r+1 {
			row := (*[gemmNR]float32)(d[r*gemmNR:])
			dw := kw * k.dil[2]
			if nr == 1 && cols == gemmNR && base[0] >= 0 && sw == 1 {
				if iw := runs[0].iw + dw; iw >= 0 && iw+gemmNR <= W {
					*row = *(*[gemmNR]float32)(xc[base[0]+iw:])
					continue
				}
			}
			if cols < gemmNR {
				clear(row[cols:])
			}
			for i, cr := range runs[:nr] {
				seg := row[cr.jj : cr.jj+cr.n]
				if base[i] < 0 {
					clear(seg)
					continue
				}
				xr := xc[base[i]:][:W]
				iw := cr.iw + dw
				if iw >= 0 && iw+(cr.n-1)*sw < W {
					// The whole run reads inside the row.
					if sw == 1 {
						src := xr[iw:][:len(seg)]
						for j, v := range src {
							seg[j] = v
						}
						continue
					}
					src := xr[iw:][:(cr.n-1)*sw+1]
					for j := range seg {
						seg[j] = src[j*sw]
					}
					continue
				}
				for j := range seg {
					if uint(iw) < uint(W) {
						seg[j] = xr[iw]
					} else {
						seg[j] = 0
					}
					iw += sw
				}
			}
		}
		// Next (c, kd, kh).
		kw = 0
		if kh++; kh == k.kern[1] {
			kh = 0
			if kd++; kd == k.kern[0] {
				kd = 0
				c++
			}
		}
	}
}

// depthwisePlane convolves one input channel plane x with one filter wt
// into one output plane y. Filters of at most dwMaxK × dwMaxK without
// dilation on a 1-D or 2-D input take depthwise2D; any other geometry goes
// row by row through depthwiseRow.
// A clamp moved into the convolution (k.lim) is applied to the plane
// by the kernels that store it, or after them.
func (k *convKernel) depthwisePlane(y, x, wt []float32, bias float32, buf []float32) {
	switch {
	case k.dwg.rows > 0 && dwAsm && len(buf) >= k.dwg.floats():
		// The geometry has bands (dwBands) and buf holds one: a
		// worker's scratch may be there for depthwiseChannelsGroup only.
		if k.dwBandPlane(y, x, wt, bias, buf) {
			return
		}
	case k.dwFast():
		k.depthwise2D(y, x, wt, bias)
	default:
		for od := 0; od < k.out[0]; od++ {
			for oh := 0; oh < k.out[1]; oh++ {
				k.depthwiseRow(y[(od*k.out[1]+oh)*k.out[2]:][:k.out[2]], x, wt, od, oh, bias)
			}
		}
	}
	k.clampOut(y)
}

// clampOut clamps y to k.lim where it is set, as the Clip kernels do.
func (k *convKernel) clampOut(y []float32) {
	if k.lim != nil {
		clampF32s(y, k.lim[0], k.lim[1])
	}
}

// depthwiseRow computes output row (od, oh) of one depthwise plane: every
// kernel tap adds a scaled, strided input row to the output row, over the
// output columns where that tap lands inside the input.
func (k *convKernel) depthwiseRow(orow, x, wt []float32, od, oh int, bias float32) {
	D, H, W := k.in[0], k.in[1], k.in[2]
	OW := k.out[2]
	sw := k.stride[2]
	fill(orow, bias)
	for kd := 0; kd < k.kern[0]; kd++ {
		id := od*k.stride[0] - k.pad[0] + kd*k.dil[0]
		if uint(id) >= uint(D) {
			continue
		}
		for kh := 0; kh < k.kern[1]; kh++ {
			ih := oh*k.stride[1] - k.pad[1] + kh*k.dil[1]
			if uint(ih) >= uint(H) {
				continue
			}
			xrow := x[(id*H+ih)*W:][:W]
			taps := wt[(kd*k.kern[1]+kh)*k.kern[2]:][:k.kern[2]]
			for kw, wv := range taps {
				off := kw*k.dil[2] - k.pad[2]
				lo, hi := strideSpan(off, sw, W, OW) // output columns
				if lo >= hi {
					continue
				}
				if sw == 1 {
					axpy(orow[lo:hi], xrow[lo+off:hi+off], wv)
				} else {
					o := orow[lo:hi]
					for i := range o {
						o[i] += wv * xrow[(lo+i)*sw+off]
					}
				}
			}
		}
	}
}

// dwBandOut is about how many outputs (padded columns included) one band
// of dwBandPlane computes: enough for long vectors, small enough that the
// band's inputs and outputs stay in the L1 cache.
const dwBandOut = 1024

// dwMaxPitch bounds the stored row of dwBandPlane, in floats: wider
// planes go row by row through the other paths of depthwise2D, so that
// the scratch stays a few kilobytes whatever the width.
const dwMaxPitch = 4096

// dwBandGeom is the layout of dwBandPlane's scratch for one plane of k.
type dwBandGeom struct {
	rows  int // output rows of a full band
	pitch int // floats from one stored row to the next, and of an output row
	nr    int // rows of each stored sub-array
	size  int // floats of each sub-array, slack included
	subs  int // sub-arrays: the input split by row and column parity
}

// dwBands reports the band layout of k, and false when k's planes do not
// run through dwBandPlane: no assembly kernel, a geometry depthwise2D does
// not take, strides other than 1 or 2, rows wider than dwMaxPitch, or an
// empty output.
func (k *convKernel) dwBands() (dwBandGeom, bool) {
	OH, OW, KH, KW := k.out[1], k.out[2], k.kern[1], k.kern[2]
	sh, sw := k.stride[1], k.stride[2]
	if !dwAsm || !k.dwFast() || sh < 1 || sh > 2 || sw < 1 || sw > 2 || OH < 1 || OW < 1 {
		return dwBandGeom{}, false
	}
	var g dwBandGeom
	// Stored row: the padded input columns that the outputs read, split
	// into even and odd columns with stride 2.
	if sw == 1 {
		g.pitch = OW + KW - 1
	} else {
		g.pitch = OW + (KW-1)/2
	}
	if g.pitch > dwMaxPitch {
		return dwBandGeom{}, false
	}
	g.rows = min(OH, max(1, ceilDiv(dwBandOut, g.pitch)))
	if k.dw3Rows() {
		// Whole groups of four rows of whole vectors for dw3s1x4 and
		// dw3s2x4.
		g.pitch = roundUp(g.pitch, 16)
		g.rows = roundUp(g.rows, 4)
	}
	if sh == 1 {
		g.nr = g.rows + KH - 1
	} else {
		g.nr = g.rows + (KH-1)/2
	}
	g.subs = sh * sw
	// Slack past the last row: the widened last vector of outputs reads
	// up to KW+15 values beyond it.
	g.size = roundUp(g.nr*g.pitch+KW+16, 16)
	return g, true
}

// dw3Rows reports whether k's bands may run on the row-blocked 3×3
// kernels (dw3s1x4, dw3s2x4): a 3×3 filter with strides 1 or 2, the same
// along both axes. Their band layout (whole vectors, whole groups of four
// rows) is kept whichever kernel runs.
func (k *convKernel) dw3Rows() bool {
	return k.kern[1] == 3 && k.kern[2] == 3 && k.stride[1] == k.stride[2] && k.stride[1] <= 2
}

// dwPaddedFloats is the scratch, in floats, that dwBandPlane needs for
// one plane of k, or 0 when k's planes take the other paths of
// depthwise2D.
func dwPaddedFloats(k *convKernel) int {
	g, ok := k.dwBands()
	if !ok {
		return 0
	}
	return g.floats()
}

// floats is the scratch, in floats, of one plane of the layout g.
func (g dwBandGeom) floats() int { return g.subs*g.size + roundUp(g.rows*g.pitch+16, 16) }

// dwBandPlane computes one plane of a stride 1 or 2 geometry (k.dwBands)
// on the assembly kernel, a band of output rows at a time, in buf
// (dwPaddedFloats of it). The padded input rows of a band are copied into
// buf, split by the parity of their row (vertical stride 2) and column
// (horizontal stride 2), so that every tap of the filter reads, for the
// outputs of the band laid out flat with the stored row pitch, one
// contiguous run of a sub-array at a fixed offset. One call of
// dwTapsAVX512 (or dwTapsAVX2) then computes the whole band with its
// accumulators in registers, and the valid columns of each output row
// are copied out. The columns between the rows of the flat layout (and
// past the band) are computed too, from zeros or neighbouring values,
// and discarded.
//
// It reports whether it clamped the plane to k.lim (the row-blocked 3×3
// kernels do as they store).
func (k *convKernel) dwBandPlane(y, x, wt []float32, bias float32, buf []float32) (clamped bool) {
	g := k.dwg
	H, W := k.in[1], k.in[2]
	OH, OW := k.out[1], k.out[2]
	KH, KW := k.kern[1], k.kern[2]
	sh, sw := k.stride[1], k.stride[2]
	ph, pw := k.pad[1], k.pad[2]
	P, S := g.pitch, g.size
	hs, ws := sh-1, sw-1 // strides are 1 or 2: shifts and masks
	out := buf[g.subs*S:][:roundUp(g.rows*P+16, 16)]
	rowBlocked := dw512 && k.dw3Rows()
	var tp [dwMaxTaps]*float32
	if !rowBlocked {
		// Tap (r, c) reads sub-array (r mod sh, c mod sw) at row r/sh,
		// column c/sw. Every tap offset lies in buf[:g.subs*S]
		// (checked just above), so the pointers are formed without a
		// bounds check each.
		var colOff [dwMaxK]int
		for c := 0; c < KW; c++ {
			colOff[c] = ((c&ws)*S + c>>ws) * 4
		}
		base := unsafe.Pointer(&buf[0])
		t := 0
		for r := 0; r < KH; r++ {
			row := unsafe.Add(base, (((r&hs)<<ws)*S+(r>>hs)*P)*4)
			for _, co := range colOff[:KW] {
				tp[t] = (*float32)(unsafe.Add(row, co))
				t++
			}
		}
	}
	wt = wt[:KH*KW]
	// Columns of a stored row with unit stride: pre zeros, the input
	// row's first cols values, post zeros.
	pre := min(pw, P)
	cols := max(0, min(W, P-pre))
	post := P - pre - cols
	// Stride 2 along rows: stored column j holds padded columns 2j and
	// 2j+1; columns [lo, lo+pairs) take both from the input row, from
	// its column off, and at most one more value on each side.
	var sg splitGeom
	if sw == 2 {
		sg = splitRowGeom(pw, W, P)
	}
	for oh0 := 0; oh0 < OH; oh0 += g.rows {
		rb := min(g.rows, OH-oh0)
		rows := sh*(rb-1) + KH
		// Band row i is input row oh0·sh + i − ph; rows [i0, i1) exist.
		top := oh0*sh - ph
		i0 := min(rows, max(0, -top))
		i1 := max(i0, min(rows, H-top))
		for par := 0; par < sh; par++ {
			// Band rows i = sh·j + par, stored as row j of sub-arrays
			// par·sw (and par·sw + 1 with stride 2 along the row).
			j0, j1 := (i0-par+hs)>>hs, (i1-par+hs)>>hs
			for c := 0; c < sw; c++ {
				a := (par*sw + c) * S
				clear(buf[a : a+j0*P])
				clear(buf[a+j1*P : a+S])
			}
			if j1 <= j0 {
				continue
			}
			a := par * sw * S
			src := x[(top+sh*j0+par)*W:]
			if sw == 1 {
				zeroPadRows(&buf[a+j0*P], P, &src[0], sh*W, j1-j0, pre, cols, post)
				continue
			}
			splitRows(&buf[a+j0*P], &buf[a+S+j0*P], P, &src[0], sh*W, j1-j0, P, sg.lo, sg.off, sg.pairs, sg.head, sg.tail)
		}
		// Whole vectors of 16 (or two of 8): the columns past the band
		// are discarded.
		n := roundUp(rb*P, 16)
		if rowBlocked {
			// Whole groups of four rows straight into y; the rest
			// through out.
			kern := dw3s1x4
			if sh == 2 {
				kern = dw3s2x4
			}
			var lim *float32
			if k.lim != nil {
				lim, clamped = &k.lim[0], true
			}
			full := rb / 4
			if full > 0 {
				kern(&y[oh0*OW], &buf[0], &wt[0], S, P, OW, OW, full, lim, bias)
			}
			if r := rb - 4*full; r > 0 {
				kern(&out[0], &buf[4*full*P], &wt[0], S, P, P, OW, 1, lim, bias)
				zeroPadRows(&y[(oh0+4*full)*OW], OW, &out[0], P, r, 0, OW, 0)
			}
			continue
		}
		switch {
		case dw512:
			dwTapsAVX512(&out[0], &tp, &wt[0], KH*KW, n, bias)
		default:
			dwTapsAVX2(&out[0], &tp, &wt[0], KH*KW, n, bias)
		}
		zeroPadRows(&y[oh0*OW], OW, &out[0], P, rb, 0, OW, 0)
	}
	return clamped
}

// dwMaxK is the largest filter side that depthwise2D takes.
const dwMaxK = 7

// dwMaxTaps is the most taps of a filter that depthwise2D takes.
const dwMaxTaps = dwMaxK * dwMaxK

// dwFast reports whether depthwise2D handles the geometry: a filter of at
// most dwMaxK × dwMaxK without dilation and without negative pads, on one
// depth plane.
func (k *convKernel) dwFast() bool {
	return k.kern[0] == 1 && k.kern[1] <= dwMaxK && k.kern[2] <= dwMaxK &&
		k.dil == [3]int{1, 1, 1} && k.in[0] == 1 && k.out[0] == 1 && k.pad[0] == 0 &&
		k.pad[1] >= 0 && k.pad[2] >= 0
}

// depthwise2D is depthwisePlane for the geometries of dwFast. Rows whose
// taps all lie inside the input sum the taps of four output pixels at a
// time without bounds checks, from values held in registers (dw3x3s1 and
// dw3x3s2 for the common 3×3 filters, dwBlock for the others); the border
// pixels of those rows are summed one by one with checks, and the border
// rows go through depthwiseRow.
func (k *convKernel) depthwise2D(y, x, wt []float32, bias float32) {
	H, W := k.in[1], k.in[2]
	OH, OW := k.out[1], k.out[2]
	KH, KW := k.kern[1], k.kern[2]
	sh, sw := k.stride[1], k.stride[2]
	ph, pw := k.pad[1], k.pad[2]
	wt = wt[:KH*KW]
	// Interior columns: 0 <= ow·sw − pw and ow·sw − pw + KW <= W.
	lo := min(ceilDiv(pw, sw), OW)
	hi := lo
	if W-KW+pw >= 0 {
		hi = max(lo, min((W-KW+pw)/sw+1, OW))
	}
	var rows [dwMaxK][]float32
	for oh := 0; oh < OH; oh++ {
		orow := y[oh*OW:][:OW]
		ih := oh*sh - ph
		if ih < 0 || ih+KH > H {
			k.depthwiseRow(orow, x, wt, 0, oh, bias)
			continue
		}
		for r := 0; r < KH; r++ {
			rows[r] = x[(ih+r)*W:][:W]
		}
		base := lo*sw - pw
		o := orow[lo:hi]
		if sw == 1 && dwAsm && len(o) >= 8 {
			// Whole vectors of the interior on the assembly kernel; the
			// last len(o)%8 outputs join the Go code below.
			n := len(o) &^ 7
			var rp [dwMaxK]*float32
			for r := 0; r < KH; r++ {
				rp[r] = &rows[r][base : base+n+KW-1][0]
			}
			dwS1AVX2(&o[0], &rp, &wt[0], KH, KW, n, bias)
			base += n
			o = o[n:]
		}
		if KH == 3 && KW == 3 {
			w := (*[9]float32)(wt)
			for ow := 0; ow < lo; ow++ {
				orow[ow] = dw3x3Pixel(w, rows[0], rows[1], rows[2], ow*sw-pw, bias)
			}
			for ow := hi; ow < OW; ow++ {
				orow[ow] = dw3x3Pixel(w, rows[0], rows[1], rows[2], ow*sw-pw, bias)
			}
			switch {
			case hi <= lo:
			case sw == 1:
				dw3x3s1(o, w, rows[0][base:], rows[1][base:], rows[2][base:], bias)
			case sw == 2:
				dw3x3s2(o, w, rows[0][base:], rows[1][base:], rows[2][base:], bias)
			default:
				dwBlock(o, wt, &rows, KH, KW, sw, base, bias)
			}
			continue
		}
		for ow := 0; ow < lo; ow++ {
			orow[ow] = dwPixel(wt, &rows, KH, KW, ow*sw-pw, bias)
		}
		for ow := hi; ow < OW; ow++ {
			orow[ow] = dwPixel(wt, &rows, KH, KW, ow*sw-pw, bias)
		}
		if hi > lo {
			dwBlock(o, wt, &rows, KH, KW, sw, base, bias)
		}
	}
}

// dwPixel sums the taps of one output pixel whose leftmost tap reads
// column iw of rows, skipping taps outside the row.
func dwPixel(wt []float32, rows *[dwMaxK][]float32, KH, KW, iw int, bias float32) float32 {
	kw0, kw1 := max(0, -iw), min(KW, len(rows[0])-iw)
	s := bias
	if kw0 >= kw1 {
		return s
	}
	for r := 0; r < KH; r++ {
		xr := rows[r][iw+kw0 : iw+kw1]
		for i, wv := range wt[r*KW+kw0 : r*KW+kw1] {
			s += wv * xr[i]
		}
	}
	return s
}

// dw3x3Pixel sums the taps of one output pixel of a 3×3 filter whose
// leftmost tap reads column iw of the rows r0, r1, r2, skipping taps
// outside the rows.
func dw3x3Pixel(w *[9]float32, r0, r1, r2 []float32, iw int, bias float32) float32 {
	s := bias
	for kw := 0; kw < 3; kw++ {
		if c := iw + kw; uint(c) < uint(len(r0)) {
			s += w[kw]*r0[c] + w[3+kw]*r1[c] + w[6+kw]*r2[c]
		}
	}
	return s
}

// dwBlock sets o[i] = bias + Σ taps (r, kw) of wt·rows[r][base + i·sw + kw]
// for interior pixels, four outputs at a time: each weight is loaded once
// for the four.
func dwBlock(o, wt []float32, rows *[dwMaxK][]float32, KH, KW, sw, base int, bias float32) {
	n := len(o)
	span := 3*sw + KW // inputs that four outputs read along a row
	i := 0
	if KW == 5 && sw == 1 {
		// The eight inputs of a row serve all twenty products.
		for ; i+4 <= n; i += 4 {
			s0, s1, s2, s3 := bias, bias, bias, bias
			for r := 0; r < KH; r++ {
				x := (*[8]float32)(rows[r][base+i:])
				w := (*[5]float32)(wt[r*5:])
				x0, x1, x2, x3, x4, x5, x6, x7 := x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]
				s0 += w[0]*x0 + w[1]*x1 + w[2]*x2 + w[3]*x3 + w[4]*x4
				s1 += w[0]*x1 + w[1]*x2 + w[2]*x3 + w[3]*x4 + w[4]*x5
				s2 += w[0]*x2 + w[1]*x3 + w[2]*x4 + w[3]*x5 + w[4]*x6
				s3 += w[0]*x3 + w[1]*x4 + w[2]*x5 + w[3]*x6 + w[4]*x7
			}
			d := (*[4]float32)(o[i:])
			d[0], d[1], d[2], d[3] = s0, s1, s2, s3
		}
	}
	for ; i+4 <= n; i += 4 {
		s0, s1, s2, s3 := bias, bias, bias, bias
		for r := 0; r < KH; r++ {
			xr := rows[r][base+i*sw:][:span]
			a, b, c := xr[sw:], xr[2*sw:], xr[3*sw:]
			for kw, wv := range wt[r*KW : (r+1)*KW] {
				s0 += wv * xr[kw]
				s1 += wv * a[kw]
				s2 += wv * b[kw]
				s3 += wv * c[kw]
			}
		}
		d := (*[4]float32)(o[i:])
		d[0], d[1], d[2], d[3] = s0, s1, s2, s3
	}
	for ; i < n; i++ {
		s := bias
		for r := 0; r < KH; r++ {
			xr := rows[r][base+i*sw:][:KW]
			for kw, wv := range wt[r*KW : (r+1)*KW] {
				s += wv * xr[kw]
			}
		}
		o[i] = s
	}
}

// dw3x3s1 sets o[i] = bias + Σ taps over columns i..i+2 of r0, r1, r2
// (stride 1), four outputs at a time.
func dw3x3s1(o []float32, w *[9]float32, r0, r1, r2 []float32, bias float32) {
	n := len(o)
	r0, r1, r2 = r0[:n+2], r1[:n+2], r2[:n+2]
	w0, w1, w2, w3, w4, w5, w6, w7, w8 := w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
	i := 0
	for ; i+4 <= n; i += 4 {
		a := (*[6]float32)(r0[i:])
		s0 := bias + w0*a[0] + w1*a[1] + w2*a[2]
		s1 := bias + w0*a[1] + w1*a[2] + w2*a[3]
		s2 := bias + w0*a[2] + w1*a[3] + w2*a[4]
		s3 := bias + w0*a[3] + w1*a[4] + w2*a[5]
		b := (*[6]float32)(r1[i:])
		s0 += w3*b[0] + w4*b[1] + w5*b[2]
		s1 += w3*b[1] + w4*b[2] + w5*b[3]
		s2 += w3*b[2] + w4*b[3] + w5*b[4]
		s3 += w3*b[3] + w4*b[4] + w5*b[5]
		c := (*[6]float32)(r2[i:])
		s0 += w6*c[0] + w7*c[1] + w8*c[2]
		s1 += w6*c[1] + w7*c[2] + w8*c[3]
		s2 += w6*c[2] + w7*c[3] + w8*c[4]
		s3 += w6*c[3] + w7*c[4] + w8*c[5]
		d := (*[4]float32)(o[i:])
		d[0], d[1], d[2], d[3] = s0, s1, s2, s3
	}
	for ; i < n; i++ {
		a, b, c := (*[3]float32)(r0[i:]), (*[3]float32)(r1[i:]), (*[3]float32)(r2[i:])
		o[i] = bias + w0*a[0] + w1*a[1] + w2*a[2] + w3*b[0] + w4*b[1] + w5*b[2] + w6*c[0] + w7*c[1] + w8*c[2]
	}
}

// dw3x3s2 is dw3x3s1 for stride 2: o[i] reads columns 2i..2i+2.
func dw3x3s2(o []float32, w *[9]float32, r0, r1, r2 []float32, bias float32) {
	n := len(o)
	r0, r1, r2 = r0[:2*n+1], r1[:2*n+1], r2[:2*n+1]
	w0, w1, w2, w3, w4, w5, w6, w7, w8 := w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]
	i := 0
	for ; i+4 <= n; i += 4 {
		a := (*[9]float32)(r0[2*i:])
		s0 := bias + w0*a[0] + w1*a[1] + w2*a[2]
		s1 := bias + w0*a[2] + w1*a[3] + w2*a[4]
		s2 := bias + w0*a[4] + w1*a[5] + w2*a[6]
		s3 := bias + w0*a[6] + w1*a[7] + w2*a[8]
		b := (*[9]float32)(r1[2*i:])
		s0 += w3*b[0] + w4*b[1] + w5*b[2]
		s1 += w3*b[2] + w4*b[3] + w5*b[4]
		s2 += w3*b[4] + w4*b[5] + w5*b[6]
		s3 += w3*b[6] + w4*b[7] + w5*b[8]
		c := (*[9]float32)(r2[2*i:])
		s0 += w6*c[0] + w7*c[1] + w8*c[2]
		s1 += w6*c[2] + w7*c[3] + w8*c[4]
		s2 += w6*c[4] + w7*c[5] + w8*c[6]
		s3 += w6*c[6] + w7*c[7] + w8*c[8]
		d := (*[4]float32)(o[i:])
		d[0], d[1], d[2], d[3] = s0, s1, s2, s3
	}
	for ; i < n; i++ {
		a, b, c := (*[3]float32)(r0[2*i:]), (*[3]float32)(r1[2*i:]), (*[3]float32)(r2[2*i:])
		o[i] = bias + w0*a[0] + w1*a[1] + w2*a[2] + w3*b[0] + w4*b[1] + w5*b[2] + w6*c[0] + w7*c[1] + w8*c[2]
	}
}

// axpy adds a·x to y.
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += a * x[i]
	}
}

// col2im sets one output channel plane of a transposed convolution: the
// bias plus, for every kernel tap, its column-matrix row scattered to the
// output positions i·stride − pad + tap·dilation that fall inside.
func (k *convTransposeKernel) col2im(y, col []float32, bias float32) {
	fill(y, bias)
	D, H, W := k.in[0], k.in[1], k.in[2]
	OD, OH, OW := k.out[0], k.out[1], k.out[2]
	sw := k.stride[2]
	tap := 0
	for kd := 0; kd < k.kern[0]; kd++ {
		for kh := 0; kh < k.kern[1]; kh++ {
			for kw := 0; kw < k.kern[2]; kw++ {
				row := col[tap*k.inSp:][:k.inSp]
				tap++
				off := kw*k.dil[2] - k.pad[2]
				lo, hi := strideSpan(off, sw, OW, W) // input columns
				if lo >= hi {
					continue
				}
				for id := 0; id < D; id++ {
					od := id*k.stride[0] - k.pad[0] + kd*k.dil[0]
					if uint(od) >= uint(OD) {
						continue
					}
					for ih := 0; ih < H; ih++ {
						oh := ih*k.stride[1] - k.pad[1] + kh*k.dil[1]
						if uint(oh) >= uint(OH) {
							continue
						}
						src := row[(id*H+ih)*W:][:W]
						dst := y[(od*OH+oh)*OW:][:OW]
						if sw == 1 {
							s, d := src[lo:hi], dst[lo+off:hi+off]
							for i, v := range s {
								d[i] += v
							}
							continue
						}
						for iw := lo; iw < hi; iw++ {
							dst[iw*sw+off] += src[iw]
						}
					}
				}
			}
		}
	}
}

// strideSpan returns the range [lo, hi) of the columns j < n whose
// position j·stride + off lands inside a row of width w (lo ≥ hi: none).
func strideSpan(off, stride, w, n int) (lo, hi int) {
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	if w-1-off >= 0 {
		hi = min((w-1-off)/stride+1, n)
	}
	return lo, hi
}
