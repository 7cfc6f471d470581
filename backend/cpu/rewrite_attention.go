package cpu

import (
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// attend finds attention's three steps, the scores (a MatMul of two
// activations, perhaps with its scale and a constant mask as epilogue,
// perhaps followed by an Add of a padding mask that only the softmax
// reads), the Softmax along their rows that only they feed, and the
// MatMul that reads the probabilities as its first operand and is their
// only reader, and merges them into one step where fuseAttention
// takes them: each worker computes one head at a time from its scores to
// its output, and neither the scores nor the probabilities take bytes of
// the arena. The Transposes that split the queries, keys and values into
// heads, and the one that merges the output's heads back, fold into the
// step where it alone reads their output (writes their input): it reads
// the heads from the projections' rows and writes the output's into the
// rows of all the heads, so those tensors take no bytes either and are
// never copied. It runs after pairUp, before planning (index maps the
// graph's tensors to p's, scratch holds each node's scratch bytes and is
// updated).
func (e *Executable) attend(p *plan.Problem, index []int, scratch []int64) {
	g := e.g
	readers := g.Consumers()
	isOut := g.OutputMask()
	// only is the one reader of id, or -1.
	only := func(id ir.TensorID) int {
		if id == ir.NoTensor || isOut[id] || len(readers[id]) != 1 {
			return -1
		}
		return readers[id][0]
	}
	free := func(i int) bool {
		return !e.absorbed[i] && e.prologues[i] == nil && e.merged[i] == nil && len(g.Nodes[i].Outputs) == 1
	}
	// transpose reports whether node t is a Transpose the step may fold.
	transpose := func(t int) bool {
		return t >= 0 && free(t) && e.fusions[t] == nil && g.Nodes[t].Op == "Transpose" && g.Nodes[t].DefaultDomain()
	}
	for s := range g.Nodes {
		if !free(s) || g.Nodes[s].Op != "MatMul" {
			continue
		}
		kqk, y := e.kernels[s], g.Nodes[s].Outputs[0]
		if f := e.fusions[s]; f != nil {
			kqk, y = f.kernel, f.result
		}
		st := attentionSteps{Scores: kqk, ScoresShape: g.Tensor(y).Shape}
		st.In, st.Out = e.stepArity(s)
		more := []int{}
		// A padding mask: an Add of an activation that only the softmax
		// reads.
		scores, next := y, only(y)
		if next >= 0 && free(next) && e.fusions[next] == nil && g.Nodes[next].Op == "Add" && len(g.Nodes[next].Inputs) == 2 {
			ins := g.Nodes[next].Inputs
			first := ins[1] == y
			mask := ins[0]
			if !first {
				mask = ins[1]
			}
			if ins[0] == ins[1] || mask == ir.NoTensor || g.Tensor(mask).IsConst() {
				continue
			}
			st.Mask, st.MaskShape, st.MaskFirst = e.kernels[next], g.Tensor(mask).Shape, first
			more = append(more, next)
			scores = g.Nodes[next].Outputs[0]
			next = only(scores)
		}
		sm := next
		if sm < 0 || !free(sm) || e.fusions[sm] != nil || g.Nodes[sm].Op != "Softmax" && g.Nodes[sm].Op != "LogSoftmax" {
			continue
		}
		probs := g.Nodes[sm].Outputs[0]
		pv := only(probs)
		if pv < 0 || !free(pv) || e.fusions[pv] != nil || g.Nodes[pv].Op != "MatMul" || g.Nodes[pv].Inputs[0] != probs {
			continue
		}
		st.Softmax, st.Values = e.kernels[sm], e.kernels[pv]
		// The Transposes that split the heads of the queries, keys and
		// values out of their projections, and merge the output's back,
		// where only this step reads or writes their other side.
		var folds []fold
		for _, op := range []struct {
			view   **stridedView
			id     ir.TensorID
			reader int
		}{{&st.Q, g.Nodes[s].Inputs[0], s}, {&st.K, g.Nodes[s].Inputs[1], s}, {&st.V, g.Nodes[pv].Inputs[1], pv}} {
			t := g.Tensor(op.id).Producer
			if !transpose(t) || only(op.id) != op.reader || g.Tensor(g.Nodes[t].Inputs[0]).IsConst() {
				continue
			}
			if v, _, ok := transposeViews(g, t); ok {
				*op.view = v
				folds = append(folds, fold{node: t, id: op.id, to: g.Nodes[t].Inputs[0]})
			}
		}
		out := g.Nodes[pv].Outputs[0]
		if t := only(out); transpose(t) {
			if _, v, ok := transposeViews(g, t); ok && v.Strides[len(v.Strides)-1] == 1 {
				st.O = v
				folds = append(folds, fold{node: t, id: out, to: g.Nodes[t].Outputs[0], out: true})
			}
		}
		k, bytes, ok := fuseAttention(st, e.threads)
		if !ok {
			continue
		}
		more = append(more, sm, pv)
		e.merged[s] = &merged{kernel: k, more: more}
		for _, d := range more {
			mergePair(p, index, s, d, bytes)
			scratch[d] = 0
			e.absorbed[d] = true
		}
		scratch[s] = bytes
		// The scores and probabilities live in the workers' buffers
		// only.
		for _, id := range []ir.TensorID{g.Nodes[s].Outputs[0], y, scores, probs} {
			p.Tensors[index[id]].Size = 0
		}
		for _, f := range folds {
			e.foldInto(p, index, s, f)
			e.merged[s].folded = append(e.merged[s].folded, f.node)
			scratch[f.node] = 0
		}
	}
}

// fold is a Transpose folded into a merged step: the step binds tensor
// to (the Transpose's input, or its output where out is set) in place of
// id (its output, or its input), which takes no bytes.
type fold struct {
	node   int
	id, to ir.TensorID
	out    bool
}

// foldInto folds f into step s of p: s reads or writes f.to as well,
// writes f.id, which takes no bytes, instead of reading it, and f's step
// reads and writes nothing.
func (e *Executable) foldInto(p *plan.Problem, index []int, s int, f fold) {
	st := &p.Steps[s]
	from, to := index[f.id], index[f.to]
	st.Inputs = slices.DeleteFunc(st.Inputs, func(j int) bool { return j == from })
	if f.out {
		st.Outputs = append(st.Outputs, to)
	} else if !slices.Contains(st.Inputs, to) {
		st.Inputs = append(st.Inputs, to)
	}
	if !slices.Contains(st.Outputs, from) {
		st.Outputs = append(st.Outputs, from)
	}
	p.Tensors[from].Size = 0
	sd := &p.Steps[f.node]
	sd.Inputs, sd.Outputs, sd.Pieces = nil, nil, nil
	e.absorbed[f.node] = true
	if e.folds == nil {
		e.folds = make(map[ir.TensorID]ir.TensorID)
	}
	e.folds[f.id] = f.to
}

// transposeViews is how the output of Transpose node t lies in its input
// and its input in its output; ok is false where its permutation does
// not fit its input.
func transposeViews(g *ir.Graph, t int) (out, in *stridedView, ok bool) {
	n := &g.Nodes[t]
	xs, ys := g.Tensor(n.Inputs[0]).Shape, g.Tensor(n.Outputs[0]).Shape
	r := xs.Rank()
	perm := n.Attrs.Ints("perm", nil)
	if perm == nil {
		for i := r - 1; i >= 0; i-- {
			perm = append(perm, int64(i))
		}
	}
	if len(perm) != r || ys.Rank() != r {
		return nil, nil, false
	}
	xst, yst := xs.Strides(), ys.Strides()
	out = &stridedView{Shape: ys, Strides: make([]int, r)}
	in = &stridedView{Shape: xs, Strides: make([]int, r)}
	for i, d := range perm {
		if d < 0 || int(d) >= r || xs[d] != ys[i] {
			return nil, nil, false
		}
		// The output's dimension i is the input's d.
		out.Strides[i], in.Strides[d] = int(xst[d]), int(yst[i])
	}
	return out, in, true
}
