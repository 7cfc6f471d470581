package gguf

import (
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/llmtest"
)

// The language-model fixtures of scripts/gen_llm_models.py (and a large
// model's, under BERTH_LLM_DATA) read back as the script wrote them:
// layout, every metadata key in order with its kind and value, every
// tensor's type, shape, offset and bytes, and a dequantisation equal, bit
// for bit, to the one the reference logits were computed from.
func TestLanguageModels(t *testing.T) {
	llmtest.Each(t, "gguf", checkLanguageModel)
}

func checkLanguageModel(t *testing.T, path string, want *llmtest.Model) {
	f := openLaidOut(t, path, want.Version, want.Alignment, want.DataOffset)
	var keys []string
	for _, kv := range want.Metadata {
		keys = append(keys, kv.Key)
		checkMetadata(t, f, kv)
	}
	if !slices.Equal(f.Keys(), keys) {
		t.Errorf("keys %q, want %q", f.Keys(), keys)
	}

	hp := want.HParams
	arch, err := f.String("general.architecture")
	if err != nil || arch != hp.Arch {
		t.Errorf("general.architecture %q (%v), want %q", arch, err, hp.Arch)
	}
	if tokens, err := f.Strings("tokenizer.ggml.tokens"); err != nil || len(tokens) != hp.Vocab {
		t.Errorf("%d tokens (%v), want %d", len(tokens), err, hp.Vocab)
	}
	if embd, ok := f.Tensor("token_embd.weight"); !ok || !slices.Equal(embd.Shape, []int64{int64(hp.Embd), int64(hp.Vocab)}) {
		t.Errorf("token_embd.weight missing or not [n_embd, n_vocab]")
	}
	if _, ok := f.Tensor("output.weight"); ok == hp.Tied {
		t.Errorf("output.weight present: %v, with a tied output: %v", ok, hp.Tied)
	}

	if len(f.Tensors()) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		checkTensor(t, i, f.Tensors()[i], w)
	}
}

func checkMetadata(t *testing.T, f *File, kv llmtest.MetadataKV) {
	t.Helper()
	v, ok := f.Value(kv.Key)
	if !ok {
		t.Errorf("%s: missing", kv.Key)
		return
	}
	if v.Kind().String() != kv.Kind {
		t.Errorf("%s: %s, want %s", kv.Key, v.Kind(), kv.Kind)
		return
	}
	var got, want any = nil, kv.Value
	switch v.Kind() {
	case Array:
		if v.Elem().String() != kv.Elem || v.Len() != kv.Len {
			t.Errorf("%s: %d of %s, want %d of %s", kv.Key, v.Len(), v.Elem(), kv.Len, kv.Elem)
		}
		return
	case String:
		got, err := f.String(kv.Key)
		if err != nil || got != want {
			t.Errorf("%s = %q (%v), want %q", kv.Key, got, err, want)
		}
		return
	case Bool:
		got, _ = f.Bool(kv.Key)
	case Float32, Float64:
		got, _ = f.Float(kv.Key)
	default:
		i, _ := f.Int(kv.Key)
		got = float64(i) // as JSON holds numbers
	}
	if got != want {
		t.Errorf("%s = %v, want %v", kv.Key, got, want)
	}
}
