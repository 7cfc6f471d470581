package tokenizer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/berth-ml/berth/weights/gguf"
)

// Limits on what a vocabulary may hold. Real ones stay far below: the
// largest have a few hundred thousand tokens and merges.
const (
	MaxTokens      = 1 << 22
	MaxMerges      = 1 << 23
	MaxTokenLength = 1 << 16
)

// spec is a vocabulary as a file describes it, before llama.cpp's rules
// for loading it are applied.
type spec struct {
	model  string // "llama" or "gpt2"
	pre    string
	name   string // general.name
	arch   string // general.architecture
	tokens []string
	scores []float32
	types  []int32
	merges []string

	// special ids the file names, -1 where it names none
	bos, eos, eot, eom, unk, fimPad, fimRep, fimSep int64

	addBOS, addEOS, spacePrefix, ignoreMerges, cleanSpaces *bool

	// noDefaults: the special ids above are all there is; llama.cpp's
	// defaults of the kind (BOS 1 or 11...) do not apply
	noDefaults bool
}

// FromGGUF reads the tokenizer of a GGUF file from its tokenizer.ggml.*
// metadata, as llama.cpp loads it: tokenizer.ggml.model "llama"
// (SentencePiece, with scores and byte tokens) or "gpt2" (byte-level BPE
// with merges and the pre-tokenizer tokenizer.ggml.pre).
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	t, err := fromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return t, nil
}

func fromGGUF(f *gguf.File) (*Tokenizer, error) {
	s, err := readSpec(f)
	if err != nil {
		return nil, err
	}
	return build(s)
}

// readSpec reads the tokenizer.ggml.* metadata of f.
func readSpec(f *gguf.File) (*spec, error) {
	s := &spec{bos: -1, eos: -1, eot: -1, eom: -1, unk: -1, fimPad: -1, fimRep: -1, fimSep: -1}
	var err error
	if s.model, err = f.String("tokenizer.ggml.model"); err != nil {
		return nil, err
	}
	optional := func(err error) error {
		if errors.Is(err, gguf.ErrNoKey) {
			return nil
		}
		return err
	}
	if s.pre, err = f.String("tokenizer.ggml.pre"); optional(err) != nil {
		return nil, err
	}
	if s.name, err = f.String("general.name"); optional(err) != nil {
		return nil, err
	}
	if s.arch, err = f.String("general.architecture"); optional(err) != nil {
		return nil, err
	}
	if s.tokens, err = f.Strings("tokenizer.ggml.tokens"); err != nil {
		return nil, err
	}
	if len(s.tokens) > MaxTokens {
		return nil, fmt.Errorf("%d tokens, more than %d", len(s.tokens), MaxTokens)
	}
	if v, ok := f.Value("tokenizer.ggml.scores"); ok {
		if v.Kind() != gguf.Array || v.Elem() != gguf.Float32 && v.Elem() != gguf.Int32 {
			return nil, fmt.Errorf("tokenizer.ggml.scores is %v, not an array of float32", v.Kind())
		}
		if v.Len() < len(s.tokens) {
			return nil, fmt.Errorf("%d scores for %d tokens", v.Len(), len(s.tokens))
		}
		x, err := f.Floats("tokenizer.ggml.scores")
		if err != nil {
			return nil, err
		}
		s.scores = make([]float32, len(s.tokens))
		for i := range s.scores {
			s.scores[i] = float32(x[i])
		}
	}
	if v, ok := f.Value("tokenizer.ggml.token_type"); ok {
		if v.Kind() != gguf.Array || v.Elem() != gguf.Int32 {
			return nil, fmt.Errorf("tokenizer.ggml.token_type is not an array of int32")
		}
		if v.Len() < len(s.tokens) {
			return nil, fmt.Errorf("%d token types for %d tokens", v.Len(), len(s.tokens))
		}
		x, err := f.Ints("tokenizer.ggml.token_type")
		if err != nil {
			return nil, err
		}
		s.types = make([]int32, len(s.tokens))
		for i := range s.types {
			s.types[i] = int32(x[i])
		}
	}
	if v, ok := f.Value("tokenizer.ggml.merges"); ok {
		if v.Kind() != gguf.Array || v.Elem() != gguf.String {
			return nil, fmt.Errorf("tokenizer.ggml.merges is not an array of strings")
		}
		if v.Len() > MaxMerges {
			return nil, fmt.Errorf("%d merges, more than %d", v.Len(), MaxMerges)
		}
		if s.merges, err = f.Strings("tokenizer.ggml.merges"); err != nil {
			return nil, err
		}
	}
	for _, k := range []struct {
		key string
		id  *int64
	}{
		{"bos_token_id", &s.bos}, {"eos_token_id", &s.eos}, {"eot_token_id", &s.eot},
		{"eom_token_id", &s.eom}, {"unknown_token_id", &s.unk}, {"fim_pad_token_id", &s.fimPad},
		{"fim_rep_token_id", &s.fimRep}, {"fim_sep_token_id", &s.fimSep},
	} {
		u, err := f.Uint("tokenizer.ggml." + k.key)
		if optional(err) != nil {
			return nil, err
		}
		if err == nil {
			*k.id = int64(min(u, math.MaxInt64))
		}
	}
	for _, k := range []struct {
		key string
		b   **bool
	}{
		{"add_bos_token", &s.addBOS}, {"add_eos_token", &s.addEOS}, {"add_space_prefix", &s.spacePrefix},
	} {
		b, err := f.Bool("tokenizer.ggml." + k.key)
		if optional(err) != nil {
			return nil, err
		}
		if err == nil {
			*k.b = &b
		}
	}
	return s, nil
}

// build applies llama.cpp's rules for loading a vocabulary
// (llama_vocab::impl::load) to s.
func build(s *spec) (*Tokenizer, error) {
	t := &Tokenizer{modelID: s.model}
	n := len(s.tokens)
	if n == 0 {
		return nil, errors.New("the vocabulary has no tokens")
	}
	if n > MaxTokens {
		return nil, fmt.Errorf("%d tokens, more than %d", n, MaxTokens)
	}
	if s.scores != nil && len(s.scores) < n || s.types != nil && len(s.types) < n {
		return nil, errors.New("fewer scores or token types than tokens")
	}
	// Defaults of each kind; the file may override them below.
	var bos, eos, unk int64
	switch s.model {
	case "llama":
		t.model = modelSPM
		bos, eos, unk = 1, 2, 0
		t.spacePrefix, t.addBOS = true, true
	case "gpt2":
		t.model = modelBPE
		bos, eos, unk = 11, 11, -1
		if len(s.merges) == 0 {
			return nil, errors.New("a BPE vocabulary without tokenizer.ggml.merges")
		}
		name := s.pre
		if name == "" {
			name = "default"
		}
		pre, ok := preTokenizers[name]
		if !ok {
			return nil, fmt.Errorf("unsupported pre-tokenizer %q", s.pre)
		}
		t.preName, t.pre = s.pre, pre
		t.ignoreMerges, t.addBOS, t.cleanSpaces = pre.ignoreMerges, pre.addBOS, pre.cleanSpaces
		if pre.noBOS {
			bos = -1
		}
	default:
		return nil, fmt.Errorf("unsupported tokenizer model %q (this package reads \"llama\" and \"gpt2\")", s.model)
	}
	if s.noDefaults {
		bos, eos, unk = -1, -1, -1
	}
	set := func(dst *bool, src *bool) {
		if src != nil {
			*dst = *src
		}
	}
	set(&t.spacePrefix, s.spacePrefix)
	set(&t.ignoreMerges, s.ignoreMerges)
	set(&t.cleanSpaces, s.cleanSpaces)

	// tokens
	t.tokens = make([]string, n)
	t.attrs = make([]attr, n)
	t.scores = make([]float32, n)
	t.ids = make(map[string]int32, n)
	for i, w := range s.tokens {
		if len(w) > MaxTokenLength {
			return nil, fmt.Errorf("token %d is %d bytes long, more than %d", i, len(w), MaxTokenLength)
		}
		if w == "" {
			w = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := t.ids[w]; dup {
			return nil, fmt.Errorf("duplicate token %q: ids %d and %d", w, j, i)
		}
		t.ids[w] = int32(i)
		t.tokens[i] = w
		if s.scores != nil {
			t.scores[i] = s.scores[i]
		}
		t.attrs[i] = attrNormal
		if s.types != nil {
			t.attrs[i] = attrOfType(s.types[i])
		}
	}

	// merges: "left right", split at the first space after the first
	// byte; the first of two equal merges keeps its rank
	if t.model == modelBPE {
		if len(s.merges) > MaxMerges {
			return nil, fmt.Errorf("%d merges, more than %d", len(s.merges), MaxMerges)
		}
		t.ranks = make(map[string]int32, len(s.merges))
		var key []byte
		for i, m := range s.merges {
			var left, right string
			if j := strings.IndexByte(m[min(1, len(m)):], ' '); j >= 0 {
				j += min(1, len(m))
				left, right = m[:j], m[j+1:]
			}
			key = mergeKey(key[:0], []byte(left), []byte(right))
			if _, ok := t.ranks[string(key)]; !ok {
				t.ranks[string(key)] = int32(i)
			}
		}
	}

	// special tokens: a default out of range is dropped, an id from the
	// file out of range keeps the default
	pick := func(def, file int64) int32 {
		if def >= int64(n) {
			def = -1
		}
		if file >= 0 && file < int64(n) {
			return int32(file)
		}
		return int32(def)
	}
	t.bos, t.eos, t.unk = pick(bos, s.bos), pick(eos, s.eos), pick(unk, s.unk)
	eot, eom := pick(-1, s.eot), pick(-1, s.eom)
	fimPad, fimRep, fimSep := pick(-1, s.fimPad), pick(-1, s.fimRep), pick(-1, s.fimSep)
	set(&t.addBOS, s.addBOS)
	set(&t.addEOS, s.addEOS)
	if t.addBOS && t.bos < 0 {
		return nil, errors.New("add_bos_token is true, but there is no BOS token")
	}
	if t.addEOS && t.eos < 0 {
		return nil, errors.New("add_eos_token is true, but there is no EOS token")
	}

	// Tokens found by their text. Where several match, llama.cpp takes
	// the first its hash map gives; this takes the lowest id.
	control := func(id int32) { t.attrs[id] |= attrControl }
	find := func(id *int32, texts ...string) {
		if *id >= 0 {
			return
		}
		for _, w := range texts {
			if j, ok := t.ids[w]; ok && (*id < 0 || j < *id) {
				*id = j
			}
		}
		if *id >= 0 {
			control(*id)
		}
	}
	find(&eot, "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
		"<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>")
	find(&eom, "<|eom_id|>")
	var fimPre, fimSuf, fimMid int32 = -1, -1, -1
	find(&fimPre, "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>")
	find(&fimSuf, "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>")
	find(&fimMid, "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>")
	find(&fimPad, "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]")
	find(&fimRep, "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>")
	find(&fimSep, "<|file_sep|>")

	for i, w := range t.tokens {
		if a := t.attrs[i]; a&attrControl != 0 && strings.Contains(w, "unused") {
			t.attrs[i] |= attrUnused
		}
	}

	eog := map[int32]bool{}
	for _, id := range []int32{fimPad, fimRep, fimSep} {
		if id >= 0 {
			eog[id] = true
		}
	}
	for _, w := range eogTexts {
		if id, ok := t.ids[w]; ok {
			eog[id] = true
			control(id)
		}
	}
	for _, w := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id, ok := t.ids[w]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int32{t.eos, eot, eom} {
		if id >= 0 {
			eog[id] = true
		}
	}
	has := func(w string) (int32, bool) {
		id, ok := t.ids[w]
		return id, ok && eog[id]
	}
	_, ret := has("<|return|>")
	_, call := has("<|call|>")
	_, calls := has("<|calls|>")
	_, flush := has("<|flush|>")
	if end, ok := has("<|end|>"); ok && (ret || flush) && (call || calls) {
		delete(eog, end)
		t.attrs[end] = attrUserDefined
	}
	if _, ok := has("<|tool_response>"); ok {
		if s, ok := has("</s>"); ok {
			delete(eog, s)
			t.attrs[s] = attrNormal
		}
	}
	for id := range eog {
		t.eog = append(t.eog, id)
	}
	slices.Sort(t.eog)

	// special tokens, longest first
	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.specials = append(t.specials, int32(i))
		}
	}
	slices.SortStableFunc(t.specials, func(a, b int32) int { return len(t.tokens[b]) - len(t.tokens[a]) })

	t.pieces = make([]string, n)
	for i := range t.pieces {
		t.pieces[i] = t.piece(int32(i))
	}

	if t.model == modelSPM {
		t.pairs = tokenPairs(t.tokens)
	}

	// byte fallback of SentencePiece: <0xXX>, else the byte itself
	for c := range t.byteTokens {
		t.byteTokens[c] = -1
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", c)]; ok {
			t.byteTokens[c] = id
		} else if id, ok := t.ids[string([]byte{byte(c)})]; ok {
			t.byteTokens[c] = id
		}
	}

	// attributes llama.cpp sets by the model's name
	lower := strings.ToLower(s.name)
	setAttr := func(w string, a attr, on bool) {
		if id, ok := t.ids[w]; ok {
			if on {
				t.attrs[id] |= a
			} else {
				t.attrs[id] &^= a
			}
		}
	}
	switch {
	case containsAny(s.pre, "jina-v2-de", "jina-v2-es", "jina-v2-code") || containsAny(s.arch, "nomic-bert-moe", "jina-bert-v3"):
		setAttr("<mask>", attrLStrip, true)
	case containsAny(lower, "phi-3", "phi3"):
		for _, id := range t.specials {
			t.attrs[id] |= attrRStrip
		}
		setAttr("</s>", attrRStrip, true)
		for _, w := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			setAttr(w, attrRStrip, false)
		}
	case containsAny(lower, "modern-bert"):
		setAttr("[MASK]", attrLStrip, true)
	}
	return t, nil
}

// eogTexts are the tokens that llama.cpp takes to end generation by their
// text alone.
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
	"<｜end▁of▁sentence｜>", "[e~[",
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// attrOfType maps a GGUF token type to the attributes llama.cpp gives it.
func attrOfType(t int32) attr {
	switch t {
	case typeUnknown:
		return attrUnknown
	case typeUnused:
		return attrUnused
	case typeNormal:
		return attrNormal
	case typeControl:
		return attrControl
	case typeUserDefined:
		return attrUserDefined
	case typeByte:
		return attrByte
	}
	return 0
}
