package cpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// Channel-blocked activations (NCHW16c). A float32 tensor of shape [N, C,
// H, W] with C a multiple of 16 may be held with its channels in blocks
// of sixteen: element (n, c, p), p the position in the plane, at
// ((n·C/16 + c/16)·H·W + p)·16 + c mod 16. It takes the same bytes as
// NCHW. A 1×1 convolution reads such an input as the rows of its product
// in place, twelve positions' 64-byte runs a block of channels, and
// writes such an output sixteen channels of a position at a time, where
// its NCHW product reads and writes rows of planes 32 positions at a
// time, far apart. The compiler chooses the layout of each activation
// (see blockRoles and blockKernels); the kernels here keep to it.
const blockLanes = 16

// blockedPW is the channel-blocked path of a 1×1 convolution (convKernel
// with blk set): the product runs with the output positions as the rows
// of A and the output channels as the columns, twelve positions by 32
// channels a tile (pointwiseBlocked12x32).
type blockedPW struct {
	inB, outB bool // input 0, and the output and residual, in NCHW16c
	pack      bool // A is packed (an NCHW input)
	kp        int  // input channels rounded up to a block
	// wT is the weights transposed, m/32 panels of kp steps of 32
	// output channels (the zero rows past c pad the last block).
	wT []float32
	// jBlock is how many 32-channel panels of wT a share's item takes,
	// so that they stay in the L2 cache while its positions go by.
	jBlock int
}

// pointwiseBlockedMR and pointwiseBlockedNR are the tile's rows (positions)
// and columns (output channels).
const (
	pointwiseBlockedMR = 12
	pointwiseBlockedNR = 32
	// pointwiseBlockedPanelBytes bounds the bytes of wT one item reads.
	pointwiseBlockedPanelBytes = 512 << 10
	// pointwiseBlocked12x32's mode bits: A packed a channel's twelve
	// positions side by side, and C's values added to the product.
	pointwiseBlockedPacked = 1
	pointwiseBlockedAcc    = 2
	// pointwiseBlockedStrip is how many tiles of consecutive positions an
	// output in planes takes at a time: 48 positions, whole cache lines of
	// each plane (twelve, a tile's, would leave the rest of a line to the
	// next tile, and its stores would cost more).
	pointwiseBlockedStrip = 4
	// pointwiseBlockedMinPlane is the smallest output plane the blocked
	// path takes: on smaller ones the last tile of twelve positions wastes
	// too much (ResNet-50's 7² planes, 49 positions in five tiles, run on
	// planes).
	pointwiseBlockedMinPlane = 64
)

// floats is the scratch one share of the blocked path takes:
// pointwiseBlockedStrip tiles of C, one of the residual, and a packed panel
// of A where A is packed.
func (b *blockedPW) floats() int {
	n := (pointwiseBlockedStrip + 1) * pointwiseBlockedMR * pointwiseBlockedNR
	if b.pack {
		n += roundUp(pointwiseBlockedMR*b.kp, alignment/4)
	}
	return n
}

// blockedFits reports whether k can run the channel-blocked path, a 2-D
// 1×1 convolution of unit or stride 2 (subsample) with one group,
// constant weights, whole 32-channel output panels and no epilogue but
// a residual and a clamp, on AVX-512, with scratch bytes: in and out are
// blockRoles'.
func (k *convKernel) blockedFits(scratch int64) (in, out bool) {
	if !useAVX512Kernel || !dw512 || k.depthwise || k.g != 1 || k.kvol != 1 || k.in[0] != 1 || k.nb == 0 || k.outSp == 0 {
		return false, false
	}
	if !k.pointwise && k.sub == 0 {
		return false, false
	}
	if k.m%pointwiseBlockedNR != 0 || k.outSp < pointwiseBlockedMR || k.pro != nil || k.wg != nil || k.kSplit > 1 && k.tKC > 0 {
		return false, false
	}
	if _, _, ok := k.blockedEpilogue(); !ok || k.wPre == nil && k.wT == nil {
		return false, false
	}
	// Packing A (from planes, or subsampling) needs a panel of it; an
	// input blocked in place, only the tile.
	if k.sub > 0 {
		scratch = 4 * int64(k.subOff)
	}
	packs := scratch >= int64(4*(&blockedPW{kp: roundUp(k.c, blockLanes), pack: true}).floats())
	in = k.c%blockLanes == 0 && scratch >= int64(4*(&blockedPW{}).floats())
	return in, packs && k.outSp >= pointwiseBlockedMinPlane
}

// biasLim is a run's biases (nil for none) and the clamp its kernels
// apply as they store (nil for none).
func (k *convKernel) biasLim(in [][]byte) ([]float32, *float32) {
	var bias []float32
	if k.hasBias {
		bias = f32s(in[2])
	}
	var lim *float32
	if k.lim != nil {
		lim = &k.lim[0]
	}
	return bias, lim
}

// storeEpilogue makes k's epilogue, at most a residual and a clamp
// (blockedEpilogue), one its kernels apply as they store: res and lim
// set, the fused chain left empty.
func (k *convKernel) storeEpilogue() {
	r, lim, _ := k.blockedEpilogue()
	k.res, k.lim = r, lim
	if k.fuse != nil {
		k.fuse = &fused{ep: &epilogue{rowLen: k.fuse.ep.rowLen}, nin: k.fuse.nin, shares: k.fuse.shares}
	}
}

// result is the output a run writes: the fused epilogue's result, or
// the kernel's own output.
func (k *convKernel) result(out [][]byte) []float32 {
	if k.fuse != nil {
		return f32s(out[1])
	}
	return f32s(out[0])
}

// vecAt is &v[i], or nil for a nil v (an absent bias).
func vecAt(v []float32, i int) *float32 {
	if v == nil {
		return nil
	}
	return &v[i]
}

// blockedLayouts reports whether this machine's kernels take NCHW16c
// activations at all (they need AVX-512).
func blockedLayouts() bool { return useAVX512Kernel && dw512 }

// blockedEpilogue is what the blocked path applies as it stores, for a
// convolution whose epilogue, if any, is at most a residual's Add and then
// a clamp: the residual (k.res's numbering, 0 for none) and the clamp.
// ok is false for any other epilogue.
func (k *convKernel) blockedEpilogue() (res int, lim *[2]float32, ok bool) {
	if k.fuse == nil || len(k.fuse.ep.instrs) == 0 {
		return k.res, k.lim, k.fuse == nil || k.fuse.temp == 0
	}
	if k.res > 0 || k.lim != nil || k.fuse.temp > 0 {
		return 0, nil, false
	}
	r, rest := k.fuse.ep.splitResidual()
	lim, rest = rest.splitClamp()
	return r + 1, lim, len(rest.instrs) == 0
}

// blockRoles reports which of a kernel's activations it can take in
// NCHW16c: its input 0 (in), and its result (out, which a residual it
// adds as it stores then shares). scratch is the bytes its
// build asked for. A kernel that can take neither returns false, false.
func blockRoles(k Kernel, scratch int64) (in, out bool) {
	switch k := k.(type) {
	case *convKernel:
		if k.wg != nil {
			ok := k.winogradBlockFits()
			return ok, ok
		}
		if k.winFits(scratch) {
			return false, true
		}
		if k.gatherFits(scratch) {
			return true, true
		}
		in, out := k.blockedFits(scratch)
		// A subsampled input may be blocked for any path: the
		// subsample phase reads it so (subBlocked).
		return in || k.sub > 0 && k.c%blockLanes == 0, out
	case *globalPoolKernel:
		return !k.isMax && k.c%blockLanes == 0, false
	case *poolKernel:
		ok := k.blockedFits()
		return ok, ok
	case *concatKernel:
		return k.channels, k.channels
	}
	return false, false
}

// blockTied reports whether a kernel takes its input 0 and its result in
// NCHW16c only both together (the Winograd path, max pooling, and a
// concatenation, which ties all its inputs: blockAllInputs).
func blockTied(k Kernel) bool {
	switch k := k.(type) {
	case *convKernel:
		return k.wg != nil || k.gatherFits(math.MaxInt64)
	case *poolKernel, *concatKernel:
		return true
	}
	return false
}

// blockAllInputs reports whether a kernel that blockTied ties ties every
// input to its result, not only input 0 (a concatenation).
func blockAllInputs(k Kernel) bool {
	_, ok := k.(*concatKernel)
	return ok
}

// residualInput is the index, among a fused kernel's inputs, of the
// residual its kernels add as they store, or -1.
func residualInput(k Kernel) int {
	if k, ok := k.(*convKernel); ok && k.fuse != nil {
		if r, _, ok := k.blockedEpilogue(); ok && r > 0 {
			return k.fuse.nin + r - 1
		}
	}
	return -1
}

// blockKernels returns a copy of each of ks, kernels built (and fused) from the
// same node, that reads its input 0 (a concatenation: every input) in
// NCHW16c where in is set and writes its result (and reads its residual)
// in NCHW16c where out is set, as blockRoles and blockTied allowed. w is
// a convolution's weight tensor, float32 bytes (nil for other kernels);
// the copies share the layout of it they keep, which takes the memory of
// the packed weights of the other paths: ks must not run once blockKernels has
// returned them.
func blockKernels(ks []Kernel, in, out bool, w []byte) ([]Kernel, error) {
	res := make([]Kernel, len(ks))
	var wT []float32
	var wg *winograd
	var win *blockedWin
	var gth *blockedGather
	for i, k := range ks {
		switch k := k.(type) {
		case *convKernel:
			if k.wg != nil {
				if !in || !out || !k.winogradBlockFits() {
					return nil, fmt.Errorf("cpu: the Winograd path takes NCHW16c input and output together")
				}
				if wg == nil {
					if len(w) != 4*9*k.m*k.c {
						return nil, fmt.Errorf("cpu: blocked weights of %d bytes, want %d", len(w), 4*9*k.m*k.c)
					}
					wg = k.blockWinograd(w)
				}
				f := *k
				f.wg = wg
				res[i] = &f
				continue
			}
			if !in && out && k.winFits(math.MaxInt64) {
				if len(w) != 4*k.m*k.c*k.kvol {
					return nil, fmt.Errorf("cpu: weights of %d bytes, want %d", len(w), 4*k.m*k.c*k.kvol)
				}
				if win == nil {
					win = k.blockWindows(w)
				}
				f := *k
				f.storeEpilogue()
				f.win, f.wPre, f.stem = win, nil, nil // stemRows only runs into planes
				res[i] = &f
				continue
			}
			if k.gatherFits(math.MaxInt64) {
				if !in || !out || len(w) != 4*k.m*k.c*k.kvol {
					return nil, fmt.Errorf("cpu: a convolution of windows takes NCHW16c input and output together")
				}
				if gth == nil {
					gth = k.blockGather(w)
				}
				f := *k
				f.storeEpilogue()
				f.gth, f.wPre = gth, nil
				res[i] = &f
				continue
			}
			if k.sub > 0 && in && !out {
				f := *k
				f.subBlocked = true
				res[i] = &f
				continue
			}
			_, _, ok := k.blockedEpilogue()
			switch {
			case !in && !out:
				return nil, fmt.Errorf("cpu: blockKernels with neither input nor output blocked")
			case !ok:
				return nil, fmt.Errorf("cpu: a fused epilogue the blocked path does not apply")
			}
			if wT == nil {
				if len(w) != 4*k.m*k.c {
					return nil, fmt.Errorf("cpu: blocked weights of %d bytes, want %d", len(w), 4*k.m*k.c)
				}
				// Into the packed weights' memory where they fit: every
				// copy of the kernel takes the blocked path, and a
				// model's weights then never stand packed twice.
				wT = k.weights.relayout(k.wPre, k.wT, w, "blocked pointwise", [8]int{k.m, k.c}, k.m*roundUp(k.c, blockLanes), func(wT []float32) {
					blockedWeights(wT, w, k.m, k.c)
				})
			}
			f := *k
			f.storeEpilogue()
			f.blk = &blockedPW{inB: in, outB: out, pack: !in, kp: roundUp(k.c, blockLanes), wT: wT}
			f.blk.jBlock = max(1, pointwiseBlockedPanelBytes/(4*pointwiseBlockedNR*f.blk.kp))
			f.wPre, f.wT = nil, nil
			res[i] = &f
		case *globalPoolKernel:
			f := *k
			f.blocked = in
			res[i] = &f
		case *poolKernel:
			if !in || !out {
				return nil, fmt.Errorf("cpu: a max pool takes NCHW16c input and output together")
			}
			f := *k
			f.blocked = true
			res[i] = &f
		case *concatKernel:
			if !in || !out || !k.channels {
				return nil, fmt.Errorf("cpu: a concatenation takes NCHW16c inputs and output together")
			}
			// The same copies.
			res[i] = k
		default:
			return nil, fmt.Errorf("cpu: %T cannot take NCHW16c activations", k)
		}
	}
	return res, nil
}

// blockedWeights lays the [m, c] weights (little-endian float32 bytes, at
// any alignment: a mapped file's) out in wT as pointwiseBlocked12x32's B:
// m/32 panels of roundUp(c, 16) steps of 32 output channels.
func blockedWeights(wT []float32, w []byte, m, c int) []float32 {
	clear(wT)
	weightPanels(wT, w, m, c, roundUp(c, blockLanes), pointwiseBlockedNR)
	return wT
}

// weightPanels lays the [m, steps] weights (little-endian float32 bytes,
// at any alignment) out in dst as m/nr panels of nr output channels a
// step, panel jb's step s from dst[(jb·depth + s)·nr] on (depth ≥ steps:
// the steps past steps are left as they are).
func weightPanels(dst []float32, w []byte, m, steps, depth, nr int) {
	for jb := 0; jb < m/nr; jb++ {
		panel := dst[jb*depth*nr:][:depth*nr]
		for j := range nr {
			row := w[4*(jb*nr+j)*steps:][:4*steps]
			for s := range steps {
				panel[s*nr+j] = math.Float32frombits(binary.LittleEndian.Uint32(row[4*s:]))
			}
		}
	}
}

// runBlocked runs the channel-blocked path: items are (image, panel
// block, position panel), handed out in shares of consecutive items.
func (k *convKernel) runBlocked(w *Workers, in, out [][]byte, scratch []byte) {
	b := k.blk
	if k.sub > 0 {
		// The subsampled input first, in its layout (input), and
		// then the product on it.
		if b.inB {
			blocks := k.nb * k.c / blockLanes
			w.forArgs(blocks, w.parts(k.nb*k.c*k.outSp), k, args{phaseBlockedSub}, in, out, scratch)
		} else {
			w.forArgs(k.nb*k.c, w.parts(k.nb*k.c*k.outSp), k, args{phaseSubsample}, in, out, scratch)
		}
	}
	items := k.nb * ceilDiv(k.m/pointwiseBlockedNR, b.jBlock) * ceilDiv(k.outSp, pointwiseBlockedMR)
	parts := min(k.blockedAvail(scratch)/b.floats(), w.parts(k.nb*k.outSp*k.m*k.kdim/4), items)
	parts = max(parts, 1)
	w.forArgs(parts, parts, k, args{phaseBlocked, int64(parts)}, in, out, scratch)
}

// blockedAvail is the floats of scratch the shares' buffers may take:
// those before the subsampled input, where there is one.
func (k *convKernel) blockedAvail(scratch []byte) int {
	if k.sub > 0 {
		return k.subOff
	}
	return len(scratch) / 4
}

// subsampleBlocks copies the even rows and columns of blocks [lo, hi) of
// sixteen input channels (NCHW16c) to dst, blocks outSp positions apart.
func (k *convKernel) subsampleBlocks(x, dst []float32, lo, hi int) {
	h, w, oh, ow := k.subIn[1], k.subIn[2], k.out[1], k.out[2]
	for blk := lo; blk < hi; blk++ {
		src := x[blk*h*w*blockLanes:][:h*w*blockLanes]
		d := dst[blk*k.outSp*blockLanes:][:k.outSp*blockLanes]
		for oy := range oh {
			row := src[2*oy*w*blockLanes:]
			for ox := range ow {
				*(*[blockLanes]float32)(d[(oy*ow+ox)*blockLanes:]) = *(*[blockLanes]float32)(row[2*ox*blockLanes:])
			}
		}
	}
}

// blockedShare is share s of parts of runBlocked's items.
func (k *convKernel) blockedShare(in, out [][]byte, scratch []byte, s, parts int) {
	b := k.blk
	q := ceilDiv(k.outSp, pointwiseBlockedMR)
	jbs := ceilDiv(k.m/pointwiseBlockedNR, b.jBlock)
	items := k.nb * jbs * q
	per := b.floats()
	buf := f32s(scratch)[s*per:][:per]
	tiles := buf[:pointwiseBlockedStrip*pointwiseBlockedMR*pointwiseBlockedNR]
	tile, resT, apack := tiles[:pointwiseBlockedMR*pointwiseBlockedNR], buf[len(tiles):][:pointwiseBlockedMR*pointwiseBlockedNR], buf[len(tiles)+pointwiseBlockedMR*pointwiseBlockedNR:]
	x := k.input(in, scratch)
	y := k.result(out)
	var res []float32
	if k.res > 0 {
		res = f32s(in[k.fuse.nin+k.res-1])
	}
	bias, lim := k.biasLim(in)
	kb16 := b.kp / blockLanes
	// The input, or its subsampled copy.
	inSp := k.inSp
	if b.inB && !b.outB && res == nil {
		k.stripShare(x, y, bias, tiles, lim, s*items/parts, (s+1)*items/parts)
		return
	}
	for it := s * items / parts; it < (s+1)*items/parts; it++ {
		qi := it % q
		jbi := it / q % jbs
		n := it / q / jbs
		p0 := qi * pointwiseBlockedMR
		rows := min(pointwiseBlockedMR, k.outSp-p0)
		xn := x[n*k.c*inSp:][:k.c*inSp]
		j0, j1 := jbi*b.jBlock, min(k.m/pointwiseBlockedNR, (jbi+1)*b.jBlock)
		// A: in place, or packed. In place, a last tile of fewer rows
		// starts where twelve end with the plane, into the tile buffer,
		// and keeps the rows past those of the tile before: skip is
		// how many of its rows come first that are not its own.
		var a *float32
		akb, packed, skip := 0, 0, 0
		switch {
		case !b.pack:
			skip = pointwiseBlockedMR - rows
			a, akb = &xn[(p0-skip)*blockLanes], 4*blockLanes*inSp
		default:
			k.packPlanesA(apack, xn, inSp, p0, rows)
			a, packed = &apack[0], pointwiseBlockedPacked
		}
		// The share's first tile of a block of panels reads their weights
		// from memory: each call asks for the next panel's.
		first := it == s*items/parts || qi == 0
		for jb := j0; jb < j1; jb++ {
			bp := &b.wT[jb*b.kp*pointwiseBlockedNR]
			bs := vecAt(bias, jb*pointwiseBlockedNR)
			var pf *float32
			if first && jb+1 < j1 && !b.pack {
				pf = &b.wT[(jb+1)*b.kp*pointwiseBlockedNR]
			}
			if b.outB {
				// Output channel block 2jb of image n, position p0.
				at := ((n*k.m/blockLanes+2*jb)*k.outSp + p0) * blockLanes
				if rows == pointwiseBlockedMR {
					// A whole tile straight into the output.
					var r *float32
					if res != nil {
						r = &res[at]
					}
					pointwiseBlocked12x32(kb16, a, akb, packed, bp, &y[at], 4*blockLanes*k.outSp, bs, r, lim, pf)
					continue
				}
				pointwiseBlocked12x32(kb16, a, akb, packed, bp, &tile[0], 4*blockLanes*pointwiseBlockedMR, bs, nil, nil, nil)
				k.blockedTail(y, res, tile[skip*blockLanes:], at, rows)
				continue
			}
			var r *float32
			if res != nil {
				// The residual's planes into a tile, which the
				// kernel adds.
				k.planesIn(resT[skip*blockLanes:], tile[:blockLanes], res, n, jb, p0, rows)
				r = &resT[0]
			}
			pointwiseBlocked12x32(kb16, a, akb, packed, bp, &tile[0], 4*blockLanes*pointwiseBlockedMR, bs, r, lim, nil)
			k.planesOut(y, tile[skip*blockLanes:], n, jb, p0, rows)
		}
	}
}

// stripShare runs items [lo, hi) of an input in NCHW16c and an output in
// planes, with no residual: pointwiseBlockedStrip tiles of consecutive
// positions by each 32-channel panel into tiles, then their positions to
// the planes sixteen at a time (stripOut).
func (k *convKernel) stripShare(x, y, bias, tiles []float32, lim *float32, lo, hi int) {
	b := k.blk
	q := ceilDiv(k.outSp, pointwiseBlockedMR)
	jbs := ceilDiv(k.m/pointwiseBlockedNR, b.jBlock)
	kb16 := b.kp / blockLanes
	for it := lo; it < hi; {
		qi, jbi, n := it%q, it/q%jbs, it/q/jbs
		run := min(pointwiseBlockedStrip, hi-it, q-qi)
		xn := x[n*k.c*k.inSp:][:k.c*k.inSp]
		for jb := jbi * b.jBlock; jb < min(k.m/pointwiseBlockedNR, (jbi+1)*b.jBlock); jb++ {
			bp := &b.wT[jb*b.kp*pointwiseBlockedNR]
			bs := vecAt(bias, jb*pointwiseBlockedNR)
			for g := range run {
				// A last tile of fewer rows starts where twelve end
				// with the plane (skip rows that are not its own).
				p0 := (qi + g) * pointwiseBlockedMR
				skip := pointwiseBlockedMR - min(pointwiseBlockedMR, k.outSp-p0)
				pointwiseBlocked12x32(kb16, &xn[(p0-skip)*blockLanes], 4*blockLanes*k.inSp, 0, bp, &tiles[g*pointwiseBlockedMR*pointwiseBlockedNR], 4*blockLanes*pointwiseBlockedMR, bs, nil, lim, nil)
			}
			k.stripOut(y, tiles, n, jb, qi*pointwiseBlockedMR, min(run*pointwiseBlockedMR, k.outSp-qi*pointwiseBlockedMR))
		}
		it += run
	}
}

// stripOut stores positions [p0, p0+cnt) of output channels from 32·jb
// of image n, computed into tiles (consecutive tiles of twelve
// positions, the last one's rows where a tile of fewer rows put them),
// to the planes of y, sixteen positions at a time.
func (k *convKernel) stripOut(y, tiles []float32, n, jb, p0, cnt int) {
	var src, dst [16]*float32
	last := (cnt - 1) / pointwiseBlockedMR
	skip := pointwiseBlockedMR*(last+1) - cnt
	for h := range 2 {
		for c0 := 0; c0 < cnt; c0 += 16 {
			m := min(16, cnt-c0)
			for i := range src {
				idx := c0 + min(i, m-1)
				g, r := idx/pointwiseBlockedMR, idx%pointwiseBlockedMR
				if g == last {
					r += skip
				}
				src[i] = &tiles[(g*2*pointwiseBlockedMR+h*pointwiseBlockedMR+r)*blockLanes]
			}
			for l := range dst {
				dst[l] = &y[(n*k.m+jb*pointwiseBlockedNR+h*blockLanes+l)*k.outSp+p0+c0]
			}
			tr16(&dst, &src, 0xffff, 1<<m-1)
		}
	}
}

// packPlanesA packs positions [p0, p0+rows) of image x (NCHW) as
// pointwiseBlocked12x32's packed A: each channel's twelve positions side by
// side, the positions past rows and the channels past c zero.
func (k *convKernel) packPlanesA(a, x []float32, inSp, p0, rows int) {
	kp := k.blk.kp
	if rows == pointwiseBlockedMR {
		for ci := range k.c {
			*(*[pointwiseBlockedMR]float32)(a[ci*pointwiseBlockedMR:]) = *(*[pointwiseBlockedMR]float32)(x[ci*inSp+p0:])
		}
	} else {
		for ci := range k.c {
			d := a[ci*pointwiseBlockedMR:][:pointwiseBlockedMR]
			plane := x[ci*inSp:][:inSp]
			for i := range pointwiseBlockedMR {
				d[i] = 0
				if i < rows {
					d[i] = plane[p0+i]
				}
			}
		}
	}
	clear(a[k.c*pointwiseBlockedMR : kp*pointwiseBlockedMR])
}

// subsampleUnblock copies the even rows and columns of blocks [lo, hi)
// of sixteen input channels (NCHW16c) to dst as planes of outSp
// positions, sixteen positions at a time through a transpose.
func (k *convKernel) subsampleUnblock(x, dst []float32, lo, hi int) {
	w, ow := k.subIn[2], k.out[2]
	inSp := k.subIn[1] * w
	var src, d [16]*float32
	for blk := lo; blk < hi; blk++ {
		xb := x[blk*inSp*blockLanes:][:inSp*blockLanes]
		planes := dst[blk*blockLanes*k.outSp:][:blockLanes*k.outSp]
		for p0 := 0; p0 < k.outSp; p0 += 16 {
			n := min(16, k.outSp-p0)
			for i := range src {
				p := p0 + min(i, n-1)
				src[i] = &xb[(2*(p/ow)*w+2*(p%ow))*blockLanes]
			}
			for l := range d {
				d[l] = &planes[l*k.outSp+p0]
			}
			tr16(&d, &src, 0xffff, 1<<n-1)
		}
	}
}

// blockedTail stores the first rows positions of a tile computed into
// tile (two halves of twelve 16-channel rows) to y in NCHW16c at float
// at, adding the residual and clamping as pointwiseBlocked12x32 would.
func (k *convKernel) blockedTail(y, res, tile []float32, at, rows int) {
	half := blockLanes * k.outSp
	for h := range 2 {
		for i := range rows {
			d := y[at+h*half+i*blockLanes:][:blockLanes]
			t := tile[(h*pointwiseBlockedMR+i)*blockLanes:][:blockLanes]
			for l := range d {
				v := t[l]
				if res != nil {
					v += res[at+h*half+i*blockLanes+l]
				}
				if k.lim != nil {
					v = clampOne(v, k.lim[0], k.lim[1])
				}
				d[l] = v
			}
		}
	}
}

// clampOne clamps v to [lo, hi] as the kernels do: a NaN stays.
func clampOne(v, lo, hi float32) float32 {
	if v < lo {
		v = lo
	}
	if v > hi {
		v = hi
	}
	return v
}

// planesOut stores a tile computed into tile (two halves of twelve
// 16-channel rows, positions [p0, p0+rows) of image n, output channels
// from 32·jb) to the planes of y, transposed sixteen channels at a time.
func (k *convKernel) planesOut(y, tile []float32, n, jb, p0, rows int) {
	var src, dst [16]*float32
	for h := range 2 {
		for i := range src {
			src[i] = &tile[(h*pointwiseBlockedMR+min(i, rows-1))*blockLanes]
		}
		for l := range dst {
			dst[l] = &y[(n*k.m+jb*pointwiseBlockedNR+h*blockLanes+l)*k.outSp+p0]
		}
		tr16(&dst, &src, 0xffff, 1<<rows-1)
	}
}

// planesIn loads positions [p0, p0+rows) of output channels from 32·jb
// of image n's planes in x into tile, laid out as planesOut reads it;
// the transposes' rows past rows go to spare, 16 floats.
func (k *convKernel) planesIn(tile, spare, x []float32, n, jb, p0, rows int) {
	var src, dst [16]*float32
	for h := range 2 {
		for l := range src {
			src[l] = &x[(n*k.m+jb*pointwiseBlockedNR+h*blockLanes+l)*k.outSp+p0]
		}
		for i := range dst {
			dst[i] = &spare[0]
			if i < rows {
				dst[i] = &tile[(h*pointwiseBlockedMR+i)*blockLanes]
			}
		}
		tr16(&dst, &src, 1<<rows-1, 0xffff)
	}
}

// blocked pooling: globalPoolKernel with blocked set averages an NCHW16c
// input, whose output (one value per channel) is the same in both
// layouts.
func (k *globalPoolKernel) blockedRange(x, y []float32, lo, hi int) {
	// Items are blocks of sixteen channels.
	scale := 1 / float64(k.sp)
	for blk := lo; blk < hi; blk++ {
		var acc [blockLanes]float64
		src := x[blk*k.sp*blockLanes:][:k.sp*blockLanes]
		for p := 0; p < k.sp; p++ {
			v := (*[blockLanes]float32)(src[p*blockLanes:])
			for l := range acc {
				acc[l] += float64(v[l])
			}
		}
		d := (*[blockLanes]float32)(y[blk*blockLanes:])
		for l := range acc {
			d[l] = float32(acc[l] * scale)
		}
	}
}

// blockedFits reports whether k, a max pool, can run on NCHW16c input and
// output (blockedRows): float32, 2-D, no dilation, channels in whole
// blocks, no indices, windows of at most 64 taps with at least one inside
// the input.
func (k *poolKernel) blockedFits() bool {
	if !dw512 || !k.isMax || k.dt != ir.Float32 || k.ind || k.in[0] != 1 || k.dil != [3]int{1, 1, 1} || k.c%blockLanes != 0 || k.kern[1]*k.kern[2] > 64 {
		return false
	}
	for d := 1; d < 3; d++ {
		for o := range k.thi[d] {
			if k.thi[d][o] <= k.tlo[d][o] {
				return false
			}
		}
	}
	return true
}

// blockedRows pools output rows [lo, hi) of the blocks of sixteen
// channels (an item a block's row): the outputs whose window lies inside
// the input in one call of maxTapsB, the others one by one over the taps
// inside.
func (k *poolKernel) blockedRows(y, x []float32, lo, hi int) {
	H, W, OH, OW := k.in[1], k.in[2], k.out[1], k.out[2]
	kh, kw := k.kern[1], k.kern[2]
	var all, some [64]int
	full := kh * kw
	for i := range full {
		all[i] = 4 * blockLanes * (i/kw*W + i%kw)
	}
	for it := lo; it < hi; it++ {
		blk, oy := it/OH, it%OH
		xb := x[blk*H*W*blockLanes:][:H*W*blockLanes]
		yr := y[(blk*OH+oy)*OW*blockLanes:][:OW*blockLanes]
		ty0, ty1 := int(k.tlo[1][oy]), int(k.thi[1][oy])
		y0 := oy*k.stride[1] - k.pad[1]
		for ox := 0; ox < OW; {
			tx0, tx1 := int(k.tlo[2][ox]), int(k.thi[2][ox])
			x0 := ox*k.stride[2] - k.pad[2]
			if ty0 == 0 && ty1 == kh && tx0 == 0 && tx1 == kw {
				// A run of outputs whose windows lie inside.
				n := 1
				for ox+n < OW && k.tlo[2][ox+n] == 0 && int(k.thi[2][ox+n]) == kw {
					n++
				}
				maxTapsB(&yr[ox*blockLanes], &xb[(y0*W+x0)*blockLanes], &all[0], full, n, 4*blockLanes*k.stride[2])
				ox += n
				continue
			}
			// The taps inside (blockedFits: at least one, at most 64).
			taps := 0
			for ty := ty0; ty < ty1; ty++ {
				for tx := tx0; tx < tx1; tx++ {
					some[taps] = 4 * blockLanes * ((y0+ty)*W + x0 + tx)
					taps++
				}
			}
			maxTapsB(&yr[ox*blockLanes], &xb[0], &some[0], taps, 1, 0)
			ox++
		}
	}
}
