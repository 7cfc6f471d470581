package tokenizer

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/weights/gguf"
)

// A small writer of vocab-only GGUF files, for vocabularies made up in
// tests and for files that are wrong on purpose.

type meta struct {
	key  string
	kind gguf.Kind
	elem gguf.Kind // of an array
	v    any
}

func ggufBytes(kvs ...meta) []byte {
	le := binary.LittleEndian
	b := []byte("GGUF")
	b = le.AppendUint32(b, 3)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, uint64(len(kvs)))
	str := func(b []byte, s string) []byte { return append(le.AppendUint64(b, uint64(len(s))), s...) }
	scalar := func(b []byte, k gguf.Kind, v any) []byte {
		switch k {
		case gguf.String:
			return str(b, v.(string))
		case gguf.Uint32:
			return le.AppendUint32(b, v.(uint32))
		case gguf.Int32:
			return le.AppendUint32(b, uint32(v.(int32)))
		case gguf.Float32:
			return le.AppendUint32(b, math.Float32bits(v.(float32)))
		case gguf.Bool:
			if v.(bool) {
				return append(b, 1)
			}
			return append(b, 0)
		}
		panic("kind")
	}
	for _, m := range kvs {
		b = str(b, m.key)
		b = le.AppendUint32(b, uint32(m.kind))
		if m.kind != gguf.Array {
			b = scalar(b, m.kind, m.v)
			continue
		}
		b = le.AppendUint32(b, uint32(m.elem))
		switch xs := m.v.(type) {
		case []string:
			b = le.AppendUint64(b, uint64(len(xs)))
			for _, x := range xs {
				b = str(b, x)
			}
		case []float32:
			b = le.AppendUint64(b, uint64(len(xs)))
			for _, x := range xs {
				b = scalar(b, gguf.Float32, x)
			}
		case []int32:
			b = le.AppendUint64(b, uint64(len(xs)))
			for _, x := range xs {
				b = scalar(b, gguf.Int32, x)
			}
		}
	}
	for len(b)%32 != 0 {
		b = append(b, 0)
	}
	return b
}

func strs(key string, xs ...string) meta { return meta{key, gguf.Array, gguf.String, xs} }
func u32(key string, x uint32) meta      { return meta{key, gguf.Uint32, 0, x} }
func boolean(key string, x bool) meta    { return meta{key, gguf.Bool, 0, x} }
func text(key, x string) meta            { return meta{key, gguf.String, 0, x} }

// spmVocab is a small SentencePiece vocabulary: <unk> <s> </s>, the byte
// tokens, then the pieces, in order of decreasing score.
func spmVocab(pieces ...string) []meta {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{typeUnknown, typeControl, typeControl}
	for c := range 256 {
		tokens = append(tokens, "<0x"+strings.ToUpper(hex2(byte(c)))+">")
		types = append(types, typeByte)
	}
	scores := make([]float32, len(tokens))
	for i, p := range pieces {
		tokens = append(tokens, p)
		types = append(types, typeNormal)
		scores = append(scores, -float32(i))
	}
	return []meta{
		text("tokenizer.ggml.model", "llama"),
		strs("tokenizer.ggml.tokens", tokens...),
		{"tokenizer.ggml.scores", gguf.Array, gguf.Float32, scores},
		{"tokenizer.ggml.token_type", gguf.Array, gguf.Int32, types},
	}
}

func hex2(c byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[c>>4], h[c&15]})
}

func open(t *testing.T, kvs ...meta) (*Tokenizer, error) {
	t.Helper()
	f, err := gguf.Parse(ggufBytes(kvs...))
	if err != nil {
		t.Fatal(err)
	}
	return FromGGUF(f)
}

func TestSentencePieceMerges(t *testing.T) {
	// 259 is the first piece
	tok, err := open(t, spmVocab("▁", "a", "b", "c", "▁a", "ab", "▁ab", "bc", "abc")...)
	if err != nil {
		t.Fatal(err)
	}
	p := func(s string) int32 { id, _ := tok.ID(s); return id }
	for _, c := range []struct {
		text string
		want []int32
	}{
		{"", []int32{}},
		// ▁a (score -4) beats ab (-5); then ▁a+b is not a token but
		// ▁ab is formed from ▁a and b
		{"ab", []int32{p("▁ab")}},
		{"abc", []int32{p("▁ab"), p("c")}},
		{"bc", []int32{p("▁"), p("bc")}},
		{"a b", []int32{p("▁a"), p("▁"), p("b")}},
		// characters that are no piece fall back to their bytes
		{"é", []int32{p("▁"), 3 + 0xC3, 3 + 0xA9}},
		{"x\xff", []int32{p("▁"), 3 + 'x', 3 + 0xFF}},
		// a control token in the text, and text after it gets the prefix
		{"a<s>b", []int32{p("▁a"), 1, p("▁"), p("b")}},
	} {
		got := tok.Encode(c.text, false)
		if len(got) == 0 && len(c.want) == 0 {
			continue
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := tok.Encode("ab", true); got[0] != 1 {
		t.Errorf("Encode with special starts with %d, not BOS", got[0])
	}
	if got := tok.Decode(tok.Encode("a b abc", true)); got != "a b abc" {
		t.Errorf("round trip gives %q", got)
	}
}

func TestHostileMetadata(t *testing.T) {
	base := spmVocab("a")
	with := func(kvs ...meta) []meta {
		out := append([]meta{}, base...)
		for _, kv := range kvs {
			replaced := false
			for i := range out {
				if out[i].key == kv.key {
					out[i], replaced = kv, true
				}
			}
			if !replaced {
				out = append(out, kv)
			}
		}
		return out
	}
	without := func(key string) []meta {
		var out []meta
		for _, kv := range base {
			if kv.key != key {
				out = append(out, kv)
			}
		}
		return out
	}
	bpe := []meta{
		text("tokenizer.ggml.model", "gpt2"), text("tokenizer.ggml.pre", "gpt-2"),
		strs("tokenizer.ggml.tokens", "a", "b", "ab"), strs("tokenizer.ggml.merges", "a b"),
	}
	for _, c := range []struct {
		name string
		kvs  []meta
		err  string // "" loads
	}{
		{"no model", without("tokenizer.ggml.model"), "no such metadata key"},
		{"unknown model", with(text("tokenizer.ggml.model", "t5")), "unsupported tokenizer model"},
		{"no tokens", without("tokenizer.ggml.tokens"), "no such metadata key"},
		{"empty vocabulary", with(strs("tokenizer.ggml.tokens")), "no tokens"},
		{"too few scores", with(meta{"tokenizer.ggml.scores", gguf.Array, gguf.Float32, []float32{0}}), "1 scores"},
		{"scores not numbers", with(strs("tokenizer.ggml.scores", "x")), "scores"},
		{"too few types", with(meta{"tokenizer.ggml.token_type", gguf.Array, gguf.Int32, []int32{1}}), "1 token types"},
		{"types not int32", with(strs("tokenizer.ggml.token_type", "x")), "token_type"},
		{"duplicate token", with(strs("tokenizer.ggml.tokens", append(make([]string, 259), "a", "a")...),
			meta{"tokenizer.ggml.scores", gguf.Array, gguf.Float32, make([]float32, 261)},
			meta{"tokenizer.ggml.token_type", gguf.Array, gguf.Int32, make([]int32, 261)}), "duplicate token"},
		{"huge token", with(strs("tokenizer.ggml.tokens", append(make([]string, 259), strings.Repeat("x", MaxTokenLength+1))...),
			meta{"tokenizer.ggml.scores", gguf.Array, gguf.Float32, make([]float32, 260)},
			meta{"tokenizer.ggml.token_type", gguf.Array, gguf.Int32, make([]int32, 260)}), "bytes long"},
		{"BOS out of range keeps the default", with(u32("tokenizer.ggml.bos_token_id", 1<<30)), ""},
		{"negative BOS", with(meta{"tokenizer.ggml.bos_token_id", gguf.Int32, 0, int32(-5)}), "negative"},
		{"BOS of the wrong type", with(text("tokenizer.ggml.bos_token_id", "1")), "integer"},
		{"add_bos without BOS", append(bpe, boolean("tokenizer.ggml.add_bos_token", true)), "no BOS token"},
		{"add_eos without EOS", append(bpe, boolean("tokenizer.ggml.add_eos_token", true)), "no EOS token"},
		{"add_bos not a bool", with(u32("tokenizer.ggml.add_bos_token", 1)), "bool"},
		{"BPE without merges", bpe[:3], "without tokenizer.ggml.merges"},
		{"merges not strings", append(bpe[:3:3], meta{"tokenizer.ggml.merges", gguf.Array, gguf.Int32, []int32{1}}), "merges"},
		{"unknown pre-tokenizer", append([]meta{text("tokenizer.ggml.pre", "tekken")}, bpe[0], bpe[2], bpe[3]), "unsupported pre-tokenizer"},
		{"odd merges load", append(bpe[:3:3], strs("tokenizer.ggml.merges", "", " ", "ab", "a  b", "zz yy")), ""},
		{"BPE", bpe, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := gguf.Parse(ggufBytes(c.kvs...))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := FromGGUF(f)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("FromGGUF: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("FromGGUF loads; want an error with %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("FromGGUF: %v; want an error with %q", err, c.err)
			}
			if tok != nil {
				// whatever loads encodes and decodes anything
				for _, s := range []string{"", "ab a\xff<s>", strings.Repeat("ab ", 100)} {
					tok.Decode(tok.Encode(s, true))
				}
			}
		})
	}
}
