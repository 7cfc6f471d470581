package berth

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/llm"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/tokenizer"
	"github.com/berth-ml/berth/weights/gguf"
	"github.com/berth-ml/berth/weights/safetensors"
)

// ggufMagic starts every GGUF file.
const ggufMagic = "GGUF"

// loadGGUF loads the decoder language model of the GGUF file f maps (see
// package llm): a model with one input, tokens (int64[seq]), and one
// output, logits (float32[seq, vocab]), whose open dimension seq is the
// prompt's length. Each length is planned as any open model's shapes
// are; its weights are read in place from the mapping.
func loadGGUF(f *device.MappedFile, path string) (*Model, error) {
	gf, err := gguf.Parse(f.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg, err := llm.ConfigOf(gf)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := languageModel(f.Bytes(), path, llm.GGUF(gf), cfg)
	if err != nil {
		return nil, err
	}
	m.lm.tokenizer = func() (*tokenizer.Tokenizer, error) { return tokenizer.FromGGUF(gf) }
	m.open.describe = func(in *Info) {
		in.Producer = fmt.Sprintf("GGUF v%d, %s", gf.Version, cfg)
		in.WeightTypes = map[string]int64{}
		for _, t := range gf.Tensors() {
			in.WeightBytes += t.Size
			in.WeightTypes[t.Type.String()] += t.Size
		}
		for _, k := range gf.Keys() {
			v, _ := gf.Value(k)
			in.Metadata = append(in.Metadata, KeyValue{Key: k, Value: v.String()})
		}
	}
	return m, nil
}

// languageModel is the open model of a decoder whose weights are w and
// config cfg (b: the bytes of its file, where it has one).
func languageModel(b []byte, path string, w llm.Weights, cfg llm.Config) (*Model, error) {
	seq := ir.Dim{Size: -1, Symbol: "seq"}
	sig := &onnx.Signature{
		Inputs:  []onnx.Value{{Name: "tokens", Kind: onnx.TensorValue, DType: ir.Int64, Shape: ir.DeclaredShape{seq}, Ranked: true}},
		Outputs: []onnx.Value{{Name: "logits", Kind: onnx.TensorValue, DType: ir.Float32, Shape: ir.DeclaredShape{seq, {Size: cfg.Vocab}}, Ranked: true}},
	}
	imp := func(opts onnx.ImportOptions) (*onnx.Model, error) {
		if opts.Open {
			return nil, errors.New("a language model's graph is built for a prompt length")
		}
		shape := opts.InputShapes["tokens"]
		if len(shape) != 1 {
			return nil, fmt.Errorf("tokens: shape %v, want [seq]", shape)
		}
		g, err := llm.Graph(w, cfg, shape[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return &onnx.Model{Graph: g, ProducerName: "berth llm (" + cfg.Arch + ")"}, nil
	}
	m, err := openModelOf(b, sig, path, imp)
	if err != nil {
		return nil, err
	}
	m.lm = &decoder{w: w, cfg: cfg}
	return m, nil
}

// loadSafetensors loads the decoder language model of a Hugging Face
// checkpoint (a .safetensors file, an index, or a folder holding either
// with its config.json), as loadGGUF does a GGUF file's.
func loadSafetensors(path string) (*Model, error) {
	ck, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	cfg, err := llm.ConfigOfHF(ck.Config())
	if err != nil {
		ck.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := languageModel(nil, path, llm.Safetensors(ck), cfg)
	if err != nil {
		ck.Close()
		return nil, err
	}
	m.open.closer = ck
	m.lm.tokenizer = tokenizerJSON(path)
	m.open.describe = func(in *Info) {
		in.Producer = "safetensors, " + cfg.String()
		in.WeightTypes = map[string]int64{}
		for _, t := range ck.Tensors() {
			in.WeightBytes += t.Size
			in.WeightTypes[t.DType.String()] += t.Size
		}
		// config.json's settings, as metadata.
		var conf map[string]json.RawMessage
		if json.Unmarshal(ck.Config(), &conf) == nil {
			for _, k := range slices.Sorted(maps.Keys(conf)) {
				in.Metadata = append(in.Metadata, KeyValue{Key: k, Value: string(conf[k])})
			}
		}
	}
	return m, nil
}
