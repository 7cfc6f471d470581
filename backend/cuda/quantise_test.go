package cuda

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// TestQuantiseInAttention checks which steps quantiseInAttention folds:
// a split attention's part and merge, at once after them the
// quantisation of what the merge writes, and the product that reads it;
// the part and the merge then write the quantised output into their
// room for it, which the product reads. Nothing is folded where the
// attention keeps no room (heads not whole blocks of 32), the
// quantisation reads something else, the product reads something else
// or writes over the room, or the steps are not one after another.
func TestQuantiseInAttention(t *testing.T) {
	defer func(on bool) { attentionQuantises = on }(attentionQuantises)
	attentionQuantises = true
	at := func(off int64) boundArg { return boundArg{region: inArena, off: off} }
	word := func(v uint64) boundArg { return boundArg{region: inWords, words: []uint64{v}} }
	none := word(0)
	// 4 heads of 64 values: y at 4096, the room at 20000, the
	// quantisation's output at 30000, the product's output at out.
	steps := func(room boundArg, x, prodX, out int64) []step {
		const k = 256
		return []step{
			{kernel: "cached_attention_part", args: []boundArg{at(0), at(100000), at(200000), at(8), at(4096), at(8192), word(2048), word(4), word(2), word(64), word(0), room, word(k), word(0)}},
			{kernel: "cached_attention_merge", args: []boundArg{at(8192), at(8), at(4096), word(2048), word(64), word(8), room, word(k), word(0)}},
			{kernel: "gemv_prepare", args: []boundArg{at(x), none, word(k), word(0), at(30000)}},
			{kernel: "gemv_q8_0_prep", args: []boundArg{at(prodX), at(50000), at(300000), none, none, at(out), none, none, word(128), word(0), word(0), word(k)}},
		}
	}
	all := []string{"cached_attention_part", "cached_attention_merge", "gemv_prepare", "gemv_q8_0_prep"}
	for _, c := range []struct {
		name  string
		steps []step
		fold  bool
	}{
		{"folded", steps(at(20000), 4096, 30000, 40000), true},
		{"no room", steps(none, 4096, 30000, 40000), false},
		{"another x", steps(at(20000), 4100, 30000, 40000), false},
		{"the product reads another x", steps(at(20000), 4096, 30004, 40000), false},
		{"the product writes over the room", steps(at(20000), 4096, 30000, 20000-256), false},
		{"not at once", slices.Insert(steps(at(20000), 4096, 30000, 40000), 2, step{kernel: "b_add_i64"}), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.steps)
			got := quantiseInAttention(c.steps)
			var kernels []string
			for _, st := range got {
				kernels = append(kernels, st.kernel)
			}
			want := slices.DeleteFunc(slices.Clone(all), func(k string) bool { return c.fold && k == "gemv_prepare" })
			if c.name == "not at once" {
				want = slices.Insert(want, 2, "b_add_i64")
			}
			if !slices.Equal(kernels, want) {
				t.Fatalf("kernels %v, want %v", kernels, want)
			}
			on := uint64(0)
			if c.fold {
				on = 1
			}
			if got[0].args[13].words[0] != on || got[1].args[8].words[0] != on {
				t.Errorf("the part and the merge quantise: %d, %d; want %d", got[0].args[13].words[0], got[1].args[8].words[0], on)
			}
			if prod := got[len(got)-1]; c.fold && !sameArg(prod.args[0], at(20000)) {
				t.Errorf("the product reads %+v, want the room", prod.args[0])
			}
			if c.fold && (in[0].args[13].words[0] != 0 || !sameArg(in[3].args[0], at(30000))) {
				t.Error("the steps given were changed")
			}
		})
	}
	attentionQuantises = false
	if got := quantiseInAttention(steps(at(20000), 4096, 30000, 40000)); len(got) != 4 {
		t.Errorf("folded with the fold off: %d steps", len(got))
	}
}

// attentionProductGraph is a decoding step's attention (one query of 32
// heads over 4 cache heads of 64 values, a cache of 2048 rows) and the
// output projection after it, by weights in format f, added to a
// residual r. Its outputs are the attention's and the projection's.
func attentionProductGraph(tb testing.TB, f ggml.Type, pos int64) (*ir.Graph, [][]byte) {
	tc := attentionCase{1, 2048, pos, 32, 4, 64}
	g, inputs := tc.graph()
	sg := &stepGraph{tb: tb, g: g, r: newStepGraph(tb, "", f, 5).r, f: f}
	res := g.NewTensor("r", ir.Float32, ir.Shape{1, 256}, nil)
	g.Inputs = append(g.Inputs, res)
	y := g.Outputs[0]
	g.Outputs = append(g.Outputs, sg.node("Add", "", nil, res, sg.product(y, 256, tc.heads*tc.d)))
	r := make([]float32, 256)
	for i := range r {
		r[i] = float32(math.Sin(float64(i)))
	}
	return g, append(inputs, raw.Bytes(r))
}

// TestQuantisedByAttentionMatches runs the attention and the output
// projection with the attention writing its output quantised and
// without, at positions one block a head takes and positions split over
// several, and wants the same bits from both, with a launch less.
func TestQuantisedByAttentionMatches(t *testing.T) {
	requireGPU(t)
	if gemv.prep != 1 {
		t.Skip("x is quantised by every block of the product (BERTH_CUDA_GEMV=prep=0): nothing to fold")
	}
	defer func(on bool) { attentionQuantises = on }(attentionQuantises)
	for _, f := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		for _, pos := range []int64{30, 700, 2000} {
			t.Run(fmt.Sprintf("%v/pos%d", f, pos), func(t *testing.T) {
				g, inputs := attentionProductGraph(t, f, pos)
				var outs [2][][]byte
				var launches [2]int
				for i, on := range []bool{true, false} {
					attentionQuantises = on
					exe, s := openSession(t, g, Options{})
					for _, id := range g.Outputs {
						out := make([]byte, g.Tensor(id).Bytes())
						for j := range out {
							out[j] = 0xAB // poison: NaN
						}
						outs[i] = append(outs[i], out)
					}
					for range 2 {
						if err := s.Run(inputs, outs[i]); err != nil {
							t.Fatal(err)
						}
					}
					launches[i] = exe.Launches()
				}
				for j := range outs[0] {
					if !bytes.Equal(outs[0][j], outs[1][j]) {
						t.Errorf("output %d differs with the attention quantising", j)
					}
				}
				if slices.ContainsFunc(raw.F32(outs[0][1]), func(v float32) bool { return v != v }) {
					t.Error("the projection holds NaN")
				}
				if launches[0] != launches[1]-1 {
					t.Errorf("%d launches folded, %d not: want one less", launches[0], launches[1])
				}
			})
		}
	}
}
