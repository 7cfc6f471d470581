package cpu

// pairKernel runs a pointwise convolution (an expansion) and the
// depthwise convolution that reads its output together, a group of
// channels at a time: each worker computes the expansion's output
// channels of a group, with their epilogue, and at once the depthwise
// planes of the same channels from them, before the next group. A
// group's planes (at most pairGroupBytes) are read back from the
// worker's own L2 cache instead of from memory after the whole output
// has been written, and no worker reads planes another one wrote.
//
// The two kernels keep their inputs, outputs and scratch: the pair takes
// the pointwise's inputs then the depthwise's (nIn of the first), their
// outputs the same way (nOut), and their scratch one after the other
// (the depthwise's from byte split on). The expansion's output is still
// written whole, where the plan put it; the pair only changes the order
// of the work, so its results are the two kernels' bit for bit.
type pairKernel struct {
	pw, dw     *convKernel
	groups     int   // channel groups
	phase      int64 // the depthwise's (phaseDWR or phaseDepthwise)
	nIn, nOut  int
	split      int
	minShares  int // shares the scratch and registers of both hold
	pointwiseS convSplit
}

const (
	// pairMinPlane is the smallest plane a pair runs on: at 28² the
	// expansion's output stays in the caches anyway (MobileNetV2's
	// 32→192→192 as fast either way).
	pairMinPlane = 56 * 56
	// pairGroupBytes bounds a group's planes, which stay in L2 between
	// the two products.
	pairGroupBytes = 640 << 10
)

// FusePair returns a kernel that runs pw, a pointwise convolution whose
// output only dw, a depthwise convolution, reads, and then dw, a group
// of channels at a time (pairKernel). nIn and nOut are how many inputs
// and outputs pw's step binds, pwScratch and dwScratch the scratch bytes
// of the two steps, threads the size of the Workers it will run on. It
// returns the pair and its scratch bytes, or ok false where the two
// cannot run so: pw must be a single-image, single-slice pointwise
// product of constant weights on planes of at least pairMinPlane
// positions and a multiple of twelve output channels, with no residual,
// prologue or subsample, and dw its depthwise on the same planes; an
// epilogue of either may read no other activation.
func FusePair(pw, dw Kernel, nIn, nOut int, pwScratch, dwScratch int64, threads int) (Kernel, int64, bool) {
	p, ok1 := pw.(*convKernel)
	d, ok2 := dw.(*convKernel)
	if !ok1 || !ok2 || !p.pairPointwise() || !d.depthwise || d.nb != 1 || d.mg != 1 || d.c != p.m || d.in != p.out ||
		!fusedAlone(d.fuse) {
		return nil, 0, false
	}
	_, phase := d.depthwisePhase()
	if phase != phaseDWR && phase != phaseDepthwise {
		return nil, 0, false
	}
	threads = max(threads, 1)
	if phase == phaseDepthwise && d.dwPer > 0 && dwScratch < int64(4*threads*d.dwPer) {
		return nil, 0, false
	}
	groups := pairGroups(p.m/(2*gemmMR), p.outSp, threads)
	split := roundUp(int(pwScratch), alignment)
	k := &pairKernel{pw: p, dw: d, groups: groups, phase: phase, nIn: nIn, nOut: nOut, split: split, minShares: threads,
		pointwiseS: convSplit{panels: ceilDiv(p.outSp, gemmNR), nblk: ceilDiv(p.outSp, p.nc), mparts: groups}}
	return k, int64(split) + dwScratch, true
}

// pairPointwise reports whether k can be a pair's expansion (FusePair).
func (k *convKernel) pairPointwise() bool {
	return k.pointwise && !k.depthwise && k.nb == 1 && k.g == 1 && k.blk == nil && k.win == nil && k.gth == nil &&
		k.wg == nil && !k.tPath && k.wT == nil && k.sub == 0 && k.pro == nil && k.kSplit <= 1 && k.wPre != nil &&
		k.kdim <= k.kc && k.res == 0 && k.owRows == 0 && fusedAlone(k.fuse) &&
		k.outSp >= pairMinPlane && k.m%(2*gemmMR) == 0
}

// fusedAlone reports whether an epilogue (nil: none) reads no activation
// but its producer's output and runs in place (no overwrite mode).
func fusedAlone(f *fused) bool {
	return f == nil || f.ep.ext == 0 && f.temp == 0
}

// pairGroups chooses how many groups the pairs of A panels (twelve
// channels each) of an expansion onto planes of sp positions form: as
// few as keep a group's planes within pairGroupBytes, a multiple of the
// threads where one is near (so that every worker gets as many).
func pairGroups(pairs, sp, threads int) int {
	best := pairs
	for g := pairs; g >= 1; g-- {
		if pairs%g != 0 || 2*gemmMR*(pairs/g)*sp*4 > pairGroupBytes {
			continue
		}
		if g < threads {
			break
		}
		if g%threads == 0 || g >= 4*threads {
			best = g
		}
	}
	return best
}

// groupChannels is the output channels [c0, c1) of group mp of groups
// (the A panels that blocks gives part mp of a split into groups).
func (k *convKernel) groupChannels(mp, groups int) (c0, c1 int) {
	pm := ceilDiv(k.mg, gemmMR)
	return mp * pm / groups * gemmMR, min(k.m, (mp+1)*pm/groups*gemmMR)
}

func (k *pairKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	parts := max(1, min(w.Threads(), k.groups, k.minShares))
	w.forArgs(parts, parts, k, args{int64(parts)}, in, out, scratch)
}

// rangeArgs runs shares [lo, hi) of a[0]: each its run of groups, the
// expansion's channels of a group and then the depthwise planes of them.
func (k *pairKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	pwIn, dwIn := in[:k.nIn], in[k.nIn:]
	pwOut, dwOut := out[:k.nOut], out[k.nOut:]
	pwSc, dwSc := scratch[:k.split], scratch[k.split:]
	p := k.pw
	x, y := p.input(pwIn, pwSc), f32s(pwOut[0])
	var bias []float32
	if p.hasBias {
		bias = f32s(pwIn[2])
	}
	parts := int(a[0])
	for share := lo; share < hi; share++ {
		buf := f32s(pwSc)[p.bOff+share*p.per:][:p.per]
		for mp := share * k.groups / parts; mp < (share+1)*k.groups/parts; mp++ {
			// Item blk·groups + mp of the split is block blk of
			// group mp.
			for blk := range k.pointwiseS.nblk {
				it := blk*k.groups + mp
				p.blocks(x, y, p.wPre, bias, buf, k.pointwiseS, it, it+1, pwIn, pwOut, share)
			}
			c0, c1 := p.groupChannels(mp, k.groups)
			k.dw.depthwisePlanes(dwIn, dwOut, dwSc, k.phase, share, c0, c1)
		}
	}
}
