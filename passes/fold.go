package passes

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// Fold visits the nodes in order, sets the type and shape of every output
// from ir.Infer, and folds what can be folded (see the package
// documentation). A folded output gets its Data; its node stays in the
// list until EliminateDeadCode removes it.
func Fold(g *ir.Graph, eval Evaluator) error {
	for i := 0; i < len(g.Nodes); i++ {
		if inlineIf(g, i) {
			i-- // fold the branch's nodes next
			continue
		}
		n := &g.Nodes[i]
		if n.Op == "Loop" && foldLoop(g, n, eval) {
			continue
		}
		if err := prepareSubgraphs(g, n, eval); err != nil {
			return fmt.Errorf("node %q (%s): %w", n.Name, n.Op, err)
		}
		if done, err := foldSelection(g, n, eval); err != nil {
			return fmt.Errorf("node %q: %w", n.Name, err)
		} else if done {
			markFromShapes(g, n)
			continue
		}
		types, err := ir.Infer(g, n)
		if err != nil {
			return fmt.Errorf("node %q: %w", n.Name, err)
		}
		for j, out := range n.Outputs {
			if out == ir.NoTensor {
				continue
			}
			t := &g.Tensors[out]
			t.DType, t.Shape = types[j].DType, types[j].Shape
		}
		if err := foldNode(g, n, eval); err != nil {
			return fmt.Errorf("node %q (%s): constant folding: %w", n.Name, n.Op, err)
		}
		markFromShapes(g, n)
	}
	return nil
}

// markFromShapes marks the outputs of n that folding made constants
// whose values follow from the shapes of the graph's inputs (see
// ir.Tensor.FromShapes): those of a Shape of a tensor that is not a
// constant, and those of a node that read a marked value. It reports
// whether n read a marked value.
func markFromShapes(g *ir.Graph, n *ir.Node) bool {
	read := false
	for _, in := range n.Inputs {
		read = read || in != ir.NoTensor && g.Tensors[in].FromShapes
	}
	if !read && (n.Op != "Shape" || len(n.Inputs) == 0 || n.Inputs[0] == ir.NoTensor || g.Tensor(n.Inputs[0]).IsConst()) {
		return false
	}
	for _, out := range n.Outputs {
		if out != ir.NoTensor && g.Tensors[out].IsConst() {
			g.Tensors[out].FromShapes = true
		}
	}
	return read
}

// foldSelection folds a NonMaxSuppression whose inputs are all constants
// in one pass: its shape is the count of the boxes it selects, so
// inferring the shape runs the suppression, and evaluating the node would
// run it again. It reports whether it folded n; without an evaluator
// nothing but Shape nodes and views folds, and neither does this.
func foldSelection(g *ir.Graph, n *ir.Node, eval Evaluator) (bool, error) {
	if eval == nil || n.Op != "NonMaxSuppression" || !n.DefaultDomain() || len(n.Inputs) < 2 || len(n.Inputs) > 5 || len(n.Outputs) != 1 || n.Outputs[0] == ir.NoTensor {
		return false, nil
	}
	for _, in := range n.Inputs {
		if in != ir.NoTensor && !g.Tensors[in].IsConst() {
			return false, nil
		}
	}
	sel, err := ir.NMSArgs(g, n)
	if err != nil {
		return false, err
	}
	y := g.Tensor(n.Outputs[0])
	y.DType, y.Shape = ir.Int64, ir.Shape{int64(len(sel)), 3}
	flat := make([]int64, 0, 3*len(sel))
	for _, s := range sel {
		flat = append(flat, s[:]...)
	}
	y.Data = ir.Int64Bytes(flat)
	return true, nil
}

// foldNode folds n if it can.
func foldNode(g *ir.Graph, n *ir.Node, eval Evaluator) error {
	if n.Op == "Shape" {
		x := g.Tensor(n.Inputs[0])
		s, e := ir.ShapeSlice(n, x.Shape.Rank())
		g.Tensor(n.Outputs[0]).Data = ir.Int64Bytes(x.Shape[s:e])
		return nil
	}
	inputs := 0
	for _, in := range n.Inputs {
		if in == ir.NoTensor {
			continue
		}
		if !g.Tensors[in].IsConst() {
			return nil
		}
		inputs++
	}
	if inputs == 0 {
		return nil
	}
	if len(n.Subgraphs()) > 0 && foldWork(g, n) > MaxFoldWork {
		// A loop bounded only by its condition might not end, and a long
		// one (or loops in loops) would stall loading: they run at run
		// time, where they can be cancelled.
		return nil
	}
	if ir.IsView(n) {
		g.Tensor(n.Outputs[0]).Data = g.Tensor(n.Inputs[0]).Data
		return nil
	}
	var total int64
	for _, out := range n.Outputs {
		if out != ir.NoTensor {
			total += g.Tensors[out].Bytes()
		}
	}
	if eval == nil || total > MaxFoldBytes {
		return nil
	}
	restore := alignInputs(g, n)
	err := eval(g, n)
	restore()
	if err != nil {
		for _, out := range n.Outputs {
			if out != ir.NoTensor {
				g.Tensors[out].Data = nil
			}
		}
		if errors.Is(err, ErrNoFold) {
			return nil
		}
		return err
	}
	for _, out := range n.Outputs {
		if out == ir.NoTensor {
			continue
		}
		t := &g.Tensors[out]
		if want := t.Bytes(); t.Data == nil || int64(len(t.Data)) != want {
			return fmt.Errorf("the evaluator left output %q with %d bytes, want %d", t.Name, len(t.Data), want)
		}
	}
	return nil
}

// alignInputs gives every constant input of n whose bytes are not aligned
// to its element size (weights in a mapped file often are not) an aligned
// copy for the duration of an evaluation, so that evaluators can view
// inputs as typed slices. The returned function puts the original bytes
// back; the graph keeps its zero-copy windows.
func alignInputs(g *ir.Graph, n *ir.Node) (restore func()) {
	type saved struct {
		id   ir.TensorID
		data []byte
	}
	var swapped []saved
	for _, in := range n.Inputs {
		if in == ir.NoTensor {
			continue
		}
		t := &g.Tensors[in]
		if size := t.DType.Size(); size > 1 && !raw.Aligned(t.Data, uintptr(size)) {
			swapped = append(swapped, saved{in, t.Data})
			// Go allocates a slice whose length is a multiple of the element
			// size (at most 8) aligned to that size.
			t.Data = append(make([]byte, 0, len(t.Data)), t.Data...)
		}
	}
	return func() {
		for _, s := range swapped {
			g.Tensors[s.id].Data = s.data
		}
	}
}

// prepareSubgraphs types the inputs and captures of n's subgraphs (If,
// Loop, Scan) from n's inputs, then infers, folds and prunes each subgraph
// like a main graph. A subgraph's outputs stay as they are: they may be
// constants, inputs or captures, which the backend copies from.
func prepareSubgraphs(g *ir.Graph, n *ir.Node, eval Evaluator) error {
	subs := n.Subgraphs()
	if len(subs) == 0 {
		return nil
	}
	if err := ir.BindSubgraphs(g, n); err != nil {
		return fmt.Errorf("%s: %w", n.Op, err)
	}
	for _, sub := range subs {
		if err := Fold(sub, eval); err != nil {
			// A branch of an If that cannot be planned at these shapes
			// may be one the condition never takes.
			return ir.IfConditionNeeded(g, n, fmt.Errorf("subgraph %q: %w", sub.Name, err))
		}
		EliminateDeadCode(sub)
	}
	return nil
}
