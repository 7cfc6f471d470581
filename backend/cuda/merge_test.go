package cuda

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// TestFoldMergePrepare checks which steps foldMergePrepare folds: a
// merge and, at once after it, the quantisation of what it writes, into
// one gemv_prepare_merged that takes the merge's arguments, the heads
// and the quantisation's output; nothing else.
func TestFoldMergePrepare(t *testing.T) {
	at := func(off int64) boundArg { return boundArg{region: inArena, off: off} }
	word := func(v uint64) boundArg { return boundArg{region: inWords, words: []uint64{v}} }
	// A merge of 4 heads of 64 values writing y at 1000, and the
	// quantisation of k values at x into q at 5000.
	merge := step{node: 3, kernel: "cached_attention_merge", grid: [3]uint32{4, 1, 1}, block: [3]uint32{64, 1, 1}, early: true,
		args: []boundArg{at(200), at(8), at(1000), word(2048), word(64), word(8)}}
	prepare := func(x int64, k uint64) step {
		return step{node: 4, kernel: "gemv_prepare", grid: [3]uint32{1, 1, 1}, block: [3]uint32{256, 1, 1}, early: true,
			args: []boundArg{at(x), word(0), word(k), word(0), at(5000)}}
	}
	other := step{node: 4, kernel: "gemv_q8_0_prep", args: []boundArg{at(5000)}}
	merged := step{node: 4, kernel: "gemv_prepare_merged", grid: [3]uint32{1, 1, 1}, block: [3]uint32{256, 1, 1}, early: true,
		args: []boundArg{at(200), at(8), at(1000), word(2048), word(64), word(8), word(4), at(5000)}}
	for _, c := range []struct {
		name  string
		steps []step
		want  []string
	}{
		{"folded", []step{merge, prepare(1000, 256), other}, []string{"gemv_prepare_merged", "gemv_q8_0_prep"}},
		{"another x", []step{merge, prepare(1004, 256), other}, []string{"cached_attention_merge", "gemv_prepare", "gemv_q8_0_prep"}},
		{"another length", []step{merge, prepare(1000, 512)}, []string{"cached_attention_merge", "gemv_prepare"}},
		{"not at once", []step{merge, other, prepare(1000, 256)}, []string{"cached_attention_merge", "gemv_q8_0_prep", "gemv_prepare"}},
		{"merge last", []step{prepare(1000, 256), merge}, []string{"gemv_prepare", "cached_attention_merge"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := foldMergePrepare(c.steps, func(string) (driver.Function, error) { return 0, nil })
			if err != nil {
				t.Fatal(err)
			}
			var kernels []string
			for _, st := range got {
				kernels = append(kernels, st.kernel)
				if st.kernel == "gemv_prepare_merged" {
					if st.node != merged.node || st.grid != merged.grid || st.block != merged.block || st.early != merged.early || !slices.EqualFunc(st.args, merged.args, sameBound) {
						t.Errorf("folded into %+v, want %+v", st, merged)
					}
				}
			}
			if !slices.Equal(kernels, c.want) {
				t.Errorf("kernels %v, want %v", kernels, c.want)
			}
		})
	}
	defer func(on bool) { mergePrepare = on }(mergePrepare)
	mergePrepare = false
	if got, _ := foldMergePrepare([]step{merge, prepare(1000, 256)}, nil); len(got) != 2 {
		t.Errorf("folded with BERTH_CUDA_MERGEPREP=0: %d steps", len(got))
	}
}

// sameBound reports whether a and b are the same bound argument.
func sameBound(a, b boundArg) bool {
	return a.region == b.region && a.off == b.off && slices.Equal(a.words, b.words)
}

// attentionProductGraph is a decoding step's attention (one query of 32
// heads over 4 cache heads of 64 values, a cache of 2048 rows) and the
// output projection after it, by weights in format f, added to a
// residual r: the merge of a split attention and the quantisation of
// its output for the product, next to each other. Its outputs are the
// attention's and the projection's.
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

// TestMergedPrepareMatchesMerge runs the attention and the output
// projection with the merge folded into the quantisation and without,
// at positions one block a head takes and positions split over several,
// and wants the same bits from both, with a launch less.
func TestMergedPrepareMatchesMerge(t *testing.T) {
	requireGPU(t)
	if gemv.prep != 1 {
		t.Skip("x is quantised by every block of the product (BERTH_CUDA_GEMV=prep=0): nothing to fold")
	}
	defer func(on bool) { mergePrepare = on }(mergePrepare)
	for _, f := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		for _, pos := range []int64{30, 700, 2000} {
			t.Run(fmt.Sprintf("%v/pos%d", f, pos), func(t *testing.T) {
				g, inputs := attentionProductGraph(t, f, pos)
				var outs [2][][]byte
				var launches [2]int
				for i, on := range []bool{true, false} {
					mergePrepare = on
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
						t.Errorf("output %d differs with the merge folded", j)
					}
				}
				if o := raw.F32(outs[0][1]); slices.ContainsFunc(o, func(v float32) bool { return v != v }) {
					t.Error("the projection holds NaN")
				}
				if launches[0] != launches[1]-1 {
					t.Errorf("%d launches folded, %d not: want one less", launches[0], launches[1])
				}
			})
		}
	}
}
