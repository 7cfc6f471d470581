package sample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrNoCandidate is returned by Sample for a row of logits that leaves no
// token to choose: every logit -Inf, before or after the penalty.
var ErrNoCandidate = errors.New("every logit is -Inf: no token can be chosen")

// A Sampler chooses tokens for one generation. It is not safe for
// concurrent use; a generation per goroutine takes a Sampler each.
type Sampler struct {
	opt    Options
	window int // tokens the penalty looks at; -1 all

	// Scratch for one row, allocated by New for the whole vocabulary.
	penalised []float32 // the logits after the penalty
	cand      []int32   // candidate ids; the first n are alive
	weight    []float64 // unnormalised probability of cand[i]
	seen      []uint32  // seen[t] == stamp: t was penalised this row
	stamp     uint32

	pcg rand.PCG
}

// pcgStream is the second word of the PCG seed; Options.Seed is the
// first.
const pcgStream = 0x9e3779b97f4a7c15

// New returns a Sampler for rows of vocab logits, or an error naming the
// first option out of range.
func New(vocab int, o Options) (*Sampler, error) {
	if vocab < 1 {
		return nil, fmt.Errorf("vocabulary of %d tokens: a row needs at least one", vocab)
	}
	if int64(vocab) > math.MaxInt32 {
		return nil, fmt.Errorf("vocabulary of %d tokens: ids are int32", vocab)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	s := &Sampler{
		opt:    o,
		window: o.RepeatLastN,
		cand:   make([]int32, vocab),
		weight: make([]float64, vocab),
	}
	if s.window == 0 {
		s.window = DefaultRepeatLastN
	}
	if o.penalises() {
		s.penalised = make([]float32, vocab)
		s.seen = make([]uint32, vocab)
	}
	s.Reset(o.Seed)
	return s, nil
}

// Reset reseeds the generator: the draws that follow are those of a new
// Sampler with this seed.
func (s *Sampler) Reset(seed uint64) {
	s.opt.Seed = seed
	s.pcg.Seed(seed, pcgStream)
}

// Options returns the options the Sampler was made with (and the seed of
// the last Reset).
func (s *Sampler) Options() Options { return s.opt }

// Sample chooses the next token from one row of logits (one per token of
// the vocabulary), given the tokens so far that the repetition penalty
// looks at (oldest first; only the last RepeatLastN count). It reads but
// never changes logits and recent, and allocates nothing.
//
// It returns an error for a row of the wrong length, a NaN or +Inf logit,
// a recent token outside the vocabulary, or no token to choose
// (ErrNoCandidate).
func (s *Sampler) Sample(logits []float32, recent []int32) (int32, error) {
	n, sum, err := s.filter(logits, recent)
	if err != nil {
		return 0, err
	}
	if s.opt.greedy() {
		return s.cand[0], nil
	}
	u := float64(s.pcg.Uint64()>>11) * 0x1p-53 * sum
	cum := 0.0
	last := 0
	for i, w := range s.weight[:n] {
		if w == 0 {
			continue
		}
		cum += w
		if u < cum {
			return s.cand[i], nil
		}
		last = i
	}
	// u rounded up to sum: the last token of positive weight.
	return s.cand[last], nil
}

// filter runs the chain on one row. It leaves the n tokens that may be
// drawn in s.cand[:n] and their unnormalised probabilities, which sum to
// sum, in s.weight[:n]. Greedy options leave the argmax alone, of weight 1.
func (s *Sampler) filter(logits []float32, recent []int32) (n int, sum float64, err error) {
	if len(logits) != len(s.cand) {
		return 0, 0, fmt.Errorf("%d logits for a vocabulary of %d tokens", len(logits), len(s.cand))
	}
	l := logits
	if s.opt.penalises() {
		if l, err = s.penalise(logits, recent); err != nil {
			return 0, 0, err
		}
	}
	if s.opt.greedy() {
		best, err := argmax(l)
		if err != nil {
			return 0, 0, err
		}
		s.cand[0], s.weight[0] = best, 1
		return 1, 1, nil
	}

	// Candidates: the tokens that are not -Inf, in id order.
	for i, v := range l {
		if !(v < posInf) {
			return 0, 0, badLogit(i, v)
		}
		if v > negInf {
			s.cand[n] = int32(i)
			n++
		}
	}
	if n == 0 {
		return 0, 0, ErrNoCandidate
	}
	sorted := false // whether cand[:n] is in candidate order
	if k := s.opt.TopK; k > 0 && k < n {
		selectTop(l, s.cand[:n], k)
		n = k
		sortCandidates(l, s.cand[:n])
		sorted = true
	}
	if s.opt.nucleus() && n > 1 {
		n = topP(l, s.cand[:n], sorted, float64(s.opt.TopP))
		sorted = true
	}
	top := s.cand[0] // the most likely candidate
	if !sorted {
		top = first(l, s.cand[:n])
	}
	maxLogit := float64(l[top])
	if s.opt.MinP > 0 && n > 1 {
		floor := maxLogit + math.Log(float64(s.opt.MinP))
		kept := 0
		for _, t := range s.cand[:n] {
			if float64(l[t]) >= floor {
				s.cand[kept] = t
				kept++
			}
		}
		n = kept
	}
	t := float64(s.opt.Temperature)
	for i, c := range s.cand[:n] {
		w := math.Exp((float64(l[c]) - maxLogit) / t)
		s.weight[i] = w
		sum += w
	}
	return n, sum, nil
}

// penalise copies logits into s.penalised with the repetition penalty
// applied to each distinct token of the window of recent, and returns the
// copy.
func (s *Sampler) penalise(logits []float32, recent []int32) ([]float32, error) {
	copy(s.penalised, logits)
	if s.window >= 0 && len(recent) > s.window {
		recent = recent[len(recent)-s.window:]
	}
	s.stamp++
	if s.stamp == 0 { // wrapped: forget every old stamp
		clear(s.seen)
		s.stamp = 1
	}
	p := s.opt.RepeatPenalty
	for _, t := range recent {
		if t < 0 || int(t) >= len(s.penalised) {
			return nil, fmt.Errorf("recent token %d is outside the vocabulary of %d", t, len(s.penalised))
		}
		if s.seen[t] == s.stamp {
			continue
		}
		s.seen[t] = s.stamp
		if v := s.penalised[t]; v > 0 {
			s.penalised[t] = v / p
		} else {
			s.penalised[t] = v * p
		}
	}
	return s.penalised, nil
}

var (
	posInf = float32(math.Inf(1))
	negInf = float32(math.Inf(-1))
)

// badLogit is the error for a NaN or +Inf logit.
func badLogit(i int, v float32) error {
	return fmt.Errorf("logit of token %d is %v", i, v)
}

// argmax returns the token of highest logit, the lowest id of equal ones.
func argmax(l []float32) (int32, error) {
	best := -1
	high := negInf
	for i, v := range l {
		if !(v < posInf) {
			return 0, badLogit(i, v)
		}
		if v > high {
			best, high = i, v
		}
	}
	if best < 0 {
		return 0, ErrNoCandidate
	}
	return int32(best), nil
}

// first returns the first of the tokens c in candidate order.
func first(l []float32, c []int32) int32 {
	top := c[0]
	for _, t := range c[1:] {
		if before(l, t, top) {
			top = t
		}
	}
	return top
}

// nucleusChunk is how many candidates topP orders first, in a row of more
// than four times as many; each further chunk is four times the last.
var nucleusChunk = 256

// topP reorders the candidates c into candidate order as far as it needs
// to and returns how many of them top-p keeps: the shortest prefix whose
// probabilities (the softmax of all of c) sum to at least p, or all of c
// if rounding leaves the sum short. sorted says c is in candidate order
// already.
func topP(l []float32, c []int32, sorted bool, p float64) int {
	top := c[0]
	if !sorted {
		top = first(l, c)
	}
	maxLogit := float64(l[top])
	z := 0.0
	for _, t := range c {
		z += math.Exp(float64(l[t]) - maxLogit)
	}
	target := p * z
	// Order the candidates a chunk at a time, the most likely first: the
	// nucleus is usually a few hundred tokens of a vocabulary of 10⁵.
	chunk := nucleusChunk
	if sorted || len(c) <= 4*chunk {
		chunk = len(c)
	}
	cum := 0.0
	for done := 0; done < len(c); chunk *= 4 {
		end := min(done+chunk, len(c))
		if !sorted {
			selectTop(l, c[done:], end-done)
			sortCandidates(l, c[done:end])
		}
		for i := done; i < end; i++ {
			cum += math.Exp(float64(l[c[i]]) - maxLogit)
			if cum >= target {
				return i + 1
			}
		}
		done = end
	}
	return len(c)
}
