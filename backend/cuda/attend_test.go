package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// attendCase is one form of attention as exporters write it.
type attendCase struct {
	name             string
	b, h, s, t, d, e int64
	layout           string // "projected": [B,S,H·D] inputs plus a bias each, split into heads; "projections": three products of one input, each plus a bias, split into heads (S = T, D = E); "heads": [B,H,S,D] inputs, K transposed by a node; "split": [B,S,H,D] inputs split into heads and merged by Transposes; "qkv": split too, from one [B,S,3·H·D] input cut in three (S = T, D = E); "kt": K given as [B,H,D,T]; "rank3": [B·H,S,D]
	scale            string // "", "mul", "mul first", "div"
	mask             string // "", "padding" (an Add of a [B,1,1,T] input), "causal" (an Add of a constant), "where" (-inf where a constant says), "keep" (Where keeping the scores where it says)
}

var attendCases = []attendCase{
	{"bert", 2, 4, 64, 64, 32, 32, "split", "div", "padding"},
	{"gpt", 1, 3, 48, 48, 64, 64, "qkv", "mul", "where"},
	{"causal add", 2, 2, 40, 40, 64, 64, "heads", "div", "causal"},
	{"keep", 1, 2, 33, 70, 32, 32, "heads", "mul first", "keep"},
	{"no scale, no mask", 2, 3, 17, 35, 128, 128, "kt", "", ""},
	{"rank 3", 6, 1, 50, 31, 64, 64, "rank3", "div", ""},
	{"one query", 3, 4, 1, 100, 64, 64, "split", "div", "padding"},
	{"many rows", 1, 1, 300, 129, 32, 32, "heads", "mul", "causal"},
	{"wide heads", 1, 2, 70, 45, 128, 128, "heads", "div", "padding"},
	{"projected", 2, 3, 40, 52, 64, 64, "projected", "div", ""},
	{"projected causal", 1, 2, 70, 70, 32, 32, "projected", "mul", "where"},
	{"projections", 2, 3, 40, 40, 64, 64, "projections", "div", "padding"},
}

// attendGraph builds the case's attention, followed by a product by
// weights where its heads are merged (so that under 16-bit precision a
// GEMM reads its output).
func attendGraph(c attendCase) *tg {
	g := newTG(17)
	b, h, s, t, d, e := c.b, c.h, c.s, c.t, c.d, c.e
	last := func() ir.TensorID { return g.g.Outputs[0] }
	var q, kt, v ir.TensorID
	switch c.layout {
	case "split":
		g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 1, 3)}, 1, g.input(ir.Float32, b, s, h, d))
		q = last()
		g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 3, 1)}, 1, g.input(ir.Float32, b, t, h, d))
		kt = last()
		g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 1, 3)}, 1, g.input(ir.Float32, b, t, h, e))
		v = last()
	case "qkv":
		g.node("Split", ir.Attrs{"axis": intv(2)}, 3, g.input(ir.Float32, b, s, 3*h*d), g.ints(h*d, h*d, h*d))
		parts := g.g.Nodes[len(g.g.Nodes)-1].Outputs
		heads := make([]ir.TensorID, 3)
		for i, perm := range [][]int64{{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}} {
			g.node("Reshape", nil, 1, parts[i], g.ints(b, s, h, d))
			g.node("Transpose", ir.Attrs{"perm": ints(perm...)}, 1, last())
			heads[i] = last()
		}
		q, kt, v = heads[0], heads[1], heads[2]
	case "projected":
		// As projections leave them: [B,S,H·D] plus a bias, split into
		// heads.
		heads := make([]ir.TensorID, 3)
		for i, perm := range [][]int64{{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}} {
			n, w := []int64{s, t, t}[i], []int64{d, d, e}[i]
			g.node("Add", nil, 1, g.input(ir.Float32, b, n, h*w), g.constant(ir.Float32, h*w))
			g.node("Reshape", nil, 1, last(), g.ints(b, n, h, w))
			g.node("Transpose", ir.Attrs{"perm": ints(perm...)}, 1, last())
			heads[i] = last()
		}
		q, kt, v = heads[0], heads[1], heads[2]
	case "projections":
		// A self-attention's three projections of one input, each with
		// its bias, split into heads (S = T, D = E).
		x := g.input(ir.Float32, b, s, 48)
		heads := make([]ir.TensorID, 3)
		for i, perm := range [][]int64{{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}} {
			// Weights of N(0, 1/48): q, k and v of N(0, 1), as in the
			// other layouts.
			w := g.constant(ir.Float32, 48, h*d)
			wd := g.g.Tensor(w).Data
			for o := 0; o < len(wd); o += 4 {
				binary.LittleEndian.PutUint32(wd[o:], math.Float32bits(math.Float32frombits(binary.LittleEndian.Uint32(wd[o:]))/float32(math.Sqrt(48))))
			}
			g.node("MatMul", nil, 1, x, w)
			g.node("Add", nil, 1, last(), g.constant(ir.Float32, h*d))
			g.node("Reshape", nil, 1, last(), g.ints(b, s, h, d))
			g.node("Transpose", ir.Attrs{"perm": ints(perm...)}, 1, last())
			heads[i] = last()
		}
		q, kt, v = heads[0], heads[1], heads[2]
	case "heads":
		q = g.input(ir.Float32, b, h, s, d)
		g.node("Transpose", ir.Attrs{"perm": ints(0, 1, 3, 2)}, 1, g.input(ir.Float32, b, h, t, d))
		kt = last()
		v = g.input(ir.Float32, b, h, t, e)
	case "kt":
		q, kt, v = g.input(ir.Float32, b, h, s, d), g.input(ir.Float32, b, h, d, t), g.input(ir.Float32, b, h, t, e)
	case "rank3":
		q = g.input(ir.Float32, b*h, s, d)
		g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 1)}, 1, g.input(ir.Float32, b*h, t, d))
		kt = last()
		v = g.input(ir.Float32, b*h, t, e)
	}
	g.node("MatMul", nil, 1, q, kt)
	switch c.scale {
	case "mul":
		g.node("Mul", nil, 1, last(), g.scalar(0.125))
	case "mul first":
		g.node("Mul", nil, 1, g.scalar(0.2), last())
	case "div":
		g.node("Div", nil, 1, last(), g.scalar(float32(math.Sqrt(float64(d)))))
	}
	// above reports whether key j lies after query i (a causal mask).
	above := func(i, j int64) bool { return j > i+t-s }
	maskShape := ir.Shape{1, 1, s, t}
	if c.layout == "rank3" {
		maskShape = ir.Shape{1, s, t}
	}
	switch c.mask {
	case "padding":
		g.node("Add", nil, 1, last(), g.input(ir.Float32, b, 1, 1, t))
	case "causal":
		data := make([]byte, 4*s*t)
		for i := range s {
			for j := range t {
				if above(i, j) {
					binary.LittleEndian.PutUint32(data[4*(i*t+j):], math.Float32bits(-1e9))
				}
			}
		}
		g.node("Add", nil, 1, g.g.NewTensor("causal", ir.Float32, maskShape, data), last())
	case "where", "keep":
		data := make([]byte, s*t)
		for i := range s {
			for j := range t {
				if above(i, j) == (c.mask == "where") {
					data[i*t+j] = 1
				}
			}
		}
		cond := g.g.NewTensor("cond", ir.Bool, maskShape, data)
		if c.mask == "where" {
			g.node("Where", nil, 1, cond, g.scalar(float32(math.Inf(-1))), last())
		} else {
			g.node("Where", nil, 1, cond, last(), g.scalar(-1e4))
		}
	}
	g.node("Softmax", ir.Attrs{"axis": intv(-1)}, 1, last())
	g.node("MatMul", nil, 1, last(), v)
	if c.layout == "split" || c.layout == "qkv" || c.layout == "projected" || c.layout == "projections" {
		g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 1, 3)}, 1, last())
		g.node("Reshape", nil, 1, last(), g.ints(b, s, h*e))
		g.node("MatMul", nil, 1, last(), g.constant(ir.Float32, h*e, 24))
	}
	return g
}

// countOps counts the nodes of g by operator.
func countOps(g *ir.Graph) map[string]int {
	n := map[string]int{}
	for _, nd := range g.Nodes {
		n[nd.Op]++
	}
	return n
}

// checkFused builds every node of g as a BF16 compile on an sm_80 GPU
// would, and plans it (no GPU needed).
func checkFused(t *testing.T, name string, g *ir.Graph) {
	t.Helper()
	for i := range g.Nodes {
		hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}, stored: map[ir.TensorID]bool{}, dry: true, mma: true}
		if _, err := buildNodeWith(g, i, 132, true, new([][]byte), hs, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := planOf(g); err != nil {
		t.Errorf("%s: %v", name, err)
	}
}

// planOf plans g as Compile does, without a GPU, and verifies the plan.
func planOf(g *ir.Graph) error {
	p, _, err := problemOf(g, nil)
	if err != nil {
		return err
	}
	pl, err := plan.Build(p, plan.Options{Alignment: Alignment, NoInPlace: true})
	if err != nil {
		return err
	}
	return plan.Verify(p, pl)
}

// TestFuseAttention checks the rewrite (no GPU needed): each case becomes
// one Attend node with its Transposes, scale, mask and Softmax folded in,
// every node builds and the plan verifies; a chain that is not an
// attention this backend runs is left as it is.
func TestFuseAttention(t *testing.T) {
	for _, c := range attendCases {
		g := attendGraph(c).g
		f := fuseAttention(g)
		ops := countOps(f)
		if ops["Attend"] != 1 || ops["Softmax"] != 0 || ops["Transpose"] != 0 || ops["Where"] != 0 {
			t.Errorf("%s: fused graph has %v, want one Attend and no Softmax, Transpose or Where", c.name, ops)
		}
		checkFused(t, c.name, f)
	}
	refuse := []struct {
		name string
		g    func() *ir.Graph
	}{
		{"heads of 80 values", func() *ir.Graph { return attendGraph(attendCase{"", 1, 2, 8, 8, 80, 80, "heads", "div", ""}).g }},
		{"values' heads wider", func() *ir.Graph { return attendGraph(attendCase{"", 1, 2, 8, 8, 64, 128, "heads", "div", ""}).g }},
		{"scores read twice", func() *ir.Graph {
			g := attendGraph(attendCase{"", 1, 2, 8, 8, 16, 16, "heads", "", ""})
			g.g.Outputs = append(g.g.Outputs, g.g.Nodes[1].Outputs[0]) // the scores are an output too
			return g.g
		}},
		{"softmax along the queries", func() *ir.Graph {
			g := attendGraph(attendCase{"", 1, 2, 8, 8, 16, 16, "kt", "", ""})
			for i := range g.g.Nodes {
				if g.g.Nodes[i].Op == "Softmax" {
					g.g.Nodes[i].Attrs["axis"] = intv(2)
				}
			}
			return g.g
		}},
	}
	for _, tc := range refuse {
		g := tc.g()
		if f := fuseAttention(g); countOps(f)["Attend"] != 0 {
			t.Errorf("%s: fused", tc.name)
		}
	}
	// Random forms and sizes: fused exactly where the kernel takes the
	// heads, and then built and planned.
	r := rand.New(rand.NewPCG(7, 8))
	pick := func(v ...string) string { return v[r.IntN(len(v))] }
	for trial := range 60 {
		c := attendCase{name: fmt.Sprint("random ", trial), b: 1 + r.Int64N(3), h: 1 + r.Int64N(4), s: 1 + r.Int64N(90), t: 1 + r.Int64N(90),
			layout: pick("heads", "split", "kt", "rank3", "projected"), scale: pick("", "mul", "mul first", "div"), mask: pick("", "padding", "causal", "where", "keep")}
		c.d = []int64{16, 32, 48, 64, 128}[r.IntN(5)]
		c.e = c.d
		if r.IntN(4) == 0 {
			c.e = []int64{8, 32, 64}[r.IntN(3)]
		}
		if c.mask == "padding" && c.layout == "rank3" {
			c.mask = "causal"
		}
		f := fuseAttention(attendGraph(c).g)
		want := 0
		if attendHead(c.d) && c.e == c.d {
			want = 1
		}
		if n := countOps(f)["Attend"]; n != want {
			t.Errorf("%+v: %d Attend nodes, want %d", c, n, want)
		}
		checkFused(t, c.name, f)
	}
}

// TestAttendMatchesCPU runs each case on the GPU against the CPU
// backend's run of the unfused nodes: fused under BF16 and F16 (within
// 1e-2 relative L2), unfused under FP32 (within 1e-5).
func TestAttendMatchesCPU(t *testing.T) {
	requireGPU(t)
	d, _ := Device()
	for _, c := range attendCases {
		for _, prec := range []Precision{FP32, BF16, F16} {
			g := attendGraph(c)
			want := evalGraph(t, g)
			exe, s := openSession(t, g.g, Options{Precision: prec})
			fused := 0
			if prec.Half() && d.Major >= 8 && blasOn() {
				fused = 1 // the fusion is made for cuBLAS's 16-bit products
			}
			if n := exe.Fusion().Attentions; n != fused {
				t.Errorf("%s %s: %d fused attentions, want %d", c.name, prec, n, fused)
			}
			got := [][]byte{make([]byte, len(want[0]))}
			for run := range 2 { // launched one by one, then replayed
				for i := range got[0] {
					got[0][i] = 0xFF
				}
				if err := s.Run(g.in, got); err != nil {
					t.Fatalf("%s %s: %v", c.name, prec, err)
				}
				rel := relL2Bytes(got[0], want[0])
				tol := 1e-5
				if prec.Half() {
					tol = 1e-2
				}
				if !(rel <= tol) {
					t.Errorf("%s %s run %d: rel L2 %.3g > %g", c.name, prec, run, rel, tol)
				}
			}
			s.Close()
			exe.Close()
		}
	}
}

// TestAttendReadsHalf: where q, k and v come from generated kernels (the
// projections' bias Adds), those write them in 16 bits and the fused
// attention reads them so; where they are graph inputs it rounds them.
func TestAttendReadsHalf(t *testing.T) {
	for _, c := range []struct {
		attendCase
		h16 int64
	}{
		{attendCase{"projected", 2, 3, 40, 52, 64, 64, "projected", "div", ""}, 7},
		{attendCase{"split", 2, 3, 40, 52, 64, 64, "split", "div", "padding"}, 0},
	} {
		for _, prec := range []Precision{BF16, F16} {
			g := fuseAttention(attendGraph(c.attendCase).g)
			hs := &halves{prec: prec, shadow: map[ir.TensorID]int{}, mma: true}
			fz := analyzeFusion(g, true, hs, acceptsHalf(g, 1, hs))
			hs.stored = fz.half
			var extras [][]byte
			found := false
			for i := range g.Nodes {
				n := &g.Nodes[i]
				if n.Op != "Attend" {
					continue
				}
				found = true
				bc, err := buildNodeWith(g, i, 1, true, &extras, hs, fz)
				if err != nil {
					t.Fatal(err)
				}
				args := bc.launches[0].args
				last := args[len(args)-1].words[0]
				if int64(last) != c.h16 {
					t.Errorf("%s %s: q, k and v in 16 bits: mask %b, want %b", c.name, prec, last, c.h16)
				}
				for j := range 3 {
					if args[j].half != (c.h16 != 0) || fz.half[n.Inputs[j]] != (c.h16 != 0) {
						t.Errorf("%s %s: input %d held in 16 bits %v (argument %v)", c.name, prec, j, fz.half[n.Inputs[j]], args[j].half)
					}
				}
			}
			if !found {
				t.Fatalf("%s: no Attend", c.name)
			}
		}
	}
}

// TestMergeProjections (no GPU needed): an attention's three projections
// of one input become one MatMulAdd by the three weight matrices side by
// side, which the Attend reads at three column offsets with rows three
// times as long; the launch reads q, k and v in 16 bits from those
// offsets.
func TestMergeProjections(t *testing.T) {
	c := attendCase{"projections", 2, 3, 40, 40, 64, 64, "projections", "div", "padding"}
	g := fuseEpilogues(fuseAttention(attendGraph(c).g))
	before := 0
	for _, n := range g.Nodes {
		if isMatMulAdd(&n) {
			before++
		}
	}
	m := mergeProjections(g)
	var prods []int
	att := -1
	for i, n := range m.Nodes {
		switch {
		case isMatMulAdd(&n):
			prods = append(prods, i)
		case n.Op == "Attend":
			att = i
		}
	}
	if before != 3 || len(prods) != 1 || att < 0 {
		t.Fatalf("%d MatMulAdds before, %d after, Attend at %d", before, len(prods), att)
	}
	p, a := &m.Nodes[prods[0]], &m.Nodes[att]
	hd := int64(c.h * c.d)
	if w := m.Tensor(p.Inputs[1]); !w.Shape.Equal(ir.Shape{48, 3 * hd}) {
		t.Fatalf("merged weights %v", w.Shape)
	}
	// Row r of the merged weights is row r of each projection's, in turn.
	w := m.Tensor(p.Inputs[1]).Data
	var parts [][]byte
	for _, n := range g.Nodes {
		if isMatMulAdd(&n) {
			parts = append(parts, g.Tensor(n.Inputs[1]).Data)
		}
	}
	for r := range int64(48) {
		for j, part := range parts {
			got := w[4*(r*3*hd+int64(j)*hd) : 4*(r*3*hd+int64(j+1)*hd)]
			if !slices.Equal(got, part[4*r*hd:4*(r+1)*hd]) {
				t.Fatalf("row %d, projection %d differs", r, j)
			}
		}
	}
	y := p.Outputs[0]
	if a.Inputs[0] != y || a.Inputs[1] != y || a.Inputs[2] != y {
		t.Errorf("Attend reads %v, want the merged output %d thrice", a.Inputs, y)
	}
	if got := a.Attrs.Ints("offsets", nil); !slices.Equal(got, []int64{0, hd, 2 * hd}) {
		t.Errorf("offsets %v", got)
	}
	// q by (batch, head, row, value): rows of 3·H·D now.
	if got, want := a.Attrs.Ints("q", nil), []int64{c.s * 3 * hd, c.d, 3 * hd, 1}; !slices.Equal(got, want) {
		t.Errorf("q's strides %v, want %v", got, want)
	}
	hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}, dry: true, mma: true, lt: true}
	fz := analyzeFusion(m, true, hs, acceptsHalf(m, 1, hs))
	hs.stored = fz.half
	if !fz.half[y] {
		t.Fatalf("the merged output is not held in 16 bits")
	}
	bc, err := buildNodeWith(m, att, 1, true, new([][]byte), hs, fz)
	if err != nil {
		t.Fatal(err)
	}
	args := bc.launches[0].args
	for j := range 3 {
		if !args[j].half || args[j].id != y || args[j].off != 2*int64(j)*hd {
			t.Errorf("operand %d: %+v, want 16-bit values of %d from byte %d", j, args[j], y, 2*int64(j)*hd)
		}
	}
	if _, err := buildNodeWith(m, prods[0], 1, true, new([][]byte), hs, fz); err != nil {
		t.Errorf("the merged product: %v", err)
	}
}
