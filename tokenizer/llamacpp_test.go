package tokenizer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berth-ml/berth/weights/gguf"
)

// The fixtures of testdata/tokenizer are written by
// scripts/gen_tokenizer_fixtures.py from llama.cpp's own answers.

var vocabularies = []string{"llama-spm", "llama-spm-nsp", "llama3-bpe", "qwen2-bpe", "gpt2-bpe",
	"gpt2-bpe+starcoder", "gpt2-bpe+default", "qwen2-bpe+llama-bpe"}

// textOrHex is a string that llama.cpp wrote, as text if it is UTF-8.
type textOrHex struct {
	Text *string `json:"text"`
	Hex  string  `json:"hex"`
}

func (x textOrHex) bytes() []byte {
	if x.Text != nil {
		return []byte(*x.Text)
	}
	b, _ := hex.DecodeString(x.Hex)
	return b
}

type answers struct {
	Name        string   `json:"name"`
	GGUF        string   `json:"gguf"` // for a variant: the file of another vocabulary
	Pre         string   `json:"pre"`  // its pre-tokenizer
	NTokens     int      `json:"n_tokens"`
	BOS         int32    `json:"bos"`
	EOS         int32    `json:"eos"`
	AddBOS      bool     `json:"add_bos"`
	AddEOS      bool     `json:"add_eos"`
	EOG         []int32  `json:"eog"`
	Pieces      string   `json:"pieces_sha256"`
	PiecesSpec  string   `json:"pieces_sha256_special"`
	DecodeModes []string `json:"decode_modes"`
	Cases       []struct {
		Hex          string      `json:"hex"`
		IDs          []int32     `json:"ids"`
		IDsNoSpecial []int32     `json:"ids_no_special"`
		IDsPlain     []int32     `json:"ids_plain"`
		Decode       []textOrHex `json:"decode"`
		DecodeText   textOrHex   `json:"decode_text"`
		Text         string      `json:"text"`
	} `json:"cases"`
}

func testdata(name string) string {
	return filepath.Join("..", "testdata", "tokenizer", name)
}

func gunzip(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadAnswers(t testing.TB, name string) *answers {
	t.Helper()
	b, err := os.ReadFile(testdata(name + ".json"))
	if err != nil {
		t.Fatal(err)
	}
	var a answers
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return &a
}

func loadGGUF(t testing.TB, name string) *Tokenizer {
	t.Helper()
	f, err := gguf.Parse(gunzip(t, testdata(name+".gguf.gz")))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// loadVariant loads the GGUF file of a.GGUF with the pre-tokenizer a.Pre.
func loadVariant(t testing.TB, a *answers) *Tokenizer {
	t.Helper()
	f, err := gguf.Parse(gunzip(t, testdata(a.GGUF+".gguf.gz")))
	if err != nil {
		t.Fatal(err)
	}
	s, err := readSpec(f)
	if err != nil {
		t.Fatal(err)
	}
	s.pre = a.Pre
	tok, err := build(s)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAgainstLlamaCpp(t *testing.T) {
	for _, name := range vocabularies {
		t.Run(name, func(t *testing.T) {
			a := loadAnswers(t, name)
			var tok *Tokenizer
			if a.GGUF != "" {
				tok = loadVariant(t, a)
			} else {
				tok = loadGGUF(t, name)
			}
			checkAnswers(t, tok, a)
		})
	}
}

func checkAnswers(t *testing.T, tok *Tokenizer, a *answers) {
	if tok.VocabSize() != a.NTokens || tok.BOS() != a.BOS || tok.EOS() != a.EOS ||
		tok.AddsBOS() != a.AddBOS || tok.AddsEOS() != a.AddEOS {
		t.Errorf("vocabulary: size %d bos %d eos %d add %v %v, llama.cpp: %d %d %d %v %v",
			tok.VocabSize(), tok.BOS(), tok.EOS(), tok.AddsBOS(), tok.AddsEOS(),
			a.NTokens, a.BOS, a.EOS, a.AddBOS, a.AddEOS)
	}
	if !slices.Equal(tok.EOG(), a.EOG) {
		t.Errorf("end-of-generation tokens %v, llama.cpp %v", tok.EOG(), a.EOG)
	}
	for _, special := range []bool{false, true} {
		h := sha256.New()
		for id := range tok.VocabSize() {
			p := tok.Piece(int32(id), special)
			binary.Write(h, binary.LittleEndian, uint32(len(p)))
			io.WriteString(h, p)
		}
		want := a.Pieces
		if special {
			want = a.PiecesSpec
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != want {
			t.Errorf("pieces (special %v) differ from llama.cpp's", special)
		}
	}
	bad := 0
	for _, c := range a.Cases {
		b, _ := hex.DecodeString(c.Hex)
		text := string(b)
		check := func(what string, got, want []int32) {
			if !slices.Equal(got, want) && bad < 20 {
				bad++
				t.Errorf("%s %q:\n got %v\nwant %v", what, text, got, want)
			}
		}
		check("Encode", tok.Encode(text, true), c.IDs)
		check("Encode without special", tok.Encode(text, false), c.IDsNoSpecial)
		check("AppendEncode plain", tok.AppendEncode(nil, text, EncodeOptions{AddSpecial: true}), c.IDsPlain)
		for i, mode := range []DecodeOptions{{}, {RenderSpecial: true}, {RemoveSpecial: true}, {RemoveSpecial: true, RenderSpecial: true}} {
			want := c.Decode[i].bytes()
			if got := tok.AppendDecode(nil, c.IDs, mode); !bytes.Equal(got, want) && bad < 20 {
				bad++
				t.Errorf("AppendDecode %+v of %q:\n got %q\nwant %q", mode, text, got, want)
			}
		}
		if got, want := tok.Decode(c.IDs), string(c.DecodeText.bytes()); got != want && bad < 20 {
			bad++
			t.Errorf("Decode of %q:\n got %q\nwant %q", text, got, want)
		}
	}
}

// TestJSONAgainstLlamaCpp reads the tokenizer.json form of two of the
// vocabularies and checks it against llama.cpp's answers for their GGUF
// form.
func TestJSONAgainstLlamaCpp(t *testing.T) {
	for _, name := range []string{"llama-spm-nsp", "llama3-bpe", "gpt2-bpe"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), gunzip(t, testdata(name+".tokenizer.json.gz")), 0o644); err != nil {
				t.Fatal(err)
			}
			config, err := os.ReadFile(testdata(name + ".tokenizer_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), config, 0o644); err != nil {
				t.Fatal(err)
			}
			tok, err := FromJSON(filepath.Join(dir, "tokenizer.json"))
			if err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, tok, loadAnswers(t, name))
		})
	}
}

// TestFullVocabularies checks the untrimmed LLaMA 3 and Qwen vocabularies
// against llama.cpp. Their GGUF files are too large to commit:
// scripts/gen_tokenizer_fixtures.py writes them to
// ~/.cache/berth/tokenizer-full, and BERTH_TOKENIZER_DATA names that
// folder.
func TestFullVocabularies(t *testing.T) {
	dir := os.Getenv("BERTH_TOKENIZER_DATA")
	if dir == "" {
		t.Skip("BERTH_TOKENIZER_DATA is not set (scripts/gen_tokenizer_fixtures.py writes the files)")
	}
	for _, name := range []string{"llama3-bpe", "qwen2-bpe"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(filepath.Join(dir, name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, tok, loadAnswers(t, filepath.Join("full", name)))
		})
	}
}
