package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxJSONSize bounds the tokenizer.json that FromJSON reads.
const MaxJSONSize = 1 << 30

// FromJSON reads a Hugging Face tokenizer.json, and the
// tokenizer_config.json beside it if there is one: BOS and EOS are its
// bos_token and eos_token (None without them), add_bos_token and
// add_eos_token come from it or from the post-processor's template.
//
// It reads byte-level BPE tokenizers (GPT-2, LLaMA 3, Qwen and the like):
// model type "BPE" with merges, a ByteLevel pre-tokenizer or a Split by
// one of the expressions this package implements followed by ByteLevel,
// and added tokens. The result is the tokenizer that llama.cpp builds
// from the GGUF file that llama.cpp's converter writes for the same
// files: added tokens that are special, or look special (<|...|>), are
// control tokens and the others user-defined; the pre-tokenizer's
// settings (ignore_merges, clean-up of spaces) are llama.cpp's; the lstrip
// and rstrip of added tokens are not applied. A NFC normalizer is
// accepted and, as in llama.cpp, not applied: text is taken as it comes.
func FromJSON(path string) (*Tokenizer, error) {
	data, err := readLimited(path, MaxJSONSize)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	config, err := readLimited(filepath.Join(filepath.Dir(path), "tokenizer_config.json"), MaxJSONSize)
	if errors.Is(err, os.ErrNotExist) {
		config, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := ParseJSON(data, config)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	return t, nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

type hfTokenizer struct {
	AddedTokens []struct {
		ID      int64  `json:"id"`
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *hfPart `json:"normalizer"`
	PreTokenizer  *hfPart `json:"pre_tokenizer"`
	PostProcessor *hfPart `json:"post_processor"`
	Model         struct {
		Type         string            `json:"type"`
		Vocab        map[string]int64  `json:"vocab"`
		Merges       []json.RawMessage `json:"merges"`
		ByteFallback bool              `json:"byte_fallback"`
		IgnoreMerges *bool             `json:"ignore_merges"`
	} `json:"model"`
}

// hfPart is a normalizer, pre-tokenizer or post-processor: the fields of
// the kinds this package reads.
type hfPart struct {
	Type             string    `json:"type"`
	Normalizers      []*hfPart `json:"normalizers"`
	Pretokenizers    []*hfPart `json:"pretokenizers"`
	Processors       []*hfPart `json:"processors"`
	AddPrefixSpace   bool      `json:"add_prefix_space"`
	UseRegex         *bool     `json:"use_regex"`
	IndividualDigits bool      `json:"individual_digits"`
	Pattern          struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
	Single   []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
	} `json:"single"`
}

// tokenizer_config.json names tokens as a string or as an object with
// the string as its content.
type hfTokenName string

func (n *hfTokenName) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*n = hfTokenName(s)
		return nil
	}
	var o struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*n = hfTokenName(o.Content)
	return nil
}

type hfConfig struct {
	BOS    hfTokenName `json:"bos_token"`
	EOS    hfTokenName `json:"eos_token"`
	AddBOS *bool       `json:"add_bos_token"`
	AddEOS *bool       `json:"add_eos_token"`
}

// The expressions of the Split pre-tokenizers this package knows, as
// tokenizer.json files write them, and the pre-tokenizer of each.
var splitRegexes = map[string]string{
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`: "llama-bpe",
	`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`:      "qwen2",
}

// ParseJSON builds a tokenizer from the contents of a tokenizer.json and
// of a tokenizer_config.json (nil if there is none); see FromJSON.
func ParseJSON(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	var h hfTokenizer
	if err := json.Unmarshal(tokenizerJSON, &h); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	var c hfConfig
	if configJSON != nil {
		if err := json.Unmarshal(configJSON, &c); err != nil {
			return nil, fmt.Errorf("tokenizer_config.json: %w", err)
		}
	}
	if h.Model.Type != "BPE" {
		return nil, fmt.Errorf("model type %q: only byte-level BPE tokenizers are read", h.Model.Type)
	}
	if h.Model.ByteFallback {
		return nil, errors.New("a BPE model with byte fallback (SentencePiece style) is not read; use its GGUF file")
	}
	if h.Normalizer != nil && h.Normalizer.Type != "NFC" {
		return nil, fmt.Errorf("normalizer %q is not supported", h.Normalizer.Type)
	}
	pre, err := hfPreTokenizer(h.PreTokenizer)
	if err != nil {
		return nil, err
	}

	// tokens: the vocabulary and the added tokens, by id; a gap is filled
	// as llama.cpp's converter fills it
	n := int64(0)
	for _, id := range h.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range h.AddedTokens {
		n = max(n, a.ID+1)
	}
	if n > MaxTokens {
		return nil, fmt.Errorf("token ids up to %d, more than %d", n-1, MaxTokens)
	}
	s := &spec{model: "gpt2", pre: pre, tokens: make([]string, n), types: make([]int32, n),
		bos: -1, eos: -1, eot: -1, eom: -1, unk: -1, fimPad: -1, fimRep: -1, fimSep: -1, noDefaults: true}
	filled := make([]bool, n)
	put := func(id int64, text string, typ int32) error {
		if id < 0 {
			return fmt.Errorf("token %q has id %d", text, id)
		}
		if filled[id] && s.tokens[id] != text {
			return fmt.Errorf("id %d is both %q and %q", id, s.tokens[id], text)
		}
		s.tokens[id], s.types[id], filled[id] = text, typ, true
		return nil
	}
	for text, id := range h.Model.Vocab {
		if err := put(id, text, typeNormal); err != nil {
			return nil, err
		}
	}
	for _, a := range h.AddedTokens {
		typ := int32(typeUserDefined)
		if a.Special || looksSpecial(a.Content) {
			typ = typeControl
		}
		if err := put(a.ID, a.Content, typ); err != nil {
			return nil, err
		}
	}
	for i := range s.tokens {
		if !filled[i] {
			s.tokens[i], s.types[i] = fmt.Sprintf("[PAD%d]", i), typeUnused
		}
	}

	if len(h.Model.Merges) > MaxMerges {
		return nil, fmt.Errorf("%d merges, more than %d", len(h.Model.Merges), MaxMerges)
	}
	s.merges = make([]string, len(h.Model.Merges))
	for i, m := range h.Model.Merges {
		var str string
		if err := json.Unmarshal(m, &str); err == nil {
			s.merges[i] = str
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("merge %d is neither \"a b\" nor [\"a\", \"b\"]", i)
		}
		s.merges[i] = pair[0] + " " + pair[1]
	}
	s.ignoreMerges = h.Model.IgnoreMerges

	// special tokens
	idOf := func(name hfTokenName) int64 {
		for i, w := range s.tokens {
			if name != "" && w == string(name) {
				return int64(i)
			}
		}
		return -1
	}
	s.bos, s.eos = idOf(c.BOS), idOf(c.EOS)
	s.addBOS, s.addEOS = c.AddBOS, c.AddEOS
	if p := h.PostProcessor; p != nil && (s.addBOS == nil || s.addEOS == nil) {
		first, last := templateEnds(p)
		if s.addBOS == nil && first != "" {
			b := idOf(hfTokenName(first)) == s.bos && s.bos >= 0
			s.addBOS = &b
		}
		if s.addEOS == nil && last != "" {
			b := idOf(hfTokenName(last)) == s.eos && s.eos >= 0
			s.addEOS = &b
		}
	}
	return build(s)
}

// hfPreTokenizer names the pre-tokenizer that p describes.
func hfPreTokenizer(p *hfPart) (string, error) {
	byteLevel := func(p *hfPart, regex bool) bool {
		return p != nil && p.Type == "ByteLevel" && !p.AddPrefixSpace &&
			(p.UseRegex == nil || *p.UseRegex) == regex
	}
	switch {
	case p == nil:
		return "", errors.New("no pre-tokenizer: only byte-level BPE tokenizers are read")
	case byteLevel(p, true):
		return "gpt-2", nil
	case p.Type == "Sequence" && len(p.Pretokenizers) == 2:
		a, b := p.Pretokenizers[0], p.Pretokenizers[1]
		if a != nil && a.Type == "Split" && a.Pattern.Regex != nil && !a.Invert &&
			a.Behavior == "Isolated" && byteLevel(b, false) {
			if pre, ok := splitRegexes[*a.Pattern.Regex]; ok {
				return pre, nil
			}
			return "", fmt.Errorf("pre-tokenizer expression %q is not supported", *a.Pattern.Regex)
		}
		if a != nil && a.Type == "Digits" && a.IndividualDigits && byteLevel(b, true) {
			return "starcoder", nil
		}
	}
	return "", fmt.Errorf("pre-tokenizer %q is not supported: only byte-level ones are read", p.Type)
}

// templateEnds returns the special tokens that a TemplateProcessing
// post-processor (alone or in a Sequence) puts first and last around a
// single sequence.
func templateEnds(p *hfPart) (first, last string) {
	if p.Type == "Sequence" {
		for _, q := range p.Processors {
			if q != nil && q.Type == "TemplateProcessing" {
				return templateEnds(q)
			}
		}
		return "", ""
	}
	if p.Type != "TemplateProcessing" || len(p.Single) == 0 {
		return "", ""
	}
	if st := p.Single[0].SpecialToken; st != nil {
		first = st.ID
	}
	if st := p.Single[len(p.Single)-1].SpecialToken; st != nil && len(p.Single) > 1 {
		last = st.ID
	}
	return first, last
}

// looksSpecial is llama.cpp's converter's guess that an added token not
// marked special is a control token all the same.
func looksSpecial(s string) bool {
	switch s {
	case "<pad>", "<mask>", "<2mass>", "[@BOS@]":
		return true
	}
	return strings.HasPrefix(s, "<|") && strings.HasSuffix(s, "|>") ||
		strings.HasPrefix(s, "<｜") && strings.HasSuffix(s, "｜>") ||
		strings.HasPrefix(s, "<unused") && strings.HasSuffix(s, ">")
}
