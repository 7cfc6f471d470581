package tokenizer

import (
	"unicode"
)

// A byte-level BPE vocabulary first cuts text into words with a regular
// expression and merges only inside a word. llama.cpp does not run the
// expressions through a regex engine for the common ones: it has
// hand-written splitters for GPT-2's and LLaMA 3's, and runs the others on
// a "collapsed" text in which every code point stands for its class. This
// file implements those splitters, one function per expression, so that
// the words are exactly llama.cpp's.

// A splitter cuts the code points cp[ini:end] into words, appending each
// word's end (an index into cp) to ends.
type splitter func(cp []rune, cl []class, ini, end int, ends []int) []int

// span reads the code points and classes of one piece; outside it a code
// point is -1 and a class zero.
type span struct {
	cp       []rune
	cl       []class
	ini, end int
}

func (s *span) at(p int) rune {
	if p >= s.ini && p < s.end {
		return s.cp[p]
	}
	return -1
}

func (s *span) class(p int) class {
	if p >= s.ini && p < s.end {
		return s.cl[p]
	}
	return 0
}

const (
	lnc   = letter | number | space
	crlf  = '\r'
	lfeed = '\n'
)

// contraction is the length of an English contraction ('s 't 're 've 'm
// 'll 'd) at p, or 0. fold makes it case-insensitive.
func (s *span) contraction(p int, fold bool) int {
	if s.at(p) != '\'' || p+1 >= s.end {
		return 0
	}
	low := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	n := low(s.at(p + 1))
	if n == 's' || n == 't' || n == 'm' || n == 'd' {
		return 2
	}
	if p+2 < s.end {
		nn := low(s.at(p + 2))
		if n == 'r' && nn == 'e' || n == 'v' && nn == 'e' || n == 'l' && nn == 'l' {
			return 3
		}
	}
	return 0
}

// spaces is where the piece at p ends when it is none of the others:
// \s+(?!\S) takes a run of whitespace but its last character where a
// non-space follows, \s+ the rest, and one character at p is a piece of
// its own. With newlines, \s*[\r\n]+ comes first: a run holding a newline
// ends after its last newline.
func (s *span) spaces(p int, newlines bool) int {
	nws, lastNL := 0, 0
	for s.class(p+nws)&space != 0 {
		if c := s.at(p + nws); newlines && (c == crlf || c == lfeed) {
			lastNL = p + nws + 1
		}
		nws++
	}
	switch {
	case lastNL > 0:
		return lastNL
	case nws > 1 && s.at(p+nws) != -1:
		return p + nws - 1
	case nws > 0:
		return p + nws
	}
	return p + 1
}

// splitGPT2 is GPT-2's expression
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func splitGPT2(cp []rune, cl []class, ini, end int, ends []int) []int {
	s := span{cp, cl, ini, end}
	for pos := ini; pos < end; {
		c, f := s.at(pos), s.class(pos)
		if n := s.contraction(pos, false); n > 0 {
			pos += n
			ends = append(ends, pos)
			continue
		}
		f2 := f
		if c == ' ' {
			f2 = s.class(pos + 1)
		}
		var want func(class) bool
		switch {
		case f2&letter != 0:
			want = func(f class) bool { return f&letter != 0 }
		case f2&number != 0:
			want = func(f class) bool { return f&number != 0 }
		case f2&lnc == 0 && f2 != 0:
			want = func(f class) bool { return f&lnc == 0 && f != 0 }
		}
		if want != nil {
			if c == ' ' {
				pos++
			}
			for want(f2) {
				pos++
				f2 = s.class(pos)
			}
			ends = append(ends, pos)
			continue
		}
		pos = s.spaces(pos, false)
		ends = append(ends, pos)
	}
	return ends
}

// splitLlama3 is LLaMA 3's expression, and with digits 1 Qwen 2's:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func splitLlama3(digits int) splitter {
	return func(cp []rune, cl []class, ini, end int, ends []int) []int {
		s := span{cp, cl, ini, end}
		for pos := ini; pos < end; {
			c, f := s.at(pos), s.class(pos)
			if n := s.contraction(pos, true); n > 0 {
				pos += n
				ends = append(ends, pos)
				continue
			}
			if !(c == crlf || c == lfeed || f&number != 0) && (f&letter != 0 || s.class(pos+1)&letter != 0) {
				pos++
				for s.class(pos)&letter != 0 {
					pos++
				}
				ends = append(ends, pos)
				continue
			}
			if f&number != 0 {
				start := pos
				for s.class(pos)&number != 0 {
					pos++
					if pos-start >= digits {
						ends = append(ends, pos)
						start = pos
					}
				}
				if pos > start {
					ends = append(ends, pos)
				}
				continue
			}
			f2 := f
			if c == ' ' {
				f2 = s.class(pos + 1)
			}
			// llama.cpp tests the class of c itself here, not of the
			// character after the space; either is in the piece.
			if f2&lnc == 0 && f != 0 {
				if c == ' ' {
					pos++
				}
				for f2&lnc == 0 && f2 != 0 {
					pos++
					f2 = s.class(pos)
				}
				for c2 := s.at(pos); c2 == crlf || c2 == lfeed; c2 = s.at(pos) {
					pos++
				}
				ends = append(ends, pos)
				continue
			}
			pos = s.spaces(pos, true)
			ends = append(ends, pos)
		}
		return ends
	}
}

// runs makes the splitter of an expression that matches n code points
// that in accepts (n 0: a maximal run of them, as with "+"). As
// llama.cpp's regex path does, each match is a word and so is each stretch
// of text between matches.
func runs(in func(r rune, c class) bool, n int) splitter {
	return func(cp []rune, cl []class, ini, end int, ends []int) []int {
		match := func(p int) int {
			q := p
			for q < end && in(cp[q], cl[q]) && (n == 0 || q-p < n) {
				q++
			}
			if n > 0 && q-p < n {
				return 0
			}
			return q - p
		}
		for pos := ini; pos < end; {
			m, l := pos, 0
			for ; m < end; m++ {
				if l = match(m); l > 0 {
					break
				}
			}
			if m > pos {
				ends = append(ends, m)
			}
			pos = m + l
			if l > 0 {
				ends = append(ends, pos)
			}
		}
		return ends
	}
}

func isNumber(_ rune, c class) bool { return c&number != 0 }

func isASCIIDigit(r rune, _ class) bool { return '0' <= r && r <= '9' }

// isPunctOrSign is \p{P} and $+<=>^~| (llama.cpp's default expression).
func isPunctOrSign(r rune, _ class) bool {
	switch r {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return unicode.IsPunct(r)
}

// preTokenizer is one of llama.cpp's pre-tokenizer types: the splitters
// that run one after the other, each on the words of the one before, and
// the flags the type sets.
type preTokenizer struct {
	splits       []splitter
	ignoreMerges bool // a word that is a token is that token
	addBOS       bool // the default of add_bos_token
	noBOS        bool // the type has no BOS token by default
	cleanSpaces  bool // detokenizing removes spaces before punctuation
}

var (
	gpt2Splits      = []splitter{splitGPT2}
	llama3Splits    = []splitter{splitLlama3(3)}
	qwen2Splits     = []splitter{splitLlama3(1)}
	starcoderSplits = []splitter{runs(isNumber, 1), splitGPT2}
	defaultSplits   = []splitter{runs(isPunctOrSign, 0), splitGPT2, runs(isNumber, 0), runs(isASCIIDigit, 3)}
)

// preTokenizers are the values of tokenizer.ggml.pre that this package
// knows, with llama.cpp's settings for each. Types whose expressions it
// does not implement are left out, and refused.
var preTokenizers = map[string]preTokenizer{
	"default": {splits: defaultSplits, cleanSpaces: true},

	"llama3":       {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-v3":     {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"llama-bpe":    {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon3":      {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"falcon-h1":    {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"pixtral":      {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"midm-2.0":     {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"lfm2":         {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"jina-v5-nano": {splits: llama3Splits, ignoreMerges: true, addBOS: true, cleanSpaces: true},
	"dbrx":         {splits: llama3Splits, cleanSpaces: true},
	"smaug-bpe":    {splits: llama3Splits, cleanSpaces: true},
	"glm4":         {splits: llama3Splits, noBOS: true, cleanSpaces: true},
	"chatglm-bpe":  {splits: llama3Splits, noBOS: true, cleanSpaces: true},

	"gpt-2":           {splits: gpt2Splits, cleanSpaces: true},
	"phi-2":           {splits: gpt2Splits, cleanSpaces: true},
	"jina-es":         {splits: gpt2Splits, cleanSpaces: true},
	"jina-de":         {splits: gpt2Splits, cleanSpaces: true},
	"gigachat":        {splits: gpt2Splits, cleanSpaces: true},
	"jina-v2-es":      {splits: gpt2Splits, cleanSpaces: true},
	"jina-v2-de":      {splits: gpt2Splits, cleanSpaces: true},
	"a.x-4.0":         {splits: gpt2Splits, cleanSpaces: true},
	"mellum":          {splits: gpt2Splits, cleanSpaces: true},
	"modern-bert":     {splits: gpt2Splits, cleanSpaces: true},
	"exaone4":         {splits: gpt2Splits, cleanSpaces: true},
	"mpt":             {splits: gpt2Splits, cleanSpaces: true},
	"olmo":            {splits: gpt2Splits, cleanSpaces: true},
	"jais":            {splits: gpt2Splits, cleanSpaces: true},
	"trillion":        {splits: gpt2Splits},
	"granite-docling": {splits: gpt2Splits},

	"qwen2":            {splits: qwen2Splits},
	"deepseek-r1-qwen": {splits: qwen2Splits},
	"kormo":            {splits: qwen2Splits},
	"f2llmv2":          {splits: qwen2Splits},
	"megrez":           {splits: qwen2Splits, cleanSpaces: true},
	"stablelm2":        {splits: qwen2Splits, cleanSpaces: true},
	"hunyuan":          {splits: qwen2Splits},
	"solar-open":       {splits: qwen2Splits},
	"grok-2":           {splits: qwen2Splits},

	"starcoder":  {splits: starcoderSplits, cleanSpaces: true},
	"refact":     {splits: starcoderSplits, cleanSpaces: true},
	"command-r":  {splits: starcoderSplits},
	"smollm":     {splits: starcoderSplits},
	"codeshell":  {splits: starcoderSplits, cleanSpaces: true},
	"exaone":     {splits: starcoderSplits, cleanSpaces: true},
	"minerva-7b": {splits: starcoderSplits, cleanSpaces: true},
	"mellum2":    {splits: starcoderSplits, cleanSpaces: true},
}
