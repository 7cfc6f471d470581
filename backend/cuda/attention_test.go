package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// attentionCase is one CachedAttention: t queries at positions pos… over
// a cache of c rows, heads query heads over kvHeads cache heads of d
// values.
type attentionCase struct{ t, c, pos, heads, kvHeads, d int64 }

func (tc attentionCase) String() string {
	return fmt.Sprintf("t%d_c%d_pos%d_h%d_kv%d_d%d", tc.t, tc.c, tc.pos, tc.heads, tc.kvHeads, tc.d)
}

// graph is the case as a graph of one node, with random queries, keys
// and values from N(0, 1) and the position as its inputs.
func (tc attentionCase) graph() (*ir.Graph, [][]byte) {
	r := rand.New(rand.NewPCG(uint64(tc.c), uint64(tc.d)))
	g := &ir.Graph{Name: "attention", Opsets: map[string]int64{"": 17}}
	q := g.NewTensor("q", ir.Float32, ir.Shape{tc.t, tc.heads * tc.d}, nil)
	k := g.NewTensor("k", ir.Float32, ir.Shape{tc.c, tc.kvHeads * tc.d}, nil)
	v := g.NewTensor("v", ir.Float32, ir.Shape{tc.c, tc.kvHeads * tc.d}, nil)
	pos := g.NewTensor("pos", ir.Int64, ir.Shape{1}, nil)
	y := g.AddTensor(ir.Tensor{Name: "y", DType: ir.Float32, Shape: ir.Shape{tc.t, tc.heads * tc.d}})
	g.Nodes = []ir.Node{{Name: "attention", Op: "CachedAttention", Domain: ir.BerthDomain,
		Attrs:  ir.Attrs{"heads": intv(tc.heads), "kv_heads": intv(tc.kvHeads), "scale": floatv(float32(1 / math.Sqrt(float64(tc.d))))},
		Inputs: []ir.TensorID{q, k, v, pos}, Outputs: []ir.TensorID{y}}}
	g.Inputs = []ir.TensorID{q, k, v, pos}
	g.Outputs = []ir.TensorID{y}
	inputs := normalInputs(r, &ir.Graph{Tensors: g.Tensors, Inputs: g.Inputs[:3]})
	return g, append(inputs, raw.Bytes([]int64{tc.pos}))
}

// TestCachedAttention checks the attention over a cache against float64
// sums of its definition: causal softmax attention of t queries at
// positions pos… over the cache's first pos+t rows, query head h reading
// cache head h/(heads/kvHeads). The cases take heads of sizes that are and
// are not whole warps, up to the largest the kernel takes, rows in one
// chunk of the kernel and in several, one query (a decoding step) and
// several (a prompt).
func TestCachedAttention(t *testing.T) {
	requireGPU(t)
	for _, tc := range []attentionCase{
		{1, 1100, 700, 8, 2, 64},
		{1, 40, 0, 2, 1, 256},
		{5, 64, 10, 4, 4, 40},
		{3, 600, 520, 6, 3, 96},
		{2, 1030, 1028, 4, 1, 200},
		{7, 7, 0, 2, 2, 8},
		// One query over a cache long enough to split: at a position
		// one block a head takes (the rest of the grid idle), two
		// parts, and more parts than the grid's two blocks a
		// multiprocessor allow (each then over 64 rows).
		{1, 2048, 30, 32, 4, 64},
		{1, 300, 64, 4, 2, 64},
		{1, 2048, 2000, 32, 4, 64},
	} {
		t.Run(tc.String(), func(t *testing.T) {
			g, inputs := tc.graph()
			got := runOnce(t, g, inputs)
			qv, kv, vv := raw.F32(inputs[0]), raw.F32(inputs[1]), raw.F32(inputs[2])
			scale := float64(g.Nodes[0].Attrs.Float("scale", 0))
			want := make([]float64, len(qv))
			w := tc.kvHeads * tc.d
			for i := range tc.t {
				for h := range tc.heads {
					kh := h / (tc.heads / tc.kvHeads) * tc.d
					n := tc.pos + i + 1
					scores := make([]float64, n)
					mx := math.Inf(-1)
					for j := range n {
						var s float64
						for e := range tc.d {
							s += float64(qv[i*tc.heads*tc.d+h*tc.d+e]) * float64(kv[j*w+kh+e])
						}
						scores[j] = s * scale
						mx = math.Max(mx, scores[j])
					}
					var sum float64
					for j := range scores {
						scores[j] = math.Exp(scores[j] - mx)
						sum += scores[j]
					}
					for e := range tc.d {
						var a float64
						for j := range n {
							a += scores[j] * float64(vv[j*w+kh+e])
						}
						want[i*tc.heads*tc.d+h*tc.d+e] = a / sum
					}
				}
			}
			if e := relL2(got, want); !(e <= 1e-5) {
				t.Errorf("rel L2 %.3g against float64, want ≤ 1e-5", e)
			}
		})
	}
}

// BenchmarkCachedAttention times a decoding step's attention of the 1.1B
// LLaMA shape (32 heads over 4 of 64 values) at several positions of a
// cache of 2048 rows, split over blocks and not: the kernels' fastest
// launch and wait each (Session.StepTimes), which counts a launch and a
// wait on the host too, summed.
func BenchmarkCachedAttention(b *testing.B) {
	requireGPU(b)
	defer func(on bool) { attentionSplitOn = on }(attentionSplitOn)
	for _, pos := range []int64{8, 64, 300, 1000, 2000} {
		for _, split := range []bool{true, false} {
			tc := attentionCase{1, 2048, pos, 32, 4, 64}
			b.Run(fmt.Sprintf("pos%d/split=%v", pos, split), func(b *testing.B) {
				attentionSplitOn = split
				g, inputs := tc.graph()
				_, s := openSession(b, g, Options{})
				out := make([]byte, g.Tensor(g.Outputs[0]).Bytes())
				for range 2 {
					if err := s.Run(inputs, [][]byte{out}); err != nil {
						b.Fatal(err)
					}
				}
				var d float64
				for b.Loop() {
					times, err := s.StepTimes(20)
					if err != nil {
						b.Fatal(err)
					}
					for _, st := range times {
						d += float64(st.Time.Nanoseconds())
					}
				}
				b.ReportMetric(d/float64(b.N), "step-ns")
				b.ReportMetric(float64(len(s.exe.steps)), "launches")
			})
		}
	}
}

// TestSplitAttentionLaunches builds (no GPU) one query's attention over
// a cache of 2048 rows: split, two launches (the parts, then the merge,
// launched early; the parts too under earlyAttention) and a scratch for
// the parts; at four queries, one launch and none.
func TestSplitAttentionLaunches(t *testing.T) {
	for _, tc := range []struct {
		c       attentionCase
		kernels []string
		scratch int64
	}{
		// The parts, then room for the output quantised.
		{attentionCase{1, 2048, 64, 32, 4, 64}, []string{"cached_attention_part", "cached_attention_merge"}, 4*32*8*66 + 2048 + 2048/32*8},
		{attentionCase{4, 2048, 64, 32, 4, 64}, []string{"cached_attention"}, 0},
	} {
		g, _ := tc.c.graph()
		c, err := buildNode(g, 0, 132, false, new([][]byte))
		if err != nil {
			t.Fatal(err)
		}
		var kernels []string
		for _, l := range c.launches {
			kernels = append(kernels, l.kernel)
			if want := earlyAttention || l.kernel == "cached_attention_merge"; l.early != want {
				t.Errorf("%v: %s launched early: %v, want %v", tc.c, l.kernel, l.early, want)
			}
		}
		if !slices.Equal(kernels, tc.kernels) || c.scratch != tc.scratch {
			t.Errorf("%v: kernels %v, scratch %d; want %v, %d", tc.c, kernels, c.scratch, tc.kernels, tc.scratch)
		}
	}
}

func TestAttentionSplits(t *testing.T) {
	defer func(on bool) { attentionSplitOn = on }(attentionSplitOn)
	for _, c := range []struct {
		t, heads, rows int64
		sms            int
		on             bool
		want           int64
	}{
		{1, 32, 2048, 132, true, 8},           // two blocks a multiprocessor
		{1, 32, 256, 132, true, 4},            // 64 rows a block at least
		{1, 32, 100, 132, true, 1},            // too short to split
		{1, 8, 1100, 132, true, 17},           // the rows bound it
		{1, 512, 4096, 132, true, 1},          // heads enough already
		{4, 32, 2048, 132, true, 1},           // a prompt: not split
		{1, 32, 2048, 132, false, 1},          // BERTH_CUDA_ATTSPLIT=0
		{1, 1, 1 << 30, 1 << 20, true, 65535}, // within the grid
	} {
		attentionSplitOn = c.on
		if got := attentionSplits(c.t, c.heads, c.rows, c.sms); got != c.want {
			t.Errorf("attentionSplits(%d, %d, %d, %d) with splits %v = %d, want %d", c.t, c.heads, c.rows, c.sms, c.on, got, c.want)
		}
	}
}
