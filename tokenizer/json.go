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
// tokenizer_config.json beside it if there is one: BOS, EOS and UNK are
// its bos_token, eos_token and unk_token (None without them; UNK also
// from the model), add_bos_token and add_eos_token come from it or from
// the post-processor's template.
//
// It reads BPE tokenizers of both kinds:
//
//   - byte-level (GPT-2, LLaMA 3, Qwen and the like): a ByteLevel
//     pre-tokenizer, or a Split by one of the expressions this package
//     implements followed by ByteLevel, or Digits then ByteLevel;
//   - SentencePiece written as BPE (LLaMA 2, Mistral): spaces made ▁ by
//     the normalizer (Prepend ▁, Replace " " with ▁) or by a Metaspace
//     pre-tokenizer, byte fallback tokens <0x00>…<0xFF>. The pieces'
//     scores are not in the file; the merges were written in their order,
//     so a piece's score is minus the rank of the first merge that makes
//     it.
//
// The result is the tokenizer that llama.cpp builds from a GGUF file of
// the same vocabulary (for SentencePiece, one with those scores): added
// tokens that are special, or look special (<|...|>), are control tokens
// and the others user-defined, as llama.cpp's converter makes them; the
// pre-tokenizer's settings (ignore_merges, clean-up of spaces) are
// llama.cpp's; the lstrip and rstrip of added tokens are not applied. A
// NFC normalizer is accepted and, as in llama.cpp, not applied: text is
// taken as it comes.
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
		UnkToken     *string           `json:"unk_token"`
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
	Behavior      string  `json:"behavior"`
	Prepend       *string `json:"prepend"`
	Content       string  `json:"content"`
	Replacement   string  `json:"replacement"`
	PrependScheme string  `json:"prepend_scheme"`
	Split         *bool   `json:"split"`
	Invert        bool    `json:"invert"`
	Single        []struct {
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
	UNK    hfTokenName `json:"unk_token"`
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
		return nil, fmt.Errorf("model type %q: only BPE tokenizers are read", h.Model.Type)
	}
	var s *spec
	if spacePrefix, ok, err := hfSentencePiece(&h); ok {
		if err != nil {
			return nil, err
		}
		if s, err = hfTokens(&h, "llama", ""); err != nil {
			return nil, err
		}
		s.spacePrefix = &spacePrefix
	} else {
		if h.Model.ByteFallback {
			return nil, errors.New("a BPE model with byte fallback but no ▁ for spaces is not supported")
		}
		if h.Normalizer != nil && h.Normalizer.Type != "NFC" {
			return nil, fmt.Errorf("normalizer %q is not supported", h.Normalizer.Type)
		}
		pre, err := hfPreTokenizer(h.PreTokenizer)
		if err != nil {
			return nil, err
		}
		if s, err = hfTokens(&h, "gpt2", pre); err != nil {
			return nil, err
		}
	}
	s.unk = -1
	if h.Model.UnkToken != nil {
		s.unk = s.idOf(hfTokenName(*h.Model.UnkToken))
	}
	if c.UNK != "" {
		s.unk = s.idOf(c.UNK)
	}
	if s.unk >= 0 && s.model == "llama" {
		s.types[s.unk] = typeUnknown
	}
	s.bos, s.eos = s.idOf(c.BOS), s.idOf(c.EOS)
	s.addBOS, s.addEOS = c.AddBOS, c.AddEOS
	if p := h.PostProcessor; p != nil && (s.addBOS == nil || s.addEOS == nil) {
		first, last := templateEnds(p)
		if s.addBOS == nil && first != "" {
			b := s.idOf(hfTokenName(first)) == s.bos && s.bos >= 0
			s.addBOS = &b
		}
		if s.addEOS == nil && last != "" {
			b := s.idOf(hfTokenName(last)) == s.eos && s.eos >= 0
			s.addEOS = &b
		}
	}
	if s.model == "llama" && s.addBOS == nil {
		b := false
		s.addBOS = &b
	}
	return build(s)
}

// idOf is the id of the token whose text is name, or -1.
func (s *spec) idOf(name hfTokenName) int64 {
	if name == "" {
		return -1
	}
	for i, w := range s.tokens {
		if w == string(name) {
			return int64(i)
		}
	}
	return -1
}

// hfSentencePiece tells whether h is a SentencePiece vocabulary written
// as BPE (LLaMA 2, Mistral): spaces become ▁, by a normalizer (Prepend
// ▁, then Replace " " with ▁) or a Metaspace pre-tokenizer, and the merge
// runs over the whole text. spacePrefix is whether a ▁ goes in front.
func hfSentencePiece(h *hfTokenizer) (spacePrefix, ok bool, err error) {
	const mark = "\u2581"
	n, p := h.Normalizer, h.PreTokenizer
	replaces := func(q *hfPart) bool {
		return q != nil && q.Type == "Replace" && q.Pattern.String != nil && *q.Pattern.String == " " && q.Content == mark
	}
	switch {
	case n != nil && p == nil && (replaces(n) || n.Type == "Sequence"):
		parts := []*hfPart{n}
		if n.Type == "Sequence" {
			parts = n.Normalizers
		}
		switch {
		case len(parts) == 1 && replaces(parts[0]):
			return false, true, nil
		case len(parts) == 2 && parts[0] != nil && parts[0].Type == "Prepend" && parts[0].Prepend != nil &&
			*parts[0].Prepend == mark && replaces(parts[1]):
			return true, true, nil
		}
		if !h.Model.ByteFallback {
			return false, false, nil
		}
		return false, true, errors.New("a SentencePiece-style normalizer other than Prepend(▁) and Replace(\" \", ▁)")
	case n == nil && p != nil && p.Type == "Metaspace":
		if p.Replacement != mark || p.Split != nil && *p.Split {
			return false, true, errors.New("a Metaspace pre-tokenizer that splits, or whose mark is not ▁")
		}
		return p.PrependScheme != "never", true, nil
	}
	return false, false, nil
}

// hfTokens reads the tokens of h, and the scores or the merges.
func hfTokens(h *hfTokenizer, model, pre string) (*spec, error) {
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
	s := &spec{model: model, pre: pre, tokens: make([]string, n), types: make([]int32, n),
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
		typ := int32(typeNormal)
		if model == "llama" && isByteToken(text) {
			typ = typeByte
		}
		if err := put(id, text, typ); err != nil {
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
	merges := make([]string, len(h.Model.Merges))
	for i, m := range h.Model.Merges {
		var str string
		if err := json.Unmarshal(m, &str); err == nil {
			merges[i] = str
			continue
		}
		var pair []string
		if err := json.Unmarshal(m, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("merge %d is neither \"a b\" nor [\"a\", \"b\"]", i)
		}
		merges[i] = pair[0] + " " + pair[1]
	}
	if model == "gpt2" {
		s.merges = merges
		s.ignoreMerges = h.Model.IgnoreMerges
		return s, nil
	}
	// SentencePiece: the merges were ordered by the pieces' scores, so a
	// piece's score is minus the rank of the first merge that makes it
	s.scores = make([]float32, n)
	done := make([]bool, n)
	ids := make(map[string]int32, n)
	for i, w := range s.tokens {
		ids[w] = int32(i)
	}
	for rank, m := range merges {
		if j := strings.IndexByte(m[min(1, len(m)):], ' '); j >= 0 {
			j += min(1, len(m))
			if id, ok := ids[m[:j]+m[j+1:]]; ok && !done[id] {
				s.scores[id], done[id] = -float32(rank), true
			}
		}
	}
	return s, nil
}

// isByteToken tells whether w is a byte token, <0x00> to <0xFF>.
func isByteToken(w string) bool {
	const hex = "0123456789ABCDEF"
	return len(w) == 6 && strings.HasPrefix(w, "<0x") && w[5] == '>' &&
		strings.IndexByte(hex, w[3]) >= 0 && strings.IndexByte(hex, w[4]) >= 0
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
