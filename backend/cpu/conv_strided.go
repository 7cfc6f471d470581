package cpu

// blockedWin is the path of a convolution of stride 2 from an input in
// planes to an output in NCHW16c (a ResNet's 7×7 stem, whose max pool and
// first block then read sixteen channels of a position at a time): each
// image's input is copied with its padding into scratch, and
// blockedWindows12x32 reads the windows of twelve output positions of a row
// from there, a step (input channel, kernel row, column) at a time, with
// the weights transposed as B.
type blockedWin struct {
	// wT is the weights transposed: m/32 panels of kvol·c steps of 32
	// output channels, the steps in the weights' order.
	wT []float32
	// offs is each step's byte offset in the padded input from a
	// window's first value.
	offs   []int
	hp, wp int // padded input plane: rows and columns
}

// winFits reports whether k can run as blockedWin with scratch bytes: a
// 2-D convolution of stride 2 and no dilation with one group, constant
// weights, whole 32-channel panels, rows of at least twelve outputs, and
// no epilogue but a clamp.
func (k *convKernel) winFits(scratch int64) bool {
	if !k.winShape() || k.wPre == nil {
		return false
	}
	if r, _, ok := k.blockedEpilogue(); !ok || r > 0 {
		return false
	}
	return scratch >= int64(4*k.winFloats())
}

// winShape reports whether k's geometry fits blockedWin (see winFits):
// fewer input channels than a block (an image's: the stem), which no
// layer before it could have written blocked. Deeper ones read a plane
// per step from too far apart (ResNet-50's stride-2 3×3 layers from 256
// channels ran at half the speed of their im2col products).
func (k *convKernel) winShape() bool {
	return useAVX512Kernel && dw512 && !k.depthwise && k.g == 1 && k.in[0] == 1 && k.kern[0] == 1 && !k.pointwise && k.sub == 0 && k.wg == nil && k.pro == nil && k.c < blockLanes &&
		k.stride == [3]int{1, 2, 2} && k.dil == [3]int{1, 1, 1} && k.m%pointwiseBlockedNR == 0 && k.out[2] >= pointwiseBlockedMR && k.outSp >= pointwiseBlockedMinPlane
}

// winFloats is the scratch blockedWin takes: one image's padded input,
// then a tile for each of winShares shares.
func (k *convKernel) winFloats() int {
	hp, wp := k.winPlane()
	return roundUp(k.c*hp*wp, alignment/4) + max(1, k.winShares)*pointwiseBlockedMR*pointwiseBlockedNR
}

// winPlane is the padded input plane the windows of the output read.
func (k *convKernel) winPlane() (hp, wp int) {
	return 2*(k.out[1]-1) + k.kern[1], 2*(k.out[2]-1) + k.kern[2]
}

// blockWindows returns k's blockedWin, its weights (the [m, c, kh, kw]
// float32 bytes w) transposed into the memory of the packed ones.
func (k *convKernel) blockWindows(w []byte) *blockedWin {
	b := &blockedWin{}
	b.hp, b.wp = k.winPlane()
	steps := k.c * k.kvol
	b.wT = k.weights.relayout(k.wPre, nil, w, "blocked windows", [8]int{k.m, steps}, k.m*steps, func(wT []float32) {
		weightPanels(wT, w, k.m, steps, steps, pointwiseBlockedNR)
	})
	b.offs = make([]int, steps)
	for s := range b.offs {
		ci, t := s/k.kvol, s%k.kvol
		b.offs[s] = 4 * (ci*b.hp*b.wp + t/k.kern[2]*b.wp + t%k.kern[2])
	}
	return b
}

// runWindows runs k image by image: the padded input, then the tiles.
func (k *convKernel) runWindows(w *Workers, in, out [][]byte, scratch []byte) {
	b := k.win
	items := k.out[1] * ceilDiv(k.out[2], pointwiseBlockedMR)
	// One item per share, so that each knows its tile buffer.
	parts := max(1, min(w.parts(k.outSp*k.m*k.kdim/4), items, k.winShares))
	for n := 0; n < k.nb; n++ {
		w.forArgs(k.c*b.hp, w.parts(k.c*b.hp*b.wp), k, args{phaseWinPad, int64(n)}, in, out, scratch)
		w.forArgs(parts, parts, k, args{phaseWinTiles, int64(n), int64(parts)}, in, out, scratch)
	}
}

// Phases of runWindows, in args[0]; args[1] is the image.
const (
	phaseWinPad   = 24 // items are padded input rows
	phaseWinTiles = 25 // items are shares of the (output row, tile of twelve) pairs; args[2] is the shares
)

// winRange runs items [lo, hi) of a runWindows phase.
func (k *convKernel) winRange(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	b := k.win
	n := int(a[1])
	pad := f32s(scratch)[:k.c*b.hp*b.wp]
	if a[0] == phaseWinPad {
		x := f32s(in[0])[n*k.c*k.inSp:][:k.c*k.inSp]
		H, W := k.in[1], k.in[2]
		for it := lo; it < hi; it++ {
			ci, r := it/b.hp, it%b.hp
			row := pad[it*b.wp:][:b.wp]
			y := r - k.pad[1]
			if y < 0 || y >= H {
				clear(row)
				continue
			}
			x0 := min(k.pad[2], b.wp)
			clear(row[:x0])
			n := min(W, b.wp-x0)
			copy(row[x0:], x[ci*k.inSp+y*W:][:n])
			clear(row[x0+n:])
		}
		return
	}
	y := k.result(out)
	bias, lim := k.biasLim(in)
	OW, mb := k.out[2], k.m/blockLanes
	rows := ceilDiv(OW, pointwiseBlockedMR)
	steps := k.c * k.kvol
	items, parts := k.out[1]*rows, int(a[2])
	for share := lo; share < hi; share++ {
		tile := f32s(scratch)[roundUp(len(pad), alignment/4)+share*pointwiseBlockedMR*pointwiseBlockedNR:][:pointwiseBlockedMR*pointwiseBlockedNR]
		for it := share * items / parts; it < (share+1)*items/parts; it++ {
			oy, ox := it/rows, it%rows*pointwiseBlockedMR
			// The last tile of a row ends with it, into the tile
			// buffer, and keeps the columns past the tile before.
			skip := max(0, ox+pointwiseBlockedMR-OW)
			ox -= skip
			a := &pad[2*oy*b.wp+2*ox]
			for jb := 0; jb < k.m/pointwiseBlockedNR; jb++ {
				bs := vecAt(bias, jb*pointwiseBlockedNR)
				at := ((n*mb+2*jb)*k.outSp + oy*OW + ox) * blockLanes
				if skip == 0 {
					blockedWindows12x32(steps, a, &b.offs[0], &b.wT[jb*steps*pointwiseBlockedNR], &y[at], 4*blockLanes*k.outSp, bs, lim)
					continue
				}
				blockedWindows12x32(steps, a, &b.offs[0], &b.wT[jb*steps*pointwiseBlockedNR], &tile[0], 4*blockLanes*pointwiseBlockedMR, bs, lim)
				for h := range 2 {
					src := tile[(h*pointwiseBlockedMR+skip)*blockLanes : (h+1)*pointwiseBlockedMR*blockLanes]
					copy(y[at+h*blockLanes*k.outSp+skip*blockLanes:][:len(src)], src)
				}
			}
		}
	}
}
