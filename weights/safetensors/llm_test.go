package safetensors

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/llmtest"
)

// The Hugging Face folders of scripts/gen_llm_models.py read back as the
// script wrote them: config.json, the shards, and every tensor's dtype,
// shape, file and bytes.
func TestLanguageModels(t *testing.T) {
	llmtest.Each(t, "safetensors", checkLanguageModel)
}

func checkLanguageModel(t *testing.T, dir string, want *llmtest.Model) {
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var config map[string]any
	if err := json.Unmarshal(c.Config(), &config); err != nil {
		t.Fatalf("config.json: %v", err)
	}
	if !reflect.DeepEqual(config, want.Config) {
		t.Errorf("config.json %v, want %v", config, want.Config)
	}
	var files []string
	fileOf := map[*Tensor]string{}
	for _, f := range c.Files() {
		files = append(files, filepath.Base(f.Path))
		for _, tt := range f.Tensors() {
			fileOf[tt] = filepath.Base(f.Path)
		}
	}
	var shards []string
	for _, f := range want.Files {
		if f != IndexName {
			shards = append(shards, f)
		}
	}
	slices.Sort(files)
	if !slices.Equal(files, shards) {
		t.Errorf("files %q, want %q", files, shards)
	}
	if len(c.Tensors()) != len(want.Tensors) {
		t.Errorf("%d tensors, want %d", len(c.Tensors()), len(want.Tensors))
	}
	for _, w := range want.Tensors {
		tt, ok := c.Tensor(w.Name)
		if !ok {
			t.Errorf("%s: missing", w.Name)
			continue
		}
		if tt.DType.String() != w.DType || !slices.Equal(tt.Shape, w.Shape) || fileOf[tt] != w.File {
			t.Errorf("%s: %s %v in %s, want %s %v in %s", w.Name, tt.DType, tt.Shape, fileOf[tt], w.DType, w.Shape, w.File)
		}
		sum := sha256.Sum256(tt.Bytes())
		if hex.EncodeToString(sum[:]) != w.SHA256 || tt.Size != tt.Elements()*tt.DType.Size() {
			t.Errorf("%s: %d bytes that differ from the script's", w.Name, tt.Size)
		}
	}
	hp := want.HParams
	if embd, ok := c.Tensor("model.embed_tokens.weight"); !ok || !slices.Equal(embd.Shape, []int64{int64(hp.Vocab), int64(hp.Embd)}) {
		t.Errorf("model.embed_tokens.weight missing or not [vocab, hidden]")
	}
	if _, ok := c.Tensor("lm_head.weight"); ok == hp.Tied {
		t.Errorf("lm_head.weight present: %v, with tied embeddings: %v", ok, hp.Tied)
	}
}
