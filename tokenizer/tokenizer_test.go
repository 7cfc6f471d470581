package tokenizer

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// words cuts s with the pre-tokenizer of a byte-level vocabulary.
func words(pre string, s string) []string {
	cp := codepoints(nil, s)
	cl := make([]class, len(cp))
	for i, r := range cp {
		cl[i] = classOf(r)
	}
	ends := []int{len(cp)}
	for _, split := range preTokenizers[pre].splits {
		var next []int
		start := 0
		for _, end := range ends {
			next = split(cp, cl, start, end, next)
			start = end
		}
		ends = next
	}
	var out []string
	start := 0
	for _, end := range ends {
		out = append(out, string(cp[start:end]))
		start = end
	}
	return out
}

func TestPreTokenizers(t *testing.T) {
	for _, c := range []struct {
		pre, text string
		want      []string
	}{
		{"gpt-2", "Hello world", []string{"Hello", " world"}},
		{"gpt-2", "Hello  world  ", []string{"Hello", " ", " world", "  "}},
		{"gpt-2", "I'm 12345 ok!!", []string{"I", "'m", " 12345", " ok", "!!"}},
		{"gpt-2", "IT'S", []string{"IT", "'", "S"}},
		{"gpt-2", "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"gpt-2", "日本語 text", []string{"日本語", " text"}},
		{"llama-bpe", "Hello world", []string{"Hello", " world"}},
		{"llama-bpe", "IT'S", []string{"IT", "'S"}},
		{"llama-bpe", "12345678", []string{"123", "456", "78"}},
		{"llama-bpe", "a\n\n  b", []string{"a", "\n\n", " ", " b"}},
		{"llama-bpe", "x  \n", []string{"x", "  \n"}},
		{"llama-bpe", "(hi)", []string{"(hi", ")"}},
		{"llama-bpe", "...\n\nx", []string{"...\n\n", "x"}},
		{"llama-bpe", "\tab", []string{"\tab"}},
		{"qwen2", "12345", []string{"1", "2", "3", "4", "5"}},
		{"qwen2", "x  y", []string{"x", " ", " y"}},
		{"starcoder", "abc123 x", []string{"abc", "1", "2", "3", " x"}},
		{"default", "a+b=12345;", []string{"a", "+", "b", "=", "123", "45", ";"}},
	} {
		if got := words(c.pre, c.text); strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q is cut into %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}

func TestCodepoints(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []rune
	}{
		{"aé", []rune{'a', 'é'}},
		{"\xff", []rune{0xFFFD}},
		{"a\x80b", []rune{'a', 0xFFFD, 'b'}},
		{"\xe2\x82", []rune{0xFFFD, 0xFFFD}},
		{"\xc0\xaf", []rune{'/'}},              // overlong, accepted as llama.cpp does
		{"\xed\xa0\x80", []rune{0xD800}},       // a surrogate, accepted
		{"\xf7\xbf\xbf\xbf", []rune{0x1FFFFF}}, // beyond Unicode
		{"\xf0\x9f\x98", []rune{0xFFFD, 0xFFFD, 0xFFFD}},
	} {
		got := codepoints(nil, c.in)
		if string(got) != string(c.want) || len(got) != len(c.want) {
			t.Errorf("codepoints(%q) = %U, want %U", c.in, got, c.want)
		}
	}
	if got := string(appendRune(nil, 0xD800)); got != "\xed\xa0\x80" {
		t.Errorf("appendRune(U+D800) = %q", got)
	}
}

func TestCleanSpaces(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"Hello , world !", "Hello, world!"},
		{"a . b ?", "a. b?"},
		{"it ' s", "it's"},
		{"I 'm you 're we 've he 's", "I'm you're we've he's"},
		{"don 't we 'll she 'd", "don 't we 'll she 'd"},
		{" ,", ","},
		{" ' ", "'"},
	} {
		if got := string(cleanSpaces([]byte(c.in))); got != c.want {
			t.Errorf("cleanSpaces(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDecoderHoldsSplitCharacters(t *testing.T) {
	tok := loadGGUF(t, "llama-spm")
	text := "🦙 naïve 日本 end\xff"
	ids := tok.Encode(text, false)
	d := tok.NewDecoder(false)
	var all strings.Builder
	for _, id := range ids {
		s := d.Next(id)
		if !utf8.ValidString(s) && !strings.Contains(s, "\xff") {
			t.Errorf("Next(%d) = %q, not UTF-8", id, s)
		}
		all.WriteString(s)
	}
	all.WriteString(d.Flush())
	if got := strings.TrimPrefix(all.String(), " "); got != text {
		t.Errorf("streamed %q, want %q", got, text)
	}
	// a character cut short at the end comes out with Flush
	d = tok.NewDecoder(false)
	out := d.Next(3+0xF0) + d.Next(3+0x9F)
	if out != "" {
		t.Errorf("Next gave %q before the character was whole", out)
	}
	if got := d.Flush(); got != "\xf0\x9f" {
		t.Errorf("Flush = %q", got)
	}
}

// spmReference is llama.cpp's SentencePiece merge over the whole text in
// one queue, to check the piecewise one against.
func spmReference(t *Tokenizer, text []byte) []int32 {
	syms := initSymbols(nil, text)
	var q queue
	try := func(l, r int32) {
		if l < 0 || r < 0 {
			return
		}
		a, b := syms[l], syms[r]
		if id, ok := t.ids[string(text[a.start:a.start+a.n+b.n])]; ok {
			q.push(bigram{key: -float64(t.scores[id]), left: l, right: r, size: a.n + b.n})
		}
	}
	for i := 1; i < len(syms); i++ {
		try(int32(i-1), int32(i))
	}
	mergeQueued(syms, &q, try)
	var out []int32
	for i := int32(0); len(syms) > 0 && i != -1; i = syms[i].next {
		out = t.appendPiece(out, text[syms[i].start:syms[i].start+syms[i].n])
	}
	return out
}

func TestSentencePieceCutsChangeNothing(t *testing.T) {
	tok := loadGGUF(t, "llama-spm")
	rng := rand.New(rand.NewPCG(1, 2))
	extra := []string{" ", "  ", "\n", "é", "日", "🦙", "\xff", "▁", "<s>", "1", "."}
	for n := range 300 {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			if rng.IntN(4) == 0 {
				b.WriteString(extra[rng.IntN(len(extra))])
			} else {
				b.WriteString(tok.Piece(int32(259+rng.IntN(tok.VocabSize()-259)), false))
			}
		}
		text := escapeSpaces(nil, []byte(b.String()))
		got := tok.spm(nil, text, &scratch{})
		want := spmReference(tok, text)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d %q:\n got %v\nwant %v", n, text, got, want)
		}
	}
}

// TestLongInputs checks that encoding time grows about linearly, on text
// that is one long word and on text without spaces.
func TestLongInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	for _, c := range []struct{ vocab, unit string }{
		{"llama3-bpe", "a"}, {"llama3-bpe", "ab1 "}, {"gpt2-bpe", "xyz"},
		{"llama-spm", "a"}, {"llama-spm", "▁▁"}, {"llama-spm", "日本"},
	} {
		tok := loadGGUF(t, c.vocab)
		measure := func(n int) time.Duration {
			text := strings.Repeat(c.unit, n/len(c.unit))
			best := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				tok.Encode(text, true)
				best = min(best, time.Since(start))
			}
			return best
		}
		small, large := measure(1<<14), measure(1<<18)
		if large > 64*small+50*time.Millisecond {
			t.Errorf("%s, %q repeated: %v for 16 KiB, %v for 256 KiB", c.vocab, c.unit, small, large)
		}
	}
}

// FuzzEncode feeds arbitrary bytes to each kind of tokenizer: nothing
// may panic, and decoding the ids of valid UTF-8 gives the text back
// where the vocabulary covers it.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Hello world", " \n\t ", "<s>x</s>", "<|begin_of_text|>", "\xff\xfe",
		"🦙🦙", "'s 're", "12345", "a\u00a0b", "\xf7\xbf\xbf\xbf", "\xed\xa0\x80"} {
		f.Add(s)
	}
	var toks []*Tokenizer
	for _, name := range []string{"llama-spm", "llama3-bpe", "qwen2-bpe", "gpt2-bpe"} {
		toks = append(toks, loadGGUF(f, name))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids := tok.Encode(s, true)
			for _, id := range ids {
				if id < 0 || int(id) >= tok.VocabSize() {
					t.Fatalf("id %d out of range", id)
				}
			}
			tok.AppendEncode(nil, s, EncodeOptions{})
			d := tok.NewDecoder(true)
			for _, id := range ids {
				d.Next(id)
			}
			d.Flush()
			if tok.Model() == "llama" && utf8.ValidString(s) && !strings.ContainsAny(s, "<▁") && !strings.HasPrefix(s, " ") {
				if got := tok.Decode(ids); got != s {
					t.Errorf("Decode(Encode(%q)) = %q", s, got)
				}
			}
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	tok := loadGGUF(t, "llama3-bpe")
	texts := []string{"Hello world", "<|begin_of_text|>日本語 12345", strings.Repeat("abc ", 500)}
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, true)
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 50 {
				k := (g + i) % len(texts)
				ids := tok.Encode(texts[k], true)
				ok = ok && slices.Equal(ids, want[k]) && tok.Decode(ids) != "\x00"
			}
			done <- ok
		}()
	}
	for range 4 {
		if !<-done {
			t.Error("concurrent encodings differ")
		}
	}
}
