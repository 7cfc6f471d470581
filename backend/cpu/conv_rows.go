package cpu

// stemRows is the path of a stem into planes: a convolution of stride 2
// from fewer input channels than a block (MobileNetV2's and
// EfficientNet's 3×3 stems, whose depthwise layers read planes). Each
// image's input is copied with its padding into scratch, its columns
// split by parity (even columns, then odd, for each input channel and
// padded row), so that a tap of the filter reads the inputs of
// consecutive output positions as one run; stemRows8x48 then computes eight
// output channels by 48 positions of an output row a call (stemRows8x16 the
// rest of the row sixteen at a time), the channels as rows, and stores
// them straight into the planes. The taps are summed
// in the weights' order and the bias added last, as the im2col product
// does: the results are its bits.
type stemRows struct {
	// w is the weights, m/8 groups of steps (input channel, kernel row,
	// column) of eight channels' weights.
	w []float32
	// offs is each step's byte offset in the split input from the
	// values of a tile's first output position.
	offs   []int
	hp, wh int // split input: padded rows, columns of each parity
}

// stemRowsMin is the narrowest output row stemRows takes: one tile of 48.
const stemRowsMin = 48

// stemRowsFits reports whether k can run as stemRows: a 2-D convolution
// of stride 2, no dilation and no negative padding with one group and
// constant weights, fewer input channels than a block, output channels
// in eights and rows of at least stemRowsMin positions, on AVX-512.
func (k *convKernel) stemRowsFits() bool {
	return useAVX512Kernel && dw512 && !k.depthwise && k.g == 1 && k.in[0] == 1 && k.kern[0] == 1 && !k.pointwise &&
		k.sub == 0 && k.wg == nil && k.pro == nil && k.c < blockLanes && k.stride == [3]int{1, 2, 2} &&
		k.dil == [3]int{1, 1, 1} && k.pad[1] >= 0 && k.pad[2] >= 0 && k.m%8 == 0 && k.out[2] >= stemRowsMin
}

// stemRowsBuild returns k's stemRows from its weights (the [m, c, kh, kw]
// float32 bytes w).
func (k *convKernel) stemRowsBuild(w []byte) *stemRows {
	KH, KW := k.kern[1], k.kern[2]
	// Rows of whole vectors, so that the split (splitRows) zeroes none
	// of the next row, which another worker may write.
	s := &stemRows{hp: 2*(k.out[1]-1) + KH, wh: roundUp(k.out[2]+KW/2, 16)}
	steps := k.c * k.kvol
	s.w = k.weights.packed(w, "stem rows", [8]int{k.m, steps}, k.m*steps, func(sw []float32) {
		weightPanels(sw, w, k.m, steps, steps, 8)
	})
	s.offs = make([]int, steps)
	for st := range steps {
		ci, t := st/k.kvol, st%k.kvol
		r, c := t/KW, t%KW
		s.offs[st] = 4 * (((ci*2+c%2)*s.hp+r)*s.wh + c/2)
	}
	return s
}

// stemFloats is the scratch stemRows takes: one image's split input.
func (k *convKernel) stemFloats() int {
	s := k.stem
	return roundUp(k.c*2*s.hp*s.wh, alignment/4)
}

// runStemRows runs k image by image: the split input, then the rows.
func (k *convKernel) runStemRows(w *Workers, in, out [][]byte, scratch []byte) {
	s := k.stem
	parts := max(1, min(w.parts(k.outSp*k.m*k.kdim/4), k.out[1], k.winShares))
	if k.fuse != nil {
		parts = min(parts, k.fuse.shares)
	}
	for n := 0; n < k.nb; n++ {
		w.forArgs(k.c*s.hp, w.parts(k.c*s.hp*s.wh), k, args{phaseStemSplit, int64(n)}, in, out, scratch)
		w.forArgs(parts, parts, k, args{phaseStemRows, int64(n), int64(parts)}, in, out, scratch)
	}
}

// Phases of runStemRows, in args[0]; args[1] is the image.
const (
	phaseStemSplit = 29 // items are (input channel, padded row)
	phaseStemRows  = 30 // items are shares of the output rows; args[2] is the shares
)

// stemRange runs items [lo, hi) of a runStemRows phase.
func (k *convKernel) stemRange(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	s := k.stem
	n := int(a[1])
	split := f32s(scratch)[:k.c*2*s.hp*s.wh]
	if a[0] == phaseStemSplit {
		x := f32s(in[0])[n*k.c*k.inSp:][:k.c*k.inSp]
		H, W := k.in[1], k.in[2]
		// Padded column p = iw + pad goes to column p/2 of the half of
		// p's parity (dwBandPlane's stride-2 geometry).
		sg := splitRowGeom(k.pad[2], W, s.wh)
		for it := lo; it < hi; {
			ci, r := it/s.hp, it%s.hp
			// The run of this channel's rows inside the input from r
			// on, or one padding row.
			y := r - k.pad[1]
			rows := 1
			if y >= 0 && y < H {
				rows = min(hi-it, s.hp-r, H-y)
			}
			even := split[((ci*2)*s.hp+r)*s.wh:][:rows*s.wh]
			odd := split[((ci*2+1)*s.hp+r)*s.wh:][:rows*s.wh]
			if y < 0 || y >= H {
				clear(even)
				clear(odd)
			} else {
				_ = x[ci*k.inSp+(y+rows-1)*W+W-1]
				splitRows(&even[0], &odd[0], s.wh, &x[ci*k.inSp+y*W], W, rows, s.wh, sg.lo, sg.off, sg.pairs, sg.head, sg.tail)
			}
			it += rows
		}
		return
	}
	y := f32s(out[0])
	bias, lim := k.biasLim(in)
	OH, OW := k.out[1], k.out[2]
	steps := k.c * k.kvol
	parts := int(a[2])
	for share := lo; share < hi; share++ {
		for oy := share * OH / parts; oy < (share+1)*OH/parts; oy++ {
			for g := 0; g < k.m/8; g++ {
				bs := vecAt(bias, g*8)
				wg := &s.w[g*steps*8]
				ox := 0
				for ; ox+stemRowsMin <= OW; ox += stemRowsMin {
					stemRows8x48(steps, &split[2*oy*s.wh+ox], &s.offs[0], wg, &y[(n*k.m+g*8)*k.outSp+oy*OW+ox], 4*k.outSp, bs, lim)
				}
				for ; ox < OW; ox += 16 {
					// The rest sixteen at a time, the last of them
					// ending with the row, over positions the one
					// before computed too (the same values).
					x0 := min(ox, OW-16)
					stemRows8x16(steps, &split[2*oy*s.wh+x0], &s.offs[0], wg, &y[(n*k.m+g*8)*k.outSp+oy*OW+x0], 4*k.outSp, bs, lim)
				}
			}
			if k.fuse != nil {
				k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), share, n*k.m, (n+1)*k.m, oy*OW, (oy+1)*OW)
			}
		}
	}
}
