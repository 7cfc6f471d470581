package passes

import (
	"fmt"
	"slices"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// MaxLoweredSteps bounds the time steps of a recurrent node that
// LowerRecurrent writes out: each step of each direction becomes some
// twenty nodes.
const MaxLoweredSteps = 64

// LowerRecurrent returns g with each LSTM, GRU and RNN node it can lower
// written out as ONNX's equations in nodes a backend without recurrent
// kernels runs (the CUDA backend): per direction and gate, one MatMul of
// every time step's input by the gate's weights (the biases added), then
// per step a MatMul of the hidden state by the gate's recurrent weights,
// the sigmoids and tanhs, and the states updated; the outputs gathered as
// the node gave them. Where no node can be lowered it returns g itself;
// otherwise a copy (g is left as it was).
//
// A node is lowered when its input is float32 with at most
// MaxLoweredSteps time steps, its weights W and R (and B, and an LSTM's
// peepholes P, where given) are constants, it has no sequence_lens (or a
// constant one that gives every sequence all steps), the default
// activations (given or not), no clip and, for an LSTM, no
// input_forget. Any other stays as it is.
func LowerRecurrent(g *ir.Graph) *ir.Graph {
	var todo []int
	for i := range g.Nodes {
		if lowerable(g, &g.Nodes[i]) {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return g
	}
	out := *g
	out.Tensors = slices.Clone(g.Tensors)
	out.Nodes = make([]ir.Node, 0, len(g.Nodes)+64*len(todo))
	lowered := false
	for i := range g.Nodes {
		if len(todo) > 0 && todo[0] == i {
			todo = todo[1:]
			l := &lowering{g: &out, n: g.Nodes[i]}
			if err := l.lower(); err == nil {
				lowered = true
				continue
			}
			// Something the checks above let through: keep the node.
			out.Nodes = out.Nodes[:l.start]
			out.Tensors = out.Tensors[:l.tensors]
		}
		out.Nodes = append(out.Nodes, g.Nodes[i])
	}
	if !lowered {
		return g
	}
	out.SetProducers()
	return &out
}

// recurrent describes each operator LowerRecurrent takes: its gates, the
// default activations of a direction, and its inputs and outputs at most.
var recurrent = map[string]struct {
	gates           int64
	activations     []string
	inputs, outputs int
}{
	"LSTM": {4, []string{"Sigmoid", "Tanh", "Tanh"}, 8, 3},
	"GRU":  {3, []string{"Sigmoid", "Tanh"}, 6, 2},
	"RNN":  {1, []string{"Tanh"}, 6, 2},
}

// lowerable reports whether LowerRecurrent writes n out (see there).
func lowerable(g *ir.Graph, n *ir.Node) bool {
	op, ok := recurrent[n.Op]
	if !ok || !n.DefaultDomain() || len(n.Inputs) < 3 || len(n.Inputs) > op.inputs || len(n.Outputs) > op.outputs {
		return false
	}
	at := n.Attrs
	if at.Has("activation_alpha") || at.Has("activation_beta") || at.Float("clip", 0) != 0 || at.Int("input_forget", 0) != 0 {
		return false
	}
	dirs := 1
	switch at.String("direction", "forward") {
	case "forward", "reverse":
	case "bidirectional":
		dirs = 2
	default:
		return false
	}
	if names := at.Strings("activations", nil); names != nil {
		var want []string
		for range dirs {
			want = append(want, op.activations...)
		}
		if !slices.Equal(names, want) {
			return false
		}
	}
	x := g.InputOf(n, 0)
	if x == nil || x.DType != ir.Float32 || x.Shape.Rank() != 3 {
		return false
	}
	steps := x.Shape[0]
	if at.Int("layout", 0) != 0 {
		steps = x.Shape[1]
	}
	if steps <= 0 || steps > MaxLoweredSteps || x.Shape.Elements() == 0 {
		return false
	}
	// W and R constant, B and P constant where given, no sequence_lens
	// that says anything; every float input float32.
	for k := 1; k < op.inputs; k++ {
		t := g.InputOf(n, k)
		switch {
		case k == 4:
			if t != nil && !fullLengths(t, steps) {
				return false
			}
		case t == nil:
			if k <= 2 {
				return false
			}
		case t.DType != ir.Float32 || (k <= 3 || k == 7) && !t.IsConst():
			return false
		}
	}
	return true
}

// fullLengths reports whether sequence_lens t is a constant that gives
// every sequence all steps (and so says nothing).
func fullLengths(t *ir.Tensor, steps int64) bool {
	if !t.IsConst() || !t.DType.IsInt() {
		return false
	}
	v, err := t.Int64s()
	if err != nil {
		return false
	}
	for _, n := range v {
		if n != steps {
			return false
		}
	}
	return true
}

// lowering writes one recurrent node out into g.
type lowering struct {
	g *ir.Graph
	n ir.Node
	// start and tensors are g's node and tensor counts before the node's
	// own, to undo them.
	start, tensors int
	count          int // nodes made, for their names
}

func (l *lowering) lower() error {
	g, n := l.g, &l.n
	l.start, l.tensors = len(g.Nodes), len(g.Tensors)
	op := recurrent[n.Op]
	gates := op.gates
	at := n.Attrs
	hid := at.Int("hidden_size", 0)
	layout := at.Int("layout", 0)
	x := n.Inputs[0]
	xs := g.Tensor(x).Shape
	steps, batch, in := xs[0], xs[1], xs[2]
	if layout != 0 {
		steps, batch = batch, steps
	}
	dirs := int64(1)
	direction := at.String("direction", "forward")
	if direction == "bidirectional" {
		dirs = 2
	}
	// The weights' shapes, before any of them is read: hidden_size is
	// the file's word, and must fit them.
	if hid <= 0 || hid > ir.MaxElements {
		return fmt.Errorf("%s: hidden_size %d", n.Op, hid)
	}
	for k, want := range map[int]ir.Shape{1: {dirs, gates * hid, in}, 2: {dirs, gates * hid, hid}, 3: {dirs, 2 * gates * hid}, 7: {dirs, 3 * hid}} {
		if t := g.InputOf(n, k); t != nil && (k != 7 || n.Op == "LSTM") && !t.Shape.Equal(want) {
			return fmt.Errorf("%s: input %d is %v, want %v", n.Op, k, t.Shape, want)
		}
	}
	w, err := floats(g.InputOf(n, 1))
	if err != nil {
		return err
	}
	r, err := floats(g.InputOf(n, 2))
	if err != nil {
		return err
	}
	var b, p []float32
	if t := g.InputOf(n, 3); t != nil {
		if b, err = floats(t); err != nil {
			return err
		}
	}
	if t := g.InputOf(n, 7); t != nil && n.Op == "LSTM" {
		if p, err = floats(t); err != nil {
			return err
		}
	}
	// linearBeforeReset: a GRU's recurrent product of the hidden state is
	// made before the reset gate scales it (and its bias with it).
	linearBeforeReset := n.Op == "GRU" && at.Int("linear_before_reset", 0) != 0
	if layout != 0 {
		x = l.node("Transpose", ir.Attrs{"perm": intsAttr(1, 0, 2)}, x)
	}
	flat := l.node("Reshape", nil, x, l.int64s(steps*batch, in))
	var ys, hs, cs []ir.TensorID
	for d := range dirs {
		// The products of every step's input by each gate's weights
		// (LSTM: i, o, f, c; GRU: z, r, h; RNN: one), the biases added:
		// [steps, batch, hidden]. A GRU whose reset comes after the
		// product keeps its hidden gate's recurrent bias (rb) for the
		// step.
		xw, rt := make([]ir.TensorID, gates), make([]ir.TensorID, gates)
		rb := ir.NoTensor
		for k := range gates {
			rows := func(m []float32, cols int64) []float32 {
				return m[(d*gates+k)*hid*cols : (d*gates+k+1)*hid*cols]
			}
			xw[k] = l.node("MatMul", nil, flat, l.floats(transpose(rows(w, in), hid, in), in, hid))
			if b != nil {
				wb := b[(d*2*gates+k)*hid : (d*2*gates+k+1)*hid]
				rbk := b[(d*2*gates+gates+k)*hid : (d*2*gates+gates+k+1)*hid]
				bias := slices.Clone(wb)
				if linearBeforeReset && k == 2 {
					rb = l.floats(rbk, hid)
				} else {
					for j := range bias {
						bias[j] += rbk[j]
					}
				}
				xw[k] = l.node("Add", nil, xw[k], l.floats(bias, hid))
			}
			xw[k] = l.node("Reshape", nil, xw[k], l.int64s(steps, batch, hid))
			rt[k] = l.floats(transpose(rows(r, hid), hid, hid), hid, hid)
		}
		h, err := l.initial(5, d, layout, batch, hid)
		if err != nil {
			return err
		}
		c := ir.NoTensor
		if n.Op == "LSTM" {
			if c, err = l.initial(6, d, layout, batch, hid); err != nil {
				return err
			}
		}
		var peep [3]ir.TensorID // i, o, f
		if p != nil {
			for k := range int64(3) {
				peep[k] = l.floats(p[(d*3+k)*hid:(d*3+k+1)*hid], hid)
			}
		}
		withPeep := func(a, cell ir.TensorID, k int) ir.TensorID {
			if p == nil {
				return a
			}
			return l.node("Add", nil, a, l.node("Mul", nil, cell, peep[k]))
		}
		hts := make([]ir.TensorID, steps)
		for s := range steps {
			t := s
			if direction == "reverse" || d == 1 {
				t = steps - 1 - s
			}
			// input is gate k's product of the step's input; plus adds
			// that of state by the gate's recurrent weights.
			input := func(k int) ir.TensorID { return l.node("Gather", ir.Attrs{"axis": intAttr(0)}, xw[k], l.int64(t)) }
			plus := func(k int, state ir.TensorID) ir.TensorID {
				return l.node("Add", nil, input(k), l.node("MatMul", nil, state, rt[k]))
			}
			switch n.Op {
			case "LSTM":
				i := l.node("Sigmoid", nil, withPeep(plus(0, h), c, 0))
				f := l.node("Sigmoid", nil, withPeep(plus(2, h), c, 2))
				cc := l.node("Tanh", nil, plus(3, h))
				o0 := plus(1, h)
				c = l.node("Add", nil, l.node("Mul", nil, f, c), l.node("Mul", nil, i, cc))
				o := l.node("Sigmoid", nil, withPeep(o0, c, 1))
				h = l.node("Mul", nil, o, l.node("Tanh", nil, c))
			case "GRU":
				z := l.node("Sigmoid", nil, plus(0, h))
				rg := l.node("Sigmoid", nil, plus(1, h))
				var hh ir.TensorID
				if linearBeforeReset {
					rh := l.node("MatMul", nil, h, rt[2])
					if rb != ir.NoTensor {
						rh = l.node("Add", nil, rh, rb)
					}
					hh = l.node("Tanh", nil, l.node("Add", nil, input(2), l.node("Mul", nil, rg, rh)))
				} else {
					hh = l.node("Tanh", nil, plus(2, l.node("Mul", nil, rg, h)))
				}
				// (1−z)·hh + z·h = hh + z·(h − hh)
				h = l.node("Add", nil, hh, l.node("Mul", nil, z, l.node("Sub", nil, h, hh)))
			case "RNN":
				h = l.node("Tanh", nil, plus(0, h))
			}
			hts[t] = l.node("Reshape", nil, h, l.int64s(1, 1, batch, hid))
		}
		ys = append(ys, l.concat(0, hts))
		hs = append(hs, l.node("Reshape", nil, h, l.int64s(1, batch, hid)))
		if c != ir.NoTensor {
			cs = append(cs, l.node("Reshape", nil, c, l.int64s(1, batch, hid)))
		}
	}
	outs := []ir.TensorID{l.concat(1, ys), l.concat(0, hs)}
	if cs != nil {
		outs = append(outs, l.concat(0, cs))
	}
	if layout != 0 {
		outs[0] = l.node("Transpose", ir.Attrs{"perm": intsAttr(2, 0, 1, 3)}, outs[0])
		for k := 1; k < len(outs); k++ {
			outs[k] = l.node("Transpose", ir.Attrs{"perm": intsAttr(1, 0, 2)}, outs[k])
		}
	}
	for k, v := range outs {
		if k < len(n.Outputs) && n.Outputs[k] != ir.NoTensor {
			if err := l.into(n.Outputs[k], v); err != nil {
				return err
			}
		}
	}
	return nil
}

// initial is the initial hidden state (input 5) or cell (input 6) of
// direction d, [batch, hidden]: where the input is not given, zeros of
// one row that the first step broadcasts over the batch.
func (l *lowering) initial(k int, d, layout, batch, hid int64) (ir.TensorID, error) {
	t := l.g.InputOf(&l.n, k)
	if t == nil {
		return l.floats(make([]float32, hid), 1, hid), nil
	}
	dirs := int64(1)
	if l.n.Attrs.String("direction", "forward") == "bidirectional" {
		dirs = 2
	}
	want := ir.Shape{dirs, batch, hid}
	axis := int64(0)
	if layout != 0 {
		want[0], want[1] = want[1], want[0]
		axis = 1
	}
	if !t.Shape.Equal(want) {
		return ir.NoTensor, fmt.Errorf("%s: initial state %v, want %v", l.n.Op, t.Shape, want)
	}
	return l.node("Gather", ir.Attrs{"axis": intAttr(axis)}, l.n.Inputs[k], l.int64(d)), nil
}

// concat concatenates ids along axis (the one itself where there is one).
func (l *lowering) concat(axis int64, ids []ir.TensorID) ir.TensorID {
	if len(ids) == 1 {
		return ids[0]
	}
	return l.node("Concat", ir.Attrs{"axis": intAttr(axis)}, ids...)
}

// node appends a node of op over ins to g, its one output typed by
// ir.Infer, and returns the output. A node that does not infer leaves a
// tensor without a type, which into reports.
func (l *lowering) node(op string, attrs ir.Attrs, ins ...ir.TensorID) ir.TensorID {
	g := l.g
	l.count++
	name := fmt.Sprintf("%s/lowered/%s_%d", l.n.Name, op, l.count)
	y := g.AddTensor(ir.Tensor{Name: name, Producer: len(g.Nodes)})
	g.Nodes = append(g.Nodes, ir.Node{Name: name, Op: op, Attrs: attrs, Inputs: ins, Outputs: []ir.TensorID{y}})
	if types, err := ir.Infer(g, &g.Nodes[len(g.Nodes)-1]); err == nil && len(types) == 1 {
		g.Tensors[y].DType, g.Tensors[y].Shape = types[0].DType, types[0].Shape
	}
	return y
}

// into makes the node's output out the value of v: an Identity writes it.
func (l *lowering) into(out, v ir.TensorID) error {
	g := l.g
	o, t := g.Tensor(out), g.Tensor(v)
	if !t.DType.Valid() || t.DType != o.DType || !t.Shape.Equal(o.Shape) {
		return fmt.Errorf("%s: output %q is %s%v, the lowering's %s%v", l.n.Op, o.Name, o.DType, o.Shape, t.DType, t.Shape)
	}
	g.Nodes = append(g.Nodes, ir.Node{Name: l.n.Name + "/lowered/" + o.Name, Op: "Identity", Inputs: []ir.TensorID{v}, Outputs: []ir.TensorID{out}})
	return nil
}

// floats adds a float32 constant.
func (l *lowering) floats(v []float32, shape ...int64) ir.TensorID {
	l.count++
	return l.g.NewTensor(fmt.Sprintf("%s/lowered/const_%d", l.n.Name, l.count), ir.Float32, ir.Shape(shape), raw.Bytes(slices.Clone(v)))
}

// int64s adds an int64 constant of rank 1; int64 a scalar one.
func (l *lowering) int64s(v ...int64) ir.TensorID {
	l.count++
	return l.g.NewTensor(fmt.Sprintf("%s/lowered/shape_%d", l.n.Name, l.count), ir.Int64, ir.Shape{int64(len(v))}, ir.Int64Bytes(v))
}

func (l *lowering) int64(v int64) ir.TensorID {
	l.count++
	return l.g.NewTensor(fmt.Sprintf("%s/lowered/index_%d", l.n.Name, l.count), ir.Int64, ir.Shape{}, ir.Int64Bytes([]int64{v}))
}

// floats reads a float32 constant.
func floats(t *ir.Tensor) ([]float32, error) {
	v, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out, nil
}

// transpose returns the rows×cols matrix m transposed.
func transpose(m []float32, rows, cols int64) []float32 {
	out := make([]float32, len(m))
	for i := range rows {
		for j := range cols {
			out[j*rows+i] = m[i*cols+j]
		}
	}
	return out
}

// intsAttr and intAttr are attributes of integers and of one.
func intsAttr(v ...int64) ir.Attr { return ir.Attr{Kind: ir.AttrInts, Ints: v} }
func intAttr(v int64) ir.Attr     { return ir.Attr{Kind: ir.AttrInt, Int: v} }
