package plan_test

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// concat adds a Concat of ins, each a piece at the running offset, with gap
// bytes (a constant input's) before input gapAt (-1: none).
func (b *builder) concat(gapAt int, gap int64, ins ...int) int {
	var pieces []plan.Piece
	var off int64
	for i, in := range ins {
		if i == gapAt {
			off += gap
		}
		pieces = append(pieces, plan.Piece{Part: in, Offset: off})
		off += b.p.Tensors[in].Size
	}
	out := b.op("Concat", off, ins...)
	for i := range pieces {
		pieces[i].Whole = out
	}
	b.p.Steps[len(b.p.Steps)-1].Pieces = pieces
	return out
}

// split adds a Split of whole into consecutive parts of the given sizes,
// from byte from on.
func (b *builder) split(whole int, from int64, sizes ...int64) []int {
	outs := b.step("Split", []int{whole}, sizes...)
	st := &b.p.Steps[len(b.p.Steps)-1]
	off := from
	for i, out := range outs {
		st.Pieces = append(st.Pieces, plan.Piece{Part: out, Whole: whole, Offset: off})
		off += sizes[i]
	}
	return outs
}

// want is a view SharePieces should make: tensor part inside whole at off,
// or (off < 0) no view at all.
type want struct {
	part, whole int
	off         int64
}

func TestSharePieces(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *builder) []want
	}{
		{"concat of two", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 256, x), b.op("Op", 128, x)
			w := b.concat(-1, 0, a, c)
			b.output(b.op("Op", 64, w))
			return []want{{a, w, 0}, {c, w, 256}}
		}},
		{"a graph input is copied", func(b *builder) []want {
			x := b.input(256)
			a := b.op("Op", 128, x)
			w := b.concat(-1, 0, x, a)
			b.output(b.op("Op", 64, w))
			return []want{{x, -1, -1}, {a, w, 256}}
		}},
		{"a graph output is copied", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 256, x), b.op("Op", 128, x)
			w := b.concat(-1, 0, a, c)
			b.output(b.op("Op", 64, w), a)
			return []want{{a, -1, -1}, {c, w, 256}}
		}},
		{"an input named twice is copied", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 256, x), b.op("Op", 128, x)
			w := b.concat(-1, 0, a, c, a)
			b.output(b.op("Op", 64, w))
			return []want{{a, -1, -1}, {c, w, 256}}
		}},
		{"an offset off the cache line", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 100, x), b.op("Op", 128, x)
			w := b.concat(-1, 0, a, c)
			b.output(b.op("Op", 64, w))
			return []want{{a, w, 0}, {c, -1, -1}}
		}},
		{"a constant between", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 256, x), b.op("Op", 128, x)
			w := b.concat(1, 64, a, c)
			b.output(b.op("Op", 64, w))
			return []want{{a, w, 0}, {c, w, 320}}
		}},
		{"a view of a part moves with it", func(b *builder) []want {
			x := b.input(64)
			a := b.op("Op", 256, x)
			v := b.view(a, 256, 0)
			c := b.op("Op", 128, x)
			w := b.concat(-1, 0, v, c)
			b.output(b.op("Op", 64, w))
			return []want{{a, w, 0}, {v, a, 0}, {c, w, 256}}
		}},
		{"a chain of concats becomes one buffer", func(b *builder) []want {
			x := b.input(64)
			x0 := b.op("Op", 256, x)
			x1 := b.op("Op", 128, x0)
			c1 := b.concat(-1, 0, x0, x1)
			x2 := b.op("Op", 128, c1)
			c2 := b.concat(-1, 0, x0, x1, x2)
			x3 := b.op("Op", 128, c2)
			c3 := b.concat(-1, 0, x0, x1, x2, x3)
			b.output(b.op("Op", 64, c3))
			return []want{{x0, c1, 0}, {x1, c1, 256}, {c1, c2, 0}, {x2, c2, 384}, {c2, c3, 0}, {x3, c3, 512}}
		}},
		{"a chain in another order stays apart", func(b *builder) []want {
			x := b.input(64)
			x0 := b.op("Op", 256, x)
			x1 := b.op("Op", 128, x0)
			c1 := b.concat(-1, 0, x0, x1)
			x2 := b.op("Op", 128, c1)
			c2 := b.concat(-1, 0, x1, x0, x2)
			b.output(b.op("Op", 64, c2))
			return []want{{x0, c1, 0}, {x1, c1, 256}, {c1, -1, -1}, {x2, c2, 384}}
		}},
		{"a chain missing a part stays apart", func(b *builder) []want {
			x := b.input(64)
			x0 := b.op("Op", 256, x)
			x1 := b.op("Op", 128, x0)
			c1 := b.concat(-1, 0, x0, x1)
			x2 := b.op("Op", 128, c1)
			c2 := b.concat(-1, 0, x0, x2)
			b.output(b.op("Op", 64, c2))
			return []want{{x0, c1, 0}, {c1, -1, -1}, {x2, c2, 256}}
		}},
		{"split", func(b *builder) []want {
			x := b.input(64)
			w := b.op("Op", 384, x)
			ps := b.split(w, 0, 256, 128)
			b.output(b.op("Op", 64, ps[0], ps[1]))
			return []want{{ps[0], w, 0}, {ps[1], w, 256}}
		}},
		{"a slice of a graph input", func(b *builder) []want {
			x := b.input(384)
			ps := b.split(x, 128, 192)
			b.output(b.op("Op", 64, ps[0]))
			return []want{{ps[0], x, 128}}
		}},
		{"a split output that is a graph output is copied", func(b *builder) []want {
			x := b.input(64)
			w := b.op("Op", 384, x)
			ps := b.split(w, 0, 256, 128)
			b.output(ps[0], b.op("Op", 64, ps[1]))
			return []want{{ps[0], -1, -1}, {ps[1], w, 256}}
		}},
		{"a split concatenated again is copied", func(b *builder) []want {
			x := b.input(64)
			w := b.op("Op", 384, x)
			ps := b.split(w, 0, 256, 128)
			c := b.concat(-1, 0, ps[1], ps[0])
			b.output(b.op("Op", 64, c))
			return []want{{ps[0], w, 0}, {ps[1], w, 256}, {w, -1, -1}}
		}},
		{"a split concatenated in order moves whole", func(b *builder) []want {
			x := b.input(64)
			w := b.op("Op", 384, x)
			ps := b.split(w, 0, 256, 128)
			c := b.concat(-1, 0, ps[0], ps[1])
			b.output(b.op("Op", 64, c))
			return []want{{ps[0], w, 0}, {ps[1], w, 256}, {w, c, 0}}
		}},
		{"another type is copied", func(b *builder) []want {
			x := b.input(64)
			a, c := b.op("Op", 256, x), b.op("Op", 128, x)
			b.p.Tensors[a].DType = ir.Float16
			w := b.concat(-1, 0, a, c)
			b.output(b.op("Op", 64, w))
			return []want{{a, -1, -1}, {c, w, 256}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &builder{}
			wants := tt.build(b)
			p := &b.p
			if err := plan.ShareAllPieces(p); err != nil {
				t.Fatal(err)
			}
			for _, w := range wants {
				got := p.Tensors[w.part]
				if w.off < 0 {
					if got.IsView() {
						t.Errorf("%s views %s at %d, want no view", got.Name, p.Tensors[got.Alias()].Name, got.AliasOffset)
					}
					continue
				}
				if got.Alias() != w.whole || got.AliasOffset != w.off {
					t.Errorf("%s: alias %d at %d, want %s at %d", got.Name, got.Alias(), got.AliasOffset, p.Tensors[w.whole].Name, w.off)
				}
			}
			for _, order := range [][]int{nil, randomOrder(rand.New(rand.NewPCG(1, 1)), p)} {
				pl := check(t, p, plan.Options{Order: order})
				// The report and the picture show views written before
				// their roots inside their roots' lifetimes.
				r := pl.Report(p)
				for i, tn := range p.Tensors {
					if !tn.IsView() {
						continue
					}
					root := i
					for p.Tensors[root].IsView() {
						root = p.Tensors[root].Alias()
					}
					if v, o := r.Tensors[i], r.Tensors[root]; v.Start < o.Start || v.End > o.End || v.Alias != p.Tensors[tn.Alias()].Name {
						t.Errorf("report: view %+v outside its root %+v", v, o)
					}
				}
				if err := plan.WriteSVG(io.Discard, p, pl); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// SharePieces keeps a part apart when placing it inside its whole would
// raise LOAD: here the whole would be reserved through two large
// temporaries, which a is live across anyway but the whole is not.
func TestSharePiecesKeepsLoad(t *testing.T) {
	b := &builder{}
	x := b.input(64)
	a := b.op("Op", 64, x)
	big1 := b.op("Op", 4096, x)
	big2 := b.op("Op", 4096, big1)
	c := b.op("Op", 64, big2)
	w := b.concat(-1, 0, a, c)
	b.output(b.op("Op", 64, w))
	p := &b.p
	before := check(t, p, plan.Options{FileOrder: true}).LoadBytes
	if err := plan.SharePieces(p); err != nil {
		t.Fatal(err)
	}
	after := check(t, p, plan.Options{FileOrder: true}).LoadBytes
	if after > before {
		t.Fatalf("LOAD %d after sharing, %d before", after, before)
	}
	if p.Tensors[a].IsView() {
		t.Fatalf("a moved into the concat, reserving it through the temporaries")
	}
	if !p.Tensors[c].IsView() {
		t.Fatalf("c, written just before the concat, was not shared")
	}
}

// piecesProblem is x → a, big → b; w = Concat(a, b); p0, p1 = Split(w);
// y = Op(p1); z = Op(y, p0), with every piece shared.
func piecesProblem(t *testing.T) (*plan.Problem, map[string]int) {
	b := &builder{}
	x := b.input(64)
	a := b.op("Op", 256, x)
	big := b.op("Op", 1024, x)
	c := b.op("Op", 128, big)
	w := b.concat(-1, 0, a, c)
	ps := b.split(w, 0, 256, 128)
	y := b.op("Relu", 128, ps[1])
	z := b.op("Op", 64, y, ps[0])
	b.output(z)
	p := &b.p
	if err := plan.ShareAllPieces(p); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{a, c, ps[0], ps[1]} {
		if !p.Tensors[id].IsView() {
			t.Fatalf("%s was not shared", p.Tensors[id].Name)
		}
	}
	return p, map[string]int{"a": a, "big": big, "b": c, "w": w, "p0": ps[0], "p1": ps[1], "y": y, "z": z}
}

// Verify refuses plans that misplace shared pieces or reuse their bytes.
func TestVerifyRejectsPieces(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(p *plan.Problem, pl *plan.Plan, id map[string]int)
		want  string
	}{
		{"concat part at the wrong offset", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			// b views w at 0, over a, though the Concat writes it at 256.
			p.Tensors[id["b"]].AliasOffset = 0
			pl.Offsets[id["b"]] = pl.Offsets[id["w"]]
		}, "copies"},
		{"split part at the wrong offset", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			p.Tensors[id["p1"]].AliasOffset = 128
			pl.Offsets[id["p1"]] = pl.Offsets[id["w"]] + 128
		}, "copies"},
		{"two parts in the same bytes", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			// The problem says the Concat writes b at 0 too: both
			// producers write there.
			for s := range p.Steps {
				for k, pc := range p.Steps[s].Pieces {
					if pc.Part == id["b"] {
						p.Steps[s].Pieces[k].Offset = 0
					}
				}
			}
			p.Tensors[id["b"]].AliasOffset = 0
			pl.Offsets[id["b"]] = pl.Offsets[id["w"]]
		}, "both write"},
		{"temporary over a concat written before its root", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			// Move w's slot, views and all, onto big, which lives
			// while a, already in w's slot, waits for the Concat.
			pl.Offsets[id["w"]] = pl.Offsets[id["big"]]
			for i := range p.Tensors {
				pl.Offsets[i] = offsetOf(p, pl, i)
			}
		}, "overlap"},
		{"output over a root whose split part is still read", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			// y (Relu, in place of nothing) lands on w while p0 waits
			// for z.
			pl.Offsets[id["y"]] = pl.Offsets[id["w"]]
		}, "overlap"},
		{"piece too far", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			p.Steps[3].Pieces[1].Offset = 384
		}, "does not fit"},
		{"piece of another step", func(p *plan.Problem, pl *plan.Plan, id map[string]int) {
			p.Steps[3].Pieces[1].Part = id["y"]
		}, "must be an input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, id := piecesProblem(t)
			pl := check(t, p, plan.Options{FileOrder: true, Alignment: 64})
			if p.Steps[3].Op != "Concat" {
				t.Fatalf("step 3 is %s", p.Steps[3].Op)
			}
			tt.spoil(p, pl, id)
			err := plan.Verify(p, pl)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// denseBlocks is a chain of DenseNet blocks of eight layers: each layer
// concatenates every feature map of its block so far and computes the next.
func denseBlocks(steps int) *plan.Problem {
	b := &builder{}
	x := b.input(4096)
	for len(b.p.Steps) < steps {
		feats := []int{b.op("Op", 4096, x)}
		for range 8 {
			c := b.concat(-1, 0, feats...)
			feats = append(feats, b.op("Op", 1024, b.op("Relu", b.p.Tensors[c].Size, c)))
		}
		x = b.op("Op", 4096, b.concat(-1, 0, feats...))
	}
	b.output(x)
	return &b.p
}

// BenchmarkSharePieces shares the pieces of DenseNet blocks; past its
// budget SharePieces stops measuring LOAD and sharing.
func BenchmarkSharePieces(b *testing.B) {
	for _, steps := range []int{1_000, 100_000} {
		p := denseBlocks(steps)
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			shared := 0
			for b.Loop() {
				q := *p
				q.Tensors = slices.Clone(p.Tensors)
				if err := plan.SharePieces(&q); err != nil {
					b.Fatal(err)
				}
				shared = 0
				for _, t := range q.Tensors {
					if t.IsView() {
						shared++
					}
				}
			}
			b.ReportMetric(float64(shared), "views")
		})
	}
}

// naiveRun maps every element of a part, in row-major order, to its
// element in the whole by at (the operator's definition) and reports the
// byte offset of the first one and whether they are consecutive.
func naiveRun(part, whole ir.Shape, at func(idx []int64) []int64) (int64, bool) {
	n := part.Elements()
	idx := make([]int64, len(part))
	first := int64(-1)
	for k := range n {
		rem := k
		for d := len(part) - 1; d >= 0; d-- {
			idx[d] = rem % part[d]
			rem /= part[d]
		}
		w := at(idx)
		lin := int64(0)
		for d := range whole {
			lin = lin*whole[d] + w[d]
		}
		if k == 0 {
			first = lin
		} else if lin != first+k {
			return 0, false
		}
	}
	return 4 * first, n > 0
}

// TestFromGraphPieces gives Concat, Split and Slice nodes of many shapes to
// FromGraph and wants a piece exactly for each part that is one run of
// bytes of the whole, at the offset a naive walk over its elements finds.
func TestFromGraphPieces(t *testing.T) {
	type part struct {
		shape ir.Shape
		pos   int64 // along the axis (Concat, Split)
	}
	cases := []struct {
		op    string
		axis  int
		whole ir.Shape
		parts []part
	}{
		{"Concat", 1, ir.Shape{1, 6, 3, 3}, []part{{ir.Shape{1, 2, 3, 3}, 0}, {ir.Shape{1, 4, 3, 3}, 2}}},
		{"Concat", 1, ir.Shape{2, 6, 3, 3}, []part{{ir.Shape{2, 2, 3, 3}, 0}, {ir.Shape{2, 4, 3, 3}, 2}}},
		{"Concat", 2, ir.Shape{1, 1, 7, 3}, []part{{ir.Shape{1, 1, 2, 3}, 0}, {ir.Shape{1, 1, 5, 3}, 2}}},
		{"Concat", 0, ir.Shape{6, 3}, []part{{ir.Shape{2, 3}, 0}, {ir.Shape{4, 3}, 2}}},
		{"Concat", 1, ir.Shape{2, 2}, []part{{ir.Shape{2, 1}, 0}, {ir.Shape{2, 1}, 1}}},
		{"Concat", 1, ir.Shape{1, 3}, []part{{ir.Shape{1, 1}, 0}, {ir.Shape{1, 1}, 1}, {ir.Shape{1, 1}, 2}}},
		{"Concat", 3, ir.Shape{1, 1, 1, 5}, []part{{ir.Shape{1, 1, 1, 2}, 0}, {ir.Shape{1, 1, 1, 3}, 2}}},
		{"Split", 1, ir.Shape{1, 6, 2, 2}, []part{{ir.Shape{1, 2, 2, 2}, 0}, {ir.Shape{1, 4, 2, 2}, 2}}},
		{"Split", 2, ir.Shape{1, 2, 4}, []part{{ir.Shape{1, 2, 1}, 0}, {ir.Shape{1, 2, 3}, 1}}},
		{"Split", 0, ir.Shape{4, 2}, []part{{ir.Shape{1, 2}, 0}, {ir.Shape{3, 2}, 1}}},
	}
	for _, c := range cases {
		b := &graphBuilder{}
		b.g.Opsets = map[string]int64{"": 13}
		var parts []ir.TensorID
		var whole ir.TensorID
		if c.op == "Concat" {
			for i, pt := range c.parts {
				parts = append(parts, b.node("Neg", fmt.Sprint("p", i), pt.shape, b.input(fmt.Sprint("x", i), pt.shape...)))
			}
			whole = b.node("Concat", "w", c.whole, parts...)
			b.g.Nodes[len(b.g.Nodes)-1].Attrs = ir.Attrs{"axis": {Kind: ir.AttrInt, Int: int64(c.axis)}}
			b.g.Outputs = []ir.TensorID{whole}
		} else {
			whole = b.node("Neg", "w", c.whole, b.input("x", c.whole...))
			var sizes []int64
			for i, pt := range c.parts {
				parts = append(parts, b.g.AddTensor(ir.Tensor{Name: fmt.Sprint("p", i), DType: ir.Float32, Shape: pt.shape, Producer: len(b.g.Nodes)}))
				sizes = append(sizes, pt.shape[c.axis])
			}
			split := b.g.NewTensor("split", ir.Int64, ir.Shape{int64(len(sizes))}, int64Bytes(sizes...))
			b.g.Nodes = append(b.g.Nodes, ir.Node{Name: "s", Op: "Split", Attrs: ir.Attrs{"axis": {Kind: ir.AttrInt, Int: int64(c.axis)}},
				Inputs: []ir.TensorID{whole, split}, Outputs: parts})
			b.g.Outputs = parts
		}
		p, index, err := plan.FromGraph(&b.g, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := p.Steps[len(p.Steps)-1]
		for i, pt := range c.parts {
			off, run := naiveRun(pt.shape, c.whole, func(idx []int64) []int64 {
				w := slices.Clone(idx)
				w[c.axis] += pt.pos
				return w
			})
			want := plan.Piece{Part: index[parts[i]], Whole: index[whole], Offset: off}
			if got := slices.Contains(st.Pieces, want); got != run {
				t.Errorf("%s of %v along %d, part %v: pieces %v, want %v: %v", c.op, c.whole, c.axis, pt.shape, st.Pieces, want, run)
			}
		}
		if len(st.Pieces) > len(c.parts) {
			t.Errorf("%s of %v: pieces %v", c.op, c.whole, st.Pieces)
		}
	}

	slices_ := []struct {
		x                         ir.Shape
		starts, ends, axes, steps []int64
	}{
		{ir.Shape{1, 8, 2, 2}, []int64{2}, []int64{6}, []int64{1}, []int64{1}},
		{ir.Shape{1, 8, 2, 2}, []int64{2}, []int64{6}, []int64{1}, []int64{2}},
		{ir.Shape{1, 8, 2, 2}, []int64{0}, []int64{1}, []int64{2}, []int64{1}},
		{ir.Shape{2, 8}, []int64{1, 0}, []int64{2, 8}, []int64{0, 1}, []int64{1, 1}},
		{ir.Shape{2, 8}, []int64{1, 3}, []int64{2, 7}, []int64{0, 1}, []int64{1, 1}},
		{ir.Shape{1, 4, 1, 1}, []int64{3}, []int64{2}, []int64{1}, []int64{-1}},
		{ir.Shape{1, 4, 1, 1}, []int64{3}, []int64{0}, []int64{1}, []int64{-1}},
		{ir.Shape{4, 4}, []int64{-3}, []int64{100}, []int64{0}, []int64{1}},
	}
	for _, c := range slices_ {
		// The slice's shape and element mapping, by ONNX's rules.
		start, step, shape := make([]int64, len(c.x)), make([]int64, len(c.x)), slices.Clone(c.x)
		for d := range step {
			step[d] = 1
		}
		for k, ax := range c.axes {
			dim, s, e := c.x[ax], c.starts[k], c.ends[k]
			if s < 0 {
				s += dim
			}
			if e < 0 {
				e += dim
			}
			st := c.steps[k]
			if st > 0 {
				s, e = min(max(s, 0), dim), min(max(e, 0), dim)
				shape[ax] = max(0, (e-s+st-1)/st)
			} else {
				s, e = min(max(s, 0), dim-1), min(max(e, -1), dim-1)
				shape[ax] = max(0, (s-e-st-1)/(-st))
			}
			start[ax], step[ax] = s, st
		}
		b := &graphBuilder{}
		b.g.Opsets = map[string]int64{"": 13}
		x := b.node("Neg", "w", c.x, b.input("x", c.x...))
		cst := func(name string, v []int64) ir.TensorID {
			return b.g.NewTensor(name, ir.Int64, ir.Shape{int64(len(v))}, int64Bytes(v...))
		}
		y := b.node("Slice", "y", shape, x, cst("s", c.starts), cst("e", c.ends), cst("a", c.axes), cst("st", c.steps))
		b.g.Outputs = []ir.TensorID{y}
		p, index, err := plan.FromGraph(&b.g, nil)
		if err != nil {
			t.Fatal(err)
		}
		off, run := naiveRun(shape, c.x, func(idx []int64) []int64 {
			w := make([]int64, len(idx))
			for d := range idx {
				w[d] = start[d] + idx[d]*step[d]
			}
			return w
		})
		pieces := p.Steps[len(p.Steps)-1].Pieces
		want := []plan.Piece{{Part: index[y], Whole: index[x], Offset: off}}
		if !run {
			want = nil
		}
		if !slices.Equal(pieces, want) {
			t.Errorf("Slice of %v %v: pieces %v, want %v", c.x, c, pieces, want)
		}
	}
}

// int64Bytes is the little-endian bytes of v.
func int64Bytes(v ...int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}
