package cpu

// pairKernel runs a pointwise convolution (an expansion) and the
// depthwise convolution that reads its output together, a group of
// channels at a time: each worker computes the expansion's output
// channels of a group, with their epilogue, into a buffer of its own
// (pairGroupBytes at most, where a pair of A panels' planes fit), and at
// once the depthwise planes of the same
// channels from there, before the next group. The expansion's output is
// never written whole: a group's planes stay in the worker's L2 cache
// between the two products, and no worker reads planes another one
// wrote.
//
// The two kernels keep their inputs, outputs and scratch: the pair takes
// the pointwise's inputs then the depthwise's (nIn of the first), their
// outputs the same way (nOut), and their scratch one after the other
// (the depthwise's from byte split on), then the workers' group buffers
// (from byte bufAt on). The expansion's output and the depthwise's input
// are not read or written. Each output value is computed as the two
// kernels compute it, so the results are theirs bit for bit.
type pairKernel struct {
	pw, dw    *convKernel
	groups    int   // channel groups
	phase     int64 // the depthwise's (phaseDWR or phaseDepthwise)
	nIn, nOut int
	split     int // the depthwise's scratch, from this byte
	bufAt     int // the group buffers, from this byte
	bufFloats int // a worker's group buffer
	shares    int // workers the scratch, registers and buffers serve
}

const (
	// pairMinPlane is the smallest plane a pair runs on: at 28² the
	// expansion's output stays in the caches anyway.
	pairMinPlane = 56 * 56
	// pairGroupBytes bounds a group's planes, which stay in L2 between
	// the two products.
	pairGroupBytes = 640 << 10
)

// fusePair returns a kernel that runs pw, a pointwise convolution whose
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
func fusePair(pw, dw Kernel, nIn, nOut int, pwScratch, dwScratch int64, threads int) (Kernel, int64, bool) {
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
	bufAt := roundUp(split+int(dwScratch), alignment)
	c0, c1 := p.groupChannels(0, groups)
	bufFloats := roundUp((c1-c0)*p.outSp, alignment/4)
	k := &pairKernel{pw: p, dw: d, groups: groups, phase: phase, nIn: nIn, nOut: nOut, split: split,
		bufAt: bufAt, bufFloats: bufFloats, shares: threads}
	return k, int64(bufAt + 4*threads*bufFloats), true
}

// pairPointwise reports whether k can be a pair's expansion (fusePair).
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

// groupChannels is the output channels [c0, c1) of group mp of groups:
// whole pairs of A panels, as many in every group.
func (k *convKernel) groupChannels(mp, groups int) (c0, c1 int) {
	per := k.m / groups
	return mp * per, (mp + 1) * per
}

func (k *pairKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	parts := max(1, min(w.Threads(), k.groups, k.shares))
	w.forArgs(parts, parts, k, args{int64(parts)}, in, out, scratch)
}

// rangeArgs runs shares [lo, hi) of a[0]: each its run of groups, the
// expansion's channels of a group into the share's buffer and then the
// depthwise planes of them.
func (k *pairKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	pwIn, dwIn := in[:k.nIn], in[k.nIn:]
	pwOut, dwOut := out[:k.nOut], out[k.nOut:]
	pwSc, dwSc := scratch[:k.split], scratch[k.split:k.bufAt]
	bufs := f32s(scratch[k.bufAt:])
	p := k.pw
	parts := int(a[0])
	for share := lo; share < hi; share++ {
		buf := bufs[share*k.bufFloats:][:k.bufFloats]
		for mp := share * k.groups / parts; mp < (share+1)*k.groups/parts; mp++ {
			c0, c1 := p.groupChannels(mp, k.groups)
			p.pointwiseGroup(pwIn, pwOut, pwSc, buf, share, c0, c1)
			k.dw.depthwisePlanes(buf, c0, dwIn, dwOut, dwSc, k.phase, share, c0, c1)
		}
	}
}

// pointwiseGroup computes output channels [c0, c1) of pointwise k (whole
// A panels; one k slice) as worker wi into buf, channel c's plane from
// buf[(c-c0)·outSp] on, with the fused epilogue applied there, a block
// of columns at a time as blocks computes them.
func (k *convKernel) pointwiseGroup(in, out [][]byte, scratch []byte, buf []float32, wi, c0, c1 int) {
	x := k.input(in, scratch)
	pack := f32s(scratch)[k.bOff+wi*k.per:][:k.per]
	p0, p1 := c0/gemmMR, ceilDiv(c1, gemmMR)
	rows := c1 - c0
	for j0 := 0; j0 < k.outSp; j0 += k.nc {
		ncb := min(k.nc, k.outSp-j0)
		g := gemm{m: rows, n: ncb, k: k.kdim, b: pack, c: buf[j0:], ldc: k.outSp, lim: k.lim,
			a: k.wPre[p0*k.kdim*gemmMR:], mt: k.blockMT(p1-p0, rows, ncb), nt: ceilDiv(ncb, gemmNR)}
		k.pointwiseB(&g, pack, x[j0:], k.kdim, ncb)
		if k.hasBias {
			g.rowBias = f32s(in[2])[c0:]
		}
		if k.fuse == nil {
			g.run(0, g.tiles())
			continue
		}
		for t := range g.tiles() {
			g.run(t, t+1)
			i0, i1, t0, t1 := g.tileRect(t)
			k.fuse.inPlace(buf[i0*k.outSp+j0+t0:], k.outSp, in, f32s(out[2]), wi, c0+i0, c0+i1, j0+t0, j0+t1)
		}
	}
}
