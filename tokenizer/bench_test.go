package tokenizer

import (
	"strings"
	"testing"
)

// benchText is ordinary text of about 1 MB: prose, code, numbers and
// several scripts.
var benchText = strings.Repeat("The quick brown fox jumps over the lazy dog; 1,234.56 items, "+
	"naïve café — 日本語のテキスト and Русский текст.\n\tfunc f(x int) int { return x*x }\n", 7000)

func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"llama-spm", "llama3-bpe", "gpt2-bpe"} {
		b.Run(name, func(b *testing.B) {
			tok := loadGGUF(b, name)
			b.SetBytes(int64(len(benchText)))
			var ids []int32
			for b.Loop() {
				ids = tok.AppendEncode(ids[:0], benchText, EncodeOptions{AddSpecial: true, ParseSpecial: true})
			}
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	tok := loadGGUF(b, "llama3-bpe")
	ids := tok.Encode(benchText, true)
	b.SetBytes(int64(len(benchText)))
	var out []byte
	for b.Loop() {
		out = tok.AppendDecode(out[:0], ids, DecodeOptions{})
	}
}
