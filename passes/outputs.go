package passes

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// MaterializeOutputs makes every graph output a distinct activation that a
// node writes. Where an output is a constant, a graph input, or a tensor
// already listed as an earlier output, it appends an Identity node that
// copies the value into a fresh tensor carrying the output's name, and
// lists that tensor as the output instead. (The fresh tensor shares its
// name with its source: names in Graph.Outputs are the names users see.)
func MaterializeOutputs(g *ir.Graph) {
	seen := make(map[ir.TensorID]bool, len(g.Outputs))
	for j, id := range g.Outputs {
		src := g.Tensors[id]
		if src.Producer >= 0 && !src.IsConst() && !seen[id] {
			seen[id] = true
			continue
		}
		out := g.AddTensor(ir.Tensor{
			Name:     src.Name,
			DType:    src.DType,
			Shape:    src.Shape.Clone(),
			Producer: len(g.Nodes),
		})
		g.Nodes = append(g.Nodes, ir.Node{
			Name:    fmt.Sprintf("%s/output%d", src.Name, j),
			Op:      "Identity",
			Inputs:  []ir.TensorID{id},
			Outputs: []ir.TensorID{out},
		})
		g.Outputs[j] = out
		seen[out] = true
	}
}
