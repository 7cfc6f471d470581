package llm

import (
	"fmt"

	"github.com/berth-ml/berth/weights/gguf"
)

// Config is the shape of a decoder, as the file's metadata gives it.
type Config struct {
	Arch     string // "llama", "qwen2" or "gpt2"
	Vocab    int64
	Dim      int64 // the embedding width
	Layers   int64
	Heads    int64
	KVHeads  int64 // the key and value heads (grouped-query attention)
	HeadDim  int64
	FFN      int64 // the feed-forward width
	Context  int64 // the context length it was trained for
	RopeBase float64
	NormEps  float64 // RMSNorm's ε (LayerNorm's for gpt2)
	// RopeHalves rotates the first half of each head against the second
	// (Hugging Face's rotate_half; qwen2 in every file) rather than
	// adjacent pairs (a GGUF llama's, whose query and key rows the
	// converter permuted).
	RopeHalves bool
}

// String describes the decoder's shape in a line.
func (c Config) String() string {
	return fmt.Sprintf("%s: %d layers, width %d, %d heads (%d for keys and values), vocabulary %d, context %d",
		c.Arch, c.Layers, c.Dim, c.Heads, c.KVHeads, c.Vocab, c.Context)
}

// check refuses sizes no model has, before anything is built.
func (c Config) check() error {
	for _, v := range []int64{c.Vocab, c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Context} {
		if v <= 0 || v > maxDim {
			type fields Config // every field, not String's line
			return fmt.Errorf("config %+v: a size out of range", fields(c))
		}
	}
	if c.Heads%c.KVHeads != 0 || c.HeadDim%2 != 0 {
		return fmt.Errorf("%d heads of %d key-value heads of %d values do not make attention", c.Heads, c.KVHeads, c.HeadDim)
	}
	return nil
}

// maxDim bounds every size of a config: a file that claims more is
// refused before anything is built.
const maxDim = 1 << 24

// ConfigOf reads the config of the GGUF file f.
func ConfigOf(f *gguf.File) (Config, error) {
	var c Config
	arch, err := f.String("general.architecture")
	if err != nil {
		return c, err
	}
	switch arch {
	case "llama", "qwen2", "gpt2":
	default:
		return c, fmt.Errorf("architecture %q is not supported (berth builds llama, qwen2 and gpt2)", arch)
	}
	c.Arch = arch
	get := func(key string, dst *int64, def int64) error {
		v, err := f.Int(arch + "." + key)
		if err != nil {
			if _, ok := f.Value(arch + "." + key); ok || def < 0 {
				return err
			}
			v = def
		}
		if v <= 0 || v > maxDim {
			return fmt.Errorf("%s.%s is %d", arch, key, v)
		}
		*dst = v
		return nil
	}
	for _, k := range []struct {
		key string
		dst *int64
		def int64
	}{
		{"embedding_length", &c.Dim, -1},
		{"block_count", &c.Layers, -1},
		{"feed_forward_length", &c.FFN, -1},
		{"attention.head_count", &c.Heads, -1},
		{"context_length", &c.Context, 2048},
	} {
		if err := get(k.key, k.dst, k.def); err != nil {
			return c, err
		}
	}
	if err := get("attention.head_count_kv", &c.KVHeads, c.Heads); err != nil {
		return c, err
	}
	if c.Dim%c.Heads != 0 || c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("%d heads of %d key-value heads do not divide an embedding of %d", c.Heads, c.KVHeads, c.Dim)
	}
	if err := get("attention.key_length", &c.HeadDim, c.Dim/c.Heads); err != nil {
		return c, err
	}
	if c.HeadDim%2 != 0 {
		return c, fmt.Errorf("head dimension %d is odd: rotary embeddings rotate pairs", c.HeadDim)
	}
	t, ok := f.Tensor("token_embd.weight")
	if !ok || len(t.Shape) != 2 || t.Shape[0] != c.Dim {
		return c, fmt.Errorf("token_embd.weight is missing or not %d wide", c.Dim)
	}
	c.Vocab = t.Shape[1]
	c.RopeBase = 10000
	if v, err := f.Float(arch + ".rope.freq_base"); err == nil {
		c.RopeBase = v
	}
	epsKey := arch + ".attention.layer_norm_rms_epsilon"
	if arch == "gpt2" {
		epsKey = arch + ".attention.layer_norm_epsilon" // LayerNorm, not RMSNorm
	}
	eps, err := f.Float(epsKey)
	if err != nil {
		return c, err
	}
	c.NormEps = eps
	c.RopeHalves = arch == "qwen2"
	return c, c.check()
}
