package passes

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// sumCase builds relu(conv(x1) + conv(x2)) for TestMergePointwiseSums:
// x1 of c1 channels and x2 of c2, both h×h, into m channels, with
// whatever change mutate makes to the graph before it is prepared.
func sumCase(c1, c2, m, h int64, mutate func(b *builder, a, c *ir.Node, sum ir.TensorID)) *ir.Graph {
	b := newBuilder()
	x1 := b.input("x1", ir.Float32, 1, c1, h, h)
	x2 := b.input("x2", ir.Float32, 1, c2, h, h)
	conv := func(name string, x ir.TensorID, c int64, bias bool) ir.TensorID {
		in := []ir.TensorID{x, b.floats(name+".w", m, c, 1, 1)}
		if bias {
			in = append(in, floatValues(b, name+".b", m, float32(c)))
		}
		return b.node("Conv", name, ir.Attrs{"kernel_shape": {Kind: ir.AttrInts, Ints: []int64{1, 1}}}, 1, in...)
	}
	ya := conv("a", x1, c1, true)
	yc := conv("c", x2, c2, true)
	sum := b.op("Add", "add", ya, yc)
	y := b.op("Relu", "relu", sum)
	b.g.Outputs = []ir.TensorID{y}
	if mutate != nil {
		mutate(b, &b.g.Nodes[0], &b.g.Nodes[1], sum)
	}
	return b.g
}

// floatValues is a constant of n float32 values base + i/8.
func floatValues(b *builder, name string, n int64, base float32) ir.TensorID {
	data := make([]byte, 4*n)
	for i := range n {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(base+float32(i)/8))
	}
	return b.g.NewTensor(name, ir.Float32, ir.Shape{n}, data)
}

func floatAt(d []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
}

// TestMergePointwiseSums checks which sums of two convolutions become one
// convolution over the concatenated inputs, and that the merged weights
// and bias are the two convolutions' side by side and summed.
func TestMergePointwiseSums(t *testing.T) {
	cases := []struct {
		name           string
		c1, c2, m, h   int64
		mutate         func(b *builder, a, c *ir.Node, sum ir.TensorID)
		merged         bool
		wantOpsPrepare []string
		// decided: the pair is left for its shapes, which at other
		// input shapes might merge (ir.Graph.ShapeDecided).
		decided bool
	}{
		{name: "bottleneck shortcut", c1: 4, c2: 6, m: 16, h: 5, merged: true,
			wantOpsPrepare: []string{"Concat", "Conv", "Relu"}},
		{name: "no bias on one side", c1: 4, c2: 4, m: 8, h: 3, merged: true,
			mutate:         func(b *builder, a, c *ir.Node, _ ir.TensorID) { c.Inputs = c.Inputs[:2] },
			wantOpsPrepare: []string{"Concat", "Conv", "Relu"}},
		{name: "more input channels than output", c1: 8, c2: 8, m: 12, h: 3,
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "no channels at all", c1: 0, c2: 0, m: 0, h: 3,
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "strided", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				c.Attrs["strides"] = ir.Attr{Kind: ir.AttrInts, Ints: []int64{2, 2}}
				// Keep the shapes consistent: the other side reads a
				// half-size input.
				b.g.Tensor(a.Inputs[0]).Shape = ir.Shape{1, 4, 2, 2}
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "3×3 kernel", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				a.Inputs[1] = b.floats("a.w3", 16, 4, 3, 3)
				a.Attrs["kernel_shape"] = ir.Attr{Kind: ir.AttrInts, Ints: []int64{3, 3}}
				a.Attrs["pads"] = ir.Attr{Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}}
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "grouped", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				a.Inputs[1] = b.floats("a.wg", 16, 2, 1, 1)
				a.Attrs["group"] = ir.Attr{Kind: ir.AttrInt, Int: 2}
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "weights computed at run time", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				a.Inputs[1] = b.input("w", ir.Float32, 16, 4, 1, 1)
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "one input for both", c1: 4, c2: 4, m: 16, h: 4,
			mutate:         func(b *builder, a, c *ir.Node, _ ir.TensorID) { c.Inputs[0] = a.Inputs[0] },
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
		{name: "sizes that differ, broadcast by the sum", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				b.g.Tensor(c.Inputs[0]).Shape = ir.Shape{1, 4, 1, 1}
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}, decided: true},
		{name: "a convolution's output read again", c1: 4, c2: 4, m: 16, h: 4,
			mutate: func(b *builder, a, c *ir.Node, _ ir.TensorID) {
				b.g.Outputs = append(b.g.Outputs, a.Outputs[0])
			},
			wantOpsPrepare: []string{"Conv", "Conv", "Add", "Relu"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := sumCase(tc.c1, tc.c2, tc.m, tc.h, tc.mutate)
			wa, wc := g.Tensor(g.Nodes[0].Inputs[1]).Data, g.Tensor(g.Nodes[1].Inputs[1]).Data
			var ba, bc []byte
			if id := g.Nodes[0].Input(2); id != ir.NoTensor {
				ba = g.Tensor(id).Data
			}
			if id := g.Nodes[1].Input(2); id != ir.NoTensor {
				bc = g.Tensor(id).Data
			}
			if err := Prepare(g, nil); err != nil {
				t.Fatal(err)
			}
			if got := ops(g); !slices.Equal(got, tc.wantOpsPrepare) {
				t.Fatalf("ops after Prepare %v, want %v", got, tc.wantOpsPrepare)
			}
			if g.ShapeDecided != tc.decided || ShapeGeneric(g) == tc.decided {
				t.Errorf("shape decided %v, shape-generic %v; want decided %v", g.ShapeDecided, ShapeGeneric(g), tc.decided)
			}
			if !tc.merged {
				return
			}
			cat, conv := &g.Nodes[0], &g.Nodes[1]
			if cat.Attrs.Int("axis", 0) != 1 || g.Tensor(cat.Inputs[0]).Name != "x1" || g.Tensor(cat.Inputs[1]).Name != "x2" {
				t.Fatalf("concat %+v of %s, %s", cat.Attrs, g.Tensor(cat.Inputs[0]).Name, g.Tensor(cat.Inputs[1]).Name)
			}
			if want := (ir.Shape{1, tc.c1 + tc.c2, tc.h, tc.h}); !g.Tensor(cat.Outputs[0]).Shape.Equal(want) {
				t.Fatalf("concat output %v, want %v", g.Tensor(cat.Outputs[0]).Shape, want)
			}
			w, bias := g.Tensor(conv.Inputs[1]), g.Tensor(conv.Inputs[2])
			if want := (ir.Shape{tc.m, tc.c1 + tc.c2, 1, 1}); !w.Shape.Equal(want) {
				t.Fatalf("weights %v, want %v", w.Shape, want)
			}
			for o := range int(tc.m) {
				for c := range int(tc.c1 + tc.c2) {
					// Bits: the builder's weights hold NaNs.
					var want uint32
					if c < int(tc.c1) {
						want = binary.LittleEndian.Uint32(wa[4*(o*int(tc.c1)+c):])
					} else {
						want = binary.LittleEndian.Uint32(wc[4*(o*int(tc.c2)+c-int(tc.c1)):])
					}
					if got := binary.LittleEndian.Uint32(w.Data[4*(o*int(tc.c1+tc.c2)+c):]); got != want {
						t.Fatalf("weight (%d, %d) = %#x, want %#x", o, c, got, want)
					}
				}
				var want float32
				for _, d := range [][]byte{ba, bc} {
					if d != nil {
						want += floatAt(d, o)
					}
				}
				if got := floatAt(bias.Data, o); got != want {
					t.Fatalf("bias %d = %v, want %v", o, got, want)
				}
			}
		})
	}
}

// TestSplitPointwiseSums checks that SplitPointwiseSums gives back the
// two convolutions MergePointwiseSums merged, their weights as they were
// (the summed bias on the second), and leaves the merged graph as it is.
func TestSplitPointwiseSums(t *testing.T) {
	g := sumCase(4, 6, 16, 5, nil)
	wa, wc := g.Tensor(g.Nodes[0].Inputs[1]).Data, g.Tensor(g.Nodes[1].Inputs[1]).Data
	if err := Prepare(g, nil); err != nil {
		t.Fatal(err)
	}
	merged := ops(g)
	bias := g.Tensor(g.Nodes[1].Inputs[2]).Data
	s := SplitPointwiseSums(g)
	if got, want := ops(s), []string{"Conv", "Conv", "Add", "Relu"}; !slices.Equal(got, want) {
		t.Fatalf("ops after the split %v, want %v", got, want)
	}
	if got := ops(g); !slices.Equal(got, merged) {
		t.Errorf("the merged graph's ops became %v", got)
	}
	first, second := &s.Nodes[0], &s.Nodes[1]
	if len(first.Inputs) != 2 || !slices.Equal(s.Tensor(first.Inputs[1]).Data, wa) || !slices.Equal(s.Tensor(second.Inputs[1]).Data, wc) {
		t.Errorf("split weights differ from the convolutions' own")
	}
	if len(second.Inputs) != 3 || !slices.Equal(s.Tensor(second.Inputs[2]).Data, bias) {
		t.Errorf("the second convolution does not take the summed bias")
	}
	add := &s.Nodes[2]
	if add.Inputs[0] != first.Outputs[0] || add.Inputs[1] != second.Outputs[0] || add.Outputs[0] != s.Nodes[3].Inputs[0] {
		t.Errorf("the Add reads %v and writes %v", add.Inputs, add.Outputs)
	}
	for i, n := range s.Nodes {
		for _, o := range n.Outputs {
			if s.Tensor(o).Producer != i {
				t.Errorf("node %d (%s): its output's producer is %d", i, n.Op, s.Tensor(o).Producer)
			}
		}
	}
	if again := SplitPointwiseSums(s); again != s {
		t.Errorf("a graph with nothing to split was copied")
	}
}
