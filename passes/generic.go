package passes

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// A graph prepared at some input shapes is shape-generic when importing
// and preparing its file at any other input shapes would give the same
// nodes, attributes and constants (where that succeeds at all), only
// other shapes: inferring its shapes anew then stands for importing and
// preparing again (Reinfer).
//
// What follows from shapes is marked as it is computed. Fold marks the
// constants it computes from shapes (ir.Tensor.FromShapes: the output
// of a Shape of a tensor that is not a constant, and whatever it folds
// from a marked value), and marks the graph (ir.Graph.ShapeDecided) where
// it decides on them: an If inlined on a marked condition, a Loop folded
// from marked values. Prepare marks the graph where dead-code elimination
// drops a node that read more than constants that follow from no shape
// (a Shape node aside): at other shapes its inference or folding might
// fail, and Reinfer does not see it; MergePointwiseSums marks it where it
// leaves a pair unmerged for their shapes. The importer marks it where a
// sequence is cut by an input's size.

// ShapeGeneric reports whether g, as Prepare left it, is shape-generic:
// no decision was marked, no constant it keeps follows from shapes, and
// no node holds a subgraph (whose own shapes were settled for these; it
// is not re-inferred).
func ShapeGeneric(g *ir.Graph) bool {
	if !shapeFree(g) {
		return false
	}
	for i := range g.Nodes {
		for _, a := range g.Nodes[i].Attrs {
			if a.Kind == ir.AttrGraph {
				return false
			}
		}
	}
	return true
}

// shapeFree is ShapeGeneric but for the subgraphs: no decision was
// marked and no constant g keeps follows from shapes.
func shapeFree(g *ir.Graph) bool {
	if g.ShapeDecided {
		return false
	}
	for i := range g.Tensors {
		if t := &g.Tensors[i]; t.FromShapes && t.IsConst() {
			return false
		}
	}
	return true
}

// markDropped marks g ShapeDecided where EliminateDeadCode is to drop a
// node that read a tensor that is not a constant, or a constant that
// follows from shapes: Fold inferred or folded it at these shapes, and at
// others it might fail where Reinfer, which does not see it, succeeds. A
// Shape node always folds; its output is marked.
func markDropped(g *ir.Graph) {
	if g.ShapeDecided {
		return
	}
	keep := liveNodes(g)
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if keep[i] || n.Op == "Shape" {
			continue
		}
		for _, in := range n.Inputs {
			if in != ir.NoTensor && (!g.Tensors[in].IsConst() || g.Tensors[in].FromShapes) {
				g.ShapeDecided = true
				return
			}
		}
	}
}

// ErrShapeSpecific is returned (wrapped) by Reinfer for a graph that is
// not shape-generic.
var ErrShapeSpecific = errors.New("the graph was prepared for its input shapes alone")

// Reinfer returns what preparing the model of g at other input shapes
// gives, where g is shape-generic (ShapeGeneric): a copy of g (the
// constants' bytes shared) whose graph input i has the shape shapes[i]
// and whose nodes' outputs are inferred anew, node by node in order
// (ir.Infer). It fails where g is not shape-generic, where a shape is not
// one a tensor can have, and where inference fails at these shapes; the
// caller then prepares the model afresh, which says what is wrong.
//
// Reinfer does not check the shapes against the inputs' declarations
// (rank, fixed sizes, symbols): that is its caller's.
func Reinfer(g *ir.Graph, shapes [][]int64) (*ir.Graph, error) {
	if !shapeFree(g) {
		return nil, ErrShapeSpecific
	}
	if len(shapes) != len(g.Inputs) {
		return nil, fmt.Errorf("%d shapes for %d graph inputs", len(shapes), len(g.Inputs))
	}
	for i, s := range shapes {
		if err := ir.Shape(s).Validate(); err != nil {
			return nil, fmt.Errorf("graph input %q: %w", g.Tensor(g.Inputs[i]).Name, err)
		}
	}
	c, subs := clone(g)
	if subs {
		return nil, ErrShapeSpecific
	}
	for i, id := range c.Inputs {
		c.Tensors[id].Shape = ir.Shape(shapes[i]).Clone()
	}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		types, err := ir.Infer(c, n)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", n.Name, err)
		}
		for j, out := range n.Outputs {
			if out != ir.NoTensor {
				t := &c.Tensors[out]
				t.DType, t.Shape = types[j].DType, types[j].Shape
			}
		}
	}
	return c, nil
}
