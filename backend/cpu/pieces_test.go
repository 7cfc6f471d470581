package cpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// split adds a Split node along axis with one output per size.
func (k *kgraph) split(x ir.TensorID, axis int64, shapes ...[]int64) []ir.TensorID {
	idx := len(k.g.Nodes)
	var outs []ir.TensorID
	var sizes []int64
	for j, s := range shapes {
		outs = append(outs, k.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("Split_%d_%d", idx, j), DType: ir.Float32, Shape: ir.Shape(s).Clone(), Producer: idx}))
		sizes = append(sizes, s[axis])
	}
	k.g.Nodes = append(k.g.Nodes, ir.Node{Name: fmt.Sprintf("n%d", idx), Op: "Split", Attrs: ir.Attrs{"axis": axisAttr(axis)},
		Inputs: []ir.TensorID{x, k.ints64(fmt.Sprintf("split_%d", idx), sizes...)}, Outputs: outs})
	return outs
}

// TestPiecesKeepOutputs runs graphs of Concats, Splits and Slices, the
// contiguous ones among them shared with their wholes by the planner, with
// the planner's passes on and off, and wants the same bytes out. Each also
// checks that the parts it expects to share do, at the offsets the
// operators copy them to.
func TestPiecesKeepOutputs(t *testing.T) {
	f32 := ir.Float32
	type shared struct {
		part, whole ir.TensorID
		off         int64
	}
	cases := []struct {
		name  string
		build func(k *kgraph, x ir.TensorID) ([]ir.TensorID, []shared)
	}{
		{"densenet chain", func(k *kgraph, x ir.TensorID) ([]ir.TensorID, []shared) {
			x0 := k.node("Neg", nil, []ir.TensorID{x}, f32, 1, 16, 4, 4)
			x1 := k.node("Sigmoid", nil, []ir.TensorID{x0}, f32, 1, 16, 4, 4)
			c1 := k.node("Concat", ir.Attrs{"axis": axisAttr(1)}, []ir.TensorID{x0, x1}, f32, 1, 32, 4, 4)
			x2 := k.node("Conv", nil, []ir.TensorID{c1, k.constant("w2", make32(16*32), 16, 32, 1, 1)}, f32, 1, 16, 4, 4)
			c2 := k.node("Concat", ir.Attrs{"axis": axisAttr(1)}, []ir.TensorID{x0, x1, x2}, f32, 1, 48, 4, 4)
			x3 := k.node("Conv", nil, []ir.TensorID{c2, k.constant("w3", make32(16*48), 16, 48, 1, 1)}, f32, 1, 16, 4, 4)
			c3 := k.node("Concat", ir.Attrs{"axis": axisAttr(1)}, []ir.TensorID{x0, x1, x2, x3}, f32, 1, 64, 4, 4)
			y := k.node("Tanh", nil, []ir.TensorID{c3}, f32, 1, 64, 4, 4)
			return []ir.TensorID{y}, []shared{{x0, c1, 0}, {x1, c1, 1024}, {c1, c2, 0}, {x2, c2, 2048}, {c2, c3, 0}, {x3, c3, 3072}}
		}},
		{"split and slice", func(k *kgraph, x ir.TensorID) ([]ir.TensorID, []shared) {
			a := k.node("Neg", nil, []ir.TensorID{x}, f32, 1, 16, 4, 4)
			ps := k.split(a, 1, []int64{1, 4, 4, 4}, []int64{1, 12, 4, 4})
			s := k.node("Slice", nil, []ir.TensorID{ps[1], k.ints64("st", 2), k.ints64("en", 6), k.ints64("ax", 1)}, f32, 1, 4, 4, 4)
			// Not contiguous: rows 1..3 of every channel.
			s2 := k.node("Slice", nil, []ir.TensorID{a, k.ints64("st2", 1), k.ints64("en2", 3), k.ints64("ax2", 2)}, f32, 1, 16, 2, 4)
			y := k.node("Add", nil, []ir.TensorID{ps[0], s}, f32, 1, 4, 4, 4)
			z := k.node("Abs", nil, []ir.TensorID{s2}, f32, 1, 16, 2, 4)
			return []ir.TensorID{y, z}, []shared{{ps[0], a, 0}, {ps[1], a, 256}, {s, ps[1], 128}}
		}},
		{"concats that cannot share", func(k *kgraph, x ir.TensorID) ([]ir.TensorID, []shared) {
			a := k.node("Neg", nil, []ir.TensorID{x}, f32, 1, 16, 4, 4)
			b := k.node("Sigmoid", nil, []ir.TensorID{x}, f32, 1, 16, 4, 4)
			// Along an inner axis, with a constant between, of odd
			// sizes, and an input twice.
			c := k.node("Concat", ir.Attrs{"axis": axisAttr(2)}, []ir.TensorID{a, b}, f32, 1, 16, 8, 4)
			d := k.node("Concat", ir.Attrs{"axis": axisAttr(1)}, []ir.TensorID{a, k.constant("k", make32(3*16), 1, 3, 4, 4), b}, f32, 1, 35, 4, 4)
			e := k.node("Concat", ir.Attrs{"axis": axisAttr(1)}, []ir.TensorID{b, b}, f32, 1, 32, 4, 4)
			y := k.node("Tanh", nil, []ir.TensorID{c}, f32, 1, 16, 8, 4)
			z := k.node("Tanh", nil, []ir.TensorID{d}, f32, 1, 35, 4, 4)
			w := k.node("Tanh", nil, []ir.TensorID{e}, f32, 1, 32, 4, 4)
			return []ir.TensorID{y, z, w}, nil
		}},
	}
	rng := rand.New(rand.NewPCG(5, 5))
	in := make([]byte, 4*16*16)
	for i := range 16 * 16 {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(float32(rng.NormFloat64())))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &kgraph{g: &ir.Graph{Name: "pieces", Opsets: map[string]int64{"": 17}}}
			x := k.input("x", f32, 1, 16, 4, 4)
			outs, want := c.build(k, x)
			k.g.Outputs = outs
			var base [][]byte
			for _, opts := range []Options{
				{FileOrder: true, NoInPlace: true},
				{FileOrder: true},
				{},
			} {
				opts.Threads = 2
				exe, err := Compile(k.g, opts)
				if err != nil {
					t.Fatal(err)
				}
				p, pl := exe.Plan()
				index := exe.Index()
				for _, w := range want {
					part, whole := index[w.part], index[w.whole]
					view := p.Tensors[part].IsView()
					if view == opts.NoInPlace {
						t.Errorf("%+v: %s is a view: %v", opts, k.g.Tensors[w.part].Name, view)
					}
					if at, want := pl.Offsets[part], pl.Offsets[whole]+w.off; view && at != want {
						t.Errorf("%+v: %s at %d, want %d", opts, k.g.Tensors[w.part].Name, at, want)
					}
				}
				s, err := exe.NewSession(nil)
				if err != nil {
					t.Fatal(err)
				}
				feed(t, s, [][]byte{in})
				if err := s.Run(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				var got [][]byte
				for _, r := range s.Outputs() {
					got = append(got, bytes.Clone(r))
				}
				s.Close()
				if base == nil {
					base = got
					continue
				}
				for i := range got {
					if !bytes.Equal(got[i], base[i]) {
						t.Errorf("%+v: output %d differs from the plan with nothing shared", opts, i)
					}
				}
			}
		})
	}
}

// make32 is n values of a fixed pattern, for weights.
func make32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*7)%11-5) / 8
	}
	return v
}

// axisAttr is an integer attribute.
func axisAttr(v int64) ir.Attr { return ir.Attr{Kind: ir.AttrInt, Int: v} }
