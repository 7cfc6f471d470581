package sample

import (
	"fmt"
	"math"
)

// Options are what a user chooses about sampling. The zero value samples
// greedily: Temperature 0, no filter, no penalty.
type Options struct {
	// Temperature divides the logits before the final softmax. 0 or less
	// means greedy: the token of highest logit, the lowest id of equal
	// ones. It may not be NaN or ±Inf.
	Temperature float32

	// TopK keeps only the K candidates of highest logit; 0 turns it
	// off, as does a K at least the vocabulary. It may not be negative.
	TopK int

	// TopP keeps the smallest set of most likely candidates whose
	// probabilities sum to at least TopP (nucleus sampling). 0 and
	// anything from 1 up (+Inf too) turn it off; it may not be negative
	// or NaN.
	TopP float32

	// MinP keeps only the candidates at least MinP times as likely as the
	// most likely one. 0 turns it off; it must lie in [0, 1].
	MinP float32

	// RepeatPenalty penalises the tokens of the recent window given to
	// Sample, llama.cpp's way: a positive logit is divided by it, any
	// other multiplied. 0 and 1 turn it off; values between 0 and 1
	// favour repeats instead. It may not be negative, NaN or ±Inf.
	RepeatPenalty float32

	// RepeatLastN is how many of the most recent tokens the penalty looks
	// at: 0 means 64 (llama.cpp's default), -1 all the tokens given.
	RepeatLastN int

	// Seed seeds the generator the tokens are drawn with.
	Seed uint64
}

// Defaults returns llama.cpp's default options (as of its common
// sampling parameters): temperature 0.8, top-k 40, top-p 0.95, min-p 0.05,
// no repetition penalty, a window of 64 tokens, and the given seed.
func Defaults(seed uint64) Options {
	return Options{
		Temperature:   0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		RepeatPenalty: 1,
		RepeatLastN:   64,
		Seed:          seed,
	}
}

// DefaultRepeatLastN is the penalty window that RepeatLastN 0 stands for.
const DefaultRepeatLastN = 64

// check reports the first option out of its range.
func (o Options) check() error {
	bad := func(v float32) bool { return math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) }
	switch {
	case bad(o.Temperature):
		return fmt.Errorf("temperature %v is not a finite number", o.Temperature)
	case o.TopK < 0:
		return fmt.Errorf("top-k %d is negative", o.TopK)
	case o.TopP < 0 || math.IsNaN(float64(o.TopP)):
		return fmt.Errorf("top-p %v is not 0 or more", o.TopP)
	case !(o.MinP >= 0 && o.MinP <= 1):
		return fmt.Errorf("min-p %v is not in [0, 1]", o.MinP)
	case o.RepeatPenalty < 0 || bad(o.RepeatPenalty):
		return fmt.Errorf("repeat penalty %v is not a finite number 0 or more", o.RepeatPenalty)
	case o.RepeatLastN < -1:
		return fmt.Errorf("repeat window %d is below -1 (all the recent tokens)", o.RepeatLastN)
	}
	return nil
}

// greedy reports whether the options take the argmax.
func (o Options) greedy() bool { return o.Temperature <= 0 }

// penalises reports whether the repetition penalty is on.
func (o Options) penalises() bool { return o.RepeatPenalty != 0 && o.RepeatPenalty != 1 }

// nucleus reports whether top-p is on.
func (o Options) nucleus() bool { return o.TopP > 0 && o.TopP < 1 }
