package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

func TestParseJSON(t *testing.T) {
	const byteLevel = `"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}`
	model := func(vocab, merges string) string {
		return `"model": {"type": "BPE", "vocab": {` + vocab + `}, "merges": [` + merges + `]}`
	}
	good := model(`"a": 0, "b": 1, "ab": 2, "Ġ": 3`, `"a b"`)
	for _, c := range []struct {
		name, json, config string
		err                string // "" parses
	}{
		{"not JSON", `{`, "", "unexpected end"},
		{"WordPiece", `{` + byteLevel + `, "model": {"type": "WordPiece"}}`, "", "only BPE"},
		{"byte fallback", `{` + byteLevel + `, "model": {"type": "BPE", "byte_fallback": true}}`, "", "byte fallback"},
		{"lowercase normalizer", `{"normalizer": {"type": "Lowercase"}, ` + byteLevel + `, ` + good + `}`, "", "normalizer"},
		{"no pre-tokenizer", `{` + good + `}`, "", "no pre-tokenizer"},
		{"prefix space", `{"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": true}, ` + good + `}`, "", "not supported"},
		{"unknown expression", `{"pre_tokenizer": {"type": "Sequence", "pretokenizers": [
			{"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Isolated"},
			{"type": "ByteLevel", "use_regex": false}]}, ` + good + `}`, "", "expression"},
		{"negative id", `{` + byteLevel + `, ` + model(`"a": -1`, ``) + `}`, "", "id -1"},
		{"huge id", `{` + byteLevel + `, ` + model(`"a": 1000000000000`, ``) + `}`, "", "more than"},
		{"two tokens, one id", `{` + byteLevel + `, ` + model(`"a": 0, "b": 0`, ``) + `}`, "", "both"},
		{"added token on another's id", `{"added_tokens": [{"id": 0, "content": "<s>", "special": true}], ` + byteLevel + `, ` + good + `}`, "", "both"},
		{"bad merge", `{` + byteLevel + `, ` + model(`"a": 0`, `1`) + `}`, "", "merge 0"},
		{"bad config", `{` + byteLevel + `, ` + good + `}`, `{"bos_token": 5}`, "tokenizer_config"},
		{"add_bos without BOS", `{` + byteLevel + `, ` + good + `}`, `{"add_bos_token": true}`, "no BOS"},
		{"good", `{"added_tokens": [{"id": 5, "content": "<|end|>", "special": false}], ` + byteLevel + `, ` + good + `}`,
			`{"eos_token": {"content": "<|end|>"}}`, ""},
		{"pair merges", `{` + byteLevel + `, ` + model(`"a": 0, "b": 1, "ab": 2, "Ġ": 3`, `["a", "b"]`) + `}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var config []byte
			if c.config != "" {
				config = []byte(c.config)
			}
			tok, err := ParseJSON([]byte(c.json), config)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("ParseJSON: %v", err)
			case c.err != "" && err == nil:
				t.Fatalf("ParseJSON succeeds; want an error with %q", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("ParseJSON: %v; want an error with %q", err, c.err)
			}
			if tok == nil {
				return
			}
			if got := tok.Encode("ab ab", false); !slices.Equal(got, []int32{2, 3, 2}) && c.name == "pair merges" {
				t.Errorf("Encode = %v", got)
			}
			if c.name == "good" {
				// the gap at id 4 is filled, <|end|> looks special
				if tok.VocabSize() != 6 || tok.Token(4) != "[PAD4]" || !tok.IsControl(5) ||
					tok.EOS() != 5 || tok.BOS() != None || !tok.IsEOG(5) {
					t.Errorf("size %d, token 4 %q, control %v, EOS %d, BOS %d", tok.VocabSize(), tok.Token(4),
						tok.IsControl(5), tok.EOS(), tok.BOS())
				}
			}
		})
	}
}
