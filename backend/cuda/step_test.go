package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/llm"
	"github.com/berth-ml/berth/passes"
	"github.com/berth-ml/berth/plan"
	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/gguf"
)

// productsGraph is a decoding step's products over one row x of k values
// in format f: three projections of x (rows n, n/2, n/2), and a fourth
// whose rows a residual r is added to. Also, left as they are: a product
// of three rows, and one whose Add broadcasts. The outputs are those of
// every node.
func productsGraph(tb testing.TB, f ggml.Type, n, k int64) (*ir.Graph, [][]byte) {
	sg := newStepGraph(tb, "products", f, 3)
	g := sg.g
	x := g.NewTensor("x", ir.Float32, ir.Shape{1, k}, nil)
	x3 := g.NewTensor("x3", ir.Float32, ir.Shape{3, k}, nil)
	res := g.NewTensor("r", ir.Float32, ir.Shape{1, n}, nil)
	one := g.NewTensor("one", ir.Float32, ir.Shape{1}, nil)
	g.Inputs = []ir.TensorID{x, x3, res, one}
	q, kk, v := sg.product(x, n, k), sg.product(x, n/2, k), sg.product(x, n/2, k)
	o := sg.node("Add", "", nil, res, sg.product(x, n, k))
	m3 := sg.product(x3, n, k)
	b := sg.node("Add", "", nil, sg.product(x, n, k), one)
	g.Outputs = []ir.TensorID{q, kk, v, o, m3, b}
	return g, normalInputs(sg.r, g)
}

// stepGraph builds the graphs of these tests: nodes whose outputs take
// the types ir.Infer gives, and products by random weights in format f.
type stepGraph struct {
	tb testing.TB
	g  *ir.Graph
	r  *rand.Rand
	f  ggml.Type
}

func newStepGraph(tb testing.TB, name string, f ggml.Type, seed uint64) *stepGraph {
	return &stepGraph{tb: tb, g: &ir.Graph{Name: name, Opsets: map[string]int64{"": 17}}, r: rand.New(rand.NewPCG(seed, seed+1)), f: f}
}

// node appends a node of op over ins and returns its output.
func (sg *stepGraph) node(op, domain string, attrs ir.Attrs, ins ...ir.TensorID) ir.TensorID {
	g := sg.g
	i := len(g.Nodes)
	y := g.AddTensor(ir.Tensor{Name: op + string(rune('a'+i)), Producer: i})
	g.Nodes = append(g.Nodes, ir.Node{Name: op, Op: op, Domain: domain, Attrs: attrs, Inputs: ins, Outputs: []ir.TensorID{y}})
	types, err := ir.Infer(g, &g.Nodes[i])
	if err != nil {
		sg.tb.Fatal(err)
	}
	g.Tensor(y).DType, g.Tensor(y).Shape = types[0].DType, types[0].Shape
	return y
}

// product appends a PackedMatMul of in by random weights of rows rows
// of k values.
func (sg *stepGraph) product(in ir.TensorID, rows, k int64) ir.TensorID {
	w := sg.g.NewTensor("w", ir.Uint8, nil, packedBytes(sg.r, sg.f, rows, k))
	sg.g.Tensor(w).Shape = ir.Shape{int64(len(sg.g.Tensor(w).Data))}
	return sg.node("PackedMatMul", ir.BerthDomain, ir.Attrs{"format": strv(sg.f.String()), "rows": intv(rows)}, in, w)
}

// TestFuseProducts checks the rewrite: the three projections are one
// Products node, the product and its residual Add another, and the rest
// stays as it was.
func TestFuseProducts(t *testing.T) {
	g, _ := productsGraph(t, ggml.Q4_0, 64, 256)
	f := fuseProducts(g)
	var ops []string
	for i, n := range f.Nodes {
		ops = append(ops, n.Op+"/"+string(rune('0'+len(n.Outputs))))
		for _, id := range n.Outputs {
			if f.Tensor(id).Producer != i {
				t.Errorf("node %d (%s) writes %q, whose producer is %d", i, n.Op, f.Tensor(id).Name, f.Tensor(id).Producer)
			}
		}
	}
	want := []string{"Products/3", "Products/1", "PackedMatMul/1", "PackedMatMul/1", "Add/1"}
	if !slices.Equal(ops, want) {
		t.Fatalf("nodes %v, want %v", ops, want)
	}
	if !slices.Equal(f.Nodes[1].Inputs[1:2], g.Nodes[4].Inputs[:1]) || f.Nodes[1].Outputs[0] != g.Outputs[3] {
		t.Errorf("the residual product reads %v and writes %v", f.Nodes[1].Inputs, f.Nodes[1].Outputs)
	}
	if len(g.Nodes) != 8 {
		t.Errorf("the rewrite changed its input: %d nodes", len(g.Nodes))
	}
	h, _ := productsGraph(t, ggml.Q4_0, 64, 256)
	if alone := (&ir.Graph{Nodes: h.Nodes[4:5], Tensors: h.Tensors}); fuseProducts(alone) != alone {
		t.Error("a graph with nothing to fuse was copied")
	}
}

// TestProductsMatchUnfused runs the graph with the products fused and
// without, for each format, and wants the same bits: the same sums, and
// the residual added by the same single addition.
func TestProductsMatchUnfused(t *testing.T) {
	requireGPU(t)
	for _, f := range []ggml.Type{ggml.F32, ggml.F16, ggml.Q8_0, ggml.Q4_0, ggml.Q4_K, ggml.Q6_K} {
		t.Run(f.String(), func(t *testing.T) {
			g, inputs := productsGraph(t, f, 192, 512)
			if launches := sameFusedOrNot(t, g, inputs); launches > len(g.Nodes)-3+prepLaunches(f, 3) {
				t.Errorf("%d launches with the products fused, %d nodes", launches, len(g.Nodes))
			}
		})
	}
}

// rotaryGraph turns a step's queries (heads 8) and keys (heads 2) of
// head size 16 by the same angles, as two Rotary nodes.
func rotaryGraph(tb testing.TB, halves int64) (*ir.Graph, [][]byte) {
	r := rand.New(rand.NewPCG(5, 6))
	g := &ir.Graph{Name: "rotary", Opsets: map[string]int64{"": 17}}
	q := g.NewTensor("q", ir.Float32, ir.Shape{1, 8, 16}, nil)
	k := g.NewTensor("k", ir.Float32, ir.Shape{1, 2, 16}, nil)
	cs := g.NewTensor("cos", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	sn := g.NewTensor("sin", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	g.Inputs = []ir.TensorID{q, k, cs, sn}
	for i, x := range []ir.TensorID{q, k} {
		y := g.AddTensor(ir.Tensor{Name: "turned", DType: ir.Float32, Shape: g.Tensor(x).Shape.Clone(), Producer: i})
		g.Nodes = append(g.Nodes, ir.Node{Name: "rotary", Op: "Rotary", Domain: ir.BerthDomain, Attrs: ir.Attrs{"halves": intv(halves)}, Inputs: []ir.TensorID{x, cs, sn}, Outputs: []ir.TensorID{y}})
		g.Outputs = append(g.Outputs, y)
	}
	return g, normalInputs(r, g)
}

// TestRotariesMatchUnfused runs the queries' and keys' rotary embeddings
// fused into one launch and apart, and wants the same bits.
func TestRotariesMatchUnfused(t *testing.T) {
	if f := fuseProducts(must(rotaryGraph(t, 0))); len(f.Nodes) != 1 || f.Nodes[0].Op != "Rotaries" {
		t.Fatalf("the rewrite made %d nodes, want one Rotaries", len(f.Nodes))
	}
	requireGPU(t)
	for _, halves := range []int64{0, 1} {
		g, inputs := rotaryGraph(t, halves)
		if launches := sameFusedOrNot(t, g, inputs); launches != 1 {
			t.Errorf("halves %d: %d launches fused, want 1", halves, launches)
		}
	}
}

func must(g *ir.Graph, _ [][]byte) *ir.Graph { return g }

// prepLaunches is the launches that prepare x once (gemvPrep) for n
// decoding products of format f under prep (the default;
// BERTH_CUDA_GEMV=prep=0 turns it off): one each for q8_0 and q4_0
// rows, none for float rows.
func prepLaunches(f ggml.Type, n int) int {
	if gemv.prep != 1 || f != ggml.Q8_0 && f != ggml.Q4_0 {
		return 0
	}
	return n
}

// sameFusedOrNot runs g on inputs compiled with fusion and without, wants
// the same bits from both, and returns the fused launches.
func sameFusedOrNot(t *testing.T, g *ir.Graph, inputs [][]byte) int {
	t.Helper()
	outs, launches := fusedAndNot(t, g, inputs)
	for j := range outs[0] {
		if !bytes.Equal(outs[0][j], outs[1][j]) {
			t.Errorf("output %d differs from the unfused run", j)
		}
	}
	return launches
}

// fusedAndNot runs g on inputs compiled with fusion and without, and
// returns the outputs of both and the fused launches.
func fusedAndNot(t *testing.T, g *ir.Graph, inputs [][]byte) ([2][][]byte, int) {
	t.Helper()
	var outs [2][][]byte
	var launches int
	for i, noFusion := range []bool{false, true} {
		exe, s := openSession(t, g, Options{NoFusion: noFusion})
		for _, id := range g.Outputs {
			outs[i] = append(outs[i], make([]byte, g.Tensor(id).Bytes()))
		}
		if err := s.Run(inputs, outs[i]); err != nil {
			t.Fatal(err)
		}
		if !noFusion {
			launches = exe.Launches()
		}
	}
	return outs, launches
}

// layerGraph is the products of a decoder layer's step over rows of d
// values, weights in format f: RMSNorm then the query, key and value
// projections of one row x; RMSNorm of the residual r, the gate and up
// projections (ff rows), silu(gate)·up and the down projection added
// to r. The outputs are q, k, v and the new residual.
func layerGraph(tb testing.TB, f ggml.Type, d, ff int64) (*ir.Graph, [][]byte) {
	sg := newStepGraph(tb, "layer", f, 9)
	g := sg.g
	x := g.NewTensor("x", ir.Float32, ir.Shape{1, d}, nil)
	res := g.NewTensor("r", ir.Float32, ir.Shape{1, d}, nil)
	g.Inputs = []ir.TensorID{x, res}
	norm := func(in ir.TensorID) ir.TensorID {
		v := make([]float32, d)
		for i := range v {
			v[i] = float32(1 + 0.1*sg.r.NormFloat64())
		}
		w := g.NewTensor("g", ir.Float32, ir.Shape{d}, raw.Bytes(v))
		return sg.node("RMSNorm", ir.BerthDomain, ir.Attrs{"epsilon": floatv(1e-5)}, in, w)
	}
	a := norm(x)
	q, kk, v := sg.product(a, d, d), sg.product(a, d/2, d), sg.product(a, d/2, d)
	b := norm(res)
	gate, up := sg.product(b, ff, d), sg.product(b, ff, d)
	silu := sg.node("Mul", "", nil, gate, sg.node("Sigmoid", "", nil, gate))
	o := sg.node("Add", "", nil, res, sg.product(sg.node("Mul", "", nil, silu, up), d, ff))
	g.Outputs = []ir.TensorID{q, kk, v, o}
	return g, normalInputs(sg.r, g)
}

// TestFoldNormAndGate checks the rewrite of a layer's step: the norms
// fold into the products that read them, and silu(gate)·up into the gate
// and up projections, where gemv takes their format; elsewhere only the
// products fuse.
func TestFoldNormAndGate(t *testing.T) {
	for _, c := range []struct {
		f    ggml.Type
		want []string
	}{
		{ggml.Q4_0, []string{"Products/3/norm", "Products/1/norm/glu", "Products/1"}},
		{ggml.F16, []string{"Products/3/norm", "Products/1/norm/glu", "Products/1"}},
		{ggml.Q4_K, []string{"RMSNorm/1", "Products/3", "RMSNorm/1", "Products/2", "Sigmoid/1", "Mul/1", "Mul/1", "Products/1"}},
	} {
		g, _ := layerGraph(t, c.f, 256, 512)
		f := fuseProducts(g)
		var ops []string
		for _, n := range f.Nodes {
			op := n.Op + "/" + string(rune('0'+len(n.Outputs)))
			if n.Attrs.Has("norm") {
				op += "/norm"
			}
			if n.Attrs.Has("glu") {
				op += "/glu"
			}
			ops = append(ops, op)
		}
		if !slices.Equal(ops, c.want) {
			t.Errorf("%s: nodes %v, want %v", c.f, ops, c.want)
		}
	}
}

// TestFoldNormAndGateMatchUnfused runs a layer's step with the norms and
// the gated unit folded into the products and without. The sums of the
// folded norm run in another order than rms_norm's, and 8-bit x is
// quantised from its values, so the outputs agree to rounding, not bits.
func TestFoldNormAndGateMatchUnfused(t *testing.T) {
	requireGPU(t)
	for _, f := range []ggml.Type{ggml.F32, ggml.F16, ggml.BF16, ggml.Q8_0, ggml.Q4_0} {
		t.Run(f.String(), func(t *testing.T) {
			g, inputs := layerGraph(t, f, 512, 1376)
			outs, launches := fusedAndNot(t, g, inputs)
			if want := 3 + prepLaunches(f, 3); launches != want {
				t.Errorf("%d launches fused, want %d", launches, want)
			}
			for j := range outs[0] {
				want := raw.F32(outs[1][j])
				w64 := make([]float64, len(want))
				for i, v := range want {
					w64[i] = float64(v)
				}
				if rel := relL2(raw.F32(outs[0][j]), w64); !(rel <= 1e-5) {
					t.Errorf("output %d: rel L2 %.3g against the unfused run", j, rel)
				}
			}
		})
	}
}

// normalInputs draws every input of g, float32, from N(0, 1).
func normalInputs(r *rand.Rand, g *ir.Graph) [][]byte {
	var inputs [][]byte
	for _, id := range g.Inputs {
		v := make([]float32, g.Tensor(id).Shape.Elements())
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		inputs = append(inputs, raw.Bytes(v))
	}
	return inputs
}

// cacheStepGraph is a decoding step's attention in miniature: the
// queries (8 heads) and keys (2 heads) of one position turned by the same
// angles, the keys (through a Reshape) and the values written into their
// caches of 4 rows, and the queries' attention over the caches. With
// reader, the key cache is also read by a node of its own (an output),
// which keeps the writes out of the rotations' launch.
func cacheStepGraph(tb testing.TB, reader bool) *ir.Graph {
	sg := newStepGraph(tb, "cache", ggml.F32, 11)
	g := sg.g
	q := g.NewTensor("q", ir.Float32, ir.Shape{1, 8, 16}, nil)
	k := g.NewTensor("k", ir.Float32, ir.Shape{1, 2, 16}, nil)
	cs := g.NewTensor("cos", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	sn := g.NewTensor("sin", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	v := g.NewTensor("v", ir.Float32, ir.Shape{1, 32}, nil)
	pos := g.NewTensor("pos", ir.Int64, ir.Shape{1}, nil)
	kc := g.NewTensor("kc", ir.Float32, ir.Shape{4, 32}, nil)
	vc := g.NewTensor("vc", ir.Float32, ir.Shape{4, 32}, nil)
	g.Inputs = []ir.TensorID{q, k, cs, sn, v, pos, kc, vc}
	g.State = []ir.TensorID{kc, vc}
	shape := func(dims ...int64) ir.TensorID {
		return g.NewTensor("shape", ir.Int64, ir.Shape{int64(len(dims))}, raw.Bytes(dims))
	}
	halves := ir.Attrs{"halves": intv(0)}
	qr := sg.node("Rotary", ir.BerthDomain, halves, q, cs, sn)
	kr := sg.node("Rotary", ir.BerthDomain, halves, k, cs, sn)
	kf := sg.node("Reshape", "", nil, kr, shape(1, 32))
	if reader {
		g.Outputs = append(g.Outputs, sg.node("Identity", "", nil, kc))
	}
	kn := sg.node("CacheWrite", ir.BerthDomain, nil, kc, kf, pos)
	vn := sg.node("CacheWrite", ir.BerthDomain, nil, vc, v, pos)
	qf := sg.node("Reshape", "", nil, qr, shape(1, 128))
	y := sg.node("CachedAttention", ir.BerthDomain, ir.Attrs{"heads": intv(8), "kv_heads": intv(2), "scale": floatv(0.25)}, qf, kn, vn, pos)
	g.Outputs = append(g.Outputs, y)
	return g
}

// TestFoldCacheWrites checks the rewrite: the two rotations and the two
// cache writes are one Rotaries node that updates both caches, unless
// something else reads a cache.
func TestFoldCacheWrites(t *testing.T) {
	for _, reader := range []bool{false, true} {
		f := fuseProducts(cacheStepGraph(t, reader))
		var ops []string
		for _, n := range f.Nodes {
			ops = append(ops, fmt.Sprintf("%s/%d/%d", n.Op, len(n.Inputs), len(n.Outputs)))
		}
		want := []string{"Rotaries/8/4", "Reshape/2/1", "Reshape/2/1", "CachedAttention/4/1"}
		if reader {
			want = []string{"Rotaries/4/2", "Reshape/2/1", "Identity/1/1", "CacheWrite/3/1", "CacheWrite/3/1", "Reshape/2/1", "CachedAttention/4/1"}
		}
		if !slices.Equal(ops, want) {
			t.Errorf("reader %v: nodes %v, want %v", reader, ops, want)
		}
		// Building the launches needs no GPU.
		c, err := buildNode(f, 0, 132, false, new([][]byte))
		if err != nil {
			t.Fatalf("reader %v: %v", reader, err)
		}
		if kernel := map[bool]string{false: "rotary2_cache", true: "rotary2"}[reader]; len(c.launches) != 1 || c.launches[0].kernel != kernel {
			t.Errorf("reader %v: the rotations launch %+v, want one %s", reader, c.launches, kernel)
		} else if early := !reader && earlyAttention; c.launches[0].early != early {
			t.Errorf("reader %v: %s launched early: %v, want %v", reader, kernel, c.launches[0].early, early)
		}
	}
}

// TestFoldCacheWritesMatchUnfused runs four steps (positions 0 to 3) of
// the cache graph with the writes folded into the rotations' launch and
// apart, and wants the same bits at every step.
func TestFoldCacheWritesMatchUnfused(t *testing.T) {
	requireGPU(t)
	g := cacheStepGraph(t, false)
	var sessions [2]*Session
	for i, noFusion := range []bool{false, true} {
		exe, s := openSession(t, g, Options{NoFusion: noFusion})
		if i == 0 && exe.Launches() != 2 {
			t.Errorf("%d launches fused, want 2 (the rotations with the writes, the attention)", exe.Launches())
		}
		sessions[i] = s
	}
	r := rand.New(rand.NewPCG(12, 13))
	for pos := range int64(4) {
		inputs := normalInputs(r, &ir.Graph{Tensors: g.Tensors, Inputs: g.Inputs[:5]})
		inputs = append(inputs, raw.Bytes([]int64{pos}), nil, nil)
		var outs [2][]byte
		for i, s := range sessions {
			outs[i] = make([]byte, g.Tensor(g.Outputs[0]).Bytes())
			if err := s.Run(inputs, [][]byte{outs[i]}); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(outs[0], outs[1]) {
			t.Errorf("position %d: the attention differs from the unfused run's", pos)
		}
	}
}

// TestFoldDecoderSteps rewrites the step graphs of the test decoders
// (one token and a prompt of four), builds every node's launches and
// plans the result (no GPU needed): each layer's rotations take both cache
// writes, no CacheWrite is left, and the plan passes Verify.
func TestFoldDecoderSteps(t *testing.T) {
	for _, name := range []string{"llama-q8_0", "qwen2-f16"} {
		f, err := gguf.Open(filepath.Join("..", "..", "testdata", "llm", name+".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c, err := llm.ConfigOf(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tokens := range []int64{1, 4} {
			g, err := llm.StepGraph(llm.GGUF(f), c, tokens, 16, false)
			if err != nil {
				t.Fatal(err)
			}
			if err := passes.Prepare(g, nil); err != nil {
				t.Fatal(err)
			}
			fg := fuseProducts(g)
			folded, roped := 0, 0
			for i, n := range fg.Nodes {
				if n.Op == "CacheWrite" {
					t.Errorf("%s, %d tokens: node %q is left a CacheWrite", name, tokens, n.Name)
				}
				if len(stateUpdates(&n)) == 2 {
					folded++
				}
				if n.Op == "Products" && n.Attrs.Int("rope", 0) != 0 {
					roped++
				}
				if _, err := buildNode(fg, i, 132, false, new([][]byte)); err != nil {
					t.Errorf("%s, %d tokens: %v", name, tokens, err)
				}
			}
			if err := planOf(fg); err != nil {
				t.Errorf("%s, %d tokens: %v", name, tokens, err)
			}
			if folded != int(c.Layers) {
				t.Errorf("%s, %d tokens: %d rotations write the caches, want %d (a layer each)", name, tokens, folded, c.Layers)
			}
			// A step's rotations of adjacent pairs go into its query, key
			// and value products (BERTH_CUDA_ROPE): LLaMA's, not Qwen2's
			// halves, and not a prompt's (its products are not gemv's).
			want := 0
			if ropeProductsOn && tokens == 1 && !c.RopeHalves {
				want = int(c.Layers)
			}
			if roped != want {
				t.Errorf("%s, %d tokens: %d products take the rotations, want %d", name, tokens, roped, want)
			}
		}
	}
}

// TestReusedInputs: an input whose slot the plan gives to a later tensor
// once it is read is marked (a chain of three Relus over x, the third
// writing over x), one read by the last node is not, and state never is.
func TestReusedInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		last bool // x is read by the last node too
		want bool
	}{{"chain", false, true}, {"read to the end", true, false}} {
		sg := newStepGraph(t, tc.name, ggml.F32, 1)
		g := sg.g
		x := g.NewTensor("x", ir.Float32, ir.Shape{1024}, nil)
		st := g.NewTensor("state", ir.Float32, ir.Shape{1024}, nil)
		g.Inputs = []ir.TensorID{x, st}
		g.State = []ir.TensorID{st}
		y := sg.node("Add", "", nil, sg.node("Relu", "", nil, sg.node("Relu", "", nil, sg.node("Relu", "", nil, x))), st)
		if tc.last {
			y = sg.node("Add", "", nil, y, x)
		}
		g.Outputs = []ir.TensorID{y}
		p, index, err := problemOf(g, nil)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Build(p, plan.Options{Alignment: Alignment, NoInPlace: true, FileOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		got := reusedInputs(g, p, pl, index, []bool{false, true})
		if got[0] != tc.want || got[1] {
			t.Errorf("%s: reused %v, want [%v false]", tc.name, got, tc.want)
		}
	}
}

// TestIfAsksForItsCondition: an If left in a graph (its condition known
// only at run time) is refused with the error of a shape that waits for a
// value, naming the condition, so that an open session learns it first
// and plans the branch taken alone.
func TestIfAsksForItsCondition(t *testing.T) {
	g := &ir.Graph{Name: "if", Opsets: map[string]int64{"": 17}}
	cond := g.NewTensor("positive", ir.Bool, ir.Shape{}, nil)
	x := g.NewTensor("x", ir.Float32, ir.Shape{4}, nil)
	y := g.AddTensor(ir.Tensor{Name: "y", DType: ir.Float32, Shape: ir.Shape{4}, Producer: 0})
	g.Inputs = []ir.TensorID{cond, x}
	g.Nodes = []ir.Node{{Name: "choose", Op: "If", Inputs: []ir.TensorID{cond, x}, Outputs: []ir.TensorID{y}, Implicit: 1}}
	g.Outputs = []ir.TensorID{y}
	_, err := buildNode(g, 0, 132, false, new([][]byte))
	var ve *ir.ValueError
	if !errors.As(err, &ve) || ve.Tensor != "positive" || !errors.Is(err, ir.ErrValueDependent) {
		t.Fatalf("building an If: %v, want a value error naming its condition", err)
	}
}

// ropeStepGraph is cacheStepGraph with its queries (8 heads of 16
// values), keys and values (2 heads) made by products of one row of 256
// values, weights in format f, under an RMSNorm: the graph whose
// rotations and cache writes ropeIntoProducts folds into the products.
func ropeStepGraph(tb testing.TB, f ggml.Type) *ir.Graph {
	sg := newStepGraph(tb, "rope", f, 13)
	g := sg.g
	x := g.NewTensor("x", ir.Float32, ir.Shape{1, 256}, nil)
	cs := g.NewTensor("cos", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	sn := g.NewTensor("sin", ir.Float32, ir.Shape{1, 1, 8, 1}, nil)
	pos := g.NewTensor("pos", ir.Int64, ir.Shape{1}, nil)
	kc := g.NewTensor("kc", ir.Float32, ir.Shape{4, 32}, nil)
	vc := g.NewTensor("vc", ir.Float32, ir.Shape{4, 32}, nil)
	g.Inputs = []ir.TensorID{x, cs, sn, pos, kc, vc}
	g.State = []ir.TensorID{kc, vc}
	shape := func(dims ...int64) ir.TensorID {
		return g.NewTensor("shape", ir.Int64, ir.Shape{int64(len(dims))}, raw.Bytes(dims))
	}
	gv := make([]float32, 256)
	for i := range gv {
		gv[i] = float32(1 + 0.1*sg.r.NormFloat64())
	}
	a := sg.node("RMSNorm", ir.BerthDomain, ir.Attrs{"epsilon": floatv(1e-5)}, x, g.NewTensor("g", ir.Float32, ir.Shape{256}, raw.Bytes(gv)))
	q, k, v := sg.product(a, 128, 256), sg.product(a, 32, 256), sg.product(a, 32, 256)
	halves := ir.Attrs{"halves": intv(0)}
	q3, k3 := sg.node("Reshape", "", nil, q, shape(1, 8, 16)), sg.node("Reshape", "", nil, k, shape(1, 2, 16))
	qr := sg.node("Rotary", ir.BerthDomain, halves, q3, cs, sn)
	kr := sg.node("Rotary", ir.BerthDomain, halves, k3, cs, sn)
	kn := sg.node("CacheWrite", ir.BerthDomain, nil, kc, sg.node("Reshape", "", nil, kr, shape(1, 32)), pos)
	vn := sg.node("CacheWrite", ir.BerthDomain, nil, vc, v, pos)
	qf := sg.node("Reshape", "", nil, qr, shape(1, 128))
	g.Outputs = []ir.TensorID{sg.node("CachedAttention", ir.BerthDomain, ir.Attrs{"heads": intv(8), "kv_heads": intv(2), "scale": floatv(0.25)}, qf, kn, vn, pos)}
	return g
}

// TestFoldRope checks the rewrite of a step's rotations and cache writes
// into its query, key and value products: one Products node under rope,
// with the angles, the caches and the position, writing the caches in
// place, one gemv launch (two under prep), or none of it with
// BERTH_CUDA_ROPE=0.
func TestFoldRope(t *testing.T) {
	defer func(on bool) { ropeProductsOn = on }(ropeProductsOn)
	for _, f := range []ggml.Type{ggml.F16, ggml.Q8_0, ggml.Q4_0} {
		for _, on := range []bool{true, false} {
			ropeProductsOn = on
			fg := fuseProducts(ropeStepGraph(t, f))
			var ops []string
			for _, n := range fg.Nodes {
				op := fmt.Sprintf("%s/%d/%d", n.Op, len(n.Inputs), len(n.Outputs))
				if n.Attrs.Int("rope", 0) != 0 {
					op += "/rope"
				}
				ops = append(ops, op)
			}
			want := []string{"Products/6/3", "Reshape/2/1", "Reshape/2/1", "Rotaries/8/4", "Reshape/2/1", "Reshape/2/1", "CachedAttention/4/1"}
			if on {
				want = []string{"Products/11/5/rope", "Reshape/2/1", "Reshape/2/1", "CachedAttention/4/1"}
			}
			if !slices.Equal(ops, want) {
				t.Errorf("%s, rope %v: nodes %v, want %v", f, on, ops, want)
				continue
			}
			if !on {
				continue
			}
			if ups := stateUpdates(&fg.Nodes[0]); !slices.Equal(ups, [][2]int{{8, 3}, {9, 4}}) {
				t.Errorf("%s: state updates %v", f, ups)
			}
			if err := planOf(fg); err != nil {
				t.Errorf("%s: %v", f, err)
			}
			c, err := buildNode(fg, 0, 132, false, new([][]byte))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if want := 1 + prepLaunches(f, 1); len(c.launches) != want || !strings.HasSuffix(c.launches[len(c.launches)-1].kernel, "_rope") {
				t.Errorf("%s: launches %d (last %s), want %d ending in a rope kernel", f, len(c.launches), c.launches[len(c.launches)-1].kernel, want)
			}
		}
	}
}

// TestFoldRopeMatchUnfused runs four steps (positions 0 to 3) of
// ropeStepGraph with the rotations and cache writes in the products'
// launch and in their own, and wants the same attention to rounding (the
// rotations' products may be fused into multiply-adds differently).
func TestFoldRopeMatchUnfused(t *testing.T) {
	requireGPU(t)
	defer func(on bool) { ropeProductsOn = on }(ropeProductsOn)
	for _, f := range []ggml.Type{ggml.F16, ggml.Q8_0, ggml.Q4_0} {
		t.Run(f.String(), func(t *testing.T) {
			g := ropeStepGraph(t, f)
			var sessions [2]*Session
			for i, on := range []bool{true, false} {
				ropeProductsOn = on
				_, sessions[i] = openSession(t, g, Options{})
			}
			r := rand.New(rand.NewPCG(14, 15))
			for pos := range int64(4) {
				inputs := normalInputs(r, &ir.Graph{Tensors: g.Tensors, Inputs: g.Inputs[:1]})
				cs, sn := make([]float32, 8), make([]float32, 8)
				for j := range cs {
					a := float64(pos) / math.Pow(10000, float64(2*j)/16)
					cs[j], sn[j] = float32(math.Cos(a)), float32(math.Sin(a))
				}
				inputs = append(inputs, raw.Bytes(cs), raw.Bytes(sn), raw.Bytes([]int64{pos}), nil, nil)
				var outs [2][]byte
				for i, s := range sessions {
					outs[i] = make([]byte, g.Tensor(g.Outputs[0]).Bytes())
					if err := s.Run(inputs, [][]byte{outs[i]}); err != nil {
						t.Fatal(err)
					}
				}
				if e := relL2Bytes(outs[0], outs[1]); !(e <= 1e-6) {
					t.Errorf("position %d: rel L2 %.3g against the rotations apart, want ≤ 1e-6", pos, e)
				}
			}
		})
	}
}

// TestRopeShapes: the rope form's tensors as ropeShapes takes them, and
// what it refuses (the fold then leaves the rotations apart).
func TestRopeShapes(t *testing.T) {
	f32 := func(s ...int64) *ir.Tensor { return &ir.Tensor{DType: ir.Float32, Shape: ir.Shape(s)} }
	i64t := func(s ...int64) *ir.Tensor { return &ir.Tensor{DType: ir.Int64, Shape: ir.Shape(s)} }
	rows := []int64{128, 32, 32}
	for _, c := range []struct {
		name                string
		cs, sn, kc, vc, pos *ir.Tensor
		rows                []int64
		ok                  bool
	}{
		{"fits", f32(1, 1, 8, 1), f32(1, 1, 8, 1), f32(4, 32), f32(4, 32), i64t(1), rows, true},
		{"angles of two sizes", f32(8), f32(4), f32(4, 32), f32(4, 32), i64t(1), rows, false},
		{"angles not float32", i64t(8), i64t(8), f32(4, 32), f32(4, 32), i64t(1), rows, false},
		{"heads the angles do not make", f32(12), f32(12), f32(4, 32), f32(4, 32), i64t(1), rows, false},
		{"a position of two values", f32(8), f32(8), f32(4, 32), f32(4, 32), i64t(2), rows, false},
		{"a key cache of other rows", f32(8), f32(8), f32(4, 64), f32(4, 32), i64t(1), rows, false},
		{"caches of other lengths", f32(8), f32(8), f32(4, 32), f32(5, 32), i64t(1), rows, false},
		{"two weights", f32(8), f32(8), f32(4, 32), f32(4, 32), i64t(1), rows[:2], false},
		{"no angles", nil, nil, f32(4, 32), f32(4, 32), i64t(1), rows, false},
	} {
		half, crows, err := ropeShapes(c.cs, c.sn, c.kc, c.vc, c.pos, nil, nil, c.rows)
		if (err == nil) != c.ok {
			t.Errorf("%s: error %v, want ok %v", c.name, err, c.ok)
		}
		if c.ok && (half != 8 || crows != 4) {
			t.Errorf("%s: half %d, rows %d, want 8 and 4", c.name, half, crows)
		}
	}
}
