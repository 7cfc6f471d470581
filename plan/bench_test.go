package plan_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/plan"
)

// transformer is a decoder-shaped problem of about nodes steps: layers of
// attention (with head-splitting views and a scratch buffer for the scores)
// and MLP, 18 steps a layer. With cache, every layer also hands its keys
// and values out as graph outputs, which then live to the end.
func transformer(nodes int, cache bool) *plan.Problem {
	const (
		f32   = 4
		seq   = 128
		dim   = 512
		heads = 8
	)
	b := &builder{}
	act := int64(seq * dim * f32)
	x := b.input(act)
	for len(b.p.Steps) < nodes {
		ln := b.op("LayerNormalization", act, x)
		qm, km, vm := b.op("MatMul", act, ln), b.op("MatMul", act, ln), b.op("MatMul", act, ln)
		q, k, v := b.view(qm, act, 0), b.view(km, act, 0), b.view(vm, act, 0)
		if cache {
			b.output(k, v)
		}
		kt := b.op("Transpose", act, k)
		s := b.step("MatMul", []int{q, kt}, heads*seq*seq*f32, 64*1024)[0]
		p := b.op("Softmax", heads*seq*seq*f32, s)
		o := b.view(b.op("MatMul", act, p, v), act, 0)
		x = b.op("Add", act, x, b.op("MatMul", act, o))
		h := b.op("Gelu", 4*act, b.op("MatMul", 4*act, b.op("LayerNormalization", act, x)))
		x = b.op("Add", act, x, b.op("MatMul", act, h))
	}
	b.output(x)
	return &b.p
}

// benchBuild plans p in a loop and reports the arena over LOAD and the
// heuristics tried.
func benchBuild(b *testing.B, p *plan.Problem) {
	var pl *plan.Plan
	for b.Loop() {
		var err error
		if pl, err = plan.Build(p, plan.Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(pl.ArenaBytes)/float64(pl.LoadBytes), "arena/load")
	b.ReportMetric(float64(len(pl.Attempts)), "heuristics")
}

func BenchmarkBuild(b *testing.B) {
	for _, nodes := range []int{10_000, 100_000} {
		for _, cache := range []bool{false, true} {
			p := transformer(nodes, cache)
			b.Run(fmt.Sprintf("nodes=%d/cache=%v", nodes, cache), func(b *testing.B) { benchBuild(b, p) })
		}
	}
}

// BenchmarkBuildRandom plans random DAGs, which seldom reach LOAD, so every
// heuristic runs. A quarter of their edges reach back anywhere, so about an
// eighth of all tensors are live at once: the worst case for placement.
func BenchmarkBuildRandom(b *testing.B) {
	for _, nodes := range []int{2_000, 10_000} {
		p := randomProblem(rand.New(rand.NewPCG(1, 1)), nodes)
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) { benchBuild(b, p) })
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, nodes := range []int{10_000, 100_000} {
		p := transformer(nodes, false)
		pl, err := plan.Build(p, plan.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for b.Loop() {
				if err := plan.Verify(p, pl); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
