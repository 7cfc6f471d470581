package llm_test

import (
	"fmt"
	"log"

	"github.com/berth-ml/berth/llm"
	"github.com/berth-ml/berth/weights/gguf"
)

// A GGUF file's config and the graph of a 4-token prompt.
func Example() {
	f, err := gguf.Open("../testdata/llm/llama-q4_0.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	c, err := llm.ConfigOf(f)
	if err != nil {
		log.Fatal(err)
	}
	g, err := llm.Graph(llm.GGUF(f), c, 4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d layers, %d heads (%d for keys and values) of %d, vocabulary %d\n", c.Arch, c.Layers, c.Heads, c.KVHeads, c.HeadDim, c.Vocab)
	fmt.Println(g.OpCounts()["PackedMatMul"], "packed products")
	// Output:
	// llama: 2 layers, 4 heads (2 for keys and values) of 16, vocabulary 288
	// 15 packed products
}
