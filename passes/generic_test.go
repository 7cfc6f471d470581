package passes

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// reshapeBy builds Reshape(x[2, 6], Concat(Gather(Shape(src), 0), [-1]))
// → Relu, the target read from the shape of src: x itself (an input) or
// a constant c[2, 5].
func reshapeBy(ofInput bool) (*ir.Graph, ir.TensorID) {
	b := newBuilder()
	x := b.input("x", ir.Float32, 2, 6)
	src := x
	if !ofInput {
		src = b.floats("c", 2, 5)
	}
	s := b.op("Shape", "shape", src)
	lead := b.op("Gather", "lead", s, b.ints("first", 0))
	target := b.node("Concat", "target", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 0}}, 1, lead, b.ints("rest", -1))
	y := b.op("Relu", "relu", b.op("Reshape", "reshape", x, target))
	b.g.Outputs = []ir.TensorID{y}
	return b.g, target
}

// TestFoldMarksShapes checks what Fold marks as following from shapes: a
// Shape of an input and what is folded from it, not a Shape of a
// constant; and that a graph keeping such a value is not shape-generic.
func TestFoldMarksShapes(t *testing.T) {
	for _, ofInput := range []bool{true, false} {
		g, target := reshapeBy(ofInput)
		if err := Fold(g, testEval); err != nil {
			t.Fatal(err)
		}
		for _, id := range []ir.TensorID{g.Nodes[0].Outputs[0], g.Nodes[1].Outputs[0], target} {
			if tt := g.Tensor(id); !tt.IsConst() || tt.FromShapes != ofInput {
				t.Errorf("of the input %v: %q constant %v, from shapes %v", ofInput, tt.Name, tt.IsConst(), tt.FromShapes)
			}
		}
		if in := g.Tensor(g.Inputs[0]); in.FromShapes {
			t.Error("the input is marked")
		}
		markDropped(g)
		MergePointwiseSums(g)
		EliminateDeadCode(g)
		MaterializeOutputs(g)
		if got := ShapeGeneric(g); got == ofInput {
			t.Errorf("of the input %v: shape-generic %v", ofInput, got)
		}
	}
}

// TestShapeDecisions checks the graph-level marks: a dropped node that
// read an activation, and not a dropped Shape.
func TestShapeDecisions(t *testing.T) {
	for _, dead := range []string{"Neg", "Shape", ""} {
		b := newBuilder()
		x := b.input("x", ir.Float32, 4)
		y := b.op("Relu", "relu", x)
		if dead != "" {
			b.op(dead, "unread", x)
		}
		b.g.Outputs = []ir.TensorID{y}
		if err := Prepare(b.g, testEval); err != nil {
			t.Fatal(err)
		}
		if want := dead == "Neg"; b.g.ShapeDecided != want || ShapeGeneric(b.g) == want {
			t.Errorf("an unread %q: decided %v, shape-generic %v", dead, b.g.ShapeDecided, ShapeGeneric(b.g))
		}
	}
}

// TestReinfer re-infers a shape-generic graph at other shapes and
// compares it with the graph Prepare makes at them; and checks what
// Reinfer refuses.
func TestReinfer(t *testing.T) {
	build := func(batch int64) *ir.Graph {
		g, _ := reshapeBy(false)
		g.Tensor(g.Inputs[0]).Shape = ir.Shape{batch, 6}
		if err := Prepare(g, testEval); err != nil {
			t.Fatal(err)
		}
		return g
	}
	g := build(2)
	if !ShapeGeneric(g) {
		t.Fatal("not shape-generic")
	}
	for _, batch := range []int64{1, 4, 10} {
		re, err := Reinfer(g, [][]int64{{batch, 6}})
		if err != nil {
			t.Fatal(err)
		}
		want := build(batch)
		if len(re.Tensors) != len(want.Tensors) || !slices.Equal(ops(re), ops(want)) {
			t.Fatalf("batch %d: %v against %v", batch, ops(re), ops(want))
		}
		for i := range re.Tensors {
			a, b := &re.Tensors[i], &want.Tensors[i]
			if a.Name != b.Name || a.DType != b.DType || !a.Shape.Equal(b.Shape) || string(a.Data) != string(b.Data) {
				t.Errorf("batch %d: tensor %q %s%v against %q %s%v", batch, a.Name, a.DType, a.Shape, b.Name, b.DType, b.Shape)
			}
		}
		if err := ir.Verify(re); err != nil {
			t.Error(err)
		}
	}
	if !g.Tensor(g.Inputs[0]).Shape.Equal(ir.Shape{2, 6}) {
		t.Error("Reinfer changed the graph it copied")
	}
	for _, tc := range []struct {
		shapes [][]int64
		want   string
	}{
		{[][]int64{{3, 5}}, "cannot reshape"},
		{[][]int64{{-1, 6}}, "negative"},
		{[][]int64{{1 << 40, 1 << 40}}, "elements"},
		{[][]int64{{2, 6}, {2, 6}}, "2 shapes for 1 graph inputs"},
		{nil, "0 shapes"},
	} {
		if _, err := Reinfer(g, tc.shapes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error with %q", tc.shapes, err, tc.want)
		}
	}
	specific, _ := reshapeBy(true)
	if err := Prepare(specific, testEval); err != nil {
		t.Fatal(err)
	}
	if _, err := Reinfer(specific, [][]int64{{2, 6}}); !errors.Is(err, ErrShapeSpecific) {
		t.Errorf("a shape-specific graph: %v", err)
	}
}
