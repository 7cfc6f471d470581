package plan

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// FromGraph builds the Problem of g, one step per node in g's node order.
//
// Every tensor that is not a constant and is a graph input or the output of
// a node becomes a Tensor; constants (Data != nil) are left out, as are the
// steps' references to them. When scratch is not nil it has one entry per
// node, and scratch[i] > 0 gives node i a scratch tensor of that many bytes:
// working memory that node i writes and no one else reads, live during its
// step only. The output of a Reshape, Flatten, Squeeze, Unsqueeze or
// Identity node whose first input is an activation of the same byte size
// becomes a view of that input, as does the output of a CacheWrite, which
// updates its input in place (Step.Updates); the graph's state tensors
// are the problem's (Problem.State). Concat, Split and Slice steps carry their
// pieces (see ir.Pieces and Piece); SharePieces, which a caller that runs
// steps in place may call next, turns those it can into views.
//
// FromGraph also returns, for every tensor of g, its index in the Problem,
// or -1 for a constant (or a tensor no one writes or reads).
func FromGraph(g *ir.Graph, scratch []int64) (*Problem, []int, error) {
	if scratch != nil && len(scratch) != len(g.Nodes) {
		return nil, nil, fmt.Errorf("plan: %d scratch sizes for %d nodes", len(scratch), len(g.Nodes))
	}
	p := &Problem{}
	index := make([]int, len(g.Tensors))
	for i := range index {
		index[i] = -1
	}
	add := func(id ir.TensorID) (int, error) {
		t := &g.Tensors[id]
		size := t.Bytes()
		if size < 0 {
			return 0, fmt.Errorf("plan: tensor %q has a negative size", t.Name)
		}
		index[id] = len(p.Tensors)
		p.Tensors = append(p.Tensors, Tensor{Name: t.Name, Size: size, DType: t.DType})
		return index[id], nil
	}
	valid := func(id ir.TensorID) bool { return id >= 0 && int(id) < len(g.Tensors) }

	for _, id := range g.Inputs {
		if !valid(id) {
			return nil, nil, fmt.Errorf("plan: graph input %d out of range", id)
		}
		if g.Tensors[id].IsConst() || index[id] >= 0 {
			continue
		}
		k, err := add(id)
		if err != nil {
			return nil, nil, err
		}
		p.Inputs = append(p.Inputs, k)
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		st := Step{Name: n.Name, Op: n.Op, Domain: n.Domain}
		for _, id := range n.Inputs {
			if id == ir.NoTensor {
				continue
			}
			if !valid(id) {
				return nil, nil, fmt.Errorf("plan: node %q (%s): input %d out of range", n.Name, n.Op, id)
			}
			if g.Tensors[id].IsConst() {
				continue
			}
			if index[id] < 0 {
				return nil, nil, fmt.Errorf("plan: node %q (%s) reads %q, which no earlier node writes", n.Name, n.Op, g.Tensors[id].Name)
			}
			st.Inputs = append(st.Inputs, index[id])
		}
		for _, id := range n.Outputs {
			if id == ir.NoTensor {
				continue
			}
			if !valid(id) {
				return nil, nil, fmt.Errorf("plan: node %q (%s): output %d out of range", n.Name, n.Op, id)
			}
			if g.Tensors[id].IsConst() {
				continue
			}
			if index[id] >= 0 {
				return nil, nil, fmt.Errorf("plan: node %q (%s) writes %q, which is already written", n.Name, n.Op, g.Tensors[id].Name)
			}
			k, err := add(id)
			if err != nil {
				return nil, nil, err
			}
			st.Outputs = append(st.Outputs, k)
		}
		if in := n.Input(0); ir.IsView(n) && len(st.Outputs) == 1 && in != ir.NoTensor && index[in] >= 0 {
			if out := &p.Tensors[st.Outputs[0]]; out.Size == p.Tensors[index[in]].Size {
				out.SetAlias(index[in])
			}
		}
		if in := n.Input(0); ir.UpdatesState(n) && len(st.Outputs) == 1 && in != ir.NoTensor && index[in] >= 0 {
			if out := &p.Tensors[st.Outputs[0]]; out.Size == p.Tensors[index[in]].Size {
				out.SetAlias(index[in])
				st.Updates = append(st.Updates, st.Outputs[0])
			}
		}
		for _, pc := range ir.Pieces(g, n) {
			in, out := index[n.Inputs[pc.Input]], index[n.Outputs[pc.Output]]
			if in < 0 || out < 0 {
				continue // a constant
			}
			if n.Op == "Concat" {
				st.Pieces = append(st.Pieces, Piece{Part: in, Whole: out, Offset: pc.Offset})
			} else {
				st.Pieces = append(st.Pieces, Piece{Part: out, Whole: in, Offset: pc.Offset})
			}
		}
		if scratch != nil && scratch[i] > 0 {
			st.Outputs = append(st.Outputs, len(p.Tensors))
			p.Tensors = append(p.Tensors, Tensor{Name: scratchName(n, i), Size: scratch[i]})
		}
		p.Steps = append(p.Steps, st)
	}
	for _, id := range g.State {
		if !valid(id) || index[id] < 0 {
			return nil, nil, fmt.Errorf("plan: state tensor %d is not a graph input", id)
		}
		p.State = append(p.State, index[id])
	}
	for _, id := range g.Outputs {
		if !valid(id) {
			return nil, nil, fmt.Errorf("plan: graph output %d out of range", id)
		}
		if g.Tensors[id].IsConst() {
			continue
		}
		if index[id] < 0 {
			return nil, nil, fmt.Errorf("plan: graph output %q is never written", g.Tensors[id].Name)
		}
		p.Outputs = append(p.Outputs, index[id])
	}
	return p, index, nil
}

// scratchName names the scratch tensor of node i.
func scratchName(n *ir.Node, i int) string {
	if n.Name != "" {
		return n.Name + "/scratch"
	}
	return fmt.Sprintf("%s#%d/scratch", n.Op, i)
}

// ScratchTensors finds, for each node i with scratch (scratch[i] > 0), the
// problem tensor FromGraph added for it, as a backend's rewrites may have
// moved it: the last output of step i that is no tensor of the graph
// (index maps the graph's tensors to p's); -1 for the others.
func ScratchTensors(p *Problem, index []int, scratch []int64) []int {
	isIR := make([]bool, len(p.Tensors))
	for _, j := range index {
		if j >= 0 {
			isIR[j] = true
		}
	}
	out := make([]int, len(scratch))
	for i := range out {
		out[i] = -1
		if scratch[i] <= 0 {
			continue
		}
		for _, t := range p.Steps[i].Outputs {
			if !isIR[t] {
				out[i] = t
			}
		}
	}
	return out
}
