package gguf_test

import (
	"fmt"
	"log"

	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/gguf"
)

func Example() {
	f, err := gguf.Open("../../testdata/gguf/small.gguf")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	arch, _ := f.String("general.architecture")
	tokens, _ := f.Strings("tokenizer.ggml.tokens")
	fmt.Printf("%s, %d tokens, %d tensors\n", arch, len(tokens), len(f.Tensors()))

	// Shapes are in ggml's order: 256 columns, 2 rows.
	t, _ := f.Tensor("blk.0.attn_q.weight")
	fmt.Println(t.Name, t.Type, t.Shape, t.Size, "bytes")

	row := make([]float32, t.Shape[0])
	rowSize, _ := t.Type.RowSize(t.Shape[0])
	second := t.Bytes()[rowSize:]
	if err := ggml.Dequantize(t.Type, row, second); err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(row), "values of the second row")
	// Output:
	// llama, 8 tokens, 10 tensors
	// blk.0.attn_q.weight q4_K [256 2] 288 bytes
	// 256 values of the second row
}
