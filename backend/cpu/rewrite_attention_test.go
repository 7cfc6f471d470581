package cpu

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// attentionCase is one attention block built by hand: heads products of
// m×d queries by d×n keys, a softmax along the n scores of each row and
// the product of the probabilities by n×dv values.
type attentionCase struct {
	name               string
	heads, m, n, d, dv int64
	scale              bool    // divide the scores by a constant
	mask               []int64 // a constant added to the scores (its shape), or nil
	maskIn             []int64 // an input added to the scores (its shape), or nil
	maskFirst          bool    // the input is the Add's first operand
	causal             bool    // a causal mask through Where (masked_fill)
	split              bool    // the heads are split from rows of all heads by Transposes, and merged back
	splitKept          bool    // the split queries are a graph output too
	folds              int     // Transposes folded into the merged step
	log                bool    // LogSoftmax
	axis               int64   // the softmax's axis (0: -1)
	probsOut           bool    // the probabilities are a graph output too
	fuses              bool    // the three steps merge where the heads allow
}

// graph builds the block; the queries, keys and values are Neg of
// inputs, as projections' outputs would be.
func (c attentionCase) graph(rng *rand.Rand) *ir.Graph {
	const f32 = ir.Float32
	k := &kgraph{g: &ir.Graph{Name: "attention", Opsets: map[string]int64{"": 17}}}
	neg := func(name string, shape ...int64) ir.TensorID {
		return k.node("Neg", nil, []ir.TensorID{k.input(name, f32, shape...)}, f32, shape...)
	}
	perm := func(p ...int64) ir.Attrs { return ir.Attrs{"perm": {Kind: ir.AttrInts, Ints: p}} }
	var q, kt, v ir.TensorID
	if !c.split {
		q = neg("q", 1, c.heads, c.m, c.d)
		kt = neg("k", 1, c.heads, c.d, c.n)
		v = neg("v", 1, c.heads, c.n, c.dv)
	} else {
		// As a transformer's projections give them: [1, rows, heads,
		// width].
		q = k.node("Transpose", perm(0, 2, 1, 3), []ir.TensorID{neg("q", 1, c.m, c.heads, c.d)}, f32, 1, c.heads, c.m, c.d)
		kt = k.node("Transpose", perm(0, 2, 3, 1), []ir.TensorID{neg("k", 1, c.n, c.heads, c.d)}, f32, 1, c.heads, c.d, c.n)
		v = k.node("Transpose", perm(0, 2, 1, 3), []ir.TensorID{neg("v", 1, c.n, c.heads, c.dv)}, f32, 1, c.heads, c.n, c.dv)
	}
	s := []int64{1, c.heads, c.m, c.n}
	y := k.node("MatMul", nil, []ir.TensorID{q, kt}, f32, s...)
	if c.scale {
		y = k.node("Div", nil, []ir.TensorID{y, k.constant("scale", []float32{8})}, f32, s...)
	}
	if c.mask != nil {
		n := 1
		for _, d := range c.mask {
			n *= int(d)
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64())
		}
		y = k.node("Add", nil, []ir.TensorID{y, k.constant("mask", vals, c.mask...)}, f32, s...)
	}
	if c.causal {
		keep := make([]byte, c.m*c.n)
		for i := range c.m {
			for j := range c.n {
				if j <= i {
					keep[i*c.n+j] = 1
				}
			}
		}
		cond := k.boolConst("keep", keep, 1, 1, c.m, c.n)
		y = k.node("Where", nil, []ir.TensorID{cond, y, k.constant("neg", []float32{-1e9})}, f32, s...)
	}
	if c.maskIn != nil {
		ins := []ir.TensorID{y, k.input("mask", f32, c.maskIn...)}
		if c.maskFirst {
			ins[0], ins[1] = ins[1], ins[0]
		}
		sh := s
		if len(c.maskIn) == 4 && c.maskIn[0] > 1 {
			sh = append([]int64{c.maskIn[0]}, s[1:]...)
		}
		y = k.node("Add", nil, ins, f32, sh...)
		s = sh
	}
	op := "Softmax"
	if c.log {
		op = "LogSoftmax"
	}
	var at ir.Attrs
	if c.axis != 0 {
		at = ir.Attrs{"axis": {Kind: ir.AttrInt, Int: c.axis}}
	}
	p := k.node(op, at, []ir.TensorID{y}, f32, s...)
	o := k.node("MatMul", nil, []ir.TensorID{p, v}, f32, s[0], c.heads, c.m, c.dv)
	if c.split {
		o = k.node("Transpose", perm(0, 2, 1, 3), []ir.TensorID{o}, f32, s[0], c.m, c.heads, c.dv)
	}
	k.g.Outputs = []ir.TensorID{o}
	if c.splitKept {
		k.g.Outputs = append(k.g.Outputs, q)
	}
	if c.probsOut {
		k.g.Outputs = append(k.g.Outputs, p)
	}
	return k.g
}

// TestAttention merges attention's three steps into one (cpu.fuseAttention)
// on 1 to 3 threads and wants the bytes of every step run apart
// (NoFusion: the scale and mask as steps of their own too), and no
// allocation in Run.
func TestAttention(t *testing.T) {
	cases := []attentionCase{
		{name: "bert", heads: 12, m: 128, n: 128, d: 64, dv: 64, scale: true, fuses: true},
		{name: "causal mask", heads: 6, m: 37, n: 45, d: 20, dv: 19, scale: true, mask: []int64{1, 1, 37, 45}, fuses: true},
		{name: "mask of rows", heads: 6, m: 50, n: 7, d: 33, dv: 40, mask: []int64{50, 7}, fuses: true},
		{name: "causal mask through Where", heads: 8, m: 33, n: 33, d: 16, dv: 16, scale: true, causal: true, split: true, folds: 4, fuses: true},
		{name: "mask per head", heads: 4, m: 9, n: 21, d: 16, dv: 5, mask: []int64{4, 9, 21}, fuses: true},
		{name: "log softmax", heads: 7, m: 13, n: 5, d: 3, dv: 17, log: true, fuses: true},
		{name: "heads split", heads: 12, m: 30, n: 30, d: 16, dv: 16, scale: true, split: true, folds: 4, fuses: true},
		{name: "heads split, padding mask", heads: 6, m: 13, n: 29, d: 7, dv: 11, split: true, maskIn: []int64{1, 1, 1, 29}, folds: 4, fuses: true},
		{name: "heads split, queries kept", heads: 6, m: 13, n: 29, d: 7, dv: 11, split: true, splitKept: true, folds: 3, fuses: true},
		// Scores of more than 256 KiB a head: blocks of rows.
		{name: "long, heads split, padding mask", heads: 4, m: 300, n: 300, d: 8, dv: 5, scale: true, split: true,
			maskIn: []int64{1, 1, 1, 300}, folds: 4, fuses: true},
		{name: "long keys, causal mask", heads: 6, m: 40, n: 2000, d: 4, dv: 3, mask: []int64{40, 2000}, fuses: true},
		{name: "softmax over rows", heads: 6, m: 12, n: 12, d: 8, dv: 8, axis: 2},
		{name: "probabilities kept", heads: 6, m: 12, n: 10, d: 8, dv: 8, probsOut: true},
		{name: "padding mask", heads: 6, m: 12, n: 10, d: 8, dv: 8, scale: true, maskIn: []int64{1, 1, 1, 10}, fuses: true},
		{name: "padding mask first", heads: 12, m: 40, n: 33, d: 8, dv: 24, maskIn: []int64{1, 33}, maskFirst: true, fuses: true},
		{name: "mask input per head and row", heads: 5, m: 7, n: 9, d: 4, dv: 3, scale: true, maskIn: []int64{5, 7, 1}, fuses: true},
		{name: "mask input wider than the scores", heads: 6, m: 12, n: 10, d: 8, dv: 8, maskIn: []int64{2, 6, 12, 10}},
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := c.graph(rng)
			inputs := randomInputs(rng, g)
			ref := attentionRun(t, g, inputs, Options{Threads: 1, Tuning: Tuning{NoFusion: true}}, 0, 0)
			for _, threads := range []int{1, 2, 3} {
				want, folds := 0, 0
				if c.fuses && c.heads >= 2*int64(threads) {
					want, folds = 1, c.folds
				}
				got := attentionRun(t, g, inputs, Options{Threads: threads}, want, folds)
				for i := range ref {
					if !bytes.Equal(got[i], ref[i]) {
						t.Errorf("%d threads: output %d differs from the steps run apart", threads, i)
					}
				}
			}
		})
	}
}

// attentionRun compiles g with opts, wants merged attention steps and
// folds Transposes folded into them, runs
// it on inputs (checking that Run does not allocate) and returns its
// outputs' bytes.
func attentionRun(t *testing.T, g *ir.Graph, inputs [][]byte, opts Options, merged, folds int) [][]byte {
	t.Helper()
	exe, err := Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mg := range exe.merged {
		if len(mg.more) >= 2 {
			n++
		}
	}
	if n != merged {
		t.Errorf("%d threads: %d attention steps merged, want %d", opts.Threads, n, merged)
	}
	if len(exe.folds) != folds {
		t.Errorf("%d threads: %d Transposes folded, want %d", opts.Threads, len(exe.folds), folds)
	}
	s, err := exe.NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(5, func() {
		feed(t, s, inputs)
		if err = s.Run(ctx, nil); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%d threads: Session.Run allocates %.1f times per run", opts.Threads, allocs)
	}
	var res [][]byte
	for _, o := range s.Outputs() {
		res = append(res, bytes.Clone(o))
	}
	if len(res) == 0 {
		t.Fatal(fmt.Errorf("no outputs"))
	}
	return res
}

// BenchmarkAttention runs BERT-base's attention (12 heads of 128×128
// scores, 64 wide, scaled) as one step and as three, on 1 and 2 threads.
func BenchmarkAttention(b *testing.B) {
	c := attentionCase{heads: 12, m: 128, n: 128, d: 64, dv: 64, scale: true, split: true}
	rng := rand.New(rand.NewPCG(5, 6))
	g := c.graph(rng)
	inputs := randomInputs(rng, g)
	for _, threads := range []int{1, 2} {
		for _, steps := range []bool{false, true} {
			name := "fused"
			if steps {
				name = "steps"
			}
			b.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(b *testing.B) {
				exe, err := Compile(g, Options{Threads: threads, Tuning: Tuning{NoAttention: steps}})
				if err != nil {
					b.Fatal(err)
				}
				s, err := exe.NewSession(nil)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				ctx := context.Background()
				for b.Loop() {
					feed(b, s, inputs)
					if err := s.Run(ctx, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
