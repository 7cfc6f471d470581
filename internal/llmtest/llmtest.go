package llmtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
)

// EnvLarge names a folder holding a large model's manifest.json.
const EnvLarge = "BERTH_LLM_DATA"

// Dir is the folder of the committed fixtures, testdata/llm.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "llm")
}

// Manifest is a folder's manifest.json.
type Manifest struct {
	Source string   `json:"source"`
	Models []*Model `json:"models"`
	// Dir is the folder the manifest was read from.
	Dir string `json:"-"`
}

// Model is one model file (GGUF) or folder (safetensors).
type Model struct {
	manifest *Manifest // the manifest the model was read from

	Name string `json:"name"`
	// Format is "gguf" or "safetensors".
	Format string `json:"format"`
	// Path is the file or folder, relative to the manifest's folder.
	Path string `json:"path"`
	// FileType is a GGUF file's type as llama.cpp names it (f32, f16,
	// q8_0, q4_0, q4_k_m); DType a safetensors folder's (f32, f16, bf16).
	FileType string  `json:"ftype,omitempty"`
	DType    string  `json:"dtype,omitempty"`
	HParams  HParams `json:"hparams"`

	// GGUF: the layout, every metadata key in file order and every tensor.
	Version    uint32       `json:"version,omitempty"`
	Alignment  int64        `json:"alignment,omitempty"`
	DataOffset int64        `json:"data_offset,omitempty"`
	Metadata   []MetadataKV `json:"metadata,omitempty"`

	// Safetensors: the folder's files, its config.json as written, and
	// every tensor (with its file).
	Files  []string       `json:"files,omitempty"`
	Config map[string]any `json:"config,omitempty"`

	Tensors   []Tensor  `json:"tensors"`
	Reference Reference `json:"reference"`
}

// HParams is a model's shape.
type HParams struct {
	Arch     string   `json:"arch"`
	Embd     int      `json:"n_embd"`
	Layers   int      `json:"n_layer"`
	Heads    int      `json:"n_head"`
	HeadsKV  int      `json:"n_head_kv"`
	HeadDim  int      `json:"head_dim"`
	FF       int      `json:"n_ff"`
	Vocab    int      `json:"n_vocab"`
	Ctx      int      `json:"n_ctx"`
	RopeBase *float64 `json:"rope_freq_base"`
	NormEps  float64  `json:"norm_eps"`
	Tied     bool     `json:"tied_output"`
}

// MetadataKV is one GGUF metadata key: a scalar's kind ("uint32",
// "string", …) and value, or an array's element kind and length.
type MetadataKV struct {
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Value any    `json:"value,omitempty"`
	Elem  string `json:"elem,omitempty"`
	Len   int    `json:"len,omitempty"`
}

// Tensor is one tensor of a model. GGUF tensors have a ggml Type, NE in
// ggml's order, an Offset in the data section and the SHA-256 of their
// float32 dequantisation; safetensors tensors a DType, a row-major Shape
// and their File.
type Tensor struct {
	Name        string  `json:"name"`
	Type        string  `json:"type,omitempty"`
	NE          []int64 `json:"ne,omitempty"`
	Offset      int64   `json:"offset,omitempty"`
	Bytes       int64   `json:"bytes,omitempty"`
	Dequantised string  `json:"dequantised_sha256,omitempty"`
	File        string  `json:"file,omitempty"`
	DType       string  `json:"dtype,omitempty"`
	Shape       []int64 `json:"shape,omitempty"`
	SHA256      string  `json:"sha256"`
}

// Reference names a model's reference files (.npy, beside the model) and
// says how sure its greedy choices are.
type Reference struct {
	Tokens  string `json:"tokens"`
	Prefill string `json:"prefill"`
	Decode  string `json:"decode"`
	Greedy  string `json:"greedy"`

	PromptLen    int   `json:"prompt_len"`
	DecodeSteps  int   `json:"decode_steps"`
	GreedyTokens []int `json:"greedy_tokens"`
	// The smallest gap between the two largest logits of a row: where it
	// is small, a kernel's rounding may rightly pick the other token.
	PrefillMargin float64 `json:"prefill_min_top2_margin"`
	DecodeMargin  float64 `json:"decode_min_top2_margin"`
}

// Load reads dir/manifest.json.
func Load(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	m := &Manifest{Dir: dir}
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "manifest.json"), err)
	}
	for _, model := range m.Models {
		model.manifest = m
	}
	return m, nil
}

// Logits reads the reference of a model of a loaded manifest (see
// Manifest.Logits).
func (model *Model) Logits() (*Logits, error) { return model.manifest.Logits(model) }

// Path is the model's file or folder.
func (m *Manifest) Path(model *Model) string { return filepath.Join(m.Dir, model.Path) }

// Logits is a model's reference: the prompt, the logits of each of its
// positions ([PromptLen][Vocab], row-major in Prefill), the greedy
// continuation, and the logits after each greedy token is fed
// ([DecodeSteps][Vocab] in Decode). Greedy[0] is the argmax of the last
// prefill row and Greedy[k+1] that of Decode row k.
type Logits struct {
	Tokens  []int32
	Prefill []float32
	Decode  []float32
	Greedy  []int32
	Vocab   int
}

// PrefillRow is the logits of prompt position i.
func (l *Logits) PrefillRow(i int) []float32 { return l.Prefill[i*l.Vocab : (i+1)*l.Vocab] }

// DecodeRow is the logits after Greedy[k] is fed.
func (l *Logits) DecodeRow(k int) []float32 { return l.Decode[k*l.Vocab : (k+1)*l.Vocab] }

// Logits reads the model's reference files and checks their shapes.
func (m *Manifest) Logits(model *Model) (*Logits, error) {
	r, v := model.Reference, model.HParams.Vocab
	tokens, err := readInt32(filepath.Join(m.Dir, r.Tokens), r.PromptLen)
	if err != nil {
		return nil, err
	}
	greedy, err := readInt32(filepath.Join(m.Dir, r.Greedy), r.DecodeSteps)
	if err != nil {
		return nil, err
	}
	prefill, err := readFloat32(filepath.Join(m.Dir, r.Prefill), r.PromptLen, v)
	if err != nil {
		return nil, err
	}
	decode, err := readFloat32(filepath.Join(m.Dir, r.Decode), r.DecodeSteps, v)
	if err != nil {
		return nil, err
	}
	return &Logits{Tokens: tokens, Prefill: prefill, Decode: decode, Greedy: greedy, Vocab: v}, nil
}

func readArray(path string, dt ir.DType, shape ...int64) (*npy.Array, error) {
	a, err := npy.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if a.DType != dt || len(a.Shape) != len(shape) {
		return nil, fmt.Errorf("%s: %s %v, want %s of %d dimensions", path, a.DType, a.Shape, dt, len(shape))
	}
	for i, d := range shape {
		if a.Shape[i] != d {
			return nil, fmt.Errorf("%s: shape %v, want %v", path, a.Shape, shape)
		}
	}
	return a, nil
}

func readInt32(path string, n int) ([]int32, error) {
	a, err := readArray(path, ir.Int32, int64(n))
	if err != nil {
		return nil, err
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return out, nil
}

func readFloat32(path string, rows, cols int) ([]float32, error) {
	a, err := readArray(path, ir.Float32, int64(rows), int64(cols))
	if err != nil {
		return nil, err
	}
	out := make([]float32, rows*cols)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	return out, nil
}

// Argmax is the index of the largest value, the first of equal ones.
func Argmax(row []float32) int {
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	return best
}
