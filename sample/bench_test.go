package sample

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// benchOptions are the option sets the benchmark and the allocation test
// run.
var benchOptions = map[string]Options{
	"greedy":   {},
	"defaults": Defaults(1),
	"penalty":  {Temperature: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1.1, Seed: 1},
	"top-p":    {Temperature: 0.8, TopP: 0.95, Seed: 1},
	"min-p":    {Temperature: 0.8, MinP: 0.05, Seed: 1},
	"plain":    {Temperature: 1, Seed: 1},
}

// BenchmarkSample samples one token from rows of LLaMA 2's (32000) and
// Qwen 2's (151936) vocabulary, with 64 recent tokens.
func BenchmarkSample(b *testing.B) {
	for _, vocab := range []int{32000, 151936} {
		rng := rand.New(rand.NewPCG(11, 12))
		logits := randomLogits(rng, vocab)
		recent := make([]int32, 64)
		for i := range recent {
			recent[i] = int32(rng.IntN(vocab))
		}
		for _, name := range []string{"greedy", "defaults", "penalty", "top-p", "min-p", "plain"} {
			b.Run(name+"/"+strconv.Itoa(vocab), func(b *testing.B) {
				s, err := New(vocab, benchOptions[name])
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.Sample(logits, recent); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
