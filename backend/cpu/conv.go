package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// convKernel is an N-dimensional convolution (1 to 3 spatial dimensions,
// held as 3 with leading unit dimensions). A depthwise convolution (one
// input channel per group) runs directly; every other one is a product, per
// image and group, of the prepacked weights (mg × kdim) and the im2col
// matrix (kdim × outSp), computed the GotoBLAS way: each worker packs a
// block of at most kc rows × nc columns of the im2col matrix into its own
// scratch area, already in the GEMM's packed B layout, and multiplies all
// output channels of the group by it at once, accumulating over the kc-deep
// slices of kdim. The scratch is therefore bounded by workers × kc × nc
// floats, whatever the size of the image.
type convKernel struct {
	nb, c, m, g int // images, input channels, output channels, groups
	cg, mg      int // input and output channels per group
	in, out     [3]int
	kern        [3]int
	stride, dil [3]int
	pad         [3]int // leading pads; trailing ones only clip
	inSp, outSp int    // input and output elements per channel
	kvol        int    // kernel elements per input channel
	kdim        int    // cg·kvol, the depth of the product
	pointwise   bool   // 1×1 kernel, unit stride, no padding: the input is the im2col matrix
	depthwise   bool
	// kSplit, when more than 1, is how many workers share a pointwise
	// product by its depth (splitK): each its own input channels, into
	// C (the first) or its own partial product in scratch from float
	// partOff on, which a second pass adds up.
	kSplit, partOff int
	// tKC, when set, is the k slice of a runT product that its workers
	// share by depth (tSplitK); kSplit is then how many of them.
	tKC      int
	hasBias  bool
	wPre     []float32 // packed weights, aSize floats per group; nil when W is computed at run time
	aSize    int       // floats of one group's packed weights
	kc       int       // depth of a k slice (the last one may be shorter)
	nc       int       // widest column block, a multiple of gemmNR
	per      int       // scratch floats of one worker's packed block
	bOff     int       // scratch float offset of the workers' blocks
	padOff   int       // float offset, in a worker's area, of im2colPadded's padded input, or 0
	padW     int       // floats of a row of that padded input
	padSplit bool      // that padded input holds its rows' even and odd columns apart

	dwPer int        // scratch floats of one worker's padded depthwise plane, or 0
	dwg   dwBandGeom // dwBandPlane's layout, where dwBands gives one
	// depthwiseChannelsIn and depthwiseChannelsOut are the channel-blocked
	// depthwise path's position tables (depthwiseChannelsTables), or nil.
	depthwiseChannelsIn, depthwiseChannelsOut []int32
	// depthwiseChannelsW, with constant weights and bias, is each group's
	// weights and biases interleaved as depthwiseChannels16 reads them
	// (depthwiseChannelsWeights), or nil.
	depthwiseChannelsW []float32
	// depthwiseRows and depthwiseRowsCols are the row-vector depthwise
	// path's table and column masks (depthwiseRowsTable); depthwiseRows is
	// nil where it does not run.
	depthwiseRows     []depthwiseRowsVec
	depthwiseRowsCols [4]uint16
	// depthwiseSplit, or depthwiseSplit3Rows and depthwiseSplit3Zero, are
	// the stride-2 row-vector path's tables (depthwiseSplitTable): for 5×5
	// filters and for 3×3 ones; nil where it does not run.
	depthwiseSplit      []depthwiseSplitVec
	depthwiseSplit3Rows []int64
	depthwiseSplit3Zero []float32
	// depthwiseRowsZero, a row of zeros, marks the wide-row 3×3 path
	// (depthwiseRowsWide3).
	depthwiseRowsZero []float32
	// wT, for a small 1×1 convolution of 1×1 planes (vecFits) or a 1×1
	// convolution of small planes (tFits), is its weight matrix
	// transposed and packed as a GEMM B operand: the product runs with
	// the images (runVec) or the positions (runT) as the rows of A and
	// the output channels along the vectors. nil otherwise.
	wT []float32
	// weights is where the build puts the weights it packs or lays out
	// (BuildOptions.Weights; nil: allocations of their own).
	weights *WeightStore
	// tPath marks the small-plane product (runT); its scratch holds the
	// packed positions (tOff floats) and then the transposed output.
	tPath bool
	tOff  int
	// tIdx, for a runT convolution of a kernel larger than 1×1, says
	// where each packed element of A comes from: entry (q·kvol + t)·gemmMR
	// + i is the offset in an input plane of kernel tap t of position
	// q·gemmMR + i, or -1 where the tap falls in the padding (or past the
	// last position).
	tIdx []int32

	fuse *fused // an epilogue applied block by block, or nil
	// lim, when set, clamps the output as the GEMM kernels store it after
	// the last k slice: a Relu or Clip taken from the head of the
	// epilogue's chain. Depthwise planes are clamped by their kernels or
	// after each plane (clampOut).
	lim *[2]float32
	// res, when not 0, is 1 + the index of the epilogue activation that
	// the GEMM kernels add to the output as they store it after the last
	// k slice (a residual Add taken from the head of the chain, before
	// lim).
	res int
	// owRows, in overwrite mode with a single k slice, is how many output
	// channels each pass over a packed block computes into the tile
	// buffer (a multiple of gemmMR); 0 otherwise.
	owRows int

	pro *prologue // applied to the input while packing it (pointwise only), or nil

	wg *winograd // the Winograd F(2×2, 3×3) path (winograd.go), or nil

	// sub, for a 1×1 convolution of stride 2 (subsampleFits), is 2: a
	// run first copies every other column of every other row of the
	// input (of shape subIn) to scratch from float subOff on, and then
	// runs as the pointwise convolution of that copy. 0 otherwise.
	sub    int
	subIn  [3]int
	subOff int

	// blk, when set, runs the convolution on channel-blocked activations
	// (conv_blocked.go); nothing else of the product's layout is used.
	blk *blockedPW
	// subBlocked marks a subsampled input in NCHW16c: the subsample
	// phase reads it so, a block of sixteen channels an item, and writes
	// planes, on which the run goes on as on any other input.
	subBlocked bool
	// win, when set, runs a convolution of stride 2 from planes into
	// NCHW16c (conv_strided.go); winShares is how many shares its
	// scratch holds tiles for (the build's threads).
	win       *blockedWin
	winShares int
	// stem, when set, runs a stem of stride 2 from planes into planes
	// (conv_rows.go) where the output is not blocked (win).
	stem *stemRows
	// gth, when set, runs a convolution of windows on NCHW16c input and
	// output (conv_gather.go).
	gth *blockedGather
}

// subsampleFits reports whether k is a 2-D 1×1 convolution of stride 2,
// no pads and one group that runs as the pointwise convolution of its
// input's even rows and columns (on AVX-512, which copies them).
func (k *convKernel) subsampleFits() bool {
	return dw512 && k.kvol == 1 && k.g == 1 && k.in[0] == 1 && k.stride == [3]int{1, 2, 2} &&
		k.pad == [3]int{} && k.dil == [3]int{1, 1, 1} &&
		k.out[1] == ceilDiv(k.in[1], 2) && k.out[2] == ceilDiv(k.in[2], 2) && k.outSp > 0
}

// subsample turns k into the pointwise convolution of its input's even
// rows and columns.
func (k *convKernel) subsample() {
	k.sub, k.subIn = 2, k.in
	k.in, k.inSp, k.stride = k.out, k.outSp, [3]int{1, 1, 1}
	k.pointwise = true
}

// input is the input the product reads: input 0, or its subsampled copy
// in scratch.
func (k *convKernel) input(in [][]byte, scratch []byte) []float32 {
	if k.sub > 0 {
		return f32s(scratch)[k.subOff:][:k.nb*k.c*k.outSp]
	}
	return f32s(in[0])
}

// subsamplePlanes copies the even rows and columns of input planes [lo,
// hi) of x to dst (planes outSp floats apart).
func (k *convKernel) subsamplePlanes(x, dst []float32, lo, hi int) {
	H, W, OW := k.subIn[1], k.subIn[2], k.out[2]
	for p := lo; p < hi; p++ {
		src := x[p*H*W:][:H*W]
		evenCols(&dst[p*k.outSp], &src[0], OW, k.out[1], OW, 2*W)
	}
}

// Blocking of the convolution product (see convKernel). A worker's packed
// block of convKC × convNC floats (256 KB) stays in L2 while every output
// channel of the group streams over it.
const (
	convKC = 256 // deepest k slice
	convNC = 256 // widest column block, in columns
	convMT = 16  // rows of a GEMM tile over a block, in A panels
	// A pointwise product at most rowWalkDepth deep whose block of C
	// is larger than rowWalkBytes runs one pair of A panels per tile.
	// Deeper ones read more rows of B at once than the hardware
	// follows as streams.
	rowWalkDepth = 32
	rowWalkBytes = 512 << 10
)

func buildConv(c *buildContext) (Kernel, int64, error) {
	kk, scratch, err := buildConvKernel(c)
	if k, ok := kk.(*convKernel); ok && err == nil && k.sub > 0 {
		// The subsampled input follows the scratch the rest of the
		// run uses.
		k.subOff = roundUp(int(scratch/4), alignment/4)
		scratch = int64(k.subOff+k.nb*k.c*k.outSp) * 4
	}
	return kk, scratch, err
}

func buildConvKernel(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, wt, b, y := c.in(0), c.in(1), c.in(2), c.out(0)
	if err := c.allFloat32(x, wt, b, y); err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank() - 2
	if r < 1 || r > 3 {
		return nil, 0, c.errorf("input %v must have 1 to 3 spatial dimensions", x.Shape)
	}
	if wt.Shape.Rank() != r+2 || y.Shape.Rank() != r+2 {
		return nil, 0, c.errorf("weight %v and output %v must have rank %d", wt.Shape, y.Shape, r+2)
	}
	at := c.attrs()
	k := &convKernel{nb: int(x.Shape[0]), c: int(x.Shape[1]), m: int(wt.Shape[0]), g: int(at.Int("group", 1)), weights: c.weights}
	if k.g <= 0 || k.c%k.g != 0 || k.m%k.g != 0 {
		return nil, 0, c.errorf("group %d does not divide %d input and %d output channels", k.g, k.c, k.m)
	}
	k.cg, k.mg = k.c/k.g, k.m/k.g
	if int(wt.Shape[1]) != k.cg {
		return nil, 0, c.errorf("weight %v needs %d input channels per group", wt.Shape, k.cg)
	}
	if int(y.Shape[0]) != k.nb || int(y.Shape[1]) != k.m {
		return nil, 0, c.errorf("output %v, want [%d,%d,...]", y.Shape, k.nb, k.m)
	}
	if b != nil {
		if b.Shape.Elements() != int64(k.m) {
			return nil, 0, c.errorf("bias %v must have %d elements", b.Shape, k.m)
		}
		k.hasBias = true
	}
	kern := ints(wt.Shape[2:])
	if ks := at.Ints("kernel_shape", nil); ks != nil && !ir.Shape(ks).Equal(wt.Shape[2:]) {
		return nil, 0, c.errorf("kernel_shape %v differs from weight %v", ks, wt.Shape)
	}
	w, err := windows(c, ints(x.Shape[2:]), kern, ints(y.Shape[2:]), false)
	if err != nil {
		return nil, 0, err
	}
	off := 3 - r
	for i := range 3 {
		k.in[i], k.out[i], k.kern[i], k.stride[i], k.dil[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < r; i++ {
		k.in[off+i], k.out[off+i], k.kern[off+i] = int(x.Shape[2+i]), int(y.Shape[2+i]), kern[i]
		k.stride[off+i], k.dil[off+i], k.pad[off+i] = w.stride[i], w.dil[i], w.begin[i]
	}
	k.inSp, k.outSp = prod(k.in[:]), prod(k.out[:])
	k.kvol = prod(k.kern[:])
	k.kdim = k.cg * k.kvol
	k.pointwise = k.kvol == 1 && k.stride == [3]int{1, 1, 1} && k.pad == [3]int{} && k.in == k.out
	if k.subsampleFits() {
		k.subsample()
	}
	if k.g > 1 && k.cg == 1 {
		k.depthwise = true
		k.dwg, _ = k.dwBands()
		if dw512 && (k.depthwiseRowsFits() || k.depthwiseSplitFits() || k.depthwiseRowsWide3Fits()) {
			// These run as row vectors, with no scratch.
			switch {
			case k.depthwiseRowsFits():
				k.depthwiseRowsTable()
			case k.depthwiseSplitFits():
				k.depthwiseSplitTable()
			default:
				k.depthwiseRowsZero = make([]float32, roundUp(k.in[2], depthwiseChannelsLanes)+depthwiseChannelsLanes)
			}
			return k, 0, nil
		}
		// Small unit-stride planes run through a padded copy in each
		// worker's own scratch area (dwPaddedS1).
		n := dwPaddedFloats(k)
		if k.depthwiseChannelsFits() {
			// Small planes also run sixteen channels at a time.
			n = max(n, depthwiseChannelsFloats(k))
			k.depthwiseChannelsTables()
			if wt.IsConst() && (b == nil || b.IsConst()) {
				k.depthwiseChannelsWeights(constSrc(wt), b)
			}
		}
		if n > 0 {
			k.dwPer = roundUp(n, alignment/4)
			return k, int64(max(1, c.threads)*k.dwPer) * 4, nil
		}
		return k, 0, nil
	}
	if k.outSp == 0 || k.nb == 0 {
		return k, 0, nil
	}
	if (k.vecFits() || k.tFits()) && wt.IsConst() {
		k.wT = k.weights.packed(wt.Data, "conv weights transposed", [8]int{k.kdim, k.m}, packedBSize(k.kdim, k.m), func(wT []float32) {
			constSrc(wt).packB(wT, 0, k.kdim, k.m, 1, k.kdim)
		})
		if !k.vecFits() {
			k.tPath = true
			if !k.pointwise {
				k.tTable()
			}
			k.tOff = roundUp(packedASize(k.outSp, k.kdim), alignment/4)
			if k.pointwise && k.splitKFits() && depthwiseInput(c.g, c.n.Input(0)) {
				// As splitK, positions as rows (tSplitK).
				k.tKC = k.splitKC()
				k.kSplit = max(1, min(c.threads, ceilDiv(k.kdim, k.tKC)))
				k.tOff = max(k.tOff, k.kSplit*k.tAFloats())
				k.partOff = k.tOff + roundUp(k.outSp*k.m, alignment/4)
				return k, int64(k.partOff+(ceilDiv(k.kdim, k.tKC)-1)*k.outSp*k.m) * 4, nil
			}
			return k, int64(k.tOff+roundUp(k.outSp*k.m, alignment/4)) * 4, nil
		}
		return k, int64(roundUp(packedASize(k.nb, k.kdim), alignment/4)) * 4, nil
	}
	if k.winogradFits(wt.IsConst()) {
		return k, int64(k.buildWinograd(constSrc(wt), c.threads)) * 4, nil
	}
	k.aSize = packedASize(k.mg, k.kdim)
	// Even k slices: 300 deep is two of 150, not 256 and 44.
	k.kc = max(1, ceilDiv(k.kdim, max(1, ceilDiv(k.kdim, convKC))))
	if k.splitKFits() && wt.IsConst() && depthwiseInput(c.g, c.n.Input(0)) || k.windowSplitFits(c.threads) && wt.IsConst() {
		k.kc = k.splitKC()
		if c.threads > 1 {
			k.kSplit = min(c.threads, ceilDiv(k.kdim, k.kc))
		}
	}
	k.nc = min(roundUp(convNC, gemmNR), roundUp(k.outSp, gemmNR))
	if k.kdim < convKC {
		// A shallow product takes wider blocks of about as many
		// floats (16 deep: 4096 columns): a pointwise one so that its
		// epilogue (a SiLU after an expansion) runs over longer rows,
		// a stem (3 input channels, 27 or 147 deep) so that its blocks
		// split fewer input rows again and go through fewer calls.
		k.nc = min(roundUp(convKC*convNC/max(k.kdim, 1), gemmNR), 4096, roundUp(k.outSp, gemmNR))
	}
	// Each worker's block starts on its own cache line.
	k.per = roundUp(packedBSize(k.kc, k.nc), alignment/4)
	if !k.pointwise {
		// im2colPadded's padded input area follows the block.
		if n := k.im2colPadFloats(); n > 0 {
			// gemmNR floats of slack after the panels (im2colPadded).
			k.padOff = roundUp(packedBSize(k.kc, k.nc)+gemmNR, alignment/4)
			k.per = k.padOff + roundUp(n, alignment/4)
		}
	}
	floats := 0
	if wt.IsConst() {
		layout := [8]int{k.g, k.aSize, k.mg, k.kdim, k.kc}
		k.wPre = k.weights.packed(wt.Data, "conv weights", layout, k.g*k.aSize, func(wPre []float32) {
			k.packWeights(wPre, constSrc(wt))
		})
	} else {
		floats = roundUp(k.g*k.aSize, alignment/4)
	}
	k.bOff = floats
	floats += max(1, c.threads) * k.per
	if k.kSplit > 1 {
		k.partOff = roundUp(floats, alignment/4)
		floats = k.partOff + (ceilDiv(k.kdim, k.kc)-1)*k.m*k.outSp
	}
	k.winShares = max(1, c.threads)
	if k.winShape() && k.wPre != nil {
		// Room for the padded input of the NCHW16c path (blockedWin),
		// which a compiler may choose later.
		floats = max(floats, k.winFloats())
	}
	if k.stemRowsFits() && k.wPre != nil {
		// Into planes (stemRows), the packed weights kept for an
		// epilogue with a residual, which only the product adds.
		k.stem = k.stemRowsBuild(wt.Data)
		floats = max(floats, k.stemFloats())
	}
	return k, int64(floats) * 4, nil
}

// splitKC is the k slice of a product that workers share by depth
// (splitK, tSplitK): an even number of slices of at most convKC, whatever
// the threads, so that the sums are the same on any number of them and
// two workers share them evenly.
func (k *convKernel) splitKC() int {
	return ceilDiv(k.kdim, roundUp(ceilDiv(k.kdim, convKC), 2))
}

// depthwiseInput reports whether tensor id is written by a depthwise
// convolution, directly or through a few elementwise nodes (its
// activation, a squeeze-and-excitation scale): its run leaves each
// worker's channels in that worker's cache, which is how splitK reads
// them.
func depthwiseInput(g *ir.Graph, id ir.TensorID) bool {
	for range 4 {
		t := g.Tensor(id)
		if t.Producer < 0 {
			return false
		}
		n := &g.Nodes[t.Producer]
		switch n.Op {
		case "Conv":
			x, w := n.Input(0), n.Input(1)
			if x == ir.NoTensor || w == ir.NoTensor {
				return false
			}
			xs, ws := g.Tensor(x).Shape, g.Tensor(w).Shape
			return xs.Rank() >= 3 && ws.Rank() == xs.Rank() && ws[1] == 1 && xs[1] > 1 &&
				n.Attrs.Int("group", 1) == xs[1]
		case "Clip", "Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "Add":
			// On through the input of the output's shape.
			next := ir.NoTensor
			for i := range n.Inputs {
				if in := n.Input(i); in != ir.NoTensor && g.Tensor(in).Shape.Equal(t.Shape) {
					next = in
					break
				}
			}
			if next == ir.NoTensor {
				return false
			}
			id = next
		default:
			return false
		}
	}
	return false
}

// splitKFits reports whether workers may share k's product by its depth
// (splitK): a pointwise convolution of one image and one group, its input
// read in place by AVX-512 kernels, at least twice as deep as it is wide
// (a projection: the partial products the workers add up are smaller
// than the input, half of which each worker would otherwise read from
// the other's cache) and 64 deep at least.
func (k *convKernel) splitKFits() bool {
	return useAVX512Kernel && k.pointwise && k.sub == 0 && k.nb == 1 && k.g == 1 &&
		k.kdim >= 2*k.m && k.kdim >= 64 && k.outSp >= 2*gemmNR
}

// windowSplitFits reports whether workers share k's product by its depth
// (splitK) although it packs windows: a deep product of one image and one
// group onto a plane of fewer column panels than twice the workers times
// eight, which the blocks of columns share unevenly (ResNet-50's stride-2
// 3×3 layer onto 14², 2304 deep: 13 panels).
func (k *convKernel) windowSplitFits(threads int) bool {
	return useAVX512Kernel && threads > 1 && !k.pointwise && k.sub == 0 && !k.depthwise && k.nb == 1 && k.g == 1 &&
		k.kdim >= 2*k.m && k.kdim >= 2*convKC && k.outSp >= 2*gemmNR && ceilDiv(k.outSp, gemmNR) < 16
}

// packWeights packs every group's [mg, kdim] weight block, one k slice
// after the other: slice [k0, k0+kb) of group gi starts at float
// gi·aSize + roundUp(mg, gemmMR)·k0 and is an mg × kb packed A operand.
func (k *convKernel) packWeights(dst []float32, w f32src) {
	pm := ceilDiv(k.mg, gemmMR)
	for gi := 0; gi < k.g; gi++ {
		for k0 := 0; k0 == 0 || k0 < k.kdim; k0 += k.kc {
			kb := min(k.kc, k.kdim-k0)
			w.packA(dst[gi*k.aSize+pm*gemmMR*k0:], gi*k.mg*k.kdim+k0, k.mg, kb, k.kdim, 1, 1)
		}
	}
}

// convSplit is how a run shares the product out: the output columns of
// every image and group are cut into nblk blocks of whole B panels, as
// even as panels allow (block bi holds panels [bi·P/nblk, (bi+1)·P/nblk)
// of the P, the last one clipped to the output), and, when there are
// fewer blocks than workers, the output channels into mparts parts. Item
// ((u·nblk)+blk)·mparts+mp, u = image·groups + group, is one part of one
// block; worker i of P runs items [i·T/P, (i+1)·T/P) of the T.
type convSplit struct {
	panels, nblk, mparts int
}

// split chooses the blocking for P workers.
func (k *convKernel) split(p int) convSplit {
	units := k.nb * k.g
	panels := ceilDiv(k.outSp, gemmNR)
	if k.pointwise && units == 1 && p > 1 && panels%p != 0 && panels*gemmNR <= k.nc {
		// One block whose panels the workers cannot share evenly (13
		// of them at 14²): they share its output channels instead,
		// each reading the whole input, which pointwise blocks do not
		// pack.
		return convSplit{panels: panels, nblk: 1, mparts: min(p, ceilDiv(k.mg, gemmMR))}
	}
	nblk := ceilDiv(k.outSp, k.nc)
	if units*nblk < 8*p {
		// Few items: make their number a multiple of the workers (so
		// that every worker gets as many), at least one each.
		for (units*nblk)%p != 0 && nblk < panels {
			nblk++
		}
	}
	s := convSplit{panels: panels, nblk: max(1, min(nblk, panels)), mparts: 1}
	if t := units * s.nblk; t < p {
		s.mparts = min(ceilDiv(p, t), ceilDiv(k.mg, gemmMR))
	}
	return s
}

// block is the columns of block bi: from j0, n of them (at most k.nc).
func (s convSplit) block(bi, outSp int) (j0, n int) {
	q0, q1 := bi*s.panels/s.nblk, (bi+1)*s.panels/s.nblk
	j0 = q0 * gemmNR
	return j0, min(q1*gemmNR, outSp) - j0
}

// workers is how many workers a run on w uses: one per scratch area, at
// most.
func (k *convKernel) workers(w *Workers, scratch []byte) int {
	n := len(scratch) / 4
	if k.sub > 0 {
		n = k.subOff
	}
	return max(1, min(w.Threads(), (n-k.bOff)/k.per))
}

func (k *convKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.depthwise {
		// One item per share, so that each share knows its registers
		// and its scratch area.
		planes, phase := k.depthwisePhase()
		parts := min(w.parts(k.nb*k.m*k.outSp*k.kvol), planes)
		if k.fuse != nil {
			parts = min(parts, k.fuse.shares)
		}
		if k.dwPer > 0 {
			parts = min(parts, len(scratch)/4/k.dwPer)
		}
		parts = max(parts, 1)
		w.forArgs(parts, parts, k, args{phase, int64(parts)}, in, out, scratch)
		return
	}
	if k.outSp == 0 || k.nb == 0 {
		return
	}
	if k.blk != nil {
		k.runBlocked(w, in, out, scratch)
		return
	}
	if k.win != nil {
		k.runWindows(w, in, out, scratch)
		return
	}
	if k.gth != nil {
		k.runGather(w, in, out, scratch)
		return
	}
	if k.stem != nil && k.res == 0 {
		k.runStemRows(w, in, out, scratch)
		return
	}
	if k.sub > 0 {
		items := k.nb * k.c
		if k.subBlocked {
			items /= blockLanes
		}
		w.forArgs(items, w.parts(k.nb*k.c*k.outSp), k, args{phaseSubsample}, in, out, scratch)
	}
	if k.wg != nil && k.wg.ut != nil {
		k.runWinogradBlocked(w, in, out, scratch)
		return
	}
	if k.wg != nil {
		k.runWinograd(w, in, out, scratch)
		return
	}
	if k.tPath {
		k.runT(w, in, out, scratch)
		return
	}
	if k.wT != nil {
		k.runVec(in, out, scratch)
		return
	}
	if p := k.kSplit; p > 1 && w.Threads() >= p && k.pro == nil && (k.fuse == nil || k.fuse.temp == 0) && k.wPre != nil {
		w.forArgs(p, p, k, args{phaseSplitK, int64(p)}, in, out, scratch)
		w.forArgs(p, p, k, args{phaseSplitKSum, int64(p)}, in, out, scratch)
		return
	}
	if k.wPre == nil {
		k.packWeights(f32s(scratch), f32src{f: f32s(in[1])})
	}
	// Give each worker at least minGrain multiply-adds.
	p := min(k.workers(w, scratch), max(1, k.nb*k.g*k.mg*k.outSp*k.kdim/minGrain))
	w.forArgs(p, p, k, args{phaseBlocks, int64(p)}, in, out, scratch)
}

// depthwisePhase is the phase a depthwise run takes and how many items
// its shares divide: planes, or groups of sixteen channels (phaseDWC).
func (k *convKernel) depthwisePhase() (items int, phase int64) {
	switch {
	case dw512 && k.rowVectors():
		return k.nb * k.m, phaseDWR
	case dw512 && k.depthwiseChannelsIn != nil && k.dwPer >= depthwiseChannelsFloats(k):
		return k.depthwiseChannelsGroups(), phaseDWC
	}
	return k.nb * k.m, phaseDepthwise
}

// depthwisePlanes computes output planes [p0, p1) of a depthwise
// convolution in phase phaseDWR (the row-vector kernels) or
// phaseDepthwise (a plane at a time) as worker share, from x, which holds
// the input planes from plane xFrom on, and runs the fused epilogue over
// them.
func (k *convKernel) depthwisePlanes(x []float32, xFrom int, in, out [][]byte, scratch []byte, phase int64, share, p0, p1 int) {
	y := f32s(out[0])
	var bias []float32
	if k.hasBias {
		bias = f32s(in[2])
	}
	if phase == phaseDWR {
		k.depthwiseRowsPlanes(x, xFrom, y, f32s(in[1]), bias, p0, p1)
		if k.fuse != nil {
			k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), share, p0, p1, 0, k.outSp)
		}
		return
	}
	wt := f32s(in[1])
	var buf []float32
	if sc := f32s(scratch); k.dwPer > 0 && (share+1)*k.dwPer <= len(sc) {
		buf = sc[share*k.dwPer:][:k.dwPer]
	}
	for p := p0; p < p1; p++ {
		n, mo := p/k.m, p%k.m
		var bv float32
		if bias != nil {
			bv = bias[mo]
		}
		xc := x[(n*k.c+mo/k.mg-xFrom)*k.inSp:][:k.inSp]
		k.depthwisePlane(y[p*k.outSp:][:k.outSp], xc, wt[mo*k.kvol:][:k.kvol], bv, buf)
		if k.fuse != nil {
			k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), share, p, p+1, 0, k.outSp)
		}
	}
}

// Phases of a convolution run, in args[0].
const (
	phaseDepthwise  = 2
	phaseDWC        = 3  // depthwise, sixteen channels at a time
	phaseDWR        = 12 // depthwise, row vectors (conv_depthwise_rows.go)
	phaseT          = 5  // small planes, the positions as rows (runT)
	phaseTPack      = 6  // runT's windows into A, items are input channels
	phaseTOut       = 13 // runT split by positions: the planes, items are shares
	phaseBlocks     = 4
	phaseSplitK     = 15 // splitK's products, items are workers
	phaseSplitKSum  = 16 // splitK's sums, items are workers
	phaseTSplitK    = 17 // tSplitK's products, items are workers
	phaseTSplitKSum = 18 // tSplitK's sums, items are workers
	phaseSubsample  = 11 // items are input planes (subsample)
	phaseBlocked    = 19 // the channel-blocked path, items are shares
	phaseBlockedSub = 20 // its subsampled input, items are channel blocks
	phaseGather     = 28 // blockedGather, items are shares
)

func (k *convKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	x, y := k.input(in, scratch), f32s(out[0])
	var bias []float32
	if k.hasBias {
		bias = f32s(in[2])
	}
	if a[0] >= phaseWgIn && a[0] <= phaseWgOut {
		k.wgRange(in, out, scratch, a, lo, hi)
		return
	}
	if a[0] == phaseWinPad || a[0] == phaseWinTiles {
		k.winRange(in, out, scratch, a, lo, hi)
		return
	}
	if a[0] == phaseStemSplit || a[0] == phaseStemRows {
		k.stemRange(in, out, scratch, a, lo, hi)
		return
	}
	if a[0] >= phaseWgInB && a[0] <= phaseWgOutB {
		k.wgBlockedRange(in, out, scratch, a, lo, hi)
		return
	}
	switch a[0] {
	case phaseBlocked:
		for s := lo; s < hi; s++ {
			k.blockedShare(in, out, scratch, s, int(a[1]))
		}
	case phaseBlockedSub:
		k.subsampleBlocks(f32s(in[0]), x, lo, hi)
	case phaseGather:
		for s := lo; s < hi; s++ {
			k.gatherShare(in, out, scratch, s, int(a[1]), int(a[2]))
		}
	case phaseSubsample:
		if k.subBlocked {
			k.subsampleUnblock(f32s(in[0]), x, lo, hi)
			break
		}
		k.subsamplePlanes(f32s(in[0]), x, lo, hi)
	case phaseTOut:
		for share := lo; share < hi; share++ {
			k.tOut(in, out, scratch, int(a[2]), share, int(a[1]))
		}
	case phaseTPack:
		k.packTWindows(f32s(scratch)[:k.tOff], x[int(a[2])*k.c*k.inSp:], lo, hi)
	case phaseT:
		// Items are shares: one per call, or all in turn inline.
		for share := lo; share < hi; share++ {
			if a[3] != 0 {
				k.tRows(in, scratch, int(a[2]), share, int(a[1]), a[3] == 2)
				continue
			}
			k.tColumns(in, out, scratch, int(a[2]), share, int(a[1]))
		}
	case phaseDWC:
		wt := f32s(in[1])
		share, groups := lo, k.depthwiseChannelsGroups()
		buf := f32s(scratch)[share*k.dwPer:][:k.dwPer]
		per := ceilDiv(k.m, depthwiseChannelsLanes)
		first := share * groups / int(a[1])
		for it := first; it < (share+1)*groups/int(a[1]); it++ {
			n, c0 := it/per, it%per*depthwiseChannelsLanes
			k.depthwiseChannelsGroup(x, y, wt, bias, buf, n, c0, it == first)
			p := n*k.m + c0
			k.clampOut(y[p*k.outSp : (p+min(depthwiseChannelsLanes, k.m-c0))*k.outSp])
			if k.fuse != nil {
				k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), share, p, p+min(depthwiseChannelsLanes, k.m-c0), 0, k.outSp)
			}
		}
	case phaseDWR, phaseDepthwise:
		// Item lo is share lo of a[1] shares of the planes.
		share, planes := lo, k.nb*k.m
		k.depthwisePlanes(x, 0, in, out, scratch, a[0], share, share*planes/int(a[1]), (share+1)*planes/int(a[1]))
	case phaseSplitK:
		for wi := lo; wi < hi; wi++ {
			k.splitK(x, y, bias, f32s(scratch), wi, int(a[1]))
		}
	case phaseTSplitK:
		for wi := lo; wi < hi; wi++ {
			k.tSplitK(x, bias, f32s(scratch), wi, int(a[1]))
		}
	case phaseTSplitKSum:
		for wi := lo; wi < hi; wi++ {
			k.tSplitKSum(in, out, f32s(scratch), wi, int(a[1]))
		}
	case phaseSplitKSum:
		for wi := lo; wi < hi; wi++ {
			k.splitKSum(y, f32s(scratch), in, out, wi, int(a[1]))
		}
	case phaseBlocks:
		// Items are workers here: one call per worker index, or, inline,
		// all of them in turn, each with its own scratch area.
		p := int(a[1])
		s := k.split(p)
		total := k.nb * k.g * s.nblk * s.mparts
		sc := f32s(scratch)
		wp := k.wPre
		if wp == nil {
			wp = sc
		}
		for wi := lo; wi < hi; wi++ {
			buf := sc[k.bOff+wi*k.per:][:k.per]
			k.blocks(x, y, wp, bias, buf, s, wi*total/p, (wi+1)*total/p, in, out, wi)
		}
	}
}

// blocks computes items [lo, hi) of split s (see convSplit), packing into
// buf; worker wi runs them, and applies the epilogue, if any, to each
// finished block.
func (k *convKernel) blocks(x, y, wp, bias, buf []float32, s convSplit, lo, hi int, in, out [][]byte, wi int) {
	pm := ceilDiv(k.mg, gemmMR)
	for it := lo; it < hi; {
		blk := it / s.mparts
		mp0 := it % s.mparts
		// The parts of this block that are ours: one packed block serves
		// them all.
		mp1 := min(s.mparts, mp0+hi-it)
		it += mp1 - mp0
		u, bi := blk/s.nblk, blk%s.nblk
		n, gi := u/k.g, u%k.g
		p0, p1 := mp0*pm/s.mparts, mp1*pm/s.mparts
		if p0 == p1 {
			continue
		}
		j0, ncb := s.block(bi, k.outSp)
		rows := min(k.mg, p1*gemmMR) - p0*gemmMR
		xg := x[(n*k.c+gi*k.cg)*k.inSp:]
		g := gemm{
			m: rows, n: ncb, b: buf,
			c:   y[(n*k.m+gi*k.mg+p0*gemmMR)*k.outSp+j0:],
			ldc: k.outSp,
			mt:  k.blockMT(p1-p0, rows, ncb), nt: ceilDiv(ncb, gemmNR),
		}
		if k.fuse != nil && k.fuse.temp > 0 {
			// Overwrite mode: the block goes to the worker's tile
			// buffer, and only the epilogue writes the output.
			// Rows a cache line longer than the block: a stride of a
			// power of two would map the micro-tile's rows onto few
			// cache sets.
			g.c, g.ldc = k.fuse.tempBuf(f32s(out[3]), wi), ncb+gemmNR
			if k.owRows > 0 {
				k.chunks(xg, wp, bias, buf, &g, n, gi, p0, p1, j0, ncb, in, out, wi)
				continue
			}
		}
		for k0 := 0; k0 == 0 || k0 < k.kdim; k0 += k.kc {
			kb := min(k.kc, k.kdim-k0)
			if k.pro != nil {
				k.pro.packB(buf, xg[k0*k.inSp+j0:], gi*k.cg+k0, kb, ncb, k.inSp)
			} else if k.pointwise {
				k.pointwiseB(&g, buf, xg[k0*k.inSp+j0:], kb, ncb)
			} else {
				k.im2col(buf, xg, j0, ncb, k0, kb)
			}
			g.k = kb
			g.a = wp[gi*k.aSize+pm*gemmMR*k0+p0*kb*gemmMR:]
			g.acc = k0 > 0
			g.rowBias = nil
			if bias != nil && k0 == 0 {
				g.rowBias = bias[gi*k.mg+p0*gemmMR:]
			}
			g.lim, g.res = nil, nil
			if k0+k.kc >= k.kdim {
				g.lim = k.lim
				if k.res > 0 {
					g.res = f32s(in[k.fuse.nin+k.res-1])[(n*k.m+gi*k.mg+p0*gemmMR)*k.outSp+j0:]
				}
			}
			if k.fuse == nil || k0+k.kc < k.kdim {
				g.run(0, g.tiles())
				continue
			}
			// The last k slice: run the epilogue on each tile while
			// it is still in cache.
			r0 := n*k.m + gi*k.mg + p0*gemmMR
			for t := range g.tiles() {
				g.run(t, t+1)
				i0, i1, c0, c1 := g.tileRect(t)
				if k.fuse.temp > 0 {
					k.fuse.tileFrom(f32s(out[1]), g.c[i0*g.ldc+c0:], g.ldc, in, f32s(out[2]), wi, r0+i0, r0+i1, j0+c0, j0+c1)
				} else {
					k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), wi, r0+i0, r0+i1, j0+c0, j0+c1)
				}
			}
		}
	}
}

// blockMT is the A panels a GEMM tile takes over a block of ncb columns
// of C and rows output channels (panels A panels): convMT, or, for a
// shallow pointwise product whose block of C outgrows the cache (an
// expansion at 112² or 56²), one pair, so that the kernels walk C along
// its rows and its stores stream, instead of down columns of tiles that
// touch every row of the block.
func (k *convKernel) blockMT(panels, rows, ncb int) int {
	if k.pointwise && k.kdim <= rowWalkDepth && rows*ncb*4 > rowWalkBytes {
		return min(panels, 2)
	}
	return min(panels, convMT)
}

// chunks is one block of blocks in overwrite mode with a single k slice:
// it packs the block's columns once, then computes its output channels
// (A panels [p0, p1)) owRows at a time into the tile buffer g.c and runs
// the epilogue on each chunk from there.
func (k *convKernel) chunks(xg, wp, bias, buf []float32, g *gemm, n, gi, p0, p1, j0, ncb int, in, out [][]byte, wi int) {
	kb := k.kdim
	switch {
	case k.pro != nil:
		k.pro.packB(buf, xg[j0:], gi*k.cg, kb, ncb, k.inSp)
	case k.pointwise:
		k.pointwiseB(g, buf, xg[j0:], kb, ncb)
	default:
		k.im2col(buf, xg, j0, ncb, 0, kb)
	}
	step := k.owRows / gemmMR
	for q0 := p0; q0 < p1; q0 += step {
		q1 := min(p1, q0+step)
		rows := min(k.mg, q1*gemmMR) - q0*gemmMR
		c := gemm{m: rows, n: ncb, k: kb, b: buf, c: g.c, ldc: g.ldc, bRaw: g.bRaw, ldb: g.ldb, lim: k.lim,
			a:  wp[gi*k.aSize+q0*kb*gemmMR:],
			mt: min(q1-q0, convMT), nt: g.nt}
		if bias != nil {
			c.rowBias = bias[gi*k.mg+q0*gemmMR:]
		}
		c.run(0, c.tiles())
		r0 := n*k.m + gi*k.mg + q0*gemmMR
		k.fuse.tileFrom(f32s(out[1]), g.c, g.ldc, in, f32s(out[2]), wi, r0, r0+rows, j0, j0+ncb)
	}
}

// splitKSlices is worker wi's k slices of p, [s0, s1), the product cut
// into slices kc deep (splitK's kc, tSplitK's tKC).
func (k *convKernel) splitKSlices(kc, wi, p int) (s0, s1 int) {
	n := ceilDiv(k.kdim, kc)
	return wi * n / p, (wi + 1) * n / p
}

// splitK is worker wi's part of a product shared by its depth among p
// workers (kSplit): its k slices of every block of columns. The first
// worker adds its slices up into C, from the bias, as the blocks would;
// each later slice goes to a partial product of its own in scratch
// (slice s at partOff + (s-1)·m·outSp), which splitKSum adds to C in the
// slices' order: the same sums, rounded the same way, as on one thread.
func (k *convKernel) splitK(x, y, bias, sc []float32, wi, p int) {
	s0, s1 := k.splitKSlices(k.kc, wi, p)
	buf := sc[k.bOff+wi*k.per:][:k.per]
	pm := ceilDiv(k.m, gemmMR)
	for j0 := 0; j0 < k.outSp; j0 += k.nc {
		ncb := min(k.nc, k.outSp-j0)
		for sl := s0; sl < s1; sl++ {
			k0 := sl * k.kc
			kb := min(k.kc, k.kdim-k0)
			g := gemm{m: k.m, n: ncb, k: kb, a: k.wPre[pm*gemmMR*k0:], b: buf, c: y[j0:], ldc: k.outSp,
				mt: min(pm, convMT), nt: ceilDiv(ncb, gemmNR), acc: sl > 0}
			if sl == 0 {
				g.rowBias = bias
			} else if wi > 0 {
				g.c, g.acc = sc[k.partOff+(sl-1)*k.m*k.outSp+j0:], false
			}
			if k.pointwise {
				k.pointwiseB(&g, buf, x[k0*k.inSp+j0:], kb, ncb)
			} else {
				k.im2col(buf, x, j0, ncb, k0, kb)
			}
			g.run(0, g.tiles())
		}
	}
}

// splitKSum is worker wi's part of a split product's second pass: its
// share of the output channels, to which it adds the partial products of
// the slices the first worker left, in order, and then, as the kernels do
// after the last k slice, the residual, the clamp and the epilogue.
func (k *convKernel) splitKSum(y, sc []float32, in, out [][]byte, wi, p int) {
	r0, r1 := wi*k.m/p, (wi+1)*k.m/p
	if r0 == r1 {
		return
	}
	sp := k.outSp
	yr := y[r0*sp : r1*sp]
	_, first := k.splitKSlices(k.kc, 0, p)
	for sl := first; sl < ceilDiv(k.kdim, k.kc); sl++ {
		part := sc[k.partOff+(sl-1)*k.m*sp:][:k.m*sp]
		addF32(yr, yr, part[r0*sp:r1*sp], 1, 1)
	}
	if k.res > 0 {
		res := f32s(in[k.fuse.nin+k.res-1])[r0*sp : r1*sp]
		addF32(yr, yr, res, 1, 1)
	}
	if k.lim != nil {
		clampLoop(yr, yr, k.lim[0], k.lim[1])
	}
	if k.fuse != nil {
		k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), wi, r0, r1, 0, sp)
	}
}

// tAFloats is the scratch one worker of tSplitK packs a k slice of the
// positions into.
func (k *convKernel) tAFloats() int { return roundUp(packedASize(k.outSp, k.tKC), alignment/4) }

// tSplitK is worker wi's part of a runT product shared by its depth among
// p workers: for each of its k slices (of tKC input channels) it packs
// the positions' values of those channels and multiplies them by the
// slice of wT, as splitK does with the positions as rows: the first
// worker adds its slices up into the transposed output, from the bias,
// the others each slice into a partial product of its own.
func (k *convKernel) tSplitK(x, bias, sc []float32, wi, p int) {
	hw, m := k.outSp, k.m
	s0, s1 := k.splitKSlices(k.tKC, wi, p)
	a := sc[wi*k.tAFloats():][:k.tAFloats()]
	ct := sc[k.tOff:][:hw*m]
	for sl := s0; sl < s1; sl++ {
		k0 := sl * k.tKC
		kb := min(k.tKC, k.kdim-k0)
		packA(a, x[k0*k.inSp:], hw, kb, 1, k.inSp, 1, 0, ceilDiv(hw, gemmMR))
		g := gemm{m: hw, n: m, k: kb, a: a, b: k.wT[k0*gemmNR:], bDepth: k.kdim, c: ct, ldc: m, acc: sl > 0}
		if sl == 0 && k.hasBias {
			g.colBias = bias
		}
		if wi > 0 {
			g.c, g.acc = sc[k.partOff+(sl-1)*hw*m:][:hw*m], false
		}
		g.mt, g.nt = gemmTiles(g.m, g.n, 1)
		g.run(0, g.tiles())
	}
}

// tSplitKSum is worker wi's part of tSplitK's second pass: its share of
// the output channels, to which it adds the partial products in the
// slices' order, then the clamp, the planes (transposed) and the epilogue,
// as tOut does.
func (k *convKernel) tSplitKSum(in, out [][]byte, sc []float32, wi, p int) {
	hw, m := k.outSp, k.m
	j0, j1 := wi*m/p, (wi+1)*m/p
	if j0 >= j1 {
		return
	}
	ct := sc[k.tOff:][:hw*m]
	n := ceilDiv(k.kdim, k.tKC)
	_, first := k.splitKSlices(k.tKC, 0, p)
	for r := range hw {
		row := ct[r*m+j0 : r*m+j1]
		for sl := first; sl < n; sl++ {
			addF32(row, row, sc[k.partOff+(sl-1)*hw*m+r*m+j0:][:j1-j0], 1, 1)
		}
		if k.lim != nil {
			clampLoop(row, row, k.lim[0], k.lim[1])
		}
	}
	transpose(f32s(out[0]), j0*hw, hw, ct, j0, m, hw, j1-j0)
	if k.fuse != nil {
		k.fuse.tile(f32s(out[1]), f32s(out[0]), in, f32s(out[2]), wi, j0, j1, 0, hw)
	}
}

// pointwiseB prepares the B operand of a pointwise block, the kb×ncb
// matrix x (rows k.inSp apart): the GEMM reads the pairs of 16 columns
// inside it from x itself and only the columns after them are packed
// into buf.
func (k *convKernel) pointwiseB(g *gemm, buf, x []float32, kb, ncb int) {
	g.n, g.bRaw, g.ldb = ncb, x, k.inSp
	packB(buf, x, kb, ncb, k.inSp, 1, g.rawPanels(), ceilDiv(ncb, gemmNR))
}

// vecFitsWork bounds the multiply-adds of a convolution that runVec
// takes, on one thread.
const vecFitsWork = 1 << 20

// vecFits reports whether k is a small 1×1 convolution of 1×1 planes
// (squeeze-and-excitation blocks): with the output channels along the
// GEMM's rows it would compute 16 columns for each one it keeps.
func (k *convKernel) vecFits() bool {
	return k.pointwise && k.outSp == 1 && k.g == 1 && k.nb*k.m*k.kdim <= vecFitsWork
}

// runVec runs k as Y = X·Wᵀ on one thread: the images' input vectors as the
// rows of A (packed into scratch, the prologue applied), wT as B, and Y,
// whose images' output vectors lie one after the other, as C; the bias is
// C's column bias, and the kernels add the residual and clamp as they
// store. The epilogue then runs over the whole output.
func (k *convKernel) runVec(in, out [][]byte, scratch []byte) {
	x, y := k.input(in, scratch), f32s(out[0])
	a := f32s(scratch)[:packedASize(k.nb, k.kdim)]
	packA(a, x, k.nb, k.kdim, k.kdim, 1, 1, 0, ceilDiv(k.nb, gemmMR))
	if k.pro != nil {
		k.pro.applyA(a, k.nb, k.kdim, 0)
	}
	mt, nt := gemmTiles(k.nb, k.m, 1)
	g := gemm{m: k.nb, n: k.m, k: k.kdim, a: a, b: k.wT, c: y, ldc: k.m, mt: mt, nt: nt, lim: k.lim}
	if k.hasBias {
		g.colBias = f32s(in[2])
	}
	if k.res > 0 {
		g.res = f32s(in[k.fuse.nin+k.res-1])
	}
	g.run(0, g.tiles())
	if k.fuse != nil {
		k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), 0, 0, k.nb*k.m, 0, 1)
	}
}

// tFitsPlane is the largest output plane, in positions, that runT takes.
const tFitsPlane = 64

// tFits reports whether k is a convolution of small planes (the 7×7
// stages) that computes fewer columns as runT does: along the usual
// product's vectors, 49 positions take 64 lanes. A 1×1 convolution
// always does; a larger kernel does on AVX-512 when its product is deep
// and wide and Winograd does not take it (its positions' input windows
// are gathered into A by tTable's offsets), as ResNet-50's stride-2 3×3
// convolution onto 7² planes does.
func (k *convKernel) tFits() bool {
	if k.g != 1 || k.outSp <= 1 || k.outSp > tFitsPlane || k.outSp%(2*gemmNR) == 0 {
		return false
	}
	return k.pointwise || dw512 && k.sub == 0 && k.kvol > 1 && k.kdim >= tWindowDepth && k.m >= tWindowWidth && !k.winogradFits(true)
}

// The smallest product depth and width for which a convolution of a
// kernel larger than 1×1 runs through runT.
const (
	tWindowDepth = 256
	tWindowWidth = 64
)

// tTable builds tIdx.
func (k *convKernel) tTable() {
	kv, rows := k.kvol, roundUp(k.outSp, gemmMR)
	k.tIdx = make([]int32, rows*kv)
	for p := 0; p < rows; p++ {
		o := [3]int{p / (k.out[1] * k.out[2]), p / k.out[2] % k.out[1], p % k.out[2]}
		for t := 0; t < kv; t++ {
			tap := [3]int{t / (k.kern[1] * k.kern[2]), t / k.kern[2] % k.kern[1], t % k.kern[2]}
			at := int32(-1)
			if p < k.outSp {
				var c [3]int
				inside := true
				for d := range c {
					c[d] = o[d]*k.stride[d] - k.pad[d] + tap[d]*k.dil[d]
					inside = inside && c[d] >= 0 && c[d] < k.in[d]
				}
				if inside {
					at = int32((c[0]*k.in[1]+c[1])*k.in[2] + c[2])
				}
			}
			k.tIdx[(p/gemmMR*kv+t)*gemmMR+p%gemmMR] = at
		}
	}
}

// packTWindows packs input channels [c0, c1) of image x (its planes) into
// runT's A: channel c's taps are a run of kvol·gemmMR floats of each
// panel, laid out as tIdx.
func (k *convKernel) packTWindows(a, x []float32, c0, c1 int) {
	run := k.kvol * gemmMR
	for q := 0; q < ceilDiv(k.outSp, gemmMR); q++ {
		idx := k.tIdx[q*run:][:run]
		panel := a[q*k.kdim*gemmMR:][:k.kdim*gemmMR]
		for c := c0; c < c1; c++ {
			plane, d := x[c*k.inSp:][:k.inSp], panel[c*run:][:run]
			for j, at := range idx {
				v := float32(0)
				if at >= 0 {
					v = plane[at]
				}
				d[j] = v
			}
		}
	}
}

// runT runs k image by image as Yᵀ = Xᵀ·Wᵀ: the positions' input vectors
// as the rows of A (packed into scratch, the prologue applied), wT as B
// and the output channels along the vectors. The workers share the
// output channels, whole panels each (tColumns).
func (k *convKernel) runT(w *Workers, in, out [][]byte, scratch []byte) {
	if k.tKC > 0 && k.pro == nil {
		p := max(1, min(k.kSplit, w.Threads()))
		w.forArgs(p, p, k, args{phaseTSplitK, int64(p)}, in, out, scratch)
		w.forArgs(p, p, k, args{phaseTSplitKSum, int64(p)}, in, out, scratch)
		return
	}
	x := k.input(in, scratch)
	a := f32s(scratch)[:k.tOff]
	parts := max(1, min(w.Threads(), w.parts(k.outSp*k.m*k.kdim), ceilDiv(k.m, gemmNR)))
	if k.fuse != nil {
		parts = min(parts, k.fuse.shares)
	}
	// split: 0 by output channels, 1 by positions (tByRows), 2 by
	// positions with each share packing its own rows of A.
	byRows := k.tByRows(parts)
	split := int64(0)
	if byRows {
		split = 1
		if k.tIdx == nil && k.pro == nil {
			split = 2
		}
	}
	for n := 0; n < k.nb; n++ {
		switch {
		case split == 2:
		case k.tIdx != nil:
			w.forArgs(k.c, w.parts(k.c*k.kvol*k.outSp), k, args{phaseTPack, 0, int64(n)}, in, out, scratch)
		default:
			packA(a, x[n*k.c*k.inSp:], k.outSp, k.kdim, 1, k.inSp, 1, 0, ceilDiv(k.outSp, gemmMR))
		}
		if k.pro != nil {
			k.pro.applyA(a, k.outSp, k.kdim, 0)
		}
		w.forArgs(parts, parts, k, args{phaseT, int64(parts), int64(n), split}, in, out, scratch)
		if byRows {
			// Every position of every channel is in scratch now: the
			// planes, channel by channel.
			w.forArgs(parts, parts, k, args{phaseTOut, int64(parts), int64(n)}, in, out, scratch)
		}
	}
}

// tByRows reports whether runT's parts shares take the positions (the
// rows of the product) rather than the output channels: where some
// share of the channels would hold an odd number of B panels, whose
// last one runs through the 12×16 kernel, slower a column than the
// 12×32 one (160 channels on two workers: five panels each), and the
// positions are enough for every share to have a pair of A panels.
func (k *convKernel) tByRows(parts int) bool {
	if parts < 2 || !useAVX512Kernel || ceilDiv(k.outSp, gemmMR) < 2*parts {
		return false
	}
	panels := ceilDiv(k.m, gemmNR)
	for s := range parts {
		if ((s+1)*panels/parts-s*panels/parts)%2 == 1 {
			return true
		}
	}
	return false
}

// tRows is share lo of parts of image n in runT split by positions: the
// rows of whole A panels of the share (packed here first if pack is
// set), every output channel, into the transposed output in scratch.
// tOut then makes the planes.
func (k *convKernel) tRows(in [][]byte, scratch []byte, n, share, parts int, pack bool) {
	hw, m := k.outSp, k.m
	panels := ceilDiv(hw, gemmMR)
	p0, p1 := share*panels/parts, (share+1)*panels/parts
	r0, r1 := p0*gemmMR, min(hw, p1*gemmMR)
	if r0 >= r1 {
		return
	}
	sc := f32s(scratch)
	a := sc[:k.tOff]
	if pack {
		packA(a, k.input(in, scratch)[n*k.c*k.inSp:], hw, k.kdim, 1, k.inSp, 1, p0, p1)
	}
	ct := sc[k.tOff:][:hw*m]
	g := gemm{m: r1 - r0, n: m, k: k.kdim, a: a[p0*k.kdim*gemmMR:], b: k.wT, c: ct[r0*m:], ldc: m, lim: k.lim}
	g.mt, g.nt = gemmTiles(g.m, g.n, 1)
	if k.hasBias {
		g.colBias = f32s(in[2])
	}
	g.run(0, g.tiles())
}

// tOut is share lo of parts of image n after tRows: its output channels'
// positions transposed from scratch into their planes of Y, and the
// epilogue run over them.
func (k *convKernel) tOut(in, out [][]byte, scratch []byte, n, share, parts int) {
	hw, m := k.outSp, k.m
	j0, j1 := share*m/parts, (share+1)*m/parts
	if j0 >= j1 {
		return
	}
	transpose(f32s(out[0]), (n*m+j0)*hw, hw, f32s(scratch)[k.tOff:][:hw*m], j0, m, hw, j1-j0)
	if k.fuse != nil {
		k.fuse.tile(f32s(out[1]), f32s(out[0]), in, f32s(out[2]), share, n*m+j0, n*m+j1, 0, hw)
	}
}

// tColumns is share lo of parts of image n in runT: the product's output
// channels of its panels into the transposed output in scratch,
// then those channels' planes transposed into Y (tr16) and the epilogue
// run over them.
func (k *convKernel) tColumns(in, out [][]byte, scratch []byte, n, share, parts int) {
	// Shares of whole B panels: 160 channels are five pairs of panels,
	// which two workers share evenly only as ten panels.
	hw, m := k.outSp, k.m
	panels := ceilDiv(m, gemmNR)
	j0 := share * panels / parts * gemmNR
	j1 := min(m, (share+1)*panels/parts*gemmNR)
	if j0 >= j1 {
		return
	}
	sc := f32s(scratch)
	ct := sc[k.tOff:][:hw*m]
	g := gemm{m: hw, n: j1 - j0, k: k.kdim, a: sc[:k.tOff], b: k.wT[j0*k.kdim:], c: ct[j0:], ldc: m, lim: k.lim}
	g.mt, g.nt = gemmTiles(g.m, g.n, 1)
	if k.hasBias {
		g.colBias = f32s(in[2])[j0:j1]
	}
	g.run(0, g.tiles())
	// Channels [j0, j1) of the positions' rows, into their planes.
	transpose(f32s(out[0]), (n*m+j0)*hw, hw, ct, j0, m, hw, j1-j0)
	if k.fuse != nil {
		k.fuse.tile(f32s(out[1]), f32s(out[0]), in, f32s(out[2]), share, n*m+j0, n*m+j1, 0, hw)
	}
}

// window is the geometry of a sliding window along each spatial dimension.
type window struct {
	stride, dil, begin, end []int
}

// windows reads strides, dilations and pads (explicit or auto_pad, resolved
// as ONNX does) and checks them against the output size. With ceil the
// output may round up (pooling's ceil_mode).
func windows(c *buildContext, in, kern, out []int, ceil bool) (window, error) {
	r := len(in)
	at := c.attrs()
	w := window{stride: make([]int, r), dil: make([]int, r), begin: make([]int, r), end: make([]int, r)}
	get := func(name string, def int, dst []int) error {
		v := at.Ints(name, nil)
		if v == nil {
			for i := range dst {
				dst[i] = def
			}
			return nil
		}
		if len(v) != len(dst) {
			return c.errorf("attribute %s has %d values, want %d", name, len(v), len(dst))
		}
		for i, x := range v {
			dst[i] = int(x)
		}
		return nil
	}
	if err := get("strides", 1, w.stride); err != nil {
		return w, err
	}
	if err := get("dilations", 1, w.dil); err != nil {
		return w, err
	}
	for i := 0; i < r; i++ {
		if w.stride[i] < 1 || w.dil[i] < 1 || kern[i] < 1 {
			return w, c.errorf("kernel %v, strides %v and dilations %v must be positive", kern, w.stride, w.dil)
		}
	}
	switch ap := at.String("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
		pads := make([]int, 2*r)
		if err := get("pads", 0, pads); err != nil {
			return w, err
		}
		copy(w.begin, pads[:r])
		copy(w.end, pads[r:])
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := 0; i < r; i++ {
			span := (kern[i]-1)*w.dil[i] + 1
			total := max(0, (out[i]-1)*w.stride[i]+span-in[i])
			if ap == "SAME_UPPER" {
				w.begin[i] = total / 2
			} else {
				w.begin[i] = total - total/2
			}
			w.end[i] = total - w.begin[i]
		}
	default:
		return w, c.errorf("unknown auto_pad %q", ap)
	}
	for i := 0; i < r; i++ {
		span := (kern[i]-1)*w.dil[i] + 1
		num := in[i] + w.begin[i] + w.end[i] - span
		want, alt := 0, -1
		if num >= 0 {
			want = num/w.stride[i] + 1
			if ceil && num%w.stride[i] != 0 {
				want++
				if (want-1)*w.stride[i] >= in[i]+w.begin[i] {
					// PyTorch drops a last window that starts in the
					// trailing pad; older shape inference keeps it.
					alt = want
					want--
				}
			}
		}
		if out[i] != want && out[i] != alt {
			return w, c.errorf("output size %d along spatial axis %d, the window geometry gives %d", out[i], i, want)
		}
	}
	return w, nil
}
