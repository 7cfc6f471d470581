package berth

import (
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// attend finds attention's three steps, the scores (a MatMul of two
// activations, perhaps with its scale and a constant mask as epilogue,
// perhaps followed by an Add of a padding mask that only the softmax
// reads), the Softmax along their rows that only they feed, and the MatMul that
// reads the probabilities as its first operand and is their only reader,
// and merges them into one step where cpu.FuseAttention takes them: each
// worker computes one head at a time from its scores to its output, and
// neither the scores nor the probabilities take bytes of the arena. It
// runs after pairUp, before planning (index maps the graph's tensors to
// p's, scratch holds each node's scratch bytes and is updated).
func (e *Executable) attend(p *plan.Problem, index []int, scratch []int64) {
	g := e.g
	readers := g.Consumers()
	isOut := graphOutputs(g)
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
	for s := range g.Nodes {
		if !free(s) || g.Nodes[s].Op != "MatMul" {
			continue
		}
		kqk, y := e.kernels[s], g.Nodes[s].Outputs[0]
		if f := e.fusions[s]; f != nil {
			kqk, y = f.kernel, f.result
		}
		st := cpu.AttentionSteps{Scores: kqk, ScoresShape: g.Tensor(y).Shape}
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
		k, bytes, ok := cpu.FuseAttention(st, e.threads)
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
	}
}
