package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/berth-ml/berth/ir"
)

// Attention as exported from PyTorch is five to nine nodes a layer: the
// Transposes that split the queries, keys and values into heads, the
// scores Q·Kᵀ, their scale, a mask, the Softmax along their rows, the
// product of the probabilities by V, and the Transpose that merges the
// heads again. Run one by one they write the scores and probabilities of
// every head to memory and read them back. Before planning, Compile
// rewrites each such chain (fuseAttention) into one Attend node of this
// backend's own:
//
//   - the scores are a MatMul of two float32 tensors of rank 3 or 4
//     (heads of 32, 64 or 128 values, the values' heads as wide), each
//     perhaps a Transpose's output that nothing else reads;
//   - then, each read by the last alone, perhaps a Mul or Div by a
//     constant scalar (the scale), perhaps a mask: an Add of a float32
//     tensor that broadcasts to the scores (a padding mask, a causal
//     bias), or a Where of a boolean tensor that keeps the scores on one
//     side and puts a constant scalar on the other (masked_fill);
//   - a Softmax along the last axis, and a MatMul of the probabilities
//     by V (perhaps a Transpose's output too), whose output a Transpose
//     alone may read.
//
// The node reads the queries, keys and values where the Transposes would
// have read them (strides in the attribute q, k and v), and writes its
// output where the Transpose after it would have (strides o): those
// Transposes launch nothing, and the scores and probabilities take no
// bytes of the arena. Its kernel (attend_mma in attendSource) runs on
// the tensor cores: 64 query rows of one head a block, keys and values
// 64 at a time into shared memory, each row's running maximum, sum and
// weighted values kept as it goes (the online softmax), so that the
// scores never leave the registers. Its operands are rounded to 16 bits
// as the unfused products round theirs, its sums are float32, so the
// results agree with the unfused nodes' to the precision's rounding.
//
// Only under 16-bit precision (BF16, F16) with cuBLAS, on a GPU with the
// tensor-core products of sm_80: a float32 kernel of the same shape on
// the CUDA cores was slower than the unfused nodes, whose products run on
// cuBLAS (BERT-base at batch 1, H200: 1.84 ms against 1.54), and was
// dropped.
//
// The node's inputs are q, k, v and the mask (or none); its
// attributes dims (B, H, S, T, D, E: batch, heads, queries, keys, values
// of a query or key head, values of a value head), the strides q, k, v,
// o and m (elements, by batch, head, row and value or key), scale_op (0
// none, 1 Mul, 2 Div) with scale, and mask_op (0 none, 1 Add, 2 the
// Where's scalar fill where the condition holds, 3 where it does not)
// with fill, and offsets (elements), where q, k and v are one tensor
// (mergeProjections), where each starts in it.

// attendHead reports whether attend_mma takes heads of d values.
func attendHead(d int64) bool { return d == 32 || d == 64 || d == 128 }

// attendWarps is the warps of an attend block, attendRows the query rows
// of each.
const attendWarps, attendRows = 4, 16

// The operations on the scores.
const (
	scaleNone, scaleMul, scaleDiv = 0, 1, 2
	maskNone, maskAdd             = 0, 1
	maskWhereTrue, maskWhereFalse = 2, 3
)

// fuseAttention returns g with every attention it finds as one Attend
// node, or g itself where there is none. Tensor ids stay as they are;
// the tensors of the nodes folded away are left without a producer.
func fuseAttention(g *ir.Graph) *ir.Graph {
	cons, isOut, fused, gone := rewriteOf(g)
	for i := range g.Nodes {
		a, members := matchAttention(g, cons, isOut, i)
		if a == nil || slices.ContainsFunc(members, func(j int) bool { return gone[j] || fused[j] != nil }) {
			continue
		}
		// At the last member's place: every input is ready there, and
		// nothing between the members reads what they wrote.
		last := slices.Max(members)
		for _, j := range members {
			gone[j] = j != last
		}
		fused[last] = a
	}
	return rebuilt(g, fused, gone)
}

// rewriteOf is what a rewrite of g before planning starts from: g's
// consumers and output mask, and, a node each, the node it becomes (nil:
// itself) and whether it is dropped.
func rewriteOf(g *ir.Graph) (cons [][]int, isOut []bool, fused []*ir.Node, gone []bool) {
	return g.Consumers(), g.OutputMask(), make([]*ir.Node, len(g.Nodes)), make([]bool, len(g.Nodes))
}

// rebuilt is rebuild(g, fused, gone), or g itself where no node changes.
func rebuilt(g *ir.Graph, fused []*ir.Node, gone []bool) *ir.Graph {
	if unchanged(fused, gone) {
		return g
	}
	return rebuild(g, fused, gone)
}

// unchanged reports whether a rewrite (rewriteOf) replaces or drops no
// node.
func unchanged(fused []*ir.Node, gone []bool) bool {
	return !slices.Contains(gone, true) && !slices.ContainsFunc(fused, func(n *ir.Node) bool { return n != nil })
}

// rebuild is g with node i replaced by fused[i] (where not nil) and
// dropped where gone[i], the tensors' producers set anew.
func rebuild(g *ir.Graph, fused []*ir.Node, gone []bool) *ir.Graph {
	out := *g
	out.Nodes = make([]ir.Node, 0, len(g.Nodes))
	out.Tensors = slices.Clone(g.Tensors)
	for id := range out.Tensors {
		out.Tensors[id].Producer = -1
	}
	for i := range g.Nodes {
		if gone[i] {
			continue
		}
		n := g.Nodes[i]
		if fused[i] != nil {
			n = *fused[i]
		}
		for _, id := range n.Outputs {
			if id != ir.NoTensor {
				out.Tensors[id].Producer = len(out.Nodes)
			}
		}
		out.Nodes = append(out.Nodes, n)
	}
	return &out
}

// matchAttention returns the Attend node of the attention whose scores
// node i computes, and the nodes it replaces (i among them); else nil.
func matchAttention(g *ir.Graph, cons [][]int, isOut []bool, i int) (*ir.Node, []int) {
	op := func(j int, name string, ins int) bool {
		if j < 0 {
			return false
		}
		n := &g.Nodes[j]
		return n.Op == name && n.DefaultDomain() && len(n.Inputs) == ins && len(n.Outputs) == 1 && n.Outputs[0] != ir.NoTensor
	}
	// only is the one reader of t, or -1.
	only := func(t ir.TensorID) int {
		if t == ir.NoTensor || isOut[t] || len(cons[t]) != 1 {
			return -1
		}
		return cons[t][0]
	}
	float := func(t ir.TensorID) bool { return t != ir.NoTensor && g.Tensor(t).DType == ir.Float32 }
	scalar := func(t ir.TensorID) (float32, bool) {
		c := g.Tensor(t)
		if !c.IsConst() || c.DType != ir.Float32 || c.Shape.Elements() != 1 || len(c.Data) != 4 {
			return 0, false
		}
		return math.Float32frombits(binary.LittleEndian.Uint32(c.Data)), true
	}
	if !op(i, "MatMul", 2) {
		return nil, nil
	}
	qk := &g.Nodes[i]
	y := g.Tensor(qk.Outputs[0])
	r := y.Shape.Rank()
	if r != 3 && r != 4 || !float(qk.Inputs[0]) || !float(qk.Inputs[1]) || y.DType != ir.Float32 {
		return nil, nil
	}
	qt, kt := g.Tensor(qk.Inputs[0]), g.Tensor(qk.Inputs[1])
	S, T := y.Shape[r-2], y.Shape[r-1]
	if qt.Shape.Rank() != r || kt.Shape.Rank() != r {
		return nil, nil
	}
	D := qt.Shape[r-1]
	if kt.Shape[r-2] != D || qt.Shape[r-2] != S || kt.Shape[r-1] != T || !attendHead(D) || S <= 0 || T <= 0 {
		return nil, nil
	}
	a := &ir.Node{Name: qk.Name, Op: "Attend", Domain: cudaDomain, Attrs: ir.Attrs{}}
	members := []int{i}
	cur := qk.Outputs[0]
	next := only(cur)
	// The scale.
	sop, scale := scaleNone, float32(1)
	if op(next, "Mul", 2) || op(next, "Div", 2) {
		n := &g.Nodes[next]
		other := n.Inputs[1]
		if n.Inputs[1] == cur && n.Op == "Mul" {
			other = n.Inputs[0]
		}
		if v, ok := scalar(other); ok && other != cur && (n.Inputs[0] == cur || n.Op == "Mul") && g.Tensor(n.Outputs[0]).Shape.Equal(y.Shape) {
			sop, scale = scaleMul, v
			if n.Op == "Div" {
				sop = scaleDiv
			}
			members = append(members, next)
			cur = n.Outputs[0]
			next = only(cur)
		}
	}
	// The mask.
	mop, fill, mask := maskNone, float32(0), ir.NoTensor
	switch {
	case op(next, "Add", 2):
		n := &g.Nodes[next]
		m := n.Inputs[0]
		if m == cur {
			m = n.Inputs[1]
		}
		if m != cur && float(m) && broadcasts(g.Tensor(m).Shape, y.Shape) && g.Tensor(n.Outputs[0]).Shape.Equal(y.Shape) {
			mop, mask = maskAdd, m
			members = append(members, next)
			cur = n.Outputs[0]
			next = only(cur)
		}
	case op(next, "Where", 3):
		n := &g.Nodes[next]
		c := n.Inputs[0]
		side, other := maskWhereTrue, n.Inputs[1]
		if n.Inputs[1] == cur {
			side, other = maskWhereFalse, n.Inputs[2]
		}
		v, ok := scalar(other)
		if ok && c != cur && other != cur && (n.Inputs[1] == cur || n.Inputs[2] == cur) && g.Tensor(c).DType == ir.Bool &&
			broadcasts(g.Tensor(c).Shape, y.Shape) && g.Tensor(n.Outputs[0]).Shape.Equal(y.Shape) {
			mop, fill, mask = side, v, c
			members = append(members, next)
			cur = n.Outputs[0]
			next = only(cur)
		}
	}
	// The softmax along the keys.
	if !op(next, "Softmax", 1) {
		return nil, nil
	}
	opset := g.Opset()
	if opset == 0 {
		opset = 17
	}
	if _, dim, inner, err := ir.SoftmaxRows(&g.Nodes[next], opset, y.Shape); err != nil || dim != T || inner != 1 {
		return nil, nil
	}
	members = append(members, next)
	probs := g.Nodes[next].Outputs[0]
	pvi := only(probs)
	if !op(pvi, "MatMul", 2) || g.Nodes[pvi].Inputs[0] != probs || g.Nodes[pvi].Inputs[1] == probs || !float(g.Nodes[pvi].Inputs[1]) {
		return nil, nil
	}
	pv := &g.Nodes[pvi]
	vt, ot := g.Tensor(pv.Inputs[1]), g.Tensor(pv.Outputs[0])
	if vt.Shape.Rank() != r || ot.Shape.Rank() != r || vt.Shape[r-2] != T {
		return nil, nil
	}
	E := vt.Shape[r-1]
	if E != D || ot.Shape[r-2] != S || ot.Shape[r-1] != E || ot.DType != ir.Float32 {
		return nil, nil
	}
	// Batch axes: the scores', which the operands broadcast to.
	for d := range r - 2 {
		for _, s := range []ir.Shape{qt.Shape, kt.Shape, vt.Shape} {
			if s[d] != y.Shape[d] && s[d] != 1 {
				return nil, nil
			}
		}
		if ot.Shape[d] != y.Shape[d] {
			return nil, nil
		}
	}
	members = append(members, pvi)
	// operand reads t (of node reader) where a Transpose that only the
	// reader reads would have: its input and the strides, by t's axes
	// (0 along broadcast batch axes).
	operand := func(t ir.TensorID, reader int) (ir.TensorID, []int64) {
		st := g.Tensor(t).Shape.Strides()
		base := t
		if p := g.Tensor(t).Producer; op(p, "Transpose", 1) && only(t) == reader && float(g.Nodes[p].Inputs[0]) {
			in := g.Tensor(g.Nodes[p].Inputs[0])
			if perm, err := ir.ResolvePerm(&g.Nodes[p], in.Shape.Rank()); err == nil && len(perm) == r {
				ist := in.Shape.Strides()
				for d, q := range perm {
					st[d] = ist[q]
				}
				base = g.Nodes[p].Inputs[0]
				members = append(members, p)
			}
		}
		for d := range r - 2 {
			if g.Tensor(t).Shape[d] == 1 {
				st[d] = 0
			}
		}
		return base, st
	}
	qb, qs := operand(qk.Inputs[0], i)
	kb, ks := operand(qk.Inputs[1], i)
	vb, vs := operand(pv.Inputs[1], pvi)
	// The keys by (batch, head, key, value): the last two axes swapped.
	ks[r-2], ks[r-1] = ks[r-1], ks[r-2]
	// The output, or the Transpose that alone reads it.
	out, os := pv.Outputs[0], ot.Shape.Strides()
	if tr := only(out); op(tr, "Transpose", 1) {
		if perm, err := ir.ResolvePerm(&g.Nodes[tr], r); err == nil && len(perm) == r {
			out = g.Nodes[tr].Outputs[0]
			ys := g.Tensor(out).Shape.Strides()
			for d, q := range perm {
				os[q] = ys[d]
			}
			members = append(members, tr)
		}
	}
	var ms []int64
	if mask != ir.NoTensor {
		ms = broadcastStrides(g.Tensor(mask).Shape, y.Shape)
	} else {
		ms = make([]int64, r)
	}
	// By batch and head: a rank-3 attention has one batch.
	B, H := int64(1), y.Shape[0]
	by4 := func(st []int64) []int64 {
		if r == 3 {
			return append([]int64{0}, st...)
		}
		return st
	}
	if r == 4 {
		B, H = y.Shape[0], y.Shape[1]
	}
	a.Inputs = []ir.TensorID{qb, kb, vb, mask}
	a.Outputs = []ir.TensorID{out}
	ints := func(v []int64) ir.Attr { return ir.Attr{Kind: ir.AttrInts, Ints: v} }
	a.Attrs = ir.Attrs{
		"dims": ints([]int64{B, H, S, T, D, E}),
		"q":    ints(by4(qs)), "k": ints(by4(ks)), "v": ints(by4(vs)), "o": ints(by4(os)), "m": ints(by4(ms)),
		"scale_op": {Kind: ir.AttrInt, Int: int64(sop)}, "scale": {Kind: ir.AttrFloat, Float: scale},
		"mask_op": {Kind: ir.AttrInt, Int: int64(mop)}, "fill": {Kind: ir.AttrFloat, Float: fill},
	}
	return a, members
}

// broadcasts reports whether shape s broadcasts to out (numpy's rules,
// s of no higher rank).
func broadcasts(s, out ir.Shape) bool {
	if s.Rank() > out.Rank() {
		return false
	}
	off := out.Rank() - s.Rank()
	for d, v := range s {
		if v != 1 && v != out[off+d] {
			return false
		}
	}
	return true
}

// buildAttend launches an Attend node (fuseAttention).
func buildAttend(c *buildContext) error {
	n := c.n
	if len(n.Inputs) != 4 || len(n.Outputs) != 1 {
		return c.errorf("%d inputs and %d outputs, want q, k, v and a mask (or none), and one output", len(n.Inputs), len(n.Outputs))
	}
	dims := n.Attrs.Ints("dims", nil)
	if len(dims) != 6 {
		return c.errorf("dims %v: want B, H, S, T, D, E", dims)
	}
	B, H, S, T, D, E := dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]
	if B <= 0 || H <= 0 || S <= 0 || T <= 0 || !attendHead(D) || E != D || B > 65535 || H > 65535 || ceilDiv(S, attendWarps*attendRows) > math.MaxInt32 {
		return c.errorf("dims %v are not an attention this backend runs", dims)
	}
	if c.half == nil || !c.half.mma {
		return c.errorf("the fused attention runs on 16-bit tensor cores only (BF16 or F16 precision, cuBLAS, sm_80 or later)")
	}
	sop, mop := n.Attrs.Int("scale_op", -1), n.Attrs.Int("mask_op", -1)
	if sop < scaleNone || sop > scaleDiv || mop < maskNone || mop > maskWhereFalse || (mop == maskNone) != (n.Inputs[3] == ir.NoTensor) {
		return c.errorf("scale_op %d, mask_op %d: not an attention this backend runs", sop, mop)
	}
	// Every element read or written lies in its tensor: extents by
	// (batch, head, row, column).
	type operand struct {
		name   string
		id     ir.TensorID
		extent [4]int64
		dtype  ir.DType
	}
	ops := []operand{
		{"q", n.Inputs[0], [4]int64{B, H, S, D}, ir.Float32},
		{"k", n.Inputs[1], [4]int64{B, H, T, D}, ir.Float32},
		{"v", n.Inputs[2], [4]int64{B, H, T, E}, ir.Float32},
		{"o", n.Outputs[0], [4]int64{B, H, S, E}, ir.Float32},
	}
	if mop == maskAdd {
		ops = append(ops, operand{"m", n.Inputs[3], [4]int64{B, H, S, T}, ir.Float32})
	} else if mop != maskNone {
		ops = append(ops, operand{"m", n.Inputs[3], [4]int64{B, H, S, T}, ir.Bool})
	}
	// Where the queries, keys and values are columns of one product
	// (mergeProjections), each starts at its offset.
	offsets := n.Attrs.Ints("offsets", []int64{0, 0, 0})
	if len(offsets) != 3 || slices.ContainsFunc(offsets, func(v int64) bool { return v < 0 }) {
		return c.errorf("offsets %v", offsets)
	}
	var strides [5][4]int64
	for k, o := range ops {
		st := n.Attrs.Ints(o.name, nil)
		if len(st) != 4 || o.id == ir.NoTensor {
			return c.errorf("%s: strides %v", o.name, st)
		}
		t := c.g.Tensor(o.id)
		if t.DType != o.dtype {
			return c.errorf("%s is %s, want %s", o.name, t.DType, o.dtype)
		}
		last := int64(0)
		if k < 3 {
			last = offsets[k]
		}
		for d, s := range st {
			if s < 0 {
				return c.errorf("%s: negative stride %d", o.name, s)
			}
			last += (o.extent[d] - 1) * s
		}
		if last >= t.Shape.Elements() {
			return c.errorf("%s reads element %d of %d", o.name, last, t.Shape.Elements())
		}
		strides[slices.Index([]string{"q", "k", "v", "o", "m"}, o.name)] = [4]int64(st)
	}
	// The scale as a factor: a Div's divisor by its reciprocal (the
	// quotients differ by rounding at most, far below the 16-bit operands').
	mul := float32(1)
	switch scale := n.Attrs.Float("scale", 1); sop {
	case scaleMul:
		mul = scale
	case scaleDiv:
		mul = 1 / scale
	}
	kernel := fmt.Sprintf("attend_mma_%d", D)
	if c.halfOut(0) {
		kernel += "_h"
	}
	var w []uint64
	for _, v := range dims {
		w = append(w, uint64(v))
	}
	for _, st := range strides {
		for _, v := range st {
			w = append(w, uint64(v))
		}
	}
	// q, k and v held in 16 bits (written so by their producers, see
	// analyzeFusion) are read as they are: the kernel rounds the others
	// to the same values as it loads them.
	var qkv [3]arg
	var h16 int32
	for i := range qkv {
		qkv[i] = at(c.inArg(i), 4*offsets[i])
		if c.half.stored[n.Inputs[i]] {
			qkv[i] = arg{kind: argTensor, id: n.Inputs[i], off: 2 * offsets[i], half: true}
			h16 |= 1 << i
		}
	}
	l := launch{node: c.node, module: attendModule, kernel: kernel,
		grid: [3]uint32{uint32(ceilDiv(S, attendWarps*attendRows)), uint32(H), uint32(B)}, block: [3]uint32{attendWarps * 32, 1, 1},
		args: []arg{qkv[0], qkv[1], qkv[2], c.optIn(3), c.outArg(0), words(w),
			f32(mul), f32(n.Attrs.Float("fill", 0)), i32(int32(mop)), i32(halfMode(c.half.prec)), i32(h16)}}
	c.launches = append(c.launches, l)
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

var attendModule = &source{"attend.cu", attendSource}

// attendSource is the fused attention (see fuseAttention).
const attendSource = common + halfCommon + mmaCommon + `
struct Attend { i64 B, H, S, T, D, E; i64 q[4], k[4], v[4], o[4], m[4]; };
#define AW 4
template <typename O> __device__ __forceinline__ O attend_out(float v, int mode);
template <> __device__ __forceinline__ float attend_out<float>(float v, int) { return v; }
template <> __device__ __forceinline__ u16 attend_out<u16>(float v, int mode) { return round_h(v, mode); }
// attend_mma is the attention on tensor cores (sm_80's mma.sync
// m16n8k16 with float32 sums), heads of DH values (D = E = DH): a warp
// takes 16 query rows, each thread rows g and g + 8 of them (g = lane /
// 4), as the products' fragments lay them out. The scores of 64 keys stay
// in registers (eight 16×8 tiles), the probabilities go from them into the
// A operand of the product by V unchanged in place, and the output's
// sums are rescaled row by row as the running maxima grow.
// attend_ld is element at of x as a 16-bit value: as it is where h says
// x holds 16-bit values, else rounded from float32.
__device__ __forceinline__ u16 attend_ld(const void* x, i64 at, bool h, int mode) {
	return h ? ((const u16*)x)[at] : round_h(((const float*)x)[at], mode);
}
// attend_q2 is the pair of q's elements (row, col) and (row, col + 1)
// (zeros past the last row) as the A fragment packs them.
__device__ __forceinline__ u32 attend_q2(const void* q, i64 qo, bool h, const Attend& p, i64 row, int col, int mode) {
	if (row >= p.S) return 0u;
	const i64 at = qo + row * p.q[2] + col * p.q[3];
	return (u32)attend_ld(q, at, h, mode) | ((u32)attend_ld(q, at + p.q[3], h, mode) << 16);
}
template <int DH, typename O>
__device__ void attend_mma_t(const void* __restrict__ q, const void* __restrict__ k, const void* __restrict__ v,
		const void* __restrict__ mask, O* __restrict__ out, const Attend& p, float mul, float fill, int mop, int mode, int h16) {
	// Keys and values KT at a time; the values transposed, so that the
	// product's B fragments are pairs of adjacent keys.
	constexpr int KT = 64;
	__shared__ __align__(16) u16 Ks[KT][DH + 8];
	__shared__ __align__(16) u16 Vt[DH][KT + 8];
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tq = lane & 3;
	const i64 b = blockIdx.z, h = blockIdx.y;
	const i64 r0 = (i64)blockIdx.x * (AW * 16) + warp * 16 + g, r1 = r0 + 8;
	// q, k and v by element offset, each in 16 bits where h16 says.
	const i64 qo = b * p.q[0] + h * p.q[1], ko = b * p.k[0] + h * p.k[1], vo = b * p.v[0] + h * p.v[1];
	const bool hq = (h16 & 1) != 0, hk = (h16 & 2) != 0, hv = (h16 & 4) != 0;
	const i64 mrow0 = b * p.m[0] + h * p.m[1] + r0 * p.m[2], mrow1 = mrow0 + 8 * p.m[2];
	// k and v in 16 bits with rows of whole, aligned 16-byte pieces are
	// copied into shared memory eight values a load.
	const bool vec = hk && hv && p.k[3] == 1 && p.v[3] == 1 && ((p.k[2] | p.v[2] | ko | vo) & 7) == 0 &&
		(((u64)k | (u64)v) & 15) == 0;
	// The scores are kept in base 2 (times log2 e): exp2 of their
	// differences is the softmax's exp.
	const float L2E = 1.4426950408889634f, mulL2E = mul * L2E;
	u32 qa[DH / 16][4];
	#pragma unroll
	for (int kk = 0; kk < DH / 16; kk++) {
		const int c0 = kk * 16 + 2 * tq;
		qa[kk][0] = attend_q2(q, qo, hq, p, r0, c0, mode);
		qa[kk][1] = attend_q2(q, qo, hq, p, r1, c0, mode);
		qa[kk][2] = attend_q2(q, qo, hq, p, r0, c0 + 8, mode);
		qa[kk][3] = attend_q2(q, qo, hq, p, r1, c0 + 8, mode);
	}
	float o[DH / 8][4];
	#pragma unroll
	for (int e = 0; e < DH / 8; e++) o[e][0] = o[e][1] = o[e][2] = o[e][3] = 0.f;
	float m0 = NEG_INF, m1 = NEG_INF, l0 = 0.f, l1 = 0.f;
	for (i64 t0 = 0; t0 < p.T; t0 += KT) {
		__syncthreads();
		if (vec) {
			constexpr int R8 = DH / 8;
			#pragma unroll
			for (int f = threadIdx.x; f < KT * R8; f += AW * 32) {
				const int j = f / R8, d = (f % R8) * 8;
				const i64 t = t0 + j;
				uint4 kx = make_uint4(0u, 0u, 0u, 0u), vx = kx;
				if (t < p.T) {
					kx = *(const uint4*)((const u16*)k + ko + t * p.k[2] + d);
					vx = *(const uint4*)((const u16*)v + vo + t * p.v[2] + d);
				}
				*(uint4*)&Ks[j][d] = kx;
				Vt[d][j] = (u16)vx.x;
				Vt[d + 1][j] = (u16)(vx.x >> 16);
				Vt[d + 2][j] = (u16)vx.y;
				Vt[d + 3][j] = (u16)(vx.y >> 16);
				Vt[d + 4][j] = (u16)vx.z;
				Vt[d + 5][j] = (u16)(vx.z >> 16);
				Vt[d + 6][j] = (u16)vx.w;
				Vt[d + 7][j] = (u16)(vx.w >> 16);
			}
		} else {
			for (int j = warp; j < KT; j += AW) {
				const i64 t = t0 + j;
				const bool in = t < p.T;
				#pragma unroll
				for (int d = lane; d < DH; d += 32) {
					Ks[j][d] = in ? attend_ld(k, ko + t * p.k[2] + d * p.k[3], hk, mode) : (u16)0;
					Vt[d][j] = in ? attend_ld(v, vo + t * p.v[2] + d * p.v[3], hv, mode) : (u16)0;
				}
			}
		}
		__syncthreads();
		float s[KT / 8][4];
		#pragma unroll
		for (int n = 0; n < KT / 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
		#pragma unroll
		for (int kk = 0; kk < DH / 16; kk++) {
			#pragma unroll
			for (int n = 0; n < KT / 8; n++) {
				const u32 b0 = *(const u32*)&Ks[n * 8 + g][kk * 16 + 2 * tq];
				const u32 b1 = *(const u32*)&Ks[n * 8 + g][kk * 16 + 2 * tq + 8];
				mma16816(s[n], qa[kk], b0, b1, mode);
			}
		}
		float mx0 = NEG_INF, mx1 = NEG_INF;
		if (mop == 0 && t0 + KT <= p.T) {
			// A whole tile of keys and no mask: the scores as they are.
			#pragma unroll
			for (int n = 0; n < KT / 8; n++) {
				s[n][0] *= mulL2E;
				s[n][1] *= mulL2E;
				s[n][2] *= mulL2E;
				s[n][3] *= mulL2E;
				mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
				mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
			}
		} else {
			#pragma unroll
			for (int n = 0; n < KT / 8; n++) {
				#pragma unroll
				for (int i = 0; i < 4; i++) {
					const bool top = i < 2;
					const i64 t = t0 + n * 8 + 2 * tq + (i & 1);
					float x = s[n][i] * mul;
					if (mop != 0 && (top ? r0 : r1) < p.S && t < p.T) {
						const i64 at = (top ? mrow0 : mrow1) + t * p.m[3];
						if (mop == 1) x = x + ((const float*)mask)[at];
						else if ((((const u8*)mask)[at] != 0) == (mop == 2)) x = fill;
					}
					x = t < p.T ? x * L2E : NEG_INF;
					s[n][i] = x;
					if (top) mx0 = fmaxf(mx0, x);
					else mx1 = fmaxf(mx1, x);
				}
			}
		}
		mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
		mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
		mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
		mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
		const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
		const float c0 = m0 == NEG_INF ? 0.f : exp2f(m0 - n0), c1 = m1 == NEG_INF ? 0.f : exp2f(m1 - n1);
		float sum0 = 0.f, sum1 = 0.f;
		#pragma unroll
		for (int n = 0; n < KT / 8; n++) {
			#pragma unroll
			for (int i = 0; i < 4; i++) {
				const float nm = i < 2 ? n0 : n1;
				const float e = nm == NEG_INF ? 0.f : exp2f(s[n][i] - nm);
				s[n][i] = e;
				if (i < 2) sum0 += e;
				else sum1 += e;
			}
		}
		sum0 += __shfl_xor_sync(0xffffffffu, sum0, 1);
		sum0 += __shfl_xor_sync(0xffffffffu, sum0, 2);
		sum1 += __shfl_xor_sync(0xffffffffu, sum1, 1);
		sum1 += __shfl_xor_sync(0xffffffffu, sum1, 2);
		l0 = l0 * c0 + sum0;
		l1 = l1 * c1 + sum1;
		m0 = n0;
		m1 = n1;
		#pragma unroll
		for (int e = 0; e < DH / 8; e++) {
			o[e][0] *= c0;
			o[e][1] *= c0;
			o[e][2] *= c1;
			o[e][3] *= c1;
		}
		#pragma unroll
		for (int kk = 0; kk < KT / 16; kk++) {
			const u32 pa[4] = {pack_h(s[2 * kk][0], s[2 * kk][1], mode), pack_h(s[2 * kk][2], s[2 * kk][3], mode),
				pack_h(s[2 * kk + 1][0], s[2 * kk + 1][1], mode), pack_h(s[2 * kk + 1][2], s[2 * kk + 1][3], mode)};
			#pragma unroll
			for (int e = 0; e < DH / 8; e++) {
				const u32 b0 = *(const u32*)&Vt[e * 8 + g][kk * 16 + 2 * tq];
				const u32 b1 = *(const u32*)&Vt[e * 8 + g][kk * 16 + 2 * tq + 8];
				mma16816(o[e], pa, b0, b1, mode);
			}
		}
	}
	#pragma unroll
	for (int e = 0; e < DH / 8; e++) {
		const i64 col = e * 8 + 2 * tq;
		if (r0 < p.S) {
			O* ob = out + b * p.o[0] + h * p.o[1] + r0 * p.o[2];
			ob[col * p.o[3]] = attend_out<O>(o[e][0] / l0, mode);
			ob[(col + 1) * p.o[3]] = attend_out<O>(o[e][1] / l0, mode);
		}
		if (r1 < p.S) {
			O* ob = out + b * p.o[0] + h * p.o[1] + r1 * p.o[2];
			ob[col * p.o[3]] = attend_out<O>(o[e][2] / l1, mode);
			ob[(col + 1) * p.o[3]] = attend_out<O>(o[e][3] / l1, mode);
		}
	}
}
#define ATTEND_MMA(DH) \
extern "C" __global__ void __launch_bounds__(AW * 32) attend_mma_##DH(const void* q, const void* k, const void* v, const void* mask, float* out, Attend p, float mul, float fill, int mop, int mode, int h16) { \
	attend_mma_t<DH, float>(q, k, v, mask, out, p, mul, fill, mop, mode, h16); } \
extern "C" __global__ void __launch_bounds__(AW * 32) attend_mma_##DH##_h(const void* q, const void* k, const void* v, const void* mask, u16* out, Attend p, float mul, float fill, int mop, int mode, int h16) { \
	attend_mma_t<DH, u16>(q, k, v, mask, out, p, mul, fill, mop, mode, h16); }
ATTEND_MMA(32) ATTEND_MMA(64) ATTEND_MMA(128)
`

// mmaCommon is the tensor-core product of the kernels that use it
// (attend_mma, iconv): mma16816 adds the 16×8 product of a 16×16 A
// fragment and a 16×8 B fragment, bf16 (mode 0) or IEEE half (mode 1)
// operands, to float32 sums; pack_h packs two values as one operand
// register.
const mmaCommon = `
__device__ __forceinline__ u32 pack_h(float lo, float hi, int mode) { return (u32)round_h(lo, mode) | ((u32)round_h(hi, mode) << 16); }
__device__ __forceinline__ void mma16816(float* c, const u32* a, u32 b0, u32 b1, int mode) {
#if __CUDA_ARCH__ >= 800
	if (mode)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
			: "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
	__trap();
#endif
}
`
