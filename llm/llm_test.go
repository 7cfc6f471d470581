package llm_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/llmtest"
	"github.com/berth-ml/berth/llm"
	"github.com/berth-ml/berth/weights/gguf"
)

// TestPrefillMatchesReference loads each GGUF language model of
// testdata/llm (scripts/gen_llm_models.py) as a user does, runs its
// prompt, and compares the logits of every position with the float64
// reference computed from the same file's weights: rel L2 ≤ 1e-3 for
// float weights; for quantised ones, whose products round the activations
// to 8 bits as llama.cpp does, ≤ 3e-2 with the argmax equal to the
// reference's at 90 % of the positions or more.
func TestPrefillMatchesReference(t *testing.T) {
	llmtest.Each(t, "gguf", checkPrefill)
}

// TestSafetensorsPrefill is TestPrefillMatchesReference for the Hugging
// Face checkpoints (a file, and a folder of two shards with its index):
// rel L2 ≤ 1e-4 for F32, 1e-3 for BF16 and F16.
func TestSafetensorsPrefill(t *testing.T) {
	llmtest.Each(t, "safetensors", checkPrefill)
}

func checkPrefill(t *testing.T, path string, model *llmtest.Model) {
	{
		bm, ref := loadWithReference(t, path, model)
		exe, err := berth.Compile(bm, berth.CPU, berth.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { exe.Close() })
		s := newSession(t, exe)
		if _, err := s.Run(context.Background(), berth.Tensor{Name: "tokens", DType: berth.Int64, Shape: []int64{1}, Data: make([]byte, 8)}); err != nil {
			t.Fatal(err)
		}
		// The packed weights are read in place from the file: what is
		// copied is the graph's own small constants (shapes, the rotary
		// tables), a few KiB at most.
		if n, w := s.Executable().PackedWeightBytes(), bm.Info().WeightBytes; n > 8<<10 || n > w/8 {
			t.Errorf("%d bytes of weights copied (the file's weights are %d bytes)", n, w)
		}
		s = newSession(t, exe)
		ids := make([]byte, 8*len(ref.Tokens))
		for i, id := range ref.Tokens {
			binary.LittleEndian.PutUint64(ids[8*i:], uint64(id))
		}
		outs, err := s.Run(context.Background(), berth.Tensor{Name: "tokens", DType: berth.Int64, Shape: []int64{int64(len(ref.Tokens))}, Data: ids})
		if err != nil {
			t.Fatal(err)
		}
		got, err := outs[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ref.Prefill) {
			t.Fatalf("%d logits, want %d", len(got), len(ref.Prefill))
		}
		rel := compare.RelL2(got, ref.Prefill)
		same := 0
		for i := range ref.Tokens {
			row := got[i*ref.Vocab : (i+1)*ref.Vocab]
			if llmtest.Argmax(row) == llmtest.Argmax(ref.PrefillRow(i)) {
				same++
			}
		}
		agree := float64(same) / float64(len(ref.Tokens))
		t.Logf("%s: rel L2 %.3g, argmax agrees at %d of %d positions", model.Name, rel, same, len(ref.Tokens))
		tol := 1e-3
		if model.Format == "safetensors" && model.DType == "f32" {
			tol = 1e-4
		} else if model.Format == "gguf" && model.FileType != "f32" && model.FileType != "f16" {
			tol = 3e-2
			if agree < 0.9 {
				t.Errorf("argmax agrees at %.0f %% of the positions, want 90 %%", 100*agree)
			}
		}
		if !(rel <= tol) {
			t.Errorf("rel L2 %.3g > %g", rel, tol)
		}
		in := berth.Tensor{Name: "tokens", DType: berth.Int64, Shape: []int64{int64(len(ref.Tokens))}, Data: ids}
		if allocs := testing.AllocsPerRun(5, func() {
			if _, err := s.Run(context.Background(), in); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%v allocations per run of a prompt already planned", allocs)
		}
	}
}

// loadWithReference loads the model at path for the rest of the test,
// with the reference logits of its prompt and greedy steps.
func loadWithReference(t *testing.T, path string, model *llmtest.Model) (*berth.Model, *llmtest.Logits) {
	t.Helper()
	ref, err := model.Logits()
	if err != nil {
		t.Fatal(err)
	}
	bm, err := berth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bm.Close() })
	return bm, ref
}

// newSession is a session of exe for the rest of the test.
func newSession(t *testing.T, exe *berth.Executable) *berth.Session {
	t.Helper()
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestPromptLengths: prompts past the context length, or too long for the
// prompt's graph, are refused before anything is built.
func TestPromptLengths(t *testing.T) {
	f, err := gguf.Open("../testdata/llm/llama-q4_0.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := llm.ConfigOf(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, -1, c.Context + 1} {
		if _, err := llm.Graph(llm.GGUF(f), c, n); err == nil {
			t.Errorf("a prompt of %d tokens was built", n)
		}
	}
	c.Context = 1 << 30 // a file that claims a huge context
	if _, err := llm.Graph(llm.GGUF(f), c, llm.MaxPrompt+1); err == nil {
		t.Errorf("a prompt of %d tokens was built", llm.MaxPrompt+1)
	}
}
