package passes

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berth-ml/berth/ir"
)

// MaxUnrolledTrips bounds the iterations of a Loop that Fold computes at
// load time (see foldLoop).
const MaxUnrolledTrips = 4096

// foldLoop computes a Loop all of whose inputs are constants by folding a
// fresh copy of its body once per iteration, with the iteration number,
// condition and carried values bound as constants. Unlike the Loop kernel
// it needs no static body: a body whose shapes depend on the iteration
// number (a Slice at i) folds as well. It reports whether it folded n; if
// not (a body that does not fold completely, too many trips, a loop that
// produces rows of different shapes), n is left for prepareSubgraphs and
// the kernel.
func foldLoop(g *ir.Graph, n *ir.Node, eval Evaluator) bool {
	body := n.Attrs.Graph("body")
	if eval == nil || body == nil || n.Formal() < 2 || n.Input(0) == ir.NoTensor {
		return false
	}
	for _, in := range n.Inputs {
		if in != ir.NoTensor && !g.Tensor(in).IsConst() {
			return false
		}
	}
	trips := ir.LoopTrips(g, n)
	if trips < 0 || trips > MaxUnrolledTrips || foldWork(g, n) > MaxFoldWork {
		return false
	}
	carried := n.Formal() - 2
	scans := len(body.Outputs) - 1 - carried
	if scans < 0 || len(body.Inputs) != 2+carried {
		return false
	}
	state := make([]ir.Tensor, carried)
	for i := range state {
		state[i] = *g.Tensor(n.Inputs[2+i])
	}
	cond := true
	if c := n.Input(1); c != ir.NoTensor {
		d := g.Tensor(c).Data
		if len(d) != 1 {
			return false
		}
		cond = d[0] != 0
	}
	rows := make([]ir.Tensor, scans)
	data := make([][]byte, scans)
	var total int64
	var it int64
	for ; it < trips && cond; it++ {
		b := Clone(body)
		bind := func(i int, t ir.Tensor) {
			bt := b.Tensor(b.Inputs[i])
			bt.DType, bt.Shape, bt.Data = t.DType, t.Shape.Clone(), t.Data
		}
		bind(0, ir.Tensor{DType: ir.Int64, Shape: ir.Shape{}, Data: ir.Int64Bytes([]int64{it})})
		bind(1, ir.Tensor{DType: ir.Bool, Shape: ir.Shape{}, Data: []byte{1}})
		for i := range state {
			bind(2+i, state[i])
		}
		for _, c := range b.Captures {
			t := b.Tensor(c)
			for _, id := range n.Inputs[n.Formal():] {
				if o := g.Tensor(id); o.Name == t.Name {
					t.DType, t.Shape, t.Data = o.DType, o.Shape.Clone(), o.Data
				}
			}
		}
		// Mark the bound inputs as constants for Fold: a body graph with no
		// runtime inputs.
		b.Inputs = nil
		if err := Fold(b, eval); err != nil {
			return false
		}
		outs := make([]ir.Tensor, len(b.Outputs))
		for i, id := range b.Outputs {
			outs[i] = *b.Tensor(id)
			if !outs[i].IsConst() {
				return false
			}
		}
		if outs[0].DType != ir.Bool || len(outs[0].Data) != 1 {
			return false
		}
		cond = outs[0].Data[0] != 0
		for i := range state {
			if outs[1+i].DType != state[i].DType || !outs[1+i].Shape.Equal(state[i].Shape) {
				return false
			}
			state[i].Data = outs[1+i].Data
		}
		for k := range rows {
			r := outs[1+carried+k]
			if it > 0 && (r.DType != rows[k].DType || !r.Shape.Equal(rows[k].Shape)) {
				return false
			}
			rows[k] = r
			total += int64(len(r.Data))
			if total > MaxFoldBytes {
				return false
			}
			data[k] = append(data[k], r.Data...)
		}
	}
	if scans > 0 && it == 0 {
		return false // the rows' shape is unknown
	}
	for i, out := range n.Outputs {
		if out == ir.NoTensor {
			continue
		}
		t := g.Tensor(out)
		if i < carried {
			t.DType, t.Shape, t.Data = state[i].DType, state[i].Shape.Clone(), state[i].Data
			continue
		}
		k := i - carried
		if k >= scans {
			return false
		}
		t.DType, t.Shape = rows[k].DType, append(ir.Shape{it}, rows[k].Shape...)
		t.Data = data[k]
		if t.Data == nil {
			t.Data = []byte{}
		}
	}
	if markFromShapes(g, n) {
		// How often it ran followed from shapes.
		g.ShapeDecided = true
	}
	return true
}

// Clone copies g deeply enough that preparing, folding or compiling the
// copy leaves g as it was: its tensors, nodes (their attribute maps too)
// and nested subgraphs (constant bytes and attribute values are shared,
// they are never written).
func Clone(g *ir.Graph) *ir.Graph {
	c, _ := clone(g)
	return c
}

// clone is Clone, and reports whether a node of g holds a subgraph.
func clone(g *ir.Graph) (*ir.Graph, bool) {
	c := *g
	subs := false
	// The shapes and the nodes' tensor lists are cut from one block each.
	dims, ids := 0, 0
	for i := range g.Tensors {
		dims += len(g.Tensors[i].Shape)
	}
	for i := range g.Nodes {
		ids += len(g.Nodes[i].Inputs) + len(g.Nodes[i].Outputs)
	}
	shapes := make([]int64, dims)
	c.Tensors = make([]ir.Tensor, len(g.Tensors))
	for i, t := range g.Tensors {
		if t.Shape != nil { // nil (no shape known) stays nil
			n := copy(shapes, t.Shape)
			t.Shape, shapes = shapes[:n:n], shapes[n:]
		}
		c.Tensors[i] = t
	}
	list := make([]ir.TensorID, ids)
	cut := func(from []ir.TensorID) []ir.TensorID {
		if len(from) == 0 {
			return nil
		}
		n := copy(list, from)
		out := list[:n:n]
		list = list[n:]
		return out
	}
	c.Nodes = make([]ir.Node, len(g.Nodes))
	for i, n := range g.Nodes {
		n.Inputs, n.Outputs = cut(n.Inputs), cut(n.Outputs)
		if n.Attrs != nil {
			n.Attrs = maps.Clone(n.Attrs)
			for k, a := range n.Attrs {
				if a.Kind == ir.AttrGraph {
					subs = true
				}
				if a.Kind == ir.AttrGraph && a.Graph != nil {
					a.Graph = Clone(a.Graph)
					n.Attrs[k] = a
				}
			}
		}
		c.Nodes[i] = n
	}
	c.Inputs = append([]ir.TensorID(nil), g.Inputs...)
	c.Outputs = append([]ir.TensorID(nil), g.Outputs...)
	c.Captures = append([]ir.TensorID(nil), g.Captures...)
	c.State = append([]ir.TensorID(nil), g.State...)
	c.Opsets = maps.Clone(g.Opsets)
	return &c, subs
}

// inlineIf replaces node i of g, an If whose condition is a constant, by
// the nodes of the branch it takes, so that the branch is planned and
// folded like the rest of the graph and the other branch costs nothing.
// The branch's tensors join g under their own names; its captures become
// the outer tensors they stand for; Identity nodes (which fold, or run as
// views) bind its outputs to the If's. It reports whether it inlined.
func inlineIf(g *ir.Graph, i int) bool {
	n := g.Nodes[i]
	c := n.Input(0)
	if n.Op != "If" || c == ir.NoTensor || !g.Tensor(c).IsConst() || len(g.Tensor(c).Data) != 1 {
		return false
	}
	branch := n.Attrs.Graph("else_branch")
	decided := g.Tensor(c).FromShapes
	if g.Tensor(c).Data[0] != 0 {
		branch = n.Attrs.Graph("then_branch")
	}
	if branch == nil || len(branch.Inputs) != 0 || len(branch.Outputs) < len(n.Outputs) {
		return false
	}
	outer := make(map[string]ir.TensorID, n.Implicit)
	for _, id := range n.Inputs[n.Formal():] {
		outer[g.Tensor(id).Name] = id
	}
	remap := make([]ir.TensorID, len(branch.Tensors))
	for id := range branch.Tensors {
		remap[id] = ir.NoTensor
	}
	for _, id := range branch.Captures {
		o, ok := outer[branch.Tensor(id).Name]
		if !ok {
			return false
		}
		remap[id] = o
	}
	for id := range branch.Tensors {
		if remap[id] == ir.NoTensor {
			t := branch.Tensors[id]
			t.Shape = t.Shape.Clone()
			t.Producer = -1
			remap[id] = g.AddTensor(t)
		}
	}
	ids := func(list []ir.TensorID) []ir.TensorID {
		out := make([]ir.TensorID, len(list))
		for j, id := range list {
			out[j] = ir.NoTensor
			if id != ir.NoTensor {
				out[j] = remap[id]
			}
		}
		return out
	}
	var nodes []ir.Node
	for _, bn := range branch.Nodes {
		bn.Inputs, bn.Outputs = ids(bn.Inputs), ids(bn.Outputs)
		bn.Name = n.Name + "/" + bn.Name
		nodes = append(nodes, bn)
	}
	for j, out := range n.Outputs {
		if out == ir.NoTensor {
			continue
		}
		nodes = append(nodes, ir.Node{
			Name:    fmt.Sprintf("%s/output%d", n.Name, j),
			Op:      "Identity",
			Inputs:  []ir.TensorID{remap[branch.Outputs[j]]},
			Outputs: []ir.TensorID{out},
		})
	}
	// The branch taken followed from shapes where the condition did.
	g.ShapeDecided = g.ShapeDecided || decided
	g.Nodes = slices.Insert(slices.Delete(g.Nodes, i, i+1), i, nodes...)
	for k := i; k < len(g.Nodes); k++ {
		for _, out := range g.Nodes[k].Outputs {
			if out != ir.NoTensor {
				g.Tensors[out].Producer = k
			}
		}
	}
	return true
}

// MaxFoldWork bounds the node runs that folding one control-flow node may
// take at load time (iterations times body nodes, nested loops
// multiplied), so that a model cannot stall loading with loops in loops.
const MaxFoldWork = 1 << 20

// foldWork estimates the node runs of n, its subgraphs included, saturating
// above MaxFoldWork (a loop of unknown length counts as too much).
func foldWork(g *ir.Graph, n *ir.Node) int64 {
	const tooMuch = MaxFoldWork + 1
	body := func(sub *ir.Graph) int64 {
		var w int64
		for i := range sub.Nodes {
			w += foldWork(sub, &sub.Nodes[i])
			if w > MaxFoldWork {
				return tooMuch
			}
		}
		return max(w, 1)
	}
	times := func(k, w int64) int64 {
		if k < 0 || w > 0 && k > MaxFoldWork/w {
			return tooMuch
		}
		return k * w
	}
	switch n.Op {
	case "Loop":
		if b := n.Attrs.Graph("body"); b != nil {
			return times(ir.LoopTrips(g, n), body(b))
		}
	case "Scan":
		b := n.Attrs.Graph("body")
		last := n.Input(n.Formal() - 1)
		if b == nil || last == ir.NoTensor || g.Tensor(last).Shape == nil {
			return tooMuch
		}
		// A scan input's element count bounds the scan length (and, for
		// opset 8, the batch times the length).
		return times(g.Tensor(last).Shape.Elements(), body(b))
	case "If":
		var w int64 = 1
		for _, sub := range n.Subgraphs() {
			w = max(w, body(sub))
		}
		return w
	}
	return 1
}
