package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/llmtest"
)

// TestGenerateGreedy runs berth generate as a user does on a fixture
// model with float32 weights: the prompt's token ids, greedy choices, the
// prompt's logits saved. The tokens must be the float64 reference's
// greedy tokens, the saved logits its prompt logits, and the decode steps
// must not allocate on every token (TestGenerateAllocations).
func TestGenerateGreedy(t *testing.T) {
	m, err := llmtest.Load(llmtest.Dir())
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range m.Models {
		if model.Name != "llama-f32" && model.Name != "gpt2-f16" {
			continue
		}
		t.Run(model.Name, func(t *testing.T) {
			ref, err := m.Logits(model)
			if err != nil {
				t.Fatal(err)
			}
			ids := make([]string, len(ref.Tokens))
			for i, id := range ref.Tokens {
				ids[i] = fmt.Sprint(id)
			}
			logits := filepath.Join(t.TempDir(), "logits.npy")
			code, out, errs := cli("generate", m.Path(model), "--tokens", strings.Join(ids, ","), "-n", fmt.Sprint(len(ref.Greedy)),
				"--temp", "0", "--ignore-eos", "--logits-out", logits, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rep generateReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if fmt.Sprint(rep.Tokens) != fmt.Sprint(ref.Greedy) {
				t.Errorf("tokens %v, the reference's %v", rep.Tokens, ref.Greedy)
			}
			if rep.PromptTokens != len(ref.Tokens) || rep.GeneratedTokens != len(ref.Greedy) || rep.Stop != "length" {
				t.Errorf("%d prompt tokens, %d generated, stop %q", rep.PromptTokens, rep.GeneratedTokens, rep.Stop)
			}
			if rep.DecodeTokS <= 0 || rep.KVCacheBytes <= 0 || rep.WeightBytes <= 0 {
				t.Errorf("allocs per token %v, decode %v tok/s, cache %d bytes, weights %d bytes", rep.AllocsPerToken, rep.DecodeTokS, rep.KVCacheBytes, rep.WeightBytes)
			}
			if rel := compare.RelL2(readF32(t, logits), ref.Prefill); !(rel <= 1e-3) {
				t.Errorf("prompt logits: rel L2 %.3g", rel)
			}
		})
	}
}

// TestGenerateAllocations runs berth generate for 48 tokens and reads the
// allocations per token that --json reports. That count is the whole
// process's (the runtime's own included: a thread it starts, a timer of
// its scavenger), which on a busy machine is a handful in a run, so it is
// held to below half an allocation a token: one allocation in every
// step would be 1. Generator.Step itself allocates nothing at all
// (testing.AllocsPerRun in the root and llm packages).
func TestGenerateAllocations(t *testing.T) {
	for _, model := range []string{"llama-f32.gguf", "llama-q4_0.gguf", "gpt2-f16.gguf"} {
		t.Run(model, func(t *testing.T) {
			code, out, errs := cli("generate", filepath.Join("../../testdata/llm", model), "--tokens", "1,2,3,4", "-n", "48",
				"--temp", "0", "--ignore-eos", "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var rep generateReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if rep.GeneratedTokens != 48 || !(rep.AllocsPerToken >= 0 && rep.AllocsPerToken < 0.5) {
				t.Errorf("%d tokens, %v allocations per token", rep.GeneratedTokens, rep.AllocsPerToken)
			}
		})
	}
}

// TestGenerateErrors: every mistake is one line and a non-zero exit.
func TestGenerateErrors(t *testing.T) {
	const model = "../../testdata/llm/llama-q4_0.gguf"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{model}, "--prompt TEXT or as --tokens"},
		{[]string{model, "--prompt", "a", "--tokens", "1"}, "one of them"},
		{[]string{model, "--tokens", "1,x"}, "not a token id"},
		{[]string{model, "--tokens", "1,-2"}, "not a token id"},
		{[]string{model, "--tokens", "1,99999"}, "not in the vocabulary"},
		{[]string{model, "--tokens", "1", "-n", "-1"}, "-n -1"},
		{[]string{model, "--tokens", "1", "--ctx", "100000"}, "context of 100000"},
		{[]string{model, "--tokens", "1,2,3", "--ctx", "3"}, "leaves no room"},
		{[]string{model, "--tokens", "1", "--temp", "NaN"}, "emperature"},
		{[]string{model, "--tokens", "1", "--top-k", "-3"}, "op"},
		{[]string{model, "--tokens", "1", "--device", "vulkan"}, "--device"},
		{[]string{"../../testdata/models/bert/model.onnx", "--tokens", "1"}, "not a language model"},
		{[]string{"no-such-model.gguf", "--tokens", "1"}, "no-such-model"},
	}
	for _, c := range cases {
		code, out, errs := cli(append([]string{"generate"}, c.args...)...)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want an error with %q", c.args, code, errs, out, c.want)
		}
		if strings.Contains(errs, "generate: generate:") {
			t.Errorf("%q: stderr %q names the command twice", c.args, errs)
		}
	}
}

// TestGenerateStopString: the text stops before a stop string, which is
// not printed, and the run says why it stopped.
func TestGenerateStopString(t *testing.T) {
	const model = "../../testdata/llm/llama-f32.gguf"
	code, out, errs := cli("generate", model, "--prompt", "hello", "-n", "20", "--temp", "0", "--ignore-eos", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var full generateReport
	if err := json.Unmarshal([]byte(out), &full); err != nil {
		t.Fatal(err)
	}
	// Two ASCII letters after the first character.
	stop := ""
	for i := 1; i+2 <= len(full.Text) && stop == ""; i++ {
		if isLetter(full.Text[i]) && isLetter(full.Text[i+1]) {
			stop = full.Text[i : i+2]
		}
	}
	if stop == "" {
		t.Fatalf("the greedy text %q has no two letters to stop at", full.Text)
	}
	code, out, errs = cli("generate", model, "--prompt", "hello", "-n", "20", "--temp", "0", "--ignore-eos", "--stop", stop, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var cut generateReport
	if err := json.Unmarshal([]byte(out), &cut); err != nil {
		t.Fatal(err)
	}
	if want := full.Text[:strings.Index(full.Text, stop)]; cut.Text != want || cut.Stop != "string" {
		t.Errorf("text %q (stop %q), want %q cut before %q", cut.Text, cut.Stop, want, stop)
	}
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
