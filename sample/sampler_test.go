package sample

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fixture is one case of testdata/sample/distributions.json, written by
// scripts/gen_sample_fixtures.py: the distribution after every filter
// and the temperature, computed by numpy from the documented definitions.
type fixture struct {
	Name    string
	Options Options
	Logits  []float32 // the finite logits, in id order
	NegInf  []int     `json:"neg_inf"` // the ids whose logit is -Inf
	Recent  []int32
	IDs     []int32   // the tokens that may be drawn, ascending
	Probs   []float32 // their probabilities, rounded to float32
}

// row is the fixture's row of logits.
func (f fixture) row() []float32 {
	row := make([]float32, len(f.Logits)+len(f.NegInf))
	next := f.Logits
	for i := range row {
		if slices.Contains(f.NegInf, i) {
			row[i] = float32(math.Inf(-1))
			continue
		}
		row[i], next = next[0], next[1:]
	}
	return row
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	data, err := os.ReadFile("../testdata/sample/distributions.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct{ Cases []fixture }
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) == 0 {
		t.Fatal("no cases")
	}
	return file.Cases
}

// distribution runs the filters of s on one row and returns the tokens
// that may be drawn, ascending, with their normalised probabilities.
func distribution(s *Sampler, logits []float32, recent []int32) ([]int32, []float64, error) {
	n, sum, err := s.filter(logits, recent)
	if err != nil {
		return nil, nil, err
	}
	ids := slices.Clone(s.cand[:n])
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(ids[a]) - int(ids[b]) })
	sorted, probs := make([]int32, n), make([]float64, n)
	for i, o := range order {
		sorted[i], probs[i] = ids[o], s.weight[o]/sum
	}
	return sorted, probs, nil
}

// eps32 is float32's unit roundoff.
const eps32 = 0x1p-24

// TestDistributions holds the filters up to numpy's independent
// implementation of the same definitions. The kept tokens must be the
// same; each probability may differ by float32 rounding: of the stored
// value (one ε) and of the scaled logits z = l/T that the softmax takes
// (a rounding of each z moves p_i by at most ε·(|z_i − z_max| + Σ_j p_j
// |z_j − z_max|) relative, bounded by 2ε·max|z − z_max|), with one more ε
// for the exponentials and the sum. A wrong temperature, filter or
// penalty moves the probabilities by orders of magnitude more.
func TestDistributions(t *testing.T) {
	for _, chunk := range []int{256, 2} {
		defer func(c int) { nucleusChunk = c }(nucleusChunk)
		nucleusChunk = chunk
		for _, f := range loadFixtures(t) {
			t.Run(f.Name, func(t *testing.T) {
				row := f.row()
				s, err := New(len(row), f.Options)
				if err != nil {
					t.Fatal(err)
				}
				ids, probs, err := distribution(s, row, f.Recent)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(ids, f.IDs) {
					t.Fatalf("chunk %d: kept %v, want %v", chunk, ids, f.IDs)
				}
				spread := 0.0 // max |z − z_max| over the kept tokens
				if T := float64(f.Options.Temperature); T > 0 {
					lo, hi := math.Inf(1), math.Inf(-1)
					for _, id := range ids {
						v := float64(s.logitOf(row, id))
						lo, hi = min(lo, v), max(hi, v)
					}
					spread = (hi - lo) / T
				}
				tol := eps32 * (3 + 2*spread)
				for i, p := range probs {
					want := float64(f.Probs[i])
					if math.Abs(p-want) > tol*want {
						t.Errorf("chunk %d: p(%d) = %.9g, want %.9g (±%.2g)", chunk, ids[i], p, want, tol*want)
					}
				}
			})
		}
	}
}

// logitOf is token id's logit after the penalty of the last filter call.
func (s *Sampler) logitOf(row []float32, id int32) float32 {
	if s.opt.penalises() {
		return s.penalised[id]
	}
	return row[id]
}

func TestNew(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name  string
		vocab int
		o     Options
		err   string // "" for none
	}{
		{"zero options", 10, Options{}, ""},
		{"defaults", 10, Defaults(1), ""},
		{"negative temperature is greedy", 10, Options{Temperature: -1}, ""},
		{"top-k over the vocabulary", 10, Options{TopK: 11}, ""},
		{"top-p 1 is off", 10, Options{TopP: 1}, ""},
		{"top-p over 1 is off", 10, Options{TopP: 1.5}, ""},
		{"top-p +Inf is off", 10, Options{TopP: inf}, ""},
		{"min-p 1", 10, Options{MinP: 1}, ""},
		{"penalty below 1", 10, Options{RepeatPenalty: 0.5}, ""},
		{"whole window", 10, Options{RepeatLastN: -1}, ""},
		{"vocabulary of one", 1, Options{}, ""},

		{"empty vocabulary", 0, Options{}, "vocabulary"},
		{"negative vocabulary", -3, Options{}, "vocabulary"},
		{"NaN temperature", 10, Options{Temperature: nan}, "temperature"},
		{"infinite temperature", 10, Options{Temperature: inf}, "temperature"},
		{"negative top-k", 10, Options{TopK: -1}, "top-k"},
		{"negative top-p", 10, Options{TopP: -0.1}, "top-p"},
		{"NaN top-p", 10, Options{TopP: nan}, "top-p"},
		{"negative min-p", 10, Options{MinP: -0.1}, "min-p"},
		{"min-p over 1", 10, Options{MinP: 1.1}, "min-p"},
		{"NaN min-p", 10, Options{MinP: nan}, "min-p"},
		{"negative penalty", 10, Options{RepeatPenalty: -1}, "penalty"},
		{"NaN penalty", 10, Options{RepeatPenalty: nan}, "penalty"},
		{"infinite penalty", 10, Options{RepeatPenalty: inf}, "penalty"},
		{"window below -1", 10, Options{RepeatLastN: -2}, "window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.vocab, c.o)
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("New: %v", err)
			case c.err == "" && s == nil:
				t.Fatal("New: no Sampler and no error")
			case c.err != "" && err == nil:
				t.Fatalf("New: no error, want one about %s", c.err)
			case c.err != "" && !strings.Contains(err.Error(), c.err):
				t.Fatalf("New: %v, want an error about %s", err, c.err)
			}
		})
	}
}

func TestSampleErrors(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		name   string
		o      Options
		logits []float32
		recent []int32
		err    string
	}{
		{"short row", Options{Temperature: 1}, []float32{1, 2}, nil, "2 logits"},
		{"long row", Options{}, []float32{1, 2, 3, 4}, nil, "4 logits"},
		{"NaN", Options{Temperature: 1}, []float32{1, float32(math.NaN()), 3}, nil, "token 1 is NaN"},
		{"NaN, greedy", Options{}, []float32{1, float32(math.NaN()), 3}, nil, "token 1 is NaN"},
		{"+Inf", Options{Temperature: 1}, []float32{1, 2, inf}, nil, "token 2 is +Inf"},
		{"+Inf, greedy", Options{}, []float32{inf, 2, 3}, nil, "token 0 is +Inf"},
		{"all -Inf", Options{Temperature: 1}, []float32{-inf, -inf, -inf}, nil, ErrNoCandidate.Error()},
		{"all -Inf, greedy", Options{}, []float32{-inf, -inf, -inf}, nil, ErrNoCandidate.Error()},
		{"recent token past the vocabulary", Options{Temperature: 1, RepeatPenalty: 2}, []float32{1, 2, 3}, []int32{0, 3}, "recent token 3"},
		{"negative recent token", Options{RepeatPenalty: 2}, []float32{1, 2, 3}, []int32{-1}, "recent token -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(3, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Sample(c.logits, c.recent); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("Sample: %v, want an error with %q", err, c.err)
			}
		})
	}
	// A token outside the window is not looked at, and all -Inf is the
	// sentinel.
	s, _ := New(3, Options{RepeatPenalty: 2, RepeatLastN: 1})
	if _, err := s.Sample([]float32{1, 2, 3}, []int32{99, 0}); err != nil {
		t.Errorf("a bad token outside the window: %v", err)
	}
	if _, err := s.Sample([]float32{-inf, -inf, -inf}, nil); !errors.Is(err, ErrNoCandidate) {
		t.Errorf("all -Inf: %v, want ErrNoCandidate", err)
	}
}

// TestEdgeCases checks the tokens each case may draw (the support of its
// distribution), and that Sample draws from them.
func TestEdgeCases(t *testing.T) {
	ninf := float32(math.Inf(-1))
	for _, c := range []struct {
		name   string
		o      Options
		logits []float32
		recent []int32
		want   []int32 // the tokens that may be drawn, ascending
	}{
		{"vocabulary of one", Options{Temperature: 1}, []float32{-3}, nil, []int32{0}},
		{"vocabulary of one, greedy", Options{}, []float32{-3}, nil, []int32{0}},
		{"vocabulary of one, every filter", Defaults(1), []float32{7}, []int32{0, 0}, []int32{0}},
		{"all -Inf but one", Options{Temperature: 5}, []float32{ninf, ninf, -40, ninf}, nil, []int32{2}},
		{"all -Inf but one, filters", Options{Temperature: 1, TopK: 3, TopP: 0.5, MinP: 0.5}, []float32{ninf, ninf, -40, ninf}, nil, []int32{2}},
		{"-Inf stays -Inf under the penalty", Options{Temperature: 1, RepeatPenalty: 0.01}, []float32{ninf, 1, 1}, []int32{0}, []int32{1, 2}},
		{"greedy ties take the lowest id", Options{}, []float32{1, 5, 2, 5, 5}, nil, []int32{1}},
		{"negative temperature is greedy", Options{Temperature: -2}, []float32{1, 5, 2, 6, 5}, nil, []int32{3}},
		{"top-k ties keep the lowest ids", Options{Temperature: 1, TopK: 2}, []float32{1, 5, 2, 5, 5}, nil, []int32{1, 3}},
		{"top-k 1 is greedy", Options{Temperature: 3, TopK: 1}, []float32{1, 5, 2, 6, 5}, nil, []int32{3}},
		{"top-k past the vocabulary", Options{Temperature: 1, TopK: 9}, []float32{1, 5, 2}, nil, []int32{0, 1, 2}},
		{"top-k past the candidates", Options{Temperature: 1, TopK: 3}, []float32{1, ninf, 2, ninf}, nil, []int32{0, 2}},
		{"top-p tiny keeps the most likely", Options{Temperature: 1, TopP: 1e-6}, []float32{1, 5, 2, 6, 5}, nil, []int32{3}},
		{"top-p tiny on a tie keeps the lower id", Options{Temperature: 1, TopP: 1e-6}, []float32{1, 6, 2, 6}, nil, []int32{1}},
		{"top-p of a half on two equal tokens", Options{Temperature: 1, TopP: 0.5}, []float32{0, 0}, nil, []int32{0}},
		{"top-p just over a half", Options{Temperature: 1, TopP: 0.500001}, []float32{0, 0}, nil, []int32{0, 1}},
		{"min-p 1 keeps the ties at the top", Options{Temperature: 1, MinP: 1}, []float32{1, 6, 2, 6}, nil, []int32{1, 3}},
		{"min-p on ratios", Options{Temperature: 1, MinP: 0.25}, []float32{0, float32(-math.Ln2), float32(-2.1 * math.Ln2), -10}, nil, []int32{0, 1}},
		{"penalty divides a positive logit", Options{RepeatPenalty: 2}, []float32{3, 2}, []int32{0}, []int32{1}},
		{"penalty multiplies a negative logit", Options{RepeatPenalty: 2}, []float32{-3, -4}, []int32{0}, []int32{1}},
		{"penalty once per distinct token", Options{RepeatPenalty: 2}, []float32{5, 2.4}, []int32{0, 0, 0}, []int32{0}},
		{"penalty only in the window", Options{RepeatPenalty: 2, RepeatLastN: 2}, []float32{5, 2.6, 0}, []int32{0, 2, 2}, []int32{0}},
		{"penalty on the whole of recent", Options{RepeatPenalty: 2, RepeatLastN: -1}, []float32{5, 2.6, 0}, []int32{0, 2, 2}, []int32{1}},
		{"penalty under 1 favours repeats", Options{RepeatPenalty: 0.5}, []float32{5, 2.6}, []int32{1}, []int32{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(len(c.logits), c.o)
			if err != nil {
				t.Fatal(err)
			}
			ids, _, err := distribution(s, c.logits, c.recent)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids, c.want) {
				t.Fatalf("may draw %v, want %v", ids, c.want)
			}
			for range 50 {
				tok, err := s.Sample(c.logits, c.recent)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(c.want, tok) {
					t.Fatalf("drew %d, not one of %v", tok, c.want)
				}
			}
		})
	}
}

// TestSampleLeavesInputs checks that Sample changes neither the logits
// nor the recent tokens it is given.
func TestSampleLeavesInputs(t *testing.T) {
	logits := randomLogits(rand.New(rand.NewPCG(1, 2)), 1000)
	recent := []int32{3, 5, 3, 999, 0}
	l, r := slices.Clone(logits), slices.Clone(recent)
	o := Defaults(7)
	o.RepeatPenalty = 1.3
	o.TopK = 0
	s, _ := New(len(logits), o)
	for range 5 {
		if _, err := s.Sample(logits, recent); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(logits, l) || !slices.Equal(recent, r) {
		t.Fatal("Sample changed its inputs")
	}
}

// TestSelectTop holds selectTop up to a full sort, on rows with many ties,
// sorted and reversed rows, and every kind of k.
func TestSelectTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows := map[string][]float32{}
	for _, n := range []int{1, 2, 17, 100, 1000, 5000} {
		random := randomLogits(rng, n)
		rows["random"+strconv.Itoa(n)] = random
		few := make([]float32, n) // many equal logits
		for i := range few {
			few[i] = float32(rng.IntN(4))
		}
		rows["few"+strconv.Itoa(n)] = few
		up := make([]float32, n)
		for i := range up {
			up[i] = float32(i)
		}
		rows["up"+strconv.Itoa(n)] = up
		rows["down"+strconv.Itoa(n)] = slices.Clone(up)
		slices.Reverse(rows["down"+strconv.Itoa(n)])
		rows["equal"+strconv.Itoa(n)] = make([]float32, n)
	}
	for name, l := range rows {
		n := len(l)
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		want := slices.Clone(all)
		sortCandidates(l, want)
		for _, k := range []int{0, 1, 2, n / 3, n / 2, n - 1, n, n + 1} {
			c := slices.Clone(all)
			rng.Shuffle(n, func(i, j int) { c[i], c[j] = c[j], c[i] })
			selectTop(l, c, k)
			got := slices.Clone(c[:min(max(k, 0), n)])
			sortCandidates(l, got)
			if !slices.Equal(got, want[:len(got)]) {
				t.Fatalf("%s, k %d: top %v, want %v", name, k, got, want[:len(got)])
			}
			slices.Sort(c)
			if !slices.Equal(c, all) {
				t.Fatalf("%s, k %d: not a permutation", name, k)
			}
		}
	}
}

// TestTopPChunks checks that ordering the nucleus a chunk at a time keeps
// the same tokens as ordering all of it, on rows large enough to take
// several chunks.
func TestTopPChunks(t *testing.T) {
	defer func(c int) { nucleusChunk = c }(nucleusChunk)
	rng := rand.New(rand.NewPCG(5, 6))
	for _, spread := range []float32{0.05, 0.5, 3} {
		l := randomLogits(rng, 20000)
		for i := range l {
			l[i] *= spread
		}
		for _, p := range []float32{0.01, 0.3, 0.9, 0.999} {
			o := Options{Temperature: 1, TopP: p}
			var want []int32
			for _, chunk := range []int{1 << 20, 256, 3} {
				nucleusChunk = chunk
				s, _ := New(len(l), o)
				ids, _, err := distribution(s, l, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want = ids
				} else if !slices.Equal(ids, want) {
					t.Fatalf("spread %v, top-p %v, chunk %d: %d tokens, want %d", spread, p, chunk, len(ids), len(want))
				}
			}
		}
	}
}

// TestDraws checks that the tokens drawn follow the distribution: 200000
// draws with a fixed seed from the fixture "top-k" (20 tokens), whose
// distribution TestDistributions holds to numpy's, against Pearson's
// chi-square at a significance of 10⁻⁴. It fails a wrong distribution:
// the same counts against the distribution at temperature 1 instead of
// 0.9 must be rejected.
func TestDraws(t *testing.T) {
	var f fixture
	for _, c := range loadFixtures(t) {
		if c.Name == "top-k" {
			f = c
		}
	}
	if f.Name == "" {
		t.Fatal("no fixture top-k")
	}
	row := f.row()
	s, err := New(len(row), f.Options)
	if err != nil {
		t.Fatal(err)
	}
	const draws = 200000
	counts := make([]float64, len(row))
	for range draws {
		tok, err := s.Sample(row, f.Recent)
		if err != nil {
			t.Fatal(err)
		}
		counts[tok]++
	}
	want := make([]float64, len(row))
	for i, id := range f.IDs {
		want[id] = float64(f.Probs[i])
	}
	limit := chiSquareLimit(len(f.IDs)-1, 3.719) // z of 10⁻⁴
	if x := chiSquare(counts, want, draws); x > limit {
		t.Errorf("chi-square %.1f over %.1f: the draws do not follow the distribution", x, limit)
	}

	// The power check: the distribution of the same tokens at T = 1.
	wrong := make([]float64, len(row))
	sum := 0.0
	for _, id := range f.IDs {
		wrong[id] = math.Exp(float64(row[id]))
		sum += wrong[id]
	}
	for i := range wrong {
		wrong[i] /= sum
	}
	if x := chiSquare(counts, wrong, draws); x <= limit {
		t.Errorf("chi-square %.1f against a wrong distribution is within %.1f: the test is too weak", x, limit)
	}
}

// chiSquare is Pearson's statistic of counts against probabilities p; a
// count where p is 0 makes it infinite.
func chiSquare(counts, p []float64, draws float64) float64 {
	x := 0.0
	for i, c := range counts {
		e := p[i] * draws
		if e == 0 {
			if c != 0 {
				return math.Inf(1)
			}
			continue
		}
		x += (c - e) * (c - e) / e
	}
	return x
}

// chiSquareLimit is the upper quantile of the chi-square distribution with
// df degrees of freedom at the standard normal quantile z, by Wilson and
// Hilferty's cube-root approximation.
func chiSquareLimit(df int, z float64) float64 {
	k := float64(df)
	a := 2 / (9 * k)
	return k * math.Pow(1-a+z*math.Sqrt(a), 3)
}

func TestSeed(t *testing.T) {
	logits := randomLogits(rand.New(rand.NewPCG(7, 8)), 500)
	o := Options{Temperature: 1.5, Seed: 42}
	run := func(s *Sampler) []int32 {
		out := make([]int32, 64)
		for i := range out {
			tok, err := s.Sample(logits, out[:i])
			if err != nil {
				t.Fatal(err)
			}
			out[i] = tok
		}
		return out
	}
	a, _ := New(len(logits), o)
	b, _ := New(len(logits), o)
	first := run(a)
	if second := run(b); !slices.Equal(first, second) {
		t.Fatalf("two samplers of seed 42 differ:\n%v\n%v", first, second)
	}
	a.Reset(42)
	if again := run(a); !slices.Equal(first, again) {
		t.Fatalf("Reset(42) does not replay:\n%v\n%v", first, again)
	}
	a.Reset(43)
	if other := run(a); slices.Equal(first, other) {
		t.Fatal("seeds 42 and 43 draw the same 64 tokens")
	}
}

// TestNoAllocation checks that Sample allocates nothing, whatever the
// options.
func TestNoAllocation(t *testing.T) {
	logits := randomLogits(rand.New(rand.NewPCG(9, 10)), 32000)
	recent := make([]int32, 100)
	for i := range recent {
		recent[i] = int32(i * 37 % 32000)
	}
	for name, o := range benchOptions {
		s, err := New(len(logits), o)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := s.Sample(logits, recent); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations a call", name, allocs)
		}
	}
}

// randomLogits is a row shaped roughly like a language model's: most
// logits near each other, a few far above.
func randomLogits(rng *rand.Rand, n int) []float32 {
	l := make([]float32, n)
	for i := range l {
		l[i] = float32(rng.NormFloat64() * 2)
	}
	for range max(n/1000, 1) {
		l[rng.IntN(n)] += 10 + float32(rng.Float64()*5)
	}
	return l
}
