package sample_test

import (
	"fmt"
	"log"
	"math"

	"github.com/berth-ml/berth/sample"
)

func Example() {
	// A model's logits over a vocabulary of six tokens; token 4 is
	// forbidden.
	logits := []float32{1.5, -0.3, 3.2, 3.1, float32(math.Inf(-1)), 0.4}

	// Greedy: the most likely token.
	greedy, err := sample.New(len(logits), sample.Options{})
	if err != nil {
		log.Fatal(err)
	}
	tok, _ := greedy.Sample(logits, nil)
	fmt.Println("greedy:", tok)

	// Sampling, with a repetition penalty on what was generated so far.
	s, err := sample.New(len(logits), sample.Options{
		Temperature:   0.8,
		TopK:          3,
		TopP:          0.95,
		RepeatPenalty: 1.5,
		Seed:          42,
	})
	if err != nil {
		log.Fatal(err)
	}
	var generated []int32
	for range 10 {
		// A real generation runs the model on each new token for the next
		// row of logits; here the row stays the same.
		tok, err := s.Sample(logits, generated)
		if err != nil {
			log.Fatal(err)
		}
		generated = append(generated, tok)
	}
	fmt.Println("sampled:", generated)
	// Output:
	// greedy: 2
	// sampled: [2 2 3 2 3 0 2 3 2 2]
}

func ExampleSampler_Reset() {
	logits := []float32{0, 0, 0, 0}
	s, err := sample.New(len(logits), sample.Defaults(7))
	if err != nil {
		log.Fatal(err)
	}
	draw := func() (ids []int32) {
		for range 6 {
			tok, _ := s.Sample(logits, nil)
			ids = append(ids, tok)
		}
		return ids
	}
	first := draw()
	s.Reset(7)
	fmt.Println(first, draw())
	// Output:
	// [1 0 2 1 3 3] [1 0 2 1 3 3]
}
