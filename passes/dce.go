package passes

import "github.com/berth-ml/berth/ir"

// EliminateDeadCode drops every node whose outputs are all folded
// constants or that no graph output depends on, then compacts the tensor
// table to the graph inputs, the graph outputs and the tensors that the
// remaining nodes read or write. Node indices, tensor IDs and Producer
// fields are renumbered; folded tensors become plain constants
// (Producer -1).
func EliminateDeadCode(g *ir.Graph) {
	keep := liveNodes(g)

	// Tensors that stay: graph inputs and outputs, and every tensor a kept
	// node touches (including its unused outputs, which it still writes).
	used := make([]bool, len(g.Tensors))
	for _, id := range g.Inputs {
		used[id] = true
	}
	for _, id := range g.Outputs {
		used[id] = true
	}
	for _, id := range g.Captures {
		used[id] = true
	}
	for i := range g.Nodes {
		if !keep[i] {
			continue
		}
		for _, id := range g.Nodes[i].Inputs {
			if id != ir.NoTensor {
				used[id] = true
			}
		}
		for _, id := range g.Nodes[i].Outputs {
			if id != ir.NoTensor {
				used[id] = true
			}
		}
	}
	remap := make([]ir.TensorID, len(g.Tensors))
	tensors := make([]ir.Tensor, 0, len(g.Tensors))
	for id := range g.Tensors {
		remap[id] = ir.NoTensor
		if used[id] {
			remap[id] = ir.TensorID(len(tensors))
			t := g.Tensors[id]
			t.Producer = -1
			tensors = append(tensors, t)
		}
	}
	mapIDs := func(ids []ir.TensorID) {
		for i, id := range ids {
			if id != ir.NoTensor {
				ids[i] = remap[id]
			}
		}
	}
	nodes := g.Nodes[:0]
	for i := range g.Nodes {
		if !keep[i] {
			continue
		}
		n := g.Nodes[i]
		mapIDs(n.Inputs)
		mapIDs(n.Outputs)
		for _, o := range n.Outputs {
			if o != ir.NoTensor {
				tensors[o].Producer = len(nodes)
			}
		}
		nodes = append(nodes, n)
	}
	clear(g.Nodes[len(nodes):])
	g.Nodes = nodes
	g.Tensors = tensors
	mapIDs(g.Inputs)
	mapIDs(g.Outputs)
	mapIDs(g.Captures)
	mapIDs(g.State)
}

// liveNodes marks the nodes EliminateDeadCode keeps: those not folded
// whose outputs some graph output depends on.
func liveNodes(g *ir.Graph) []bool {
	live := make([]bool, len(g.Tensors))
	for _, o := range g.Outputs {
		live[o] = true
	}
	keep := make([]bool, len(g.Nodes))
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := &g.Nodes[i]
		folded, used := true, false
		for _, o := range n.Outputs {
			if o == ir.NoTensor {
				continue
			}
			folded = folded && g.Tensors[o].IsConst()
			used = used || live[o]
		}
		if folded || !used {
			continue
		}
		keep[i] = true
		for _, in := range n.Inputs {
			if in != ir.NoTensor {
				live[in] = true
			}
		}
	}
	return keep
}
