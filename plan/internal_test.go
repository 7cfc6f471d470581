package plan

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// union turns byte ranges into the sorted, disjoint, non-touching ranges
// that cover the same bytes.
func union(spans []span) [][2]int64 {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b span) int { return int(a.off - b.off) })
	var out [][2]int64
	for _, s := range spans {
		if n := len(out); n > 0 && s.off <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s.end)
			continue
		}
		out = append(out, [2]int64{s.off, s.end})
	}
	return out
}

func TestTimeIndexFindsWhatMeets(t *testing.T) {
	type stored struct {
		s, e int
		sp   span
	}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 6))
		steps := 1 + rng.IntN(70)
		x := newTimeIndex(steps)
		var all []stored
		for range 3 {
			x.reset()
			all = all[:0]
			for range rng.IntN(120) {
				s := rng.IntN(steps)
				e := s + rng.IntN(steps-s)
				off := rng.Int64N(1000)
				sp := span{off, off + 1 + rng.Int64N(100), e, e}
				x.insert(sp, s, e)
				all = append(all, stored{s, e, sp})

				qs := rng.IntN(steps)
				qe := qs + rng.IntN(steps-qs)
				var want []span
				for _, a := range all {
					if a.s <= qe && qs <= a.e {
						want = append(want, a.sp)
					}
				}
				got := merge(nil, x.meeting(nil, qs, qe))
				if !slices.IsSortedFunc(got, func(a, b span) int { return int(a.off - b.off) }) {
					t.Fatalf("seed %d: runs out of order: %v", seed, got)
				}
				if !slices.Equal(union(got), union(want)) {
					t.Fatalf("seed %d: [%d, %d] meets %v, want %v", seed, qs, qe, union(got), union(want))
				}
			}
		}
	}
}

func TestFit(t *testing.T) {
	r := &rect{start: 5, end: 6, size: 10}
	dying := func(off, end int64, dies int) span { return span{off, end, dies, dies} }
	tests := []struct {
		name     string
		spans    []span
		twoSided bool
		want     int64
	}{
		{"nothing placed", nil, false, 0},
		{"on top", []span{dying(0, 30, 9)}, false, 30},
		{"smallest gap that holds it", []span{dying(0, 10, 9), dying(30, 40, 9), dying(52, 60, 9), dying(75, 80, 9)}, false, 40},
		{"lowest of equal gaps", []span{dying(12, 20, 9), dying(32, 40, 9)}, false, 0},
		{"gaps too small", []span{dying(5, 10, 9), dying(15, 20, 9)}, false, 20},
		{"overlapping spans", []span{dying(0, 50, 9), dying(10, 20, 9), dying(60, 70, 9)}, false, 50},
		{"two-sided: at the top of the arena", []span{dying(0, 30, 9)}, true, 90},
		{"two-sided: above what dies with it", []span{dying(0, 30, 6), dying(60, 100, 9)}, true, 30},
		{"two-sided: below what dies with it", []span{dying(0, 30, 9), dying(60, 100, 6)}, true, 50},
		{"two-sided: above the ceiling when full", []span{dying(0, 95, 6)}, true, 95},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fit(tt.spans, r, tt.twoSided, 100); got != tt.want {
				t.Fatalf("fit = %d, want %d", got, tt.want)
			}
		})
	}
}

// Takeovers follow the schedule's part of the rule whatever the predicate
// says: here one that allows everything.
func TestInPlaceTakeover(t *testing.T) {
	always := func(*Problem, int, int, int) bool { return true }
	root := func(name string) Tensor { return Tensor{Name: name, Size: 64} }
	// x → a → b (graph output) → c (graph output), and a also writes s,
	// which nobody reads.
	p := &Problem{
		Tensors: []Tensor{root("x"), root("a"), root("s"), root("b"), root("c")},
		Steps: []Step{
			{Op: "Relu", Inputs: []int{0}, Outputs: []int{1, 2}},
			{Op: "Relu", Inputs: []int{1}, Outputs: []int{3}},
			{Op: "Relu", Inputs: []int{3}, Outputs: []int{4}},
		},
		Inputs:  []int{0},
		Outputs: []int{3, 4},
	}
	if err := p.check(); err != nil {
		t.Fatal(err)
	}
	lv := analyze(p, []int{0, 1, 2}, true, always)
	// a may not take x's slot, a graph input, nor s; b takes a's, and c
	// may not take b's, which is a graph output.
	if want := []int{0, 1, 2, 1, 4}; !slices.Equal(lv.root, want) {
		t.Fatalf("roots %v, want %v", lv.root, want)
	}
	if lv.start[1] != 0 || lv.end[1] != 2 {
		t.Fatalf("a's slot lives [%d, %d], want [0, 2]", lv.start[1], lv.end[1])
	}
	if off := analyze(p, []int{0, 1, 2}, true, nil); !slices.Equal(off.root, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("with in-place off, roots %v", off.root)
	}
}
