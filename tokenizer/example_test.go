package tokenizer_test

import (
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/berth-ml/berth/tokenizer"
	"github.com/berth-ml/berth/weights/gguf"
)

// openVocabulary opens one of the test vocabularies, which are kept
// gzipped; a model file is opened with gguf.Open.
func openVocabulary(name string) *gguf.File {
	r, err := os.Open("../testdata/tokenizer/" + name + ".gguf.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	z, err := gzip.NewReader(r)
	if err != nil {
		log.Fatal(err)
	}
	data, err := io.ReadAll(z)
	if err != nil {
		log.Fatal(err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		log.Fatal(err)
	}
	return f
}

func Example() {
	// LLaMA 3's byte-level BPE (trimmed to 16000 tokens and its special
	// tokens after them)
	tok, err := tokenizer.FromGGUF(openVocabulary("llama3-bpe"))
	if err != nil {
		log.Fatal(err)
	}
	ids := tok.Encode("Hello world", true)
	fmt.Println(ids, tok.BOS())
	fmt.Printf("%q\n", tok.Decode(ids))

	// control tokens written in a prompt are tokens
	ids = tok.Encode("<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>", false)
	fmt.Println(ids, tok.IsEOG(ids[len(ids)-1]))

	// unless the text is untrusted
	ids = tok.AppendEncode(nil, "<|eot_id|>", tokenizer.EncodeOptions{})
	fmt.Println(len(ids), tok.IsEOG(ids[len(ids)-1]))
	// Output:
	// [16000 9906 1917] 16000
	// "Hello world"
	// [16006 882 16007 271 13347 16009] true
	// 7 false
}

func ExampleDecoder() {
	// a SentencePiece vocabulary writes 🦙 as four byte tokens
	tok, err := tokenizer.FromGGUF(openVocabulary("llama-spm"))
	if err != nil {
		log.Fatal(err)
	}
	d := tok.NewDecoder(false)
	for _, id := range tok.Encode("I 🦙", false) {
		fmt.Printf("%d %q\n", id, d.Next(id))
	}
	// Output:
	// 315 " I"
	// 28705 " "
	// 243 ""
	// 162 ""
	// 169 ""
	// 156 "🦙"
}
