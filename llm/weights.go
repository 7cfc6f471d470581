package llm

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/gguf"
	"github.com/berth-ml/berth/weights/safetensors"
)

// Weights are a model's tensors under GGUF's names (token_embd.weight,
// blk.0.attn_q.weight, output_norm.weight, …) whatever file holds them.
type Weights interface {
	Tensor(name string) (Tensor, bool)
}

// Tensor is one weight: its format, its shape in ggml's order (Shape[0]
// the innermost: a matrix of n rows of k values is [k, n]) and its bytes,
// read in place from the file.
type Tensor struct {
	Name   string
	Format ggml.Type
	Shape  []int64
	Data   []byte
}

// GGUF is the weights of a GGUF file.
func GGUF(f *gguf.File) Weights { return ggufWeights{f} }

type ggufWeights struct{ f *gguf.File }

func (w ggufWeights) Tensor(name string) (Tensor, bool) {
	t, ok := w.f.Tensor(name)
	if !ok {
		return Tensor{}, false
	}
	return Tensor{Name: t.Name, Format: t.Type, Shape: t.Shape, Data: t.Bytes()}, true
}

// Safetensors is the weights of a Hugging Face checkpoint, its tensors
// named as GGUF names them. Hugging Face keeps LLaMA's query and key rows
// in the order rotate_half pairs them (halves), which Config.RopeHalves
// says.
func Safetensors(c *safetensors.Checkpoint) Weights { return hfWeights{c} }

type hfWeights struct{ c *safetensors.Checkpoint }

// hfNames maps GGUF's names to Hugging Face's (%s: a layer's index).
var hfNames = map[string]string{
	"token_embd.weight":         "model.embed_tokens.weight",
	"output.weight":             "lm_head.weight",
	"output_norm.weight":        "model.norm.weight",
	"blk.%s.attn_norm.weight":   "model.layers.%s.input_layernorm.weight",
	"blk.%s.ffn_norm.weight":    "model.layers.%s.post_attention_layernorm.weight",
	"blk.%s.attn_q.weight":      "model.layers.%s.self_attn.q_proj.weight",
	"blk.%s.attn_k.weight":      "model.layers.%s.self_attn.k_proj.weight",
	"blk.%s.attn_v.weight":      "model.layers.%s.self_attn.v_proj.weight",
	"blk.%s.attn_q.bias":        "model.layers.%s.self_attn.q_proj.bias",
	"blk.%s.attn_k.bias":        "model.layers.%s.self_attn.k_proj.bias",
	"blk.%s.attn_v.bias":        "model.layers.%s.self_attn.v_proj.bias",
	"blk.%s.attn_output.weight": "model.layers.%s.self_attn.o_proj.weight",
	"blk.%s.ffn_gate.weight":    "model.layers.%s.mlp.gate_proj.weight",
	"blk.%s.ffn_up.weight":      "model.layers.%s.mlp.up_proj.weight",
	"blk.%s.ffn_down.weight":    "model.layers.%s.mlp.down_proj.weight",
}

var layerName = regexp.MustCompile(`^blk\.(\d+)\.`)

func (w hfWeights) Tensor(name string) (Tensor, bool) {
	key, layer := name, ""
	if m := layerName.FindStringSubmatch(name); m != nil {
		layer = m[1]
		key = "blk.%s." + name[len(m[0]):]
	}
	hf, ok := hfNames[key]
	if !ok {
		return Tensor{}, false
	}
	if layer != "" {
		hf = fmt.Sprintf(hf, layer)
	}
	t, ok := w.c.Tensor(hf)
	if !ok {
		return Tensor{}, false
	}
	var format ggml.Type
	switch t.DType {
	case safetensors.F32:
		format = ggml.F32
	case safetensors.F16:
		format = ggml.F16
	case safetensors.BF16:
		format = ggml.BF16
	default:
		return Tensor{Name: hf, Format: ggml.TypeCount}, true // refused where used
	}
	shape := slices.Clone(t.Shape)
	slices.Reverse(shape) // row-major to ggml's order
	return Tensor{Name: hf, Format: format, Shape: shape, Data: t.Bytes()}, true
}

// hfConfig is what config.json says of a decoder.
type hfConfig struct {
	ModelType  string   `json:"model_type"`
	Hidden     int64    `json:"hidden_size"`
	FFN        int64    `json:"intermediate_size"`
	Layers     int64    `json:"num_hidden_layers"`
	Heads      int64    `json:"num_attention_heads"`
	KVHeads    int64    `json:"num_key_value_heads"`
	HeadDim    int64    `json:"head_dim"`
	Context    int64    `json:"max_position_embeddings"`
	NormEps    float64  `json:"rms_norm_eps"`
	RopeTheta  *float64 `json:"rope_theta"`
	Vocab      int64    `json:"vocab_size"`
	HiddenAct  string   `json:"hidden_act"`
	RopeScales any      `json:"rope_scaling"`
}

// ConfigOfHF reads the config of a Hugging Face checkpoint from its
// config.json.
func ConfigOfHF(raw json.RawMessage) (Config, error) {
	var h hfConfig
	var c Config
	if len(raw) == 0 {
		return c, fmt.Errorf("the checkpoint has no config.json")
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return c, fmt.Errorf("config.json: %w", err)
	}
	switch h.ModelType {
	case "llama", "mistral":
		c.Arch = "llama"
	case "qwen2":
		c.Arch = "qwen2"
	default:
		return c, fmt.Errorf("config.json: model_type %q is not supported (berth builds llama, mistral and qwen2)", h.ModelType)
	}
	if h.HiddenAct != "" && h.HiddenAct != "silu" {
		return c, fmt.Errorf("config.json: hidden_act %q is not supported (silu)", h.HiddenAct)
	}
	if h.RopeScales != nil {
		return c, fmt.Errorf("config.json: rope_scaling is not supported")
	}
	if h.KVHeads == 0 {
		h.KVHeads = h.Heads
	}
	if h.HeadDim == 0 && h.Heads > 0 {
		h.HeadDim = h.Hidden / h.Heads
	}
	c.Vocab, c.Dim, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.FFN, c.Context = h.Vocab, h.Hidden, h.Layers, h.Heads, h.KVHeads, h.HeadDim, h.FFN, h.Context
	c.RopeBase, c.NormEps, c.RopeHalves = 10000, h.NormEps, true
	if h.RopeTheta != nil {
		c.RopeBase = *h.RopeTheta
	}
	return c, c.check()
}
