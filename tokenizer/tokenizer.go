package tokenizer

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// model is the kind of vocabulary: llama.cpp's LLAMA_VOCAB_TYPE_SPM
// ("llama") or LLAMA_VOCAB_TYPE_BPE ("gpt2").
type model uint8

const (
	modelSPM model = iota
	modelBPE
)

// attr is a token's attributes, llama.cpp's llama_token_attr bits.
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrNormalized
	attrLStrip
	attrRStrip
	attrSingleWord
)

// Token types of the GGUF convention (tokenizer.ggml.token_type).
const (
	typeUndefined   = 0
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
	typeByte        = 6
)

// None is the id of a token a vocabulary does not have (BOS, EOS).
const None int32 = -1

// Tokenizer turns text into token ids and back as one language model's
// tokenizer does. It is safe for concurrent use.
type Tokenizer struct {
	model   model
	modelID string // tokenizer.ggml.model
	preName string // tokenizer.ggml.pre
	pre     preTokenizer

	tokens []string
	scores []float32
	attrs  []attr
	ids    map[string]int32
	ranks  map[string]int32 // mergeKey(left, right) → rank

	bos, eos, unk int32
	eog           []int32 // sorted
	addBOS        bool
	addEOS        bool
	spacePrefix   bool // SentencePiece's add_dummy_prefix
	cleanSpaces   bool
	ignoreMerges  bool

	specials   []int32  // control, user-defined and unknown tokens, longest first
	pairs      []uint64 // SentencePiece: adjacent characters in tokens, sorted
	pieces     []string
	byteTokens [256]int32 // SentencePiece byte fallback
}

// VocabSize is the number of tokens; ids run from 0 to VocabSize()-1.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// BOS is the beginning-of-sequence token, or None.
func (t *Tokenizer) BOS() int32 { return t.bos }

// EOS is the end-of-sequence token, or None.
func (t *Tokenizer) EOS() int32 { return t.eos }

// AddsBOS tells whether Encode with addSpecial starts with BOS.
func (t *Tokenizer) AddsBOS() bool { return t.addBOS }

// AddsEOS tells whether Encode with addSpecial ends with EOS.
func (t *Tokenizer) AddsEOS() bool { return t.addEOS }

// IsEOG tells whether id ends generation: EOS, end-of-turn tokens such as
// <|eot_id|> or <|im_end|>, and the others llama.cpp counts.
func (t *Tokenizer) IsEOG(id int32) bool {
	_, ok := slices.BinarySearch(t.eog, id)
	return ok
}

// EOG returns the end-of-generation tokens in increasing order.
func (t *Tokenizer) EOG() []int32 { return slices.Clone(t.eog) }

// IsControl tells whether id is a control token (BOS, EOS, <|im_start|>
// and the like), which Decode leaves out.
func (t *Tokenizer) IsControl(id int32) bool {
	return t.valid(id) && t.attrs[id]&attrControl != 0
}

// Token returns the text of id as the vocabulary spells it ("▁the",
// "Ġthe", "<0x0A>"), or "" for an id out of range.
func (t *Tokenizer) Token(id int32) string {
	if !t.valid(id) {
		return ""
	}
	return t.tokens[id]
}

// ID returns the token whose vocabulary text is s.
func (t *Tokenizer) ID(s string) (int32, bool) {
	id, ok := t.ids[s]
	return id, ok
}

// Model is the kind of vocabulary, as tokenizer.ggml.model names it:
// "llama" (SentencePiece) or "gpt2" (byte-level BPE).
func (t *Tokenizer) Model() string { return t.modelID }

// PreTokenizer is the name of the pre-tokenizer of a byte-level BPE
// vocabulary (tokenizer.ggml.pre), "" for SentencePiece.
func (t *Tokenizer) PreTokenizer() string { return t.preName }

func (t *Tokenizer) valid(id int32) bool { return id >= 0 && int(id) < len(t.tokens) }

// EncodeOptions are llama_tokenize's two switches.
type EncodeOptions struct {
	// AddSpecial adds BOS and EOS where the model wants them
	// (AddsBOS, AddsEOS).
	AddSpecial bool
	// ParseSpecial lets control tokens written in the text (<s>,
	// <|im_start|>) stand for themselves. Without it they are plain
	// text; user-defined tokens are matched either way.
	ParseSpecial bool
}

// Encode returns the token ids of text, with BOS (and EOS) as the model
// wants them if addSpecial is set. Control tokens written in the text are
// recognised (llama.cpp's parse_special); use AppendEncode to treat them
// as text, as untrusted input should be.
//
// Any string is accepted. Invalid UTF-8 is encoded the way llama.cpp
// does: a SentencePiece vocabulary falls back to byte tokens, a
// byte-level one sees each bad byte as U+FFFD.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	return t.AppendEncode(nil, text, EncodeOptions{AddSpecial: addSpecial, ParseSpecial: true})
}

// AppendEncode appends the token ids of text to dst.
func (t *Tokenizer) AppendEncode(dst []int32, text string, o EncodeOptions) []int32 {
	var frags []fragment
	if text != "" {
		frags = t.partition(text, o.ParseSpecial)
	}
	if o.AddSpecial && t.addBOS {
		dst = append(dst, t.bos)
	}
	var s scratch
	switch t.model {
	case modelSPM:
		prevSpecial := true
		for _, f := range frags {
			if f.token >= 0 {
				dst = append(dst, f.token)
				prevSpecial = true
				continue
			}
			s.text = s.text[:0]
			if t.spacePrefix && prevSpecial {
				s.text = append(s.text, " "...)
			}
			s.text = append(s.text, text[f.start:f.end]...)
			s.word = escapeSpaces(s.word[:0], s.text)
			dst = t.spm(dst, s.word, &s)
			prevSpecial = false
		}
	case modelBPE:
		for _, f := range frags {
			if f.token >= 0 {
				dst = append(dst, f.token)
				continue
			}
			dst = t.bpe(dst, text[f.start:f.end], &s)
		}
	}
	if o.AddSpecial && t.addEOS {
		dst = append(dst, t.eos)
	}
	return dst
}

// scratch is the working memory of one Encode.
type scratch struct {
	text  []byte
	word  []byte
	key   []byte
	cp    []rune
	cl    []class
	ends  []int
	ends2 []int
	syms  []symbol
	queue queue
}

// escapeSpaces appends src to dst with every space as ▁ (U+2581).
func escapeSpaces(dst, src []byte) []byte {
	for _, c := range src {
		if c == ' ' {
			dst = append(dst, "\u2581"...)
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

// fragment is a stretch of the text, text[start:end], or a special token
// found in it (token ≥ 0).
type fragment struct {
	token      int32
	start, end int
}

// partition cuts text at the special tokens written in it, longest first,
// as llama.cpp's tokenizer_st_partition: each special token, in turn,
// takes every occurrence of itself, left to right, in the stretches of
// text that the ones before it left. Without parseSpecial only
// user-defined tokens are taken.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	frags := []fragment{{token: -1, start: 0, end: len(text)}}
	var next []fragment
	for _, id := range t.specials {
		a := t.attrs[id]
		if !parseSpecial && a&(attrControl|attrUnknown) != 0 {
			continue
		}
		sp := t.tokens[id]
		if !strings.Contains(text, sp) {
			continue
		}
		next = next[:0]
		for _, f := range frags {
			if f.token >= 0 {
				next = append(next, f)
				continue
			}
			start, end := f.start, f.end
			for {
				i := strings.Index(text[start:end], sp)
				if i < 0 {
					if end > start {
						next = append(next, fragment{token: -1, start: start, end: end})
					}
					break
				}
				m := start + i
				left := m
				if a&attrLStrip != 0 {
					for left > start && isSpace(text[left-1]) {
						left--
					}
				}
				if left > start {
					next = append(next, fragment{token: -1, start: start, end: left})
				}
				next = append(next, fragment{token: id, start: m, end: m + len(sp)})
				start = m + len(sp)
				if start >= end {
					break
				}
				if a&attrRStrip != 0 {
					for start < end && isSpace(text[start]) {
						start++
					}
				}
			}
		}
		frags, next = next, frags
	}
	return frags
}

// isSpace is C's isspace.
func isSpace(c byte) bool { return c == ' ' || '\t' <= c && c <= '\r' }

// symbol is a stretch of the text being merged: text[start:start+n], or
// nothing (n 0) once merged into its left neighbour; prev and next link
// the live ones.
type symbol struct {
	start, n   int32
	prev, next int32
}

// initSymbols cuts text into one symbol per UTF-8 sequence, by its lead
// byte as llama.cpp does (a bad sequence is still one symbol).
func initSymbols(syms []symbol, text []byte) []symbol {
	syms = syms[:0]
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		i := int32(len(syms))
		next := i + 1
		if off+n == len(text) {
			next = -1
		}
		syms = append(syms, symbol{start: int32(off), n: int32(n), prev: i - 1, next: next})
		off += n
	}
	return syms
}

// spm tokenizes one escaped stretch of text with a SentencePiece
// vocabulary: starting from characters, it keeps merging the adjacent
// pair whose concatenation is the token of highest score, then writes
// each symbol as its token, or as byte tokens if it is none.
//
// llama.cpp does this over the whole stretch at once. Two characters
// that appear next to each other in no token can never end up in one
// symbol, so the stretch is cut between them and each piece merged on
// its own: the same merges in the same order within each piece, with
// small queues instead of one as long as the text.
func (t *Tokenizer) spm(dst []int32, text []byte, s *scratch) []int32 {
	syms := initSymbols(s.syms, text)
	q := s.queue[:0]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		id, ok := t.ids[string(text[a.start:a.start+a.n+b.n])]
		if !ok {
			return
		}
		q.push(bigram{key: -float64(t.scores[id]), left: l, right: r, size: a.n + b.n})
	}
	last := rune(-1)
	for lo := 0; lo < len(syms); {
		hi := lo + 1
		for ; hi < len(syms); hi++ {
			sym := syms[hi]
			r := runeOf(text[sym.start : sym.start+sym.n])
			if hi == lo+1 {
				last = runeOf(text[syms[lo].start : syms[lo].start+syms[lo].n])
			}
			if last < 0 || r < 0 || !t.hasPair(last, r) {
				break
			}
			last = r
		}
		syms[lo].prev, syms[hi-1].next = -1, -1
		for i := lo + 1; i < hi; i++ {
			try(int32(i-1), int32(i))
		}
		mergeQueued(syms, &q, try)
		for i := int32(lo); i != -1; i = syms[i].next {
			sym := syms[i]
			dst = t.appendPiece(dst, text[sym.start:sym.start+sym.n])
		}
		lo = hi
	}
	s.syms, s.queue = syms, q
	return dst
}

// appendPiece appends the id of piece or, where the vocabulary has no
// such piece, the ids of its bytes' byte tokens.
func (t *Tokenizer) appendPiece(dst []int32, piece []byte) []int32 {
	if id, ok := t.ids[string(piece)]; ok {
		return append(dst, id)
	}
	for _, c := range piece {
		if id := t.byteTokens[c]; id >= 0 {
			dst = append(dst, id)
		}
	}
	return dst
}

// runeOf is the character that a symbol is, or -1 if it is not one
// whole, valid UTF-8 character (and so part of no token).
func runeOf(b []byte) rune {
	r, n := utf8.DecodeRune(b)
	if n != len(b) || r == utf8.RuneError && n <= 1 {
		return -1
	}
	return r
}

// pairKey is the key of two adjacent characters in Tokenizer.pairs.
func pairKey(a, b rune) uint64 { return uint64(a)<<32 | uint64(uint32(b)) }

// tokenPairs is the sorted set of the pairs of characters that stand
// next to each other in some token.
func tokenPairs(tokens []string) []uint64 {
	var pairs []uint64
	for _, w := range tokens {
		prev := rune(-1)
		for _, r := range w {
			if prev >= 0 {
				pairs = append(pairs, pairKey(prev, r))
			}
			prev = r
		}
	}
	slices.Sort(pairs)
	return slices.Compact(pairs)
}

func (t *Tokenizer) hasPair(a, b rune) bool {
	_, ok := slices.BinarySearch(t.pairs, pairKey(a, b))
	return ok
}

// bpe tokenizes one stretch of text with a byte-level BPE vocabulary: the
// pre-tokenizer cuts it into words, each word is written in GPT-2's byte
// characters, and inside each word the adjacent pair of lowest merge
// rank is merged until none is left.
func (t *Tokenizer) bpe(dst []int32, text string, s *scratch) []int32 {
	s.cp = codepoints(s.cp[:0], text)
	cp := s.cp
	s.cl = slices.Grow(s.cl[:0], len(cp))[:len(cp)]
	for i, r := range cp {
		s.cl[i] = classOf(r)
	}
	ends := append(s.ends[:0], len(cp))
	for _, split := range t.pre.splits {
		next := s.ends2[:0]
		start := 0
		for _, end := range ends {
			next = split(cp, s.cl, start, end, next)
			start = end
		}
		ends, s.ends2 = next, ends
	}
	s.ends = ends
	start := 0
	for _, end := range ends {
		s.text = s.text[:0]
		for _, r := range cp[start:end] {
			s.text = appendRune(s.text, r)
		}
		start = end
		s.word = s.word[:0]
		for _, c := range s.text {
			s.word = append(s.word, byteChars[c]...)
		}
		dst = t.bpeWord(dst, s.word, s)
	}
	return dst
}

func (t *Tokenizer) bpeWord(dst []int32, word []byte, s *scratch) []int32 {
	if t.ignoreMerges {
		if id, ok := t.ids[string(word)]; ok {
			return append(dst, id)
		}
	}
	syms := initSymbols(s.syms, word)
	q := s.queue[:0]
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		s.key = mergeKey(s.key[:0], word[a.start:a.start+a.n], word[b.start:b.start+b.n])
		rank, ok := t.ranks[string(s.key)]
		if !ok {
			return
		}
		q.push(bigram{key: float64(rank), left: l, right: r, size: a.n + b.n})
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	mergeQueued(syms, &q, try)
	for _, sym := range syms {
		if sym.n == 0 {
			continue
		}
		piece := word[sym.start : sym.start+sym.n]
		if id, ok := t.ids[string(piece)]; ok {
			dst = append(dst, id)
			continue
		}
		// llama.cpp looks each byte of the piece up on its own: the
		// ASCII ones can be tokens, the others are dropped.
		for i := range piece {
			if id, ok := t.ids[string(piece[i:i+1])]; ok {
				dst = append(dst, id)
			}
		}
	}
	s.syms, s.queue = syms, q
	return dst
}

// mergeKey appends the key of the merge of left and right to dst: the
// length of left, then both.
func mergeKey(dst, left, right []byte) []byte {
	n := len(left)
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	dst = append(dst, byte(n))
	dst = append(dst, left...)
	return append(dst, right...)
}
