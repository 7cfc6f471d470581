package passes

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/berth-ml/berth/ir"
)

// builder assembles small graphs for tests.
type builder struct{ g *ir.Graph }

func newBuilder() *builder { return &builder{g: &ir.Graph{Opsets: map[string]int64{"": 17}}} }

func (b *builder) input(name string, dt ir.DType, dims ...int64) ir.TensorID {
	id := b.g.NewTensor(name, dt, ir.Shape(dims).Clone(), nil)
	b.g.Inputs = append(b.g.Inputs, id)
	return id
}

func (b *builder) ints(name string, v ...int64) ir.TensorID {
	return b.g.NewTensor(name, ir.Int64, ir.Shape{int64(len(v))}, ir.Int64Bytes(v))
}

func (b *builder) scalar(name string, v int64) ir.TensorID {
	return b.g.NewTensor(name, ir.Int64, ir.Shape{}, ir.Int64Bytes([]int64{v}))
}

func (b *builder) floats(name string, dims ...int64) ir.TensorID {
	s := ir.Shape(dims).Clone()
	data := make([]byte, s.Bytes(ir.Float32))
	for i := range data {
		data[i] = byte(i)
	}
	return b.g.NewTensor(name, ir.Float32, s, data)
}

// node appends a node with outputs named after it and returns the first.
func (b *builder) node(op, name string, attrs ir.Attrs, outputs int, inputs ...ir.TensorID) ir.TensorID {
	n := ir.Node{Name: name, Op: op, Attrs: attrs, Inputs: inputs}
	for i := 0; i < outputs; i++ {
		out := b.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("%s:%d", name, i), Producer: len(b.g.Nodes)})
		n.Outputs = append(n.Outputs, out)
	}
	b.g.Nodes = append(b.g.Nodes, n)
	return n.Outputs[0]
}

func (b *builder) op(op, name string, inputs ...ir.TensorID) ir.TensorID {
	return b.node(op, name, nil, 1, inputs...)
}

func ops(g *ir.Graph) []string {
	var s []string
	for _, n := range g.Nodes {
		s = append(s, n.Op)
	}
	return s
}

// TestPrepareTransformerReshape builds the reshape of multi-head attention
// as PyTorch exports it: the target shape is computed from the input's
// shape at run time. With static shapes it folds to a constant.
func TestPrepareTransformerReshape(t *testing.T) {
	b := newBuilder()
	x := b.input("hidden", ir.Float32, 2, 16, 64)
	s := b.op("Shape", "shape", x)
	batch := b.op("Gather", "gather_batch", s, b.scalar("zero", 0))
	seq := b.op("Gather", "gather_seq", s, b.scalar("one", 1))
	ub := b.op("Unsqueeze", "unsqueeze_batch", batch, b.ints("axes0", 0))
	us := b.op("Unsqueeze", "unsqueeze_seq", seq, b.ints("axes0b", 0))
	target := b.node("Concat", "concat", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 0}}, 1, ub, us, b.ints("heads", 4), b.ints("head_dim", 16))
	r := b.op("Reshape", "reshape", x, target)
	y := b.node("Transpose", "transpose", ir.Attrs{"perm": {Kind: ir.AttrInts, Ints: []int64{0, 2, 1, 3}}}, 1, r)
	b.g.Outputs = []ir.TensorID{y}

	g := b.g
	if err := Prepare(g, testEval); err != nil {
		t.Fatal(err)
	}
	if got := ops(g); !slices.Equal(got, []string{"Reshape", "Transpose"}) {
		t.Fatalf("nodes after Prepare: %v, want [Reshape Transpose]", got)
	}
	shape := g.Tensor(g.Nodes[0].Inputs[1])
	v, err := shape.Int64s()
	if err != nil || !slices.Equal(v, []int64{2, 16, 4, 16}) {
		t.Errorf("reshape target = %v (%v), want [2 16 4 16]", v, err)
	}
	out := g.Tensor(g.Outputs[0])
	if !out.Shape.Equal(ir.Shape{2, 4, 16, 16}) || out.DType != ir.Float32 {
		t.Errorf("output is %s%v, want float32[2,4,16,16]", out.DType, out.Shape)
	}
	if len(g.Tensors) != 4 {
		t.Errorf("%d tensors remain, want 4 (input, target, reshaped, output)", len(g.Tensors))
	}

	// Without an evaluator the chain cannot fold past Shape: Reshape needs a
	// constant target, so Prepare fails and names the node.
	b2 := newBuilder()
	x2 := b2.input("x", ir.Float32, 2, 3)
	s2 := b2.op("Shape", "shape", x2)
	d := b2.op("Gather", "gather", s2, b2.ints("idx", 1, 0))
	b2.g.Outputs = []ir.TensorID{b2.op("Reshape", "reshape", x2, d)}
	err = Prepare(b2.g, nil)
	if err == nil || !strings.Contains(err.Error(), `node "reshape"`) {
		t.Errorf("Prepare without evaluator: %v, want an error naming node \"reshape\"", err)
	}
}

func TestPrepareFoldsWeights(t *testing.T) {
	b := newBuilder()
	x := b.input("x", ir.Float32, 2, 3)
	w := b.floats("w", 2, 3)
	neg := b.op("Neg", "neg", w)
	flat := b.node("Reshape", "reshape", nil, 1, neg, b.ints("shape", 3, 2))
	back := b.node("Reshape", "reshape_back", nil, 1, flat, b.ints("shape2", 2, 3))
	sum := b.op("Add", "add", x, back)
	b.op("Relu", "dead", x) // nobody reads it
	b.g.Outputs = []ir.TensorID{sum}

	g := b.g
	if err := Prepare(g, testEval); err != nil {
		t.Fatal(err)
	}
	if got := ops(g); !slices.Equal(got, []string{"Add"}) {
		t.Fatalf("nodes after Prepare: %v, want [Add]", got)
	}
	c := g.Tensor(g.Nodes[0].Inputs[1])
	if !c.IsConst() || !c.Shape.Equal(ir.Shape{2, 3}) || c.Producer != -1 {
		t.Fatalf("folded input is %s%v const=%v producer=%d", c.DType, c.Shape, c.IsConst(), c.Producer)
	}
	v, _ := c.Float64s()
	for _, x := range v {
		if x >= 0 { // the weight's bytes encode small positive floats
			t.Errorf("folded values %v are not negated", v)
			break
		}
	}
	for _, tt := range g.Tensors {
		if tt.Name == "w" || tt.Name == "dead:0" {
			t.Errorf("tensor %q survived dead-code elimination", tt.Name)
		}
	}
}

func TestViewFoldSharesData(t *testing.T) {
	b := newBuilder()
	w := b.floats("w", 4, 6)
	r := b.node("Reshape", "reshape", nil, 1, w, b.ints("shape", 2, 12))
	f := b.node("Flatten", "flatten", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 0}}, 1, r)
	u := b.node("Unsqueeze", "unsqueeze", nil, 1, f, b.ints("axes", 0))
	s := b.node("Squeeze", "squeeze", nil, 1, u, b.ints("axes2", 0))
	id := b.op("Identity", "identity", s)
	x := b.input("x", ir.Float32, 1, 24)
	b.g.Outputs = []ir.TensorID{b.op("Add", "add", x, id)}
	src := unsafe.SliceData(b.g.Tensor(w).Data)

	g := b.g
	if err := Fold(g, func(*ir.Graph, *ir.Node) error {
		return errors.New("the evaluator must not be called for views")
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []ir.TensorID{r, f, u, s, id} {
		tt := g.Tensor(id)
		if unsafe.SliceData(tt.Data) != src {
			t.Errorf("%s does not share the weight's bytes", tt.Name)
		}
	}
	if !g.Tensor(id).Shape.Equal(ir.Shape{1, 24}) {
		t.Errorf("identity shape %v", g.Tensor(id).Shape)
	}
}

func TestMaterializeOutputs(t *testing.T) {
	b := newBuilder()
	x := b.input("x", ir.Float32, 3)
	w := b.floats("w", 3)
	y := b.op("Relu", "relu", x)
	folded := b.op("Neg", "neg", w)
	b.g.Outputs = []ir.TensorID{x, w, y, y, folded}

	g := b.g
	if err := Prepare(g, testEval); err != nil {
		t.Fatal(err)
	}
	seen := map[ir.TensorID]bool{}
	wantNames := []string{"x", "w", "relu:0", "relu:0", "neg:0"}
	for j, id := range g.Outputs {
		tt := g.Tensor(id)
		if seen[id] {
			t.Errorf("output %d repeats tensor %d", j, id)
		}
		seen[id] = true
		if tt.IsConst() || tt.Producer < 0 {
			t.Errorf("output %d (%s) is not written by a node", j, tt.Name)
		}
		if tt.Name != wantNames[j] {
			t.Errorf("output %d is named %q, want %q", j, tt.Name, wantNames[j])
		}
		if !tt.Shape.Equal(ir.Shape{3}) || tt.DType != ir.Float32 {
			t.Errorf("output %d is %s%v", j, tt.DType, tt.Shape)
		}
	}
	if got := ops(g); !slices.Equal(got, []string{"Relu", "Identity", "Identity", "Identity", "Identity"}) {
		t.Errorf("nodes: %v", got)
	}

	// Prepare is idempotent in effect.
	before := len(g.Nodes)
	if err := Prepare(g, testEval); err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != before {
		t.Errorf("a second Prepare changed the node count from %d to %d", before, len(g.Nodes))
	}
}

func TestFoldLimitsAndErrors(t *testing.T) {
	t.Run("large results stay at run time", func(t *testing.T) {
		b := newBuilder()
		big := b.op("ConstantOfShape", "big", b.ints("shape", 4096, 1025)) // 16.4 MB of float32
		x := b.input("x", ir.Float32, 1)
		b.g.Outputs = []ir.TensorID{b.op("Add", "add", big, x)}
		called := false
		err := Prepare(b.g, func(*ir.Graph, *ir.Node) error { called = true; return nil })
		if err != nil {
			t.Fatal(err)
		}
		if called {
			t.Error("the evaluator was called for a result over MaxFoldBytes")
		}
		if got := ops(b.g); !slices.Equal(got, []string{"ConstantOfShape", "Add"}) {
			t.Errorf("nodes: %v", got)
		}
	})
	t.Run("declined nodes stay", func(t *testing.T) {
		b := newBuilder()
		c := b.op("ConstantOfShape", "small", b.ints("shape", 2))
		x := b.input("x", ir.Float32, 2)
		b.g.Outputs = []ir.TensorID{b.op("Add", "add", c, x)}
		if err := Prepare(b.g, testEval); err != nil {
			t.Fatal(err)
		}
		if got := ops(b.g); !slices.Equal(got, []string{"ConstantOfShape", "Add"}) {
			t.Errorf("nodes: %v", got)
		}
	})
	cases := []struct {
		name string
		eval Evaluator
		want string
	}{
		{"evaluator error", func(*ir.Graph, *ir.Node) error { return errors.New("boom") }, `node "neg" (Neg): constant folding: boom`},
		{"no data", func(*ir.Graph, *ir.Node) error { return nil }, `left output "neg:0" with 0 bytes, want 12`},
		{"short data", func(g *ir.Graph, n *ir.Node) error {
			g.Tensor(n.Outputs[0]).Data = make([]byte, 4)
			return nil
		}, "with 4 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			b.g.Outputs = []ir.TensorID{b.op("Neg", "neg", b.floats("w", 3))}
			err := Prepare(b.g, c.eval)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Prepare: %v, want an error containing %q", err, c.want)
			}
		})
	}
	t.Run("inference error names the node", func(t *testing.T) {
		b := newBuilder()
		x := b.input("x", ir.Float32, 2, 3)
		b.g.Outputs = []ir.TensorID{b.node("Reshape", "r1", nil, 1, x, b.ints("shape", 4, -1))}
		err := Prepare(b.g, testEval)
		want := `node "r1": Reshape: cannot reshape [2,3] into [4,-1]`
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare: %v, want %q", err, want)
		}
	})
}

func ExamplePrepare() {
	g := &ir.Graph{Opsets: map[string]int64{"": 17}}
	x := g.NewTensor("x", ir.Float32, ir.Shape{2, 3, 4}, nil)
	g.Inputs = []ir.TensorID{x}
	// y = Reshape(x, Shape(x)[0:1] ++ [-1]), as an exporter might write it.
	shape := g.AddTensor(ir.Tensor{Name: "shape", Producer: 0})
	first := g.AddTensor(ir.Tensor{Name: "first", Producer: 1})
	target := g.AddTensor(ir.Tensor{Name: "target", Producer: 2})
	y := g.AddTensor(ir.Tensor{Name: "y", Producer: 3})
	minus1 := g.NewTensor("minus1", ir.Int64, ir.Shape{1}, ir.Int64Bytes([]int64{-1}))
	g.Nodes = []ir.Node{
		{Name: "shape", Op: "Shape", Attrs: ir.Attrs{"end": {Kind: ir.AttrInt, Int: 1}}, Inputs: []ir.TensorID{x}, Outputs: []ir.TensorID{shape}},
		{Name: "first", Op: "Identity", Inputs: []ir.TensorID{shape}, Outputs: []ir.TensorID{first}},
		{Name: "target", Op: "Concat", Attrs: ir.Attrs{"axis": {Kind: ir.AttrInt}}, Inputs: []ir.TensorID{first, minus1}, Outputs: []ir.TensorID{target}},
		{Name: "reshape", Op: "Reshape", Inputs: []ir.TensorID{x, target}, Outputs: []ir.TensorID{y}},
	}
	g.Outputs = []ir.TensorID{y}

	// A real evaluator comes from the CPU backend; this one only concatenates.
	eval := func(g *ir.Graph, n *ir.Node) error {
		if n.Op != "Concat" {
			return ErrNoFold
		}
		var v []int64
		for _, in := range n.Inputs {
			part, _ := g.Tensor(in).Int64s()
			v = append(v, part...)
		}
		g.Tensor(n.Outputs[0]).Data = ir.Int64Bytes(v)
		return nil
	}
	if err := Prepare(g, eval); err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range g.Nodes {
		target, _ := g.Tensor(n.Inputs[1]).Int64s()
		fmt.Println(n.Op, target, "→", g.Describe(n.Outputs[0]))
	}
	// Output: Reshape [2 -1] → y float32[2,12]
}

func TestFoldAlignsEvaluatorInputs(t *testing.T) {
	b := newBuilder()
	buf := make([]byte, 13)
	window := buf[1:13] // three float32 values at an odd address, as in a mapped file
	w := b.g.NewTensor("w", ir.Float32, ir.Shape{3}, window)
	x := b.input("x", ir.Float32, 3)
	neg := b.op("Neg", "neg", w)
	b.g.Outputs = []ir.TensorID{b.op("Add", "add", x, neg), b.op("Sub", "sub", x, w)}
	err := Prepare(b.g, func(g *ir.Graph, n *ir.Node) error {
		in := g.Tensor(n.Inputs[0]).Data
		if uintptr(unsafe.Pointer(unsafe.SliceData(in)))%4 != 0 {
			return errors.New("misaligned input")
		}
		return testEval(g, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The weight, still read by Sub, keeps its window into the file.
	sub := b.g.Nodes[1]
	if sub.Op != "Sub" || unsafe.SliceData(b.g.Tensor(sub.Inputs[1]).Data) != unsafe.SliceData(window) {
		t.Error("the weight lost its zero-copy window")
	}
}

// TestCloneKeepsUnknownShapes checks that Clone keeps a tensor without a
// known shape (nil) apart from a scalar's (empty), and copies shapes.
func TestCloneKeepsUnknownShapes(t *testing.T) {
	g := &ir.Graph{}
	unknown := g.AddTensor(ir.Tensor{Name: "unknown", DType: ir.Float32, Producer: -1})
	scalar := g.AddTensor(ir.Tensor{Name: "scalar", DType: ir.Float32, Shape: ir.Shape{}, Producer: -1})
	matrix := g.AddTensor(ir.Tensor{Name: "matrix", DType: ir.Float32, Shape: ir.Shape{2, 3}, Producer: -1})
	c := Clone(g)
	if c.Tensor(unknown).Shape != nil {
		t.Errorf("unknown shape cloned as %#v, want nil", c.Tensor(unknown).Shape)
	}
	if s := c.Tensor(scalar).Shape; s == nil || len(s) != 0 {
		t.Errorf("scalar shape cloned as %#v, want empty, not nil", s)
	}
	c.Tensor(matrix).Shape[0] = 7
	if g.Tensor(matrix).Shape[0] != 2 {
		t.Errorf("the clone's shape is the original's")
	}
}
