package ir

import (
	"fmt"
	"slices"
)

// Verify checks the structure of g: every tensor has a valid type and a
// shape within limits, constants hold exactly their bytes, every node input
// is defined before the node reads it (so the node list is a topological
// order and the graph is acyclic), every tensor has at most one producer,
// and, where shapes are known, each node's outputs agree with Infer.
func Verify(g *Graph) error {
	defined := make([]bool, len(g.Tensors))
	producer := make([]int, len(g.Tensors))
	for i := range producer {
		producer[i] = -1
	}
	for id := range g.Tensors {
		t := &g.Tensors[id]
		if err := t.Shape.Validate(); err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if t.IsConst() {
			if !t.DType.Valid() {
				return fmt.Errorf("constant %q has no valid type", t.Name)
			}
			if want := t.Bytes(); int64(len(t.Data)) != want {
				return fmt.Errorf("constant %q holds %d bytes, its type and shape %s%v need %d", t.Name, len(t.Data), t.DType, t.Shape, want)
			}
			defined[id] = true
		}
	}
	for _, id := range g.Inputs {
		if id < 0 || int(id) >= len(g.Tensors) {
			return fmt.Errorf("graph input id %d out of range", id)
		}
		if !g.Tensors[id].DType.Valid() {
			return fmt.Errorf("graph input %q has no valid type", g.Tensors[id].Name)
		}
		defined[id] = true
	}
	for _, id := range g.Captures {
		if id < 0 || int(id) >= len(g.Tensors) {
			return fmt.Errorf("capture id %d out of range", id)
		}
		defined[id] = true
	}
	for _, id := range g.State {
		if !slices.Contains(g.Inputs, id) {
			return fmt.Errorf("state tensor %d is not a graph input", id)
		}
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Implicit < 0 || n.Implicit > len(n.Inputs) {
			return fmt.Errorf("node %q (%s): %d implicit inputs of %d", n.Name, n.Op, n.Implicit, len(n.Inputs))
		}
		for _, sub := range n.Subgraphs() {
			if err := Verify(sub); err != nil {
				return fmt.Errorf("node %q (%s): subgraph %q: %w", n.Name, n.Op, sub.Name, err)
			}
		}
		for _, in := range n.Inputs {
			if in == NoTensor {
				continue
			}
			if in < 0 || int(in) >= len(g.Tensors) {
				return fmt.Errorf("node %q (%s): input id %d out of range", n.Name, n.Op, in)
			}
			if !defined[in] {
				if producer[in] < 0 && g.Tensors[in].Producer > i {
					return fmt.Errorf("node %q (%s): input %q is produced later; the graph has a cycle or is not in topological order", n.Name, n.Op, g.Tensors[in].Name)
				}
				return fmt.Errorf("node %q (%s): input %q is never defined", n.Name, n.Op, g.Tensors[in].Name)
			}
		}
		for _, out := range n.Outputs {
			if out == NoTensor {
				continue
			}
			if out < 0 || int(out) >= len(g.Tensors) {
				return fmt.Errorf("node %q (%s): output id %d out of range", n.Name, n.Op, out)
			}
			if defined[out] {
				return fmt.Errorf("node %q (%s): output %q is defined twice", n.Name, n.Op, g.Tensors[out].Name)
			}
			if g.Tensors[out].Producer != i {
				return fmt.Errorf("node %q (%s): output %q records producer %d", n.Name, n.Op, g.Tensors[out].Name, g.Tensors[out].Producer)
			}
			defined[out] = true
			producer[out] = i
		}
		if err := checkInferred(g, n); err != nil {
			return err
		}
	}
	for _, id := range g.Outputs {
		if id < 0 || int(id) >= len(g.Tensors) || !defined[id] {
			return fmt.Errorf("graph output id %d is never defined", id)
		}
	}
	return nil
}

// checkInferred re-runs shape inference on n and compares it with the
// recorded output types.
func checkInferred(g *Graph, n *Node) error {
	got, err := Infer(g, n)
	if err != nil {
		return fmt.Errorf("node %q: %w", n.Name, err)
	}
	for i, out := range n.Outputs {
		if out == NoTensor || i >= len(got) {
			continue
		}
		t := &g.Tensors[out]
		if t.DType != got[i].DType || !t.Shape.Equal(got[i].Shape) {
			return fmt.Errorf("node %q (%s): output %q is %s%v, inference gives %s%v", n.Name, n.Op, t.Name, t.DType, t.Shape, got[i].DType, got[i].Shape)
		}
	}
	return nil
}
