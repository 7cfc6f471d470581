package plan_test

import (
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/plan"
)

// check builds p, verifies the plan and checks the bounds every plan obeys.
func check(t *testing.T, p *plan.Problem, opts plan.Options) *plan.Plan {
	t.Helper()
	pl, err := plan.Build(p, opts)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := plan.Verify(p, pl); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if pl.ArenaBytes < pl.LoadBytes {
		t.Fatalf("arena %d below LOAD %d", pl.ArenaBytes, pl.LoadBytes)
	}
	if pl.ArenaBytes > pl.NaiveBytes {
		t.Fatalf("arena %d above the naive %d", pl.ArenaBytes, pl.NaiveBytes)
	}
	return pl
}

func TestRandomProblems(t *testing.T) {
	takeovers, overwrites := 0, 0 // overwrites: in place through Step.Overwrite
	parts := map[string]int{}     // pieces made views, by operator
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		p := randomProblem(rng, 1+rng.IntN(60))
		opts := plan.Options{Alignment: []int64{1, 8, 64, 256, 100}[rng.IntN(5)]}
		if seed%2 == 1 {
			opts.Order = randomOrder(rng, p)
		}
		pl := check(t, p, opts)
		if t.Failed() {
			t.Fatalf("seed %d", seed)
		}
		for _, in := range pl.InPlace {
			if in >= 0 {
				takeovers++
			}
		}
		for _, st := range p.Steps {
			if len(st.Overwrite) > 0 && pl.InPlace[st.Outputs[0]] >= 0 {
				overwrites++
			}
		}
		for _, st := range p.Steps {
			if st.Op == "Concat" && p.Tensors[st.Outputs[0]].IsView() {
				parts["chain"]++ // a Concat's output moved into a later one's
			}
			for _, pc := range st.Pieces {
				if p.Tensors[pc.Part].Alias() == pc.Whole {
					parts[st.Op]++
				}
			}
		}
	}
	if takeovers < 1000 {
		t.Fatalf("only %d outputs ran in place; the test proves little about in-place plans", takeovers)
	}
	if overwrites < 300 {
		t.Fatalf("only %d fused producers overwrote an input; the test proves little about Step.Overwrite", overwrites)
	}
	t.Logf("shared: %v; %d outputs in place, %d of them through Overwrite", parts, takeovers, overwrites)
	if parts["Concat"] < 1000 || parts["Split"] < 1000 || parts["chain"] < 100 {
		t.Fatalf("only %d Concat and %d Split parts share their whole's bytes, and %d Concat outputs moved into another; the test proves little about them",
			parts["Concat"], parts["Split"], parts["chain"])
	}
}

// With file order and only whole views, sharing never costs bytes: LOAD is
// at most the file order's LOAD with nothing shared.
func TestWholeViewsNeverRaiseLoad(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 2))
		b := &builder{}
		x := b.input(randomSize(rng))
		live := []int{x}
		for range 1 + rng.IntN(40) {
			in := live[rng.IntN(len(live))]
			var out int
			if rng.IntN(3) == 0 {
				out = b.view(in, b.p.Tensors[in].Size, 0)
			} else {
				out = b.op("Op", randomSize(rng), in, live[rng.IntN(len(live))])
			}
			live = append(live, out)
		}
		b.output(live[len(live)-1])
		pl := check(t, &b.p, plan.Options{})
		if pl.LoadBytes > pl.FileOrderLoadBytes {
			t.Fatalf("seed %d: LOAD %d above the file order's %d", seed, pl.LoadBytes, pl.FileOrderLoadBytes)
		}
	}
}

// exact builds p and requires the arena to meet LOAD.
func exact(t *testing.T, name string, p *plan.Problem, opts plan.Options) {
	t.Helper()
	pl := check(t, p, opts)
	if pl.ArenaBytes != pl.LoadBytes {
		t.Errorf("%s: arena %d, LOAD %d; tried %v", name, pl.ArenaBytes, pl.LoadBytes, pl.Attempts)
	}
}

func TestChainsMeetLoad(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 3))
		b := &builder{}
		x := b.input(randomSize(rng))
		for range rng.IntN(50) {
			x = b.op("Op", randomSize(rng), x)
		}
		b.output(x)
		exact(t, "chain", &b.p, plan.Options{Alignment: []int64{1, 64, 256}[seed%3]})
	}
}

// residual stacks blocks x → a → b → add(x, b); inner gives a's and b's size.
func residual(rng *rand.Rand, blocks int, inner func(x int64) (a, b int64)) *plan.Problem {
	bd := &builder{}
	xs := randomSize(rng)
	x := bd.input(xs)
	for range blocks {
		as, bs := inner(xs)
		a := bd.op("Conv", as, x)
		b := bd.op("Conv", bs, a)
		x = bd.op("Add", xs, x, b)
	}
	bd.output(x)
	return &bd.p
}

func TestResidualBlocksMeetLoad(t *testing.T) {
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 4))
		blocks := 1 + rng.IntN(8)
		// As in a network: b has x's shape, a any width.
		exact(t, "residual", residual(rng, blocks, func(x int64) (int64, int64) {
			return x * (1 + rng.Int64N(8)) / (1 + rng.Int64N(4)), x
		}), plan.Options{})
		// Any sizes at all.
		exact(t, "residual, any sizes", residual(rng, blocks, func(int64) (int64, int64) {
			return randomSize(rng), randomSize(rng)
		}), plan.Options{})
	}
}

// attention is a transformer layer: q, k, v from x, split into heads by
// views, scores, softmax, the weighted sum, the projection and the
// residual, then the MLP.
func attention(layers int, seq, dim, heads int64) *plan.Problem {
	const f32 = 4
	b := &builder{}
	act := seq * dim * f32
	x := b.input(act)
	for range layers {
		ln := b.op("LayerNormalization", act, x)
		q := b.view(b.op("MatMul", act, ln), act, 0)
		k := b.view(b.op("MatMul", act, ln), act, 0)
		v := b.view(b.op("MatMul", act, ln), act, 0)
		kt := b.op("Transpose", act, k)
		s := b.op("MatMul", heads*seq*seq*f32, q, kt)
		p := b.op("Softmax", heads*seq*seq*f32, s)
		o := b.view(b.op("MatMul", act, p, v), act, 0)
		x = b.op("Add", act, x, b.op("MatMul", act, o))
		h := b.op("Gelu", 4*act, b.op("MatMul", 4*act, b.op("LayerNormalization", act, x)))
		x = b.op("Add", act, x, b.op("MatMul", act, h))
	}
	b.output(x)
	return &b.p
}

func TestAttentionMeetsLoad(t *testing.T) {
	for _, seq := range []int64{1, 7, 64, 512, 2048} {
		for _, dim := range []int64{64, 768, 4096} {
			for _, layers := range []int{1, 4} {
				exact(t, "attention", attention(layers, seq, dim, max(1, dim/64)), plan.Options{})
			}
		}
	}
}

// cnn is a small image network: convolutions (with im2col scratch) and
// ReLUs, a residual block, downsampling by pooling, then global pooling, a
// flattening view and a classifier.
func cnn(batch, side, channels int64, stages int) *plan.Problem {
	const f32 = 4
	b := &builder{}
	c, hw := int64(3), side*side
	x := b.input(batch * c * hw * f32)
	conv := func(in int, cin, cout, hw int64) int {
		outs := b.step("Conv", []int{in}, batch*cout*hw*f32, batch*cin*9*hw*f32) // output and im2col scratch
		return b.op("Relu", batch*cout*hw*f32, outs[0])
	}
	x = conv(x, c, channels, hw)
	c = channels
	for range stages {
		y := conv(x, c, c, hw)
		y = b.step("Conv", []int{y}, batch*c*hw*f32, batch*c*9*hw*f32)[0]
		x = b.op("Relu", batch*c*hw*f32, b.op("Add", batch*c*hw*f32, x, y))
		hw /= 4
		x = b.op("MaxPool", batch*c*hw*f32, x)
		x = conv(x, c, 2*c, hw)
		c *= 2
	}
	x = b.view(b.op("GlobalAveragePool", batch*c*f32, x), batch*c*f32, 0)
	b.output(b.op("Gemm", batch*1000*f32, x))
	return &b.p
}

func TestCNNMeetsLoad(t *testing.T) {
	for _, batch := range []int64{1, 8} {
		for _, side := range []int64{32, 224} {
			for _, stages := range []int{1, 2, 3} {
				exact(t, "cnn", cnn(batch, side, 64, stages), plan.Options{})
			}
		}
	}
}

// The zero Tensor owns its slot; SetAlias makes it a view and back.
func TestTensorAlias(t *testing.T) {
	var x plan.Tensor
	if x.IsView() || x.Alias() != -1 {
		t.Fatalf("zero Tensor: IsView %v, Alias %d; want a root", x.IsView(), x.Alias())
	}
	x.SetAlias(0)
	if !x.IsView() || x.Alias() != 0 {
		t.Fatalf("after SetAlias(0): IsView %v, Alias %d; want a view of tensor 0", x.IsView(), x.Alias())
	}
	x.SetAlias(-1)
	if x.IsView() || x.Alias() != -1 {
		t.Fatalf("after SetAlias(-1): IsView %v, Alias %d; want a root", x.IsView(), x.Alias())
	}
}
