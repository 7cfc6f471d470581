package ir

import "fmt"

// Control flow: If, Loop and Scan carry subgraphs (Node attributes of kind
// AttrGraph). BindSubgraphs types a subgraph's inputs and captures from
// the parent node; once the subgraph's own tensors are inferred (package
// passes prepares it like a main graph), Infer derives the parent's
// output types from the subgraph's outputs.
//
// berth plans static shapes, so:
//   - both branches of an If must give outputs of the same dtype and shape;
//   - a Loop's carried values must keep their type from one iteration to
//     the next, and a Loop with scan outputs needs a constant trip count M
//     (the scan outputs are [M, …]; a loop whose condition stops it early
//     fails at run time rather than returning fewer rows);
//   - a Scan's length is the static size of its scan axis.

func init() {
	register(inferIf, "If")
	register(inferLoop, "Loop")
	register(inferScan, "Scan")
}

// ScanLayout describes how a Scan node splits its inputs.
type ScanLayout struct {
	Batched bool // opset 8: a leading batch axis on every input and output
	First   int  // index in the node's inputs of the first initial state (1 when Batched: sequence_lens comes first)
	States  int  // loop-carried states
	Scans   int  // scan inputs
	// InAxes and OutAxes are the scan axes of each scan input and scan
	// output (non-negative; 0 unless the node says otherwise; the axis of
	// the sequence, 1, when Batched).
	InAxes, OutAxes []int
	// Reverse marks scan inputs and outputs walked from the end.
	InReverse, OutReverse []bool
}

// ScanLayoutOf reads the layout of Scan node n of g (its inputs' shapes
// must be known).
func ScanLayoutOf(g *Graph, n *Node) (*ScanLayout, error) {
	body := n.Attrs.Graph("body")
	if body == nil {
		return nil, fmt.Errorf("has no body")
	}
	m := int(n.Attrs.Int("num_scan_inputs", -1))
	l := &ScanLayout{Batched: opset(g) < 9}
	if l.Batched {
		l.First = 1
		if n.Input(0) != NoTensor {
			return nil, fmt.Errorf("sequence_lens is not supported (scan inputs of different lengths)")
		}
	}
	formal := n.Formal() - l.First
	if m < 1 || m > formal {
		return nil, fmt.Errorf("num_scan_inputs is %d, the node has %d state and scan inputs", m, formal)
	}
	l.Scans, l.States = m, formal-m
	for i, id := range n.Inputs[l.First:n.Formal()] {
		if id == NoTensor {
			return nil, fmt.Errorf("a state or scan input is missing")
		}
		r := g.Tensor(id).Shape.Rank()
		switch {
		case l.Batched && i >= l.States && r < 2:
			return nil, fmt.Errorf("scan input %q has rank %d; opset 8 needs [batch, sequence, …]", g.Tensor(id).Name, r)
		case l.Batched && r < 1:
			return nil, fmt.Errorf("state %q has rank 0; opset 8 needs [batch, …]", g.Tensor(id).Name)
		case i >= l.States && r < 1:
			return nil, fmt.Errorf("scan input %q is a scalar", g.Tensor(id).Name)
		}
	}
	if len(body.Inputs) != formal {
		return nil, fmt.Errorf("the body takes %d inputs, the node gives %d", len(body.Inputs), formal)
	}
	k := len(body.Outputs) - l.States
	if k < 0 || len(n.Outputs) > len(body.Outputs) {
		return nil, fmt.Errorf("the body has %d outputs for %d states and %d node outputs", len(body.Outputs), l.States, len(n.Outputs))
	}
	axes := func(attr string, count int, rank func(int) int) ([]int, error) {
		v := n.Attrs.Ints(attr, nil)
		out := make([]int, count)
		if l.Batched {
			if v != nil {
				return nil, fmt.Errorf("attribute %s needs opset 9", attr)
			}
			for i := range out {
				out[i] = 1
			}
			return out, nil
		}
		if v != nil && len(v) != count {
			return nil, fmt.Errorf("%s has %d entries, want %d", attr, len(v), count)
		}
		for i := range out {
			a := int64(0)
			if v != nil {
				a = v[i]
			}
			r := int64(rank(i))
			if a < -r || a >= r {
				return nil, fmt.Errorf("%s[%d] = %d is out of range for rank %d", attr, i, a, r)
			}
			if a < 0 {
				a += r
			}
			out[i] = int(a)
		}
		return out, nil
	}
	rev := func(attr string, count int) ([]bool, error) {
		v := n.Attrs.Ints(attr, nil)
		if v != nil && len(v) != count {
			return nil, fmt.Errorf("%s has %d entries, want %d", attr, len(v), count)
		}
		out := make([]bool, count)
		for i := range v {
			out[i] = v[i] != 0
		}
		return out, nil
	}
	var err error
	if l.InAxes, err = axes("scan_input_axes", m, func(i int) int { return g.Tensor(n.Inputs[l.First+l.States+i]).Shape.Rank() }); err != nil {
		return nil, err
	}
	if l.OutAxes, err = axes("scan_output_axes", k, func(i int) int { return body.Tensor(body.Outputs[l.States+i]).Shape.Rank() + 1 }); err != nil {
		return nil, err
	}
	if l.InReverse, err = rev("scan_input_directions", m); err != nil {
		return nil, err
	}
	if l.OutReverse, err = rev("scan_output_directions", k); err != nil {
		return nil, err
	}
	if l.Batched {
		l.InReverse = make([]bool, m)
		if d := n.Attrs.Ints("directions", nil); d != nil {
			if len(d) != m {
				return nil, fmt.Errorf("directions has %d entries, want %d", len(d), m)
			}
			for i := range d {
				l.InReverse[i] = d[i] != 0
			}
		}
	}
	return l, nil
}

// BindSubgraphs sets the type of every input and capture of n's subgraphs
// from n's inputs; a capture of a constant outer tensor gets its Data.
// Declared input types that disagree are an error.
func BindSubgraphs(g *Graph, n *Node) error {
	outer := make(map[string]TensorID, n.Implicit)
	for _, id := range n.Inputs[n.Formal():] {
		outer[g.Tensor(id).Name] = id
	}
	set := func(sub *Graph, id TensorID, dt DType, shape Shape) error {
		t := sub.Tensor(id)
		if t.DType != Undefined && t.DType != dt {
			return fmt.Errorf("subgraph %q: input %q is declared %s, the node gives %s", sub.Name, t.Name, t.DType, dt)
		}
		t.DType, t.Shape = dt, shape.Clone()
		return nil
	}
	for _, sub := range n.Subgraphs() {
		for _, c := range sub.Captures {
			t := sub.Tensor(c)
			id, ok := outer[t.Name]
			if !ok {
				return fmt.Errorf("subgraph %q reads %q, which the node does not pass", sub.Name, t.Name)
			}
			o := g.Tensor(id)
			t.DType, t.Shape, t.Data = o.DType, o.Shape.Clone(), o.Data
		}
	}
	switch n.Op {
	case "If":
		for _, name := range []string{"then_branch", "else_branch"} {
			sub := n.Attrs.Graph(name)
			if sub == nil {
				return fmt.Errorf("%s is missing", name)
			}
			if len(sub.Inputs) != 0 {
				return fmt.Errorf("%s takes %d inputs, want none", name, len(sub.Inputs))
			}
		}
	case "Loop":
		body := n.Attrs.Graph("body")
		if body == nil {
			return fmt.Errorf("has no body")
		}
		carried := n.Formal() - 2
		if carried < 0 || len(body.Inputs) != carried+2 {
			return fmt.Errorf("the body takes %d inputs, the node gives %d carried values", len(body.Inputs), max(carried, 0))
		}
		if err := set(body, body.Inputs[0], Int64, Shape{}); err != nil {
			return err
		}
		if err := set(body, body.Inputs[1], Bool, Shape{}); err != nil {
			return err
		}
		for i := 0; i < carried; i++ {
			in := n.Inputs[2+i]
			if in == NoTensor {
				return fmt.Errorf("carried value %d is missing", i)
			}
			t := g.Tensor(in)
			if err := set(body, body.Inputs[2+i], t.DType, t.Shape); err != nil {
				return err
			}
		}
	case "Scan":
		body := n.Attrs.Graph("body")
		if body == nil {
			return fmt.Errorf("has no body")
		}
		m := int(n.Attrs.Int("num_scan_inputs", -1))
		batched := opset(g) < 9
		first := 0
		if batched {
			first = 1
		}
		formal := n.Formal() - first
		if m < 1 || m > formal || len(body.Inputs) != formal {
			return fmt.Errorf("the body takes %d inputs, the node has %d with num_scan_inputs %d", len(body.Inputs), formal, m)
		}
		axes := n.Attrs.Ints("scan_input_axes", nil)
		for i := 0; i < formal; i++ {
			in := n.Inputs[first+i]
			if in == NoTensor {
				return fmt.Errorf("input %d is missing", first+i)
			}
			t := g.Tensor(in)
			shape := t.Shape.Clone()
			drop := []int{}
			if batched {
				drop = append(drop, 0)
				if i >= formal-m {
					drop = []int{0, 1}
				}
			} else if i >= formal-m {
				a := int64(0)
				if j := i - (formal - m); axes != nil && j < len(axes) {
					a = axes[j]
				}
				if a < 0 {
					a += int64(len(shape))
				}
				if a < 0 || a >= int64(len(shape)) {
					return fmt.Errorf("scan axis %d is out of range for input %q of rank %d", a, t.Name, len(shape))
				}
				drop = append(drop, int(a))
			}
			for k := len(drop) - 1; k >= 0; k-- {
				if drop[k] >= len(shape) {
					return fmt.Errorf("input %q of rank %d has no axis %d", t.Name, len(shape), drop[k])
				}
				shape = append(shape[:drop[k]:drop[k]], shape[drop[k]+1:]...)
			}
			if err := set(body, body.Inputs[i], t.DType, shape); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("operator %s takes no subgraph", n.Op)
	}
	return nil
}

// subType is the type of a subgraph's i-th output.
func subType(sub *Graph, i int) Type {
	t := sub.Tensor(sub.Outputs[i])
	return Type{DType: t.DType, Shape: t.Shape.Clone()}
}

// IfConditionNeeded is the error for If node n of g whose branches cannot
// both be planned (err says why): where the condition is not a constant,
// a ValueError naming it, so that a caller that learns its value plans
// the branch taken alone; else err.
func IfConditionNeeded(g *Graph, n *Node, err error) error {
	c := n.Input(0)
	if n.Op != "If" || c == NoTensor || g.Tensor(c).IsConst() {
		return err
	}
	return &ValueError{Tensor: g.Tensor(c).Name, Why: "condition", Cause: err}
}

func inferIf(g *Graph, n *Node) ([]Type, error) {
	th, el := n.Attrs.Graph("then_branch"), n.Attrs.Graph("else_branch")
	if th == nil || el == nil {
		return nil, fmt.Errorf("needs both then_branch and else_branch")
	}
	if c := n.Input(0); c == NoTensor || g.Tensor(c).DType != Bool || g.Tensor(c).Shape.Elements() != 1 {
		return nil, fmt.Errorf("the condition must be one bool")
	}
	if len(th.Outputs) != len(el.Outputs) {
		return nil, fmt.Errorf("then_branch has %d outputs, else_branch %d", len(th.Outputs), len(el.Outputs))
	}
	types := make([]Type, len(th.Outputs))
	for i := range types {
		a, b := subType(th, i), subType(el, i)
		if a.DType != b.DType || !a.Shape.Equal(b.Shape) {
			err := fmt.Errorf("output %d is %s%v in then_branch but %s%v in else_branch; berth needs both branches to give the same static type", i, a.DType, a.Shape, b.DType, b.Shape)
			return nil, IfConditionNeeded(g, n, err)
		}
		types[i] = a
	}
	return types, nil
}

// LoopTrips returns the constant trip count of Loop node n, or -1 when M
// is absent or not a constant.
func LoopTrips(g *Graph, n *Node) int64 {
	m := n.Input(0)
	if m == NoTensor || !g.Tensor(m).IsConst() {
		return -1
	}
	v, err := g.Tensor(m).Int64s()
	if err != nil || len(v) != 1 {
		return -1
	}
	return max(v[0], 0)
}

func inferLoop(g *Graph, n *Node) ([]Type, error) {
	body := n.Attrs.Graph("body")
	if body == nil {
		return nil, fmt.Errorf("has no body")
	}
	carried := n.Formal() - 2
	if carried < 0 {
		return nil, fmt.Errorf("needs inputs M and cond")
	}
	if m := n.Input(0); m != NoTensor && (g.Tensor(m).DType != Int64 || g.Tensor(m).Shape.Elements() != 1) {
		return nil, fmt.Errorf("M must be one int64")
	}
	if c := n.Input(1); c != NoTensor && (g.Tensor(c).DType != Bool || g.Tensor(c).Shape.Elements() != 1) {
		return nil, fmt.Errorf("cond must be one bool")
	}
	scans := len(body.Outputs) - 1 - carried
	if scans < 0 {
		return nil, fmt.Errorf("the body has %d outputs, want at least %d (cond and the carried values)", len(body.Outputs), 1+carried)
	}
	if c := subType(body, 0); c.DType != Bool || c.Shape.Elements() != 1 {
		return nil, fmt.Errorf("the body's first output (the condition) is %s%v, want one bool", c.DType, c.Shape)
	}
	types := make([]Type, carried+scans)
	for i := 0; i < carried; i++ {
		if n.Inputs[2+i] == NoTensor {
			return nil, fmt.Errorf("carried value %d is missing", i)
		}
		in := g.Tensor(n.Inputs[2+i])
		out := subType(body, 1+i)
		if in.DType != out.DType || !in.Shape.Equal(out.Shape) {
			return nil, fmt.Errorf("carried value %d enters as %s%v and leaves the body as %s%v; berth needs it to keep its static type", i, in.DType, in.Shape, out.DType, out.Shape)
		}
		types[i] = out
	}
	trips := LoopTrips(g, n)
	if scans > 0 && trips < 0 {
		if n.Input(0) != NoTensor {
			return nil, NeedValue("trip count M of scan outputs", g.Tensor(n.Input(0)).Name)
		}
		return nil, fmt.Errorf("scan outputs need a constant trip count M (berth plans static shapes)")
	}
	for k := 0; k < scans; k++ {
		t := subType(body, 1+carried+k)
		types[carried+k] = Type{DType: t.DType, Shape: append(Shape{trips}, t.Shape...)}
	}
	return types, nil
}

func inferScan(g *Graph, n *Node) ([]Type, error) {
	l, err := ScanLayoutOf(g, n)
	if err != nil {
		return nil, err
	}
	body := n.Attrs.Graph("body")
	length := int64(-1)
	batch := int64(-1)
	for i := 0; i < l.Scans; i++ {
		s := g.Tensor(n.Inputs[l.First+l.States+i]).Shape
		if l.Batched {
			if batch >= 0 && s[0] != batch {
				return nil, fmt.Errorf("scan inputs disagree on the batch size")
			}
			batch = s[0]
		}
		d := s[l.InAxes[i]]
		if length >= 0 && d != length {
			return nil, fmt.Errorf("scan inputs have lengths %d and %d", length, d)
		}
		length = d
	}
	types := make([]Type, len(body.Outputs))
	for i := 0; i < l.States; i++ {
		in := g.Tensor(n.Inputs[l.First+i])
		out := subType(body, i)
		want := out.Shape
		if l.Batched {
			want = append(Shape{batch}, out.Shape...)
		}
		if in.DType != out.DType || !in.Shape.Equal(want) {
			return nil, fmt.Errorf("state %d enters as %s%v and leaves the body as %s%v; berth needs it to keep its static type", i, in.DType, in.Shape, out.DType, out.Shape)
		}
		types[i] = Type{DType: in.DType, Shape: in.Shape.Clone()}
	}
	for k := 0; k < len(body.Outputs)-l.States; k++ {
		t := subType(body, l.States+k)
		a := l.OutAxes[k]
		s := make(Shape, 0, len(t.Shape)+2)
		if l.Batched {
			s = append(append(s, batch, length), t.Shape...)
		} else {
			s = append(append(append(s, t.Shape[:a]...), length), t.Shape[a:]...)
		}
		types[l.States+k] = Type{DType: t.DType, Shape: s}
	}
	return types, nil
}
