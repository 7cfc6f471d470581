package llm_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/llmtest"
)

// TestGenerateCUDAMatchesReference runs each language model of
// testdata/llm through a Generator on CUDA, as TestGenerateMatchesReference
// does on the CPU: the prompt in two chunks, then the reference's greedy
// tokens a step at a time, each compared with the float64 reference at
// the same tolerances; a step allocates nothing. It skips where there is
// no CUDA.
func TestGenerateCUDAMatchesReference(t *testing.T) {
	for _, format := range []string{"gguf", "safetensors"} {
		t.Run(format, func(t *testing.T) { llmtest.Each(t, format, checkGenerateCUDA) })
	}
}

func checkGenerateCUDA(t *testing.T, path string, model *llmtest.Model) {
	// The manifest beside the model: the committed fixtures', or the
	// folder llmtest.EnvLarge names.
	m, err := llmtest.Load(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := m.Logits(model)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := berth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer bm.Close()
	g, err := bm.NewGenerator(berth.GeneratorOptions{Device: berth.CUDA})
	if errors.Is(err, berth.ErrNoDevice) {
		t.Skipf("no CUDA here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	v := ref.Vocab
	ctx := context.Background()

	prompt := ref.Tokens
	got := make([]float32, len(prompt)*v)
	half := len(prompt) / 2
	if _, err := g.Prefill(ctx, prompt[:half], got); err != nil {
		t.Fatal(err)
	}
	last, err := g.Prefill(ctx, prompt[half:], got[half*v:])
	if err != nil {
		t.Fatal(err)
	}
	if !equal(last, got[len(got)-v:]) {
		t.Errorf("Prefill's last row differs from the last of all rows")
	}
	same := check(t, model, "prompt", got, ref.Prefill, len(ref.Tokens), ref.PrefillRow)

	steps := make([]float32, 0, len(ref.Decode))
	for k := range ref.Greedy {
		row, err := g.Step(ctx, ref.Greedy[k])
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, row...)
	}
	same += check(t, model, "steps", steps, ref.Decode, len(ref.Greedy), ref.DecodeRow)
	if n := len(ref.Tokens) + len(ref.Greedy); quantised(model) && 10*same < 9*n {
		t.Errorf("argmax agrees at %d of %d positions, want 90 %%", same, n)
	}
	if want := int64(len(prompt) + len(ref.Greedy)); g.Position() != want {
		t.Errorf("position %d after the steps, want %d", g.Position(), want)
	}
	if allocs := testing.AllocsPerRun(5, func() {
		if _, err := g.Step(ctx, ref.Greedy[0]); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per step", allocs)
	}

	// A generation from a fresh cache: the prompt as one chunk (a plan
	// of its own, on a lane that may grow), then the greedy tokens. The
	// GPU's products take float32 activations: the reference's tokens
	// even for quantised weights.
	g.Reset()
	var gen []int32
	for id, err := range g.Generate(ctx, prompt, berth.Generation{MaxTokens: len(ref.Greedy)}) {
		if err != nil {
			t.Fatal(err)
		}
		gen = append(gen, id)
	}
	if len(gen) != len(ref.Greedy) {
		t.Fatalf("%d tokens generated, want %d", len(gen), len(ref.Greedy))
	}
	for k, id := range gen {
		if id != ref.Greedy[k] {
			t.Errorf("token %d is %d, the reference's %d", k, id, ref.Greedy[k])
			break
		}
	}
}
