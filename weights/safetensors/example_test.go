package safetensors_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/weights/safetensors"
)

func Example() {
	// A folder of shards with its index and config.json.
	c, err := safetensors.Open("../../testdata/safetensors/sharded")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	for _, t := range c.Tensors() {
		fmt.Println(t.Name, t.DType, t.Shape)
	}

	var config struct {
		HiddenSize int `json:"hidden_size"`
	}
	if err := json.Unmarshal(c.Config(), &config); err != nil {
		log.Fatal(err)
	}
	fmt.Println("hidden size", config.HiddenSize)

	norm, _ := c.Tensor("model.norm.weight")
	b := norm.Bytes() // little-endian float32s, read in place from the mapping
	fmt.Println(dtype.F32FromBF16(uint16(b[2])|uint16(b[3])<<8), len(b), "bytes")
	// Output:
	// model.embed_tokens.weight F32 [4 8]
	// model.layers.0.weight BF16 [8 8]
	// lm_head.weight F16 [4 8]
	// model.norm.weight F32 [8]
	// hidden size 8
	// 1 32 bytes
}
