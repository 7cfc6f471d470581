package cpu

import "github.com/berth-ml/berth/ir"

// attentionKernel is a head's attention as one step: the scores S =
// Q·K (the first product, with its epilogue: the scale, a constant
// mask; then perhaps a padding mask's Add), the probabilities P =
// softmax(S) along S's rows, and O = P·V (the second product), head
// after head on each worker. A worker keeps
// its head's S (a block of S's rows at a time, for long sequences) in a
// buffer of its own, which stays in its cache from the first product
// through the softmax into the packing of the second, so the scores of
// all the heads are never written, the scratch stays bounded however
// long the sequence, and the three steps need no barriers between them.
//
// Each part runs the code its own step would (the pair packing of
// matmulKernel, its epilogue, the Add's loop, softmaxRow), so the output
// has the same bits as the steps give.
type attentionKernel struct {
	qk, pv *matmulKernel
	log    bool // LogSoftmax
	// The step's slots: the scores' outputs (qkOut of them; the
	// epilogue's registers are out[2]), the mask at in[maskIn], the
	// values at in[vIn], the output at out[oOut].
	qkOut, maskIn, vIn, oOut int
	// The mask, when the scores pass through an Add of one: add is the
	// Add's loop, maskFirst its operands' order, and maskStr the mask's
	// strides along the scores' dimensions maskDims.
	add               binFn[float32, float32]
	maskFirst         bool
	maskDims, maskStr []int
	// Where each head's operands lie in the tensors the step binds: the
	// queries, keys, values and output (see headView).
	q, kt, v, o headView
	// rows is how many rows of a head's scores a worker computes at a
	// time (all of them unless they would take more than
	// attentionBlockBytes). Each worker's area is per floats: a head's
	// packed keys, from vAt its packed values, from aAt a block's packed
	// queries or probabilities, from sAt the block's scores.
	rows, per, vAt, aAt, sAt int
}

// attentionBlockBytes bounds one block of scores: a head's whole scores
// up to 256² of them; for longer sequences, blocks of fewer rows.
const attentionBlockBytes = 256 << 10

// headView is where the matrices of an operand lie: head h's from off[h]
// on, its rows rs and its columns cs elements apart.
type headView struct {
	off    []int
	rs, cs int
}

// packed is the view of a batch of matrices of rows×cols stored one
// after the other, with elements (i, j) at i·rs + j·cs of each.
func packed(batch, rows, cols, rs, cs int) headView {
	v := headView{off: make([]int, batch), rs: rs, cs: cs}
	for h := range v.off {
		v.off[h] = h * rows * cols
	}
	return v
}

// A stridedView is how an operand of fuseAttention lies in the tensor that the
// step binds in its place, where a Transpose between the two is folded
// into the step (the heads split from a projection's output, or merged
// back into one): Shape is the operand's (the Transpose's output, or its
// input for the output) and Strides the distance in the bound tensor
// between neighbours along each of its dimensions.
type stridedView struct {
	Shape   ir.Shape
	Strides []int
}

// heads is v's view of a batch of rows×cols matrices, where v's leading
// dimensions are the batch's; ok is false where v does not fit.
func (v *stridedView) heads(batch, rows, cols int) (hv headView, ok bool) {
	r := v.Shape.Rank()
	if r < 2 || len(v.Strides) != r || int(v.Shape[r-2]) != rows || int(v.Shape[r-1]) != cols ||
		int(v.Shape.Elements()) != batch*rows*cols {
		return headView{}, false
	}
	dims := make([]int, r-2)
	for i := range dims {
		dims[i] = int(v.Shape[i])
	}
	hv = headView{off: make([]int, batch), rs: v.Strides[r-2], cs: v.Strides[r-1]}
	for h := range hv.off {
		hv.off[h] = offsetOf(h, dims, v.Strides)
	}
	return hv, true
}

// offsetOf is where element i of a row-major array of shape dims lies in
// a tensor whose neighbours along dimension d are strides[d] apart.
func offsetOf(i int, dims, strides []int) int {
	off := 0
	for d := len(dims) - 1; d >= 0 && i > 0; d-- {
		off += i % dims[d] * strides[d]
		i /= dims[d]
	}
	return off
}

// attentionSteps are the steps fuseAttention merges, in the order their
// slots are bound.
type attentionSteps struct {
	// Scores is a batch of products of two activations, a head each,
	// perhaps with an epilogue of constant operands (a scale, a mask); it
	// binds In inputs and Out outputs.
	Scores  Kernel
	In, Out int
	// Mask, if not nil, is an Add of an activation (a padding mask) to
	// the scores, of shape MaskShape broadcast to ScoresShape; MaskFirst
	// says that the mask is the Add's first input.
	Mask                   Kernel
	MaskShape, ScoresShape ir.Shape
	MaskFirst              bool
	// Softmax is a Softmax or LogSoftmax along the rows of the scores
	// (after the mask), Values the products of its result, as A, by a
	// second activation.
	Softmax, Values Kernel
	// The views of the queries (Scores' A), the keys (its B), the values
	// (Values' B) and the output (Values' result) where the step binds
	// another tensor in their place; nil where it binds their own.
	Q, K, V, O *stridedView
}

// fuseAttention returns one kernel that runs st head by head on up to
// threads workers, with the scratch it needs; ok is false where the steps
// do not fit that form. The kernel binds the slots of each step of st in
// turn.
func fuseAttention(st attentionSteps, threads int) (k Kernel, bytes int64, ok bool) {
	a, ok1 := st.Scores.(*matmulKernel)
	s, ok2 := st.Softmax.(*softmaxKernel)
	b, ok3 := st.Values.(*matmulKernel)
	if !ok1 || !ok2 || !ok3 {
		return nil, 0, false
	}
	threads = max(threads, 1)
	// Both products pack pair by pair (each head its own operands, two
	// heads a worker at least), the scores' rows are the softmax's
	// vectors, and the second product reads them as they lie.
	if a.pair == 0 || b.pair == 0 || !fusedAlone(a.fuse) || b.fuse != nil ||
		s.str != 1 || s.n != a.n || s.outer != a.batch*a.m ||
		b.batch != a.batch || b.m != a.m || b.k != a.n || b.aRS != a.n || b.aCS != 1 || b.alpha != 1 {
		return nil, 0, false
	}
	rows := a.m
	if 4*a.m*a.n > attentionBlockBytes {
		rows = max(gemmMR, attentionBlockBytes/(4*a.n)/gemmMR*gemmMR)
	}
	vAt := roundUp(a.bSize, alignment/4)
	aAt := vAt + roundUp(b.bSize, alignment/4)
	sAt := aAt + roundUp(max(packedASize(rows, a.k), packedASize(rows, a.n)), alignment/4)
	per := roundUp(sAt+rows*a.n, alignment/4)
	ak := &attentionKernel{qk: a, pv: b, log: s.log, qkOut: st.Out, rows: rows, per: per, vAt: vAt, aAt: aAt, sAt: sAt,
		q:  packed(a.batch, a.m, a.k, a.aRS, a.aCS),
		kt: packed(a.batch, a.k, a.n, a.bRS, a.bCS),
		v:  packed(b.batch, b.k, b.n, b.bRS, b.bCS),
		o:  packed(b.batch, b.m, b.n, b.n, 1),
	}
	for _, f := range []struct {
		view       *stridedView
		hv         *headView
		rows, cols int
	}{{st.Q, &ak.q, a.m, a.k}, {st.K, &ak.kt, a.k, a.n}, {st.V, &ak.v, b.k, b.n}, {st.O, &ak.o, b.m, b.n}} {
		if f.view != nil {
			hv, ok := f.view.heads(a.batch, f.rows, f.cols)
			if !ok {
				return nil, 0, false
			}
			*f.hv = hv
		}
	}
	if ak.o.cs != 1 {
		return nil, 0, false
	}
	// The softmax's and the second product's slots follow the scores'
	// (and the mask's).
	ak.vIn, ak.oOut = st.In+2, st.Out+1
	if st.Mask != nil {
		add, ok := st.Mask.(*binKernel[float32, float32])
		if !ok || add.nin != 2 || !ak.maskStrides(st.MaskShape, st.ScoresShape) {
			return nil, 0, false
		}
		ak.add, ak.maskIn, ak.maskFirst = add.fn, st.In+1, st.MaskFirst
		if st.MaskFirst {
			ak.maskIn = st.In
		}
		ak.vIn, ak.oOut = st.In+4, st.Out+2
	}
	return ak, int64(4 * threads * per), true
}

// maskStrides sets the mask's strides along the scores' dimensions (0
// where it broadcasts) for a mask of shape ms over scores of shape ss,
// and reports whether ms broadcasts to ss and the scores' rows are the
// heads' (the last two dimensions m × n, the others the heads').
func (k *attentionKernel) maskStrides(ms, ss ir.Shape) bool {
	r := ss.Rank()
	if ms.Rank() > r || r < 2 || int(ss[r-1]) != k.qk.n || int(ss[r-2]) != k.qk.m || int(ss.Elements()) != k.qk.batch*k.qk.m*k.qk.n {
		return false
	}
	k.maskDims, k.maskStr = make([]int, r), make([]int, r)
	stride := 1
	for i := r - 1; i >= 0; i-- {
		k.maskDims[i] = int(ss[i])
		j := i - (r - ms.Rank())
		if j < 0 {
			continue
		}
		switch ms[j] {
		case 1:
		case ss[i]:
			k.maskStr[i] = stride
		default:
			return false
		}
		stride *= int(ms[j])
	}
	return true
}

// maskRow is the mask's values for row row of the scores (the heads'
// rows one after the other) and their stride (0: one value).
func (k *attentionKernel) maskRow(mask []float32, row int) ([]float32, int) {
	r := len(k.maskDims)
	return mask[offsetOf(row, k.maskDims[:r-1], k.maskStr):], k.maskStr[r-1]
}

func (k *attentionKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	qk := k.qk
	// One item per worker: each its own area and registers.
	p := min(w.Threads(), len(scratch)/4/k.per, qk.batch, w.parts(2*qk.batch*qk.m*qk.n*qk.k/8))
	if qk.fuse != nil {
		p = min(p, qk.fuse.shares)
	}
	p = max(p, 1)
	w.forArgs(p, p, k, args{int64(p)}, in, out, scratch)
}

// rangeArgs runs workers [lo, hi) of a[0]: each its share of the heads.
func (k *attentionKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	p, batch := int(a[0]), k.qk.batch
	s := f32s(scratch)
	for wi := lo; wi < hi; wi++ {
		k.heads(in, out, s[wi*k.per:][:k.per], wi*batch/p, (wi+1)*batch/p, wi)
	}
}

// heads computes heads [lo, hi) on worker wi in its area buf: for each,
// it packs the keys and values, then takes the queries k.rows at a time
// through the scores, the softmax and the second product.
func (k *attentionKernel) heads(in, out [][]byte, buf []float32, lo, hi, wi int) {
	qk, pv := k.qk, k.pv
	q, kt := f32s(in[0]), f32s(in[1])
	v, o := f32s(in[k.vIn]), f32s(out[k.oOut])
	var mask []float32
	if k.add != nil {
		mask = f32s(in[k.maskIn])
	}
	var work []float32
	if qk.fuse != nil {
		work = f32s(out[2])
	}
	m, n := qk.m, qk.n
	kp, vp, ap := buf[:qk.bSize], buf[k.vAt:][:pv.bSize], buf[k.aAt:k.sAt]
	for h := lo; h < hi; h++ {
		packB(kp, kt[k.kt.off[h]:], qk.k, n, k.kt.rs, k.kt.cs, 0, qk.panelsB())
		packB(vp, v[k.v.off[h]:], pv.k, pv.n, k.v.rs, k.v.cs, 0, pv.panelsB())
		for r0 := 0; r0 < m; r0 += k.rows {
			rows := min(k.rows, m-r0)
			sc := buf[k.sAt:][:rows*n]
			packA(ap, q[k.q.off[h]+r0*k.q.rs:], rows, qk.k, k.q.rs, k.q.cs, qk.alpha, 0, ceilDiv(rows, gemmMR))
			mt, nt := gemmTiles(rows, n, 1)
			g := gemm{m: rows, n: n, k: qk.k, ldc: n, mt: mt, nt: nt, kc: qk.depth(), a: ap, b: kp, c: sc, lim: qk.lim}
			g.run(0, g.tiles())
			r := h*m + r0 // the block's first row among all the heads' rows
			if qk.fuse != nil {
				qk.fuse.inPlace(sc, n, in, work, wi, r, r+rows, 0, n)
			}
			for i := range rows {
				row := sc[i*n : (i+1)*n]
				if k.add != nil {
					mv, ms := k.maskRow(mask, r+i)
					if k.maskFirst {
						k.add(row, mv, row, ms, 1)
					} else {
						k.add(row, row, mv, 1, ms)
					}
				}
				softmaxRow(row, row, k.log)
			}
			packA(ap, sc, rows, n, n, 1, 1, 0, ceilDiv(rows, gemmMR))
			mt, nt = gemmTiles(rows, pv.n, 1)
			g = gemm{m: rows, n: pv.n, k: n, ldc: k.o.rs, mt: mt, nt: nt, kc: pv.depth(), a: ap, b: vp, c: o[k.o.off[h]+r0*k.o.rs:], lim: pv.lim}
			g.run(0, g.tiles())
		}
	}
}
