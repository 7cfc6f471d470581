package cpu

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPairs compiles the mobilenet_pairs fixture, whose three expansions
// onto 56² planes feed depthwise convolutions (3×3 of strides 1 and 2,
// 5×5 of stride 2; ReLU6 and SiLU), and wants each expansion to run with
// its depthwise as one step, and the same bits as each run as a step of
// its own, on any number of threads. TestFixturesMatchPyTorch holds the
// results against PyTorch's.
func TestPairs(t *testing.T) {
	const dir = fixtures + "mobilenet_pairs/"
	g := loadFixture(t, dir+"model.onnx")
	in := fixtureInputs(t, dir)
	plain, err := Compile(g, Options{Threads: 2, Tuning: Tuning{NoPairs: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.merged) != 0 {
		t.Errorf("NoPairs: %d pairs", len(plain.merged))
	}
	want := logits(t, plain, in)
	for _, threads := range []int{1, 2, 3} {
		e, err := Compile(g, Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		if len(e.merged) != 3 {
			t.Errorf("%d threads: %d pairs, want 3", threads, len(e.merged))
		}
		if got := logits(t, e, in); !slices.Equal(got, want) {
			t.Errorf("%d threads: %v, want %v (each step alone)", threads, got, want)
		}
		// The profile names the pair's steps after both chains.
		s, err := e.NewSession(nil)
		if err != nil {
			t.Fatal(err)
		}
		feed(t, s, in)
		times := make([]time.Duration, s.Steps())
		err = s.Run(context.Background(), times)
		steps := s.Profile(times)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, st := range steps {
			if strings.Count(st.Op, "Conv") == 2 {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d threads: %d steps of two convolutions, want 3", threads, n)
		}
	}
}
