package passes

import (
	"encoding/binary"
	"math"

	"github.com/berth-ml/berth/ir"
)

// MergePointwiseSums rewrites every sum of two pointwise convolutions,
//
//	Add(Conv(x1, W1, b1), Conv(x2, W2, b2)),
//
// into one convolution over the inputs side by side,
//
//	Conv(Concat(x1, x2), W1‖W2, b1+b2),
//
// which is the same function: the product's depth is C1+C2 instead of two
// products of C1 and C2, and the two M-channel outputs are never written
// and read back (a ResNet's first bottleneck block adds its projection
// shortcut to its last convolution this way, both 1×1 from 64 channels
// to 256 at 56²). The Concat costs nothing where the planner lets x1's
// and x2's producers write straight into its output (plan.SharePieces),
// and at most what the sum saved where it does not: a pair is merged only
// when C1+C2 ≤ M. The sums round in another order than the two products
// and the Add did.
//
// A pair qualifies when both convolutions are float32, of the default
// domain, 1×1 in every spatial dimension, of unit strides and dilations,
// no padding and one group, with constant weights (and biases, where
// given), read different inputs of the same shape but for the channels,
// and write outputs of the same shape that only the Add reads and that
// are not graph outputs. The Add's output keeps its tensor; the two
// convolutions are left without readers, for EliminateDeadCode. It
// returns the number of pairs merged.
//
// Where a pair that qualifies but for its shapes is left as it is, g is
// marked ShapeDecided: at other input shapes it might merge. (A merged
// pair needs no mark: at shapes where it would not merge, the Concat's
// shape inference fails, see Reinfer.)
func MergePointwiseSums(g *ir.Graph) int {
	readers := g.Consumers()
	producer := make([]int, len(g.Tensors))
	for i := range producer {
		producer[i] = -1
	}
	for i := range g.Nodes {
		for _, o := range g.Nodes[i].Outputs {
			if o != ir.NoTensor {
				producer[o] = i
			}
		}
	}
	isOut := make([]bool, len(g.Tensors))
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	// operand returns the convolution that writes id, if it is one that
	// a merge may take.
	operand := func(id ir.TensorID) *ir.Node {
		if id == ir.NoTensor || isOut[id] || len(readers[id]) != 1 || producer[id] < 0 {
			return nil
		}
		n := &g.Nodes[producer[id]]
		if !pointwiseForm(g, n) {
			return nil
		}
		return n
	}
	var merged int
	nodes := make([]ir.Node, 0, len(g.Nodes))
	for i := range g.Nodes {
		add := g.Nodes[i]
		if add.Op != "Add" || !add.DefaultDomain() || len(add.Inputs) != 2 || len(add.Outputs) != 1 || add.Implicit != 0 {
			nodes = append(nodes, add)
			continue
		}
		a, b := operand(add.Inputs[0]), operand(add.Inputs[1])
		if a == nil || b == nil || a == b || !mergeableForm(g, a, b) {
			nodes = append(nodes, add)
			continue
		}
		if !pointwiseShapes(g, a) || !pointwiseShapes(g, b) || !mergeable(g, a, b, add.Outputs[0]) {
			g.ShapeDecided = true
			nodes = append(nodes, add)
			continue
		}
		// Read before the new tensors are appended (which may move the
		// table).
		shape := append(ir.Shape(nil), g.Tensor(a.Inputs[0]).Shape...)
		shape[1] += g.Tensor(b.Inputs[0]).Shape[1]
		name, m := g.Tensor(add.Outputs[0]).Name, g.Tensor(add.Outputs[0]).Shape[1]
		ws := make(ir.Shape, len(shape))
		ws[0], ws[1] = m, shape[1]
		for k := 2; k < len(ws); k++ {
			ws[k] = 1
		}
		cat := g.AddTensor(ir.Tensor{Name: name + "/inputs", DType: ir.Float32, Shape: shape, Producer: -1})
		w := g.NewTensor(name+"/weights", ir.Float32, ws, sideBySide(g, a, b))
		bias := g.NewTensor(name+"/bias", ir.Float32, ir.Shape{m}, biasSum(g, a, b, int(m)))
		nodes = append(nodes,
			ir.Node{Name: add.Name + "/concat", Op: "Concat", Inputs: []ir.TensorID{a.Inputs[0], b.Inputs[0]}, Outputs: []ir.TensorID{cat},
				Attrs: ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 1}}},
			ir.Node{Name: a.Name + "+" + b.Name, Op: "Conv", Inputs: []ir.TensorID{cat, w, bias}, Outputs: add.Outputs,
				Attrs: ir.Attrs{"group": {Kind: ir.AttrInt, Int: 1}}})
		// The two convolutions stay in place without readers.
		merged++
	}
	if merged == 0 {
		return 0
	}
	g.Nodes = nodes
	g.SetProducers()
	return merged
}

// pointwiseConv reports whether n is a convolution that
// MergePointwiseSums may merge, taken alone.
func pointwiseConv(g *ir.Graph, n *ir.Node) bool {
	return pointwiseForm(g, n) && pointwiseShapes(g, n)
}

// pointwiseForm is what pointwiseConv asks of n that does not depend on
// the shapes of the graph's inputs: the operator, its attributes, its
// types and its constants.
func pointwiseForm(g *ir.Graph, n *ir.Node) bool {
	if n.Op != "Conv" || !n.DefaultDomain() || len(n.Inputs) < 2 || len(n.Inputs) > 3 || len(n.Outputs) != 1 || n.Implicit != 0 {
		return false
	}
	x, w := n.Inputs[0], n.Inputs[1]
	if x == ir.NoTensor || w == ir.NoTensor || g.Tensor(x).IsConst() || !g.Tensor(w).IsConst() {
		return false
	}
	ws := g.Tensor(w).Shape
	if len(ws) < 3 {
		return false
	}
	for k := 2; k < len(ws); k++ {
		if ws[k] != 1 {
			return false
		}
	}
	for _, id := range []ir.TensorID{x, w, n.Outputs[0]} {
		if g.Tensor(id).DType != ir.Float32 {
			return false
		}
	}
	if b := n.Input(2); b != ir.NoTensor {
		if t := g.Tensor(b); !t.IsConst() || t.DType != ir.Float32 || t.Shape.Elements() != ws[0] {
			return false
		}
	}
	for name, a := range n.Attrs {
		switch name {
		case "group":
			if a.Kind != ir.AttrInt || a.Int != 1 {
				return false
			}
		case "auto_pad":
			if a.Kind != ir.AttrString || a.String != "NOTSET" && a.String != "VALID" {
				return false
			}
		case "kernel_shape", "strides", "dilations", "pads":
			want := int64(1)
			if name == "pads" {
				want = 0
			}
			if a.Kind != ir.AttrInts {
				return false
			}
			for _, v := range a.Ints {
				if v != want {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// pointwiseShapes is the rest of pointwiseConv: the shapes of n's input
// and output agree with its weights' as a pointwise convolution's do.
func pointwiseShapes(g *ir.Graph, n *ir.Node) bool {
	ws, xs, ys := g.Tensor(n.Inputs[1]).Shape, g.Tensor(n.Inputs[0]).Shape, g.Tensor(n.Outputs[0]).Shape
	r := len(xs)
	if r < 3 || len(ws) != r || len(ys) != r || ws[1] != xs[1] || ys[1] != ws[0] || ys[0] != xs[0] {
		return false
	}
	for k := 2; k < r; k++ {
		if xs[k] != ys[k] {
			return false
		}
	}
	return true
}

// mergeableForm is what mergeable asks of the pointwise convolutions a
// and b that does not depend on the shapes of the graph's inputs:
// different inputs, as many output channels, and together no more input
// channels (at least one each) than output channels, as their weights
// say.
func mergeableForm(g *ir.Graph, a, b *ir.Node) bool {
	wa, wb := g.Tensor(a.Inputs[1]).Shape, g.Tensor(b.Inputs[1]).Shape
	return a.Inputs[0] != b.Inputs[0] && wa[0] == wb[0] && wa[1] > 0 && wb[1] > 0 && wa[1]+wb[1] <= wa[0]
}

// mergeable reports whether the pointwise convolutions a and b, whose
// outputs an Add writing y sums, may become one: different inputs of the
// same shape but for the channels, the same output shape as y's, and
// together no more input channels (at least one each) than output
// channels.
func mergeable(g *ir.Graph, a, b *ir.Node, y ir.TensorID) bool {
	if a.Inputs[0] == b.Inputs[0] {
		return false
	}
	x1, x2 := g.Tensor(a.Inputs[0]).Shape, g.Tensor(b.Inputs[0]).Shape
	ya, yb, ys := g.Tensor(a.Outputs[0]).Shape, g.Tensor(b.Outputs[0]).Shape, g.Tensor(y).Shape
	if !ya.Equal(yb) || !ya.Equal(ys) || g.Tensor(y).DType != ir.Float32 || len(x1) != len(x2) {
		return false
	}
	for k := range x1 {
		if k != 1 && x1[k] != x2[k] {
			return false
		}
	}
	return x1[1] > 0 && x2[1] > 0 && x1[1]+x2[1] <= ys[1]
}

// sideBySide is the weights of a and b as one M×(C1+C2)×1… tensor: row m
// is a's row m followed by b's.
func sideBySide(g *ir.Graph, a, b *ir.Node) []byte {
	wa, wb := g.Tensor(a.Inputs[1]), g.Tensor(b.Inputs[1])
	m := int(wa.Shape[0])
	ra, rb := len(wa.Data)/m, len(wb.Data)/m
	out := make([]byte, m*(ra+rb))
	for i := range m {
		copy(out[i*(ra+rb):], wa.Data[i*ra:(i+1)*ra])
		copy(out[i*(ra+rb)+ra:], wb.Data[i*rb:(i+1)*rb])
	}
	return out
}

// biasSum is the sum of a's and b's biases (zeros where one has none), m
// float32 values.
func biasSum(g *ir.Graph, a, b *ir.Node, m int) []byte {
	out := make([]byte, 4*m)
	sum := make([]float32, m)
	for _, n := range []*ir.Node{a, b} {
		if id := n.Input(2); id != ir.NoTensor {
			d := g.Tensor(id).Data
			for i := range sum {
				sum[i] += math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
			}
		}
	}
	for i, v := range sum {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// SplitPointwiseSums undoes MergePointwiseSums: each convolution it made,
// Conv(Concat(x1, x2), W1‖W2, b), becomes Add(Conv(x1, W1), Conv(x2, W2,
// b)) again. It is for a backend that lays activations out channels-last,
// where the Concat along the channels is a copy the planner cannot share
// away. It returns g itself where there is nothing to split, else a new
// graph (g is not changed; the two weight matrices are new constants).
func SplitPointwiseSums(g *ir.Graph) *ir.Graph {
	readers := g.Consumers()
	isOut := g.OutputMask()
	// concatOf returns the Concat of two inputs along the channels that
	// writes id for n alone, or -1.
	concatOf := func(n *ir.Node) int {
		id := n.Inputs[0]
		p := g.Tensor(id).Producer
		if isOut[id] || len(readers[id]) != 1 || p < 0 {
			return -1
		}
		c := &g.Nodes[p]
		if c.Op != "Concat" || !c.DefaultDomain() || len(c.Inputs) != 2 || len(c.Outputs) != 1 {
			return -1
		}
		r := g.Tensor(id).Shape.Rank()
		if axis, err := ir.NormAxis(c.Attrs.Int("axis", 0), r); err != nil || axis != 1 {
			return -1
		}
		for _, x := range c.Inputs {
			if x == ir.NoTensor || g.Tensor(x).DType != ir.Float32 || g.Tensor(x).Shape.Rank() != r {
				return -1
			}
		}
		return p
	}
	split := map[int]int{} // a convolution → its Concat
	for i := range g.Nodes {
		if n := &g.Nodes[i]; pointwiseConv(g, n) {
			if c := concatOf(n); c >= 0 {
				split[i] = c
			}
		}
	}
	if len(split) == 0 {
		return g
	}
	out := *g
	out.Tensors = append([]ir.Tensor(nil), g.Tensors...)
	gone := map[int]bool{}
	for _, c := range split {
		gone[c] = true
		out.Tensors[g.Nodes[c].Outputs[0]].Producer = -1
	}
	out.Nodes = make([]ir.Node, 0, len(g.Nodes)+len(split))
	for i, n := range g.Nodes {
		if gone[i] {
			continue
		}
		c, ok := split[i]
		if !ok {
			out.Nodes = append(out.Nodes, n)
			continue
		}
		x1, x2 := g.Nodes[c].Inputs[0], g.Nodes[c].Inputs[1]
		w := g.Tensor(n.Inputs[1])
		y := g.Tensor(n.Outputs[0])
		c1, c2 := g.Tensor(x1).Shape[1], g.Tensor(x2).Shape[1]
		w1, w2 := splitColumns(w, c1, c2)
		s1, s2 := w.Shape.Clone(), w.Shape.Clone()
		s1[1], s2[1] = c1, c2
		t1 := out.NewTensor(y.Name+"/first", ir.Float32, y.Shape.Clone(), nil)
		t2 := out.NewTensor(y.Name+"/second", ir.Float32, y.Shape.Clone(), nil)
		in2 := []ir.TensorID{x2, out.NewTensor(w.Name+"/second", ir.Float32, s2, w2)}
		if b := n.Input(2); b != ir.NoTensor {
			in2 = append(in2, b)
		}
		out.Nodes = append(out.Nodes,
			ir.Node{Name: n.Name + "/first", Op: "Conv", Attrs: n.Attrs, Outputs: []ir.TensorID{t1},
				Inputs: []ir.TensorID{x1, out.NewTensor(w.Name+"/first", ir.Float32, s1, w1)}},
			ir.Node{Name: n.Name + "/second", Op: "Conv", Attrs: n.Attrs, Inputs: in2, Outputs: []ir.TensorID{t2}},
			ir.Node{Name: n.Name + "/sum", Op: "Add", Inputs: []ir.TensorID{t1, t2}, Outputs: n.Outputs})
	}
	out.SetProducers()
	return &out
}

// splitColumns splits the float32 weights w (M×(C1+C2)×1…) into their
// first C1 input channels and their last C2.
func splitColumns(w *ir.Tensor, c1, c2 int64) (w1, w2 []byte) {
	m := w.Shape[0]
	w1, w2 = make([]byte, 0, 4*m*c1), make([]byte, 0, 4*m*c2)
	for r := range m {
		row := w.Data[4*r*(c1+c2) : 4*(r+1)*(c1+c2)]
		w1 = append(w1, row[:4*c1]...)
		w2 = append(w2, row[4*c1:]...)
	}
	return w1, w2
}
