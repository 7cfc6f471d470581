package berth_test

import (
	"context"
	"fmt"

	"github.com/berth-ml/berth"
)

func Example() {
	m, err := berth.Load("testdata/models/resnet/model.onnx")
	if err != nil {
		panic(err)
	}
	defer m.Close()
	exe, err := berth.Compile(m, berth.CPU, berth.Options{})
	if err != nil {
		panic(err)
	}
	s, err := exe.NewSession()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	image, _ := berth.NewTensor("image", []int64{1, 3, 32, 32}, make([]float32, 3*32*32))
	outs, err := s.Run(context.Background(), image)
	if err != nil {
		panic(err)
	}
	fmt.Println(outs[0].Name, outs[0].DType, outs[0].Shape)
	// Output: logits float32 [1 10]
}

// A language model generates text a token at a time over its cache of
// keys and values; here greedily, from token ids, on a small model with
// random weights.
func ExampleModel_NewGenerator() {
	m, err := berth.Load("testdata/llm/llama-f32.gguf")
	if err != nil {
		panic(err)
	}
	defer m.Close()
	g, err := m.NewGenerator(berth.GeneratorOptions{Context: 64})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	var stats berth.GenerationStats
	n := 0
	for _, err := range g.Generate(context.Background(), []int32{1, 200, 42}, berth.Generation{MaxTokens: 8, Stats: &stats}) {
		if err != nil {
			panic(err)
		}
		n++
	}
	fmt.Printf("%d tokens after a prompt of %d; the cache holds %d positions of %d\n", n, stats.PromptTokens, g.Position(), g.Context())
	// Output: 8 tokens after a prompt of 3; the cache holds 10 positions of 64
}
