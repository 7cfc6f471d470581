package cpu

import (
	"encoding/binary"
	"math"
)

// blockedGather is the NCHW16c path of a convolution of windows (a kernel
// larger than 1×1, or a stride without subsampling: a ResNet's stride-2 3×3
// layers), input and output blocked together. The positions are the rows of
// the product, twelve a tile, the output channels its columns, 32 a panel,
// as on pointwiseBlocked12x32; A, each tile's windows, is gathered from the
// blocked input a k slice of 256 steps (sixteen blocks of sixteen channels
// of one tap) at a time for a strip of gatherStrip tiles, and every panel's
// slice of the weights, 32 KiB, then serves the whole strip from the L1
// cache, the tiles' outputs adding up over the slices
// (pointwiseBlocked12x32's pointwiseBlockedAcc).
type blockedGather struct {
	// wT is the weights transposed: m/32 panels of kvol·c steps of 32
	// output channels, step t·c + ci for input channel ci at tap t.
	wT []float32
}

// Blocking of blockedGather.
const (
	gatherSlice = 16 // k blocks of sixteen steps a slice
	gatherStrip = 8  // tiles of twelve positions a strip
)

// gatherFloats is the scratch one share of blockedGather takes for
// strips of the given tiles: a strip's gathered slice of A, and a tile
// for each output panel of a last tile of fewer than twelve positions.
func (k *convKernel) gatherFloats(strip int) int {
	return strip*gatherSlab + k.m/pointwiseBlockedNR*pointwiseBlockedMR*pointwiseBlockedNR
}

// gatherSlab is the floats of one tile's slice of A.
const gatherSlab = gatherSlice * pointwiseBlockedMR * blockLanes

// gatherFits reports whether k can run as blockedGather with scratch bytes:
// a 2-D convolution of windows with one group, constant weights, whole
// blocks of input channels and 32-channel panels of output, a plane of at
// least pointwiseBlockedMinPlane outputs, and no epilogue but a clamp.
func (k *convKernel) gatherFits(scratch int64) bool {
	if !useAVX512Kernel || !dw512 || k.depthwise || k.g != 1 || k.in[0] != 1 || k.kern[0] != 1 || k.pointwise || k.sub > 0 ||
		k.wg != nil || k.pro != nil || k.wPre == nil || k.c%blockLanes != 0 || k.m%pointwiseBlockedNR != 0 || k.outSp < pointwiseBlockedMinPlane || k.nb == 0 {
		return false
	}
	if r, _, ok := k.blockedEpilogue(); !ok || r > 0 {
		return false
	}
	return scratch >= int64(4*k.gatherFloats(1))
}

// blockGather returns k's blockedGather from the [m, c, kh, kw] float32
// weights w, laid out in the memory of the packed ones.
func (k *convKernel) blockGather(w []byte) *blockedGather {
	steps := k.c * k.kvol
	wT := k.weights.relayout(k.wPre, nil, w, "blocked gather", [8]int{k.m, k.c, k.kvol}, k.m*steps, func(wT []float32) {
		for jb := 0; jb < k.m/pointwiseBlockedNR; jb++ {
			panel := wT[jb*steps*pointwiseBlockedNR:][:steps*pointwiseBlockedNR]
			for j := range pointwiseBlockedNR {
				row := w[4*(jb*pointwiseBlockedNR+j)*steps:][:4*steps]
				for ci := range k.c {
					for t := range k.kvol {
						panel[(t*k.c+ci)*pointwiseBlockedNR+j] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*(ci*k.kvol+t):]))
					}
				}
			}
		}
	})
	return &blockedGather{wT: wT}
}

// runGather runs blockedGather: items are strips of gatherStrip tiles,
// handed out in shares of consecutive strips.
func (k *convKernel) runGather(w *Workers, in, out [][]byte, scratch []byte) {
	floats := len(scratch) / 4
	parts := max(1, min(floats/k.gatherFloats(1), w.parts(k.nb*k.outSp*k.m*k.kdim/4), k.nb*ceilDiv(k.outSp, pointwiseBlockedMR)))
	// Strips as long as each share's part of the scratch allows.
	strip := max(1, min(gatherStrip, (floats/parts-k.gatherFloats(0))/gatherSlab))
	w.forArgs(parts, parts, k, args{phaseGather, int64(parts), int64(strip)}, in, out, scratch)
}

// gatherShare is share s of parts of runGather's strips of strip tiles.
func (k *convKernel) gatherShare(in, out [][]byte, scratch []byte, s, parts, strip int) {
	q := ceilDiv(k.outSp, pointwiseBlockedMR)
	per := ceilDiv(q, strip)
	strips := k.nb * per
	buf := f32s(scratch)[s*k.gatherFloats(strip):][:k.gatherFloats(strip)]
	abuf := buf[:strip*gatherSlab]
	tails := buf[len(abuf):]
	x, y := f32s(in[0]), k.result(out)
	bias, lim := k.biasLim(in)
	kb16 := k.c * k.kvol / blockLanes
	steps := k.c * k.kvol
	mb := k.m / blockLanes
	const slab = gatherSlab
	for st := s * strips / parts; st < (s+1)*strips/parts; st++ {
		n, q0 := st/per, st%per*strip
		q1 := min(q, q0+strip)
		xn := x[n*k.c*k.inSp:][:k.c*k.inSp]
		for s0 := 0; s0 < kb16; s0 += gatherSlice {
			s1 := min(kb16, s0+gatherSlice)
			for qi := q0; qi < q1; qi++ {
				p0 := qi * pointwiseBlockedMR
				k.gatherA(abuf[(qi-q0)*slab:][:slab], xn, p0, min(pointwiseBlockedMR, k.outSp-p0), s0, s1)
			}
			mode := 0
			if s0 > 0 {
				mode = pointwiseBlockedAcc
			}
			var l *float32
			if s1 == kb16 {
				l = lim
			}
			for jb := 0; jb < k.m/pointwiseBlockedNR; jb++ {
				bp := &k.gth.wT[(jb*steps+s0*blockLanes)*pointwiseBlockedNR]
				var bs *float32
				if bias != nil && s0 == 0 {
					bs = &bias[jb*pointwiseBlockedNR]
				}
				// The strip's first tile asks for the next panel's slice.
				var pf *float32
				if jb+1 < k.m/pointwiseBlockedNR {
					pf = &k.gth.wT[((jb+1)*steps+s0*blockLanes)*pointwiseBlockedNR]
				}
				for qi := q0; qi < q1; qi++ {
					a := &abuf[(qi-q0)*slab]
					p0 := qi * pointwiseBlockedMR
					if qi > q0 {
						pf = nil
					}
					if p0+pointwiseBlockedMR <= k.outSp {
						at := ((n*mb+2*jb)*k.outSp + p0) * blockLanes
						pointwiseBlocked12x32(s1-s0, a, 4*pointwiseBlockedMR*blockLanes, mode, bp, &y[at], 4*blockLanes*k.outSp, bs, nil, l, pf)
						continue
					}
					// A last tile of fewer positions adds up in its
					// panel's tile and is copied out after the last slice.
					tile := tails[jb*pointwiseBlockedMR*pointwiseBlockedNR:][:pointwiseBlockedMR*pointwiseBlockedNR]
					pointwiseBlocked12x32(s1-s0, a, 4*pointwiseBlockedMR*blockLanes, mode, bp, &tile[0], 4*pointwiseBlockedMR*blockLanes, bs, nil, l, nil)
					if s1 == kb16 {
						at := ((n*mb+2*jb)*k.outSp + p0) * blockLanes
						rows := k.outSp - p0
						for h := range 2 {
							copy(y[at+h*blockLanes*k.outSp:][:rows*blockLanes], tile[h*pointwiseBlockedMR*blockLanes:][:rows*blockLanes])
						}
					}
				}
			}
		}
	}
}

// gatherA packs the windows of output positions [p0, p0+rows) of image x
// (NCHW16c) as pointwiseBlocked12x32's blocked A, blocks 768 bytes apart: k
// blocks [s0, s1) of the blocks of sixteen channels of each tap in turn,
// the positions' input vectors at that tap, zero where the tap falls in the
// padding or past rows.
func (k *convKernel) gatherA(a, x []float32, p0, rows, s0, s1 int) {
	H, W, OW := k.in[1], k.in[2], k.out[2]
	cb, inSp := k.c/blockLanes, k.inSp
	var y0, x0, off [pointwiseBlockedMR]int
	for i := range rows {
		p := p0 + i
		y0[i], x0[i] = p/OW*k.stride[1]-k.pad[1], p%OW*k.stride[2]-k.pad[2]
	}
	for t := s0 / cb; t*cb < s1; t++ {
		dy, dx := t/k.kern[2]*k.dil[1], t%k.kern[2]*k.dil[2]
		for i := range off {
			off[i] = -1
			if yy, xx := y0[i]+dy, x0[i]+dx; i < rows && yy >= 0 && yy < H && xx >= 0 && xx < W {
				off[i] = 4 * (yy*W + xx) * blockLanes
			}
		}
		for b := max(0, s0-t*cb); b < min(cb, s1-t*cb); b++ {
			blk := a[(t*cb+b-s0)*pointwiseBlockedMR*blockLanes:][:pointwiseBlockedMR*blockLanes]
			// Every offset lies inside the block's plane.
			src := x[b*inSp*blockLanes:][:inSp*blockLanes]
			gather12(&blk[0], &src[0], &off[0])
		}
	}
}
