package llm_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/llmtest"
)

// TestGenerateMatchesReference runs each language model of testdata/llm
// through a Generator as a user does: the prompt fed in two chunks over
// the cache of keys and values, then the reference's greedy tokens one
// step at a time. The prompt's logits and every step's are compared with
// the float64 reference of the same weights (which recomputes the whole
// sequence at each step, with no cache), at the tolerances of
// TestPrefillMatchesReference.
func TestGenerateMatchesReference(t *testing.T) {
	for _, format := range []string{"gguf", "safetensors"} {
		t.Run(format, func(t *testing.T) { llmtest.Each(t, format, checkGenerate(berth.CPU)) })
	}
}

// TestGenerateCUDAMatchesReference is TestGenerateMatchesReference on
// CUDA. It skips where there is no CUDA.
func TestGenerateCUDAMatchesReference(t *testing.T) {
	for _, format := range []string{"gguf", "safetensors"} {
		t.Run(format, func(t *testing.T) { llmtest.Each(t, format, checkGenerate(berth.CUDA)) })
	}
}

func checkGenerate(dev berth.Device) func(t *testing.T, path string, model *llmtest.Model) {
	return func(t *testing.T, path string, model *llmtest.Model) { generateOn(t, dev, path, model) }
}

func generateOn(t *testing.T, dev berth.Device, path string, model *llmtest.Model) {
	bm, ref := loadWithReference(t, path, model)
	g, err := bm.NewGenerator(berth.GeneratorOptions{Device: dev})
	if errors.Is(err, berth.ErrNoDevice) {
		t.Skipf("no %s here: %v", dev, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	v := ref.Vocab
	ctx := context.Background()

	// The prompt in two chunks, the second at the position the first
	// ends at.
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
	if !slices.Equal(last, got[len(got)-v:]) {
		t.Errorf("Prefill's last row differs from the last of all rows")
	}
	same := check(t, model, "prompt", got, ref.Prefill, len(ref.Tokens), ref.PrefillRow)

	// The greedy tokens one at a time.
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
		// The argmax over every position, the prompt's and the steps'.
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

	// A generation from a fresh cache gives the reference's greedy tokens
	// where the reference is sure of them.
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
	if quantised(model) {
		// The 8-bit activations (the CPU's products; on CUDA, one row of
		// q8_0 and q4_0 weights) may rightly pick other tokens.
		return
	}
	for k, id := range gen {
		if id != ref.Greedy[k] {
			t.Errorf("token %d is %d, the reference's %d", k, id, ref.Greedy[k])
			break
		}
	}
}

// quantised reports whether the model's products take 8-bit activations.
func quantised(model *llmtest.Model) bool {
	return model.Format == "gguf" && model.FileType != "f32" && model.FileType != "f16"
}

// check compares rows of logits with the reference's by the rel L2 of
// all, and returns at how many rows the argmax is the reference row's.
func check(t *testing.T, model *llmtest.Model, what string, got, ref []float32, rows int, row func(int) []float32) int {
	t.Helper()
	if len(got) != len(ref) {
		t.Fatalf("%s: %d logits, want %d", what, len(got), len(ref))
	}
	v := len(ref) / max(rows, 1)
	rel := compare.RelL2(got, ref)
	same := 0
	for i := range rows {
		if llmtest.Argmax(got[i*v:(i+1)*v]) == llmtest.Argmax(row(i)) {
			same++
		}
	}
	t.Logf("%s %s: rel L2 %.3g, argmax agrees at %d of %d", model.Name, what, rel, same, rows)
	tol := 1e-3
	switch {
	case model.Format == "safetensors" && model.DType == "f32":
		tol = 1e-4
	case quantised(model):
		tol = 3e-2
	}
	if !(rel <= tol) {
		t.Errorf("%s: rel L2 %.3g > %g", what, rel, tol)
	}
	return same
}

// TestGeneratePromptPlans feeds prompts of many lengths to one generator,
// more than it keeps plans for, from a fresh cache each: each prompt's
// last logits must be the reference's at its last position (attention is
// causal, so a prefix's last row is the whole prompt's row there).
func TestGeneratePromptPlans(t *testing.T) {
	m, err := llmtest.Load(llmtest.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range m.Models {
		if model.Name != "llama-f32" {
			continue
		}
		ref, err := model.Logits()
		if err != nil {
			t.Fatal(err)
		}
		bm, err := berth.Load(m.Path(model))
		if err != nil {
			t.Fatal(err)
		}
		defer bm.Close()
		g, err := bm.NewGenerator(berth.GeneratorOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for _, n := range []int{2, 3, 5, 7, 11, 3, 13, 2, 17, len(ref.Tokens)} {
			g.Reset()
			last, err := g.Prefill(context.Background(), ref.Tokens[:n], nil)
			if err != nil {
				t.Fatal(err)
			}
			if rel := compare.RelL2(last, ref.PrefillRow(n-1)); !(rel <= 1e-5) {
				t.Errorf("a prompt of %d: rel L2 %.3g to the reference's row %d", n, rel, n-1)
			}
		}
		// Closed, the generator's arena is freed: its runs fail.
		for range 2 {
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := g.Step(context.Background(), ref.Tokens[0]); err == nil {
			t.Error("Step on a closed generator")
		}
		if _, err := g.Prefill(context.Background(), ref.Tokens[:3], nil); err == nil {
			t.Error("Prefill on a closed generator")
		}
		if g.ArenaBytes() != 0 || g.WeightBytes() != 0 {
			t.Errorf("a closed generator has an arena of %d bytes, weights of %d", g.ArenaBytes(), g.WeightBytes())
		}
	}
}
