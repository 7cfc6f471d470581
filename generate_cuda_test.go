package berth

import (
	"cmp"
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/berth-ml/berth/backend/cuda"
)

// TestCUDADecodeProfile reports where a decoding step's time goes on the
// GPU, for the model BERTH_CUDA_PROFILE names: the launches of the step's
// graph, the kernels' time (a replay of them alone), a step's time from
// the host, and the steps that take longest, by operator. It skips
// without the variable or without CUDA.
func TestCUDADecodeProfile(t *testing.T) {
	path := os.Getenv("BERTH_CUDA_PROFILE")
	if path == "" {
		t.Skip("BERTH_CUDA_PROFILE is not set")
	}
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	g, err := m.NewGenerator(GeneratorOptions{Device: CUDA, Context: 1024})
	if errors.Is(err, ErrNoDevice) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	if _, err := g.Prefill(ctx, []int32{1, 2, 3, 4, 5, 6, 7, 8}, nil); err != nil {
		t.Fatal(err)
	}
	const steps = 200
	for range 3 {
		if _, err := g.Step(ctx, 5); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for range steps {
		if _, err := g.Step(ctx, 5); err != nil {
			t.Fatal(err)
		}
	}
	step := time.Since(start) / steps
	s := g.decode.s.(cuda.Staged).Session
	kt, err := s.KernelTime(steps)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("decode: %d launches, step %v (%.1f tok/s), kernels alone %v, weights %d bytes (bound at 4.8 TB/s: %v)",
		g.decode.exe.x.(cuda.Compiled).Launches(), step, 1/step.Seconds(), kt, g.WeightBytes(), time.Duration(float64(g.WeightBytes())/4.8e12*1e9))
	times, err := s.StepTimes(5)
	if err != nil {
		t.Fatal(err)
	}
	type agg struct {
		op    string
		n     int
		total time.Duration
	}
	by := map[string]*agg{}
	var all time.Duration
	for _, st := range times {
		a := by[st.Op]
		if a == nil {
			a = &agg{op: st.Op}
			by[st.Op] = a
		}
		a.n++
		a.total += st.Time
		all += st.Time
	}
	list := make([]*agg, 0, len(by))
	for _, a := range by {
		list = append(list, a)
	}
	slices.SortFunc(list, func(a, b *agg) int { return cmp.Compare(b.total, a.total) })
	t.Logf("steps one at a time (each with a launch and a wait): %v in all", all)
	for _, a := range list {
		t.Logf("  %-18s %4d launches %10v (%.0f%%)", a.op, a.n, a.total, 100*a.total.Seconds()/all.Seconds())
	}
}
