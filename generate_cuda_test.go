package berth

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/berth-ml/berth/backend/cuda"
)

// BenchmarkCUDADecode times decoding steps on the GPU for the model
// BERTH_CUDA_PROFILE names, one token a step, and reports the step's
// launches, its kernels' time alone (a replay of them), the share of the
// memory bandwidth the weights' bytes take at that rate, and, in the log,
// the steps that take longest by operator. It skips without the variable
// or without CUDA.
func BenchmarkCUDADecode(b *testing.B) {
	path := os.Getenv("BERTH_CUDA_PROFILE")
	if path == "" {
		b.Skip("BERTH_CUDA_PROFILE is not set")
	}
	m, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	g, err := m.NewGenerator(GeneratorOptions{Device: CUDA, Context: 1024})
	if errors.Is(err, ErrNoDevice) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	// BERTH_CUDA_PROFILE_FROM=N starts the steps at position N (a prompt
	// of N tokens; the context is 1024): where the attention is long.
	if n, err := strconv.Atoi(os.Getenv("BERTH_CUDA_PROFILE_FROM")); err == nil && n > 0 && n < 1024-300 {
		prompt = make([]int32, n)
		for i := range prompt {
			prompt[i] = int32(1 + i%100)
		}
	}
	if _, err := g.Prefill(ctx, prompt, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if g.Position() == g.Context() {
			g.Reset()
		}
		if _, err := g.Step(ctx, 5); err != nil {
			b.Fatal(err)
		}
	}
	step := b.Elapsed() / time.Duration(b.N)
	s := g.decode.s.(cuda.Staged).Session
	const iters = 100
	kt, err := s.KernelTime(iters)
	if err != nil {
		b.Fatal(err)
	}
	const bandwidth = 4.8e12 // an H200's, bytes/s
	b.ReportMetric(float64(g.decode.exe.x.(cuda.Compiled).Launches()), "launches")
	b.ReportMetric(float64(kt.Nanoseconds()), "kernel-ns/op")
	b.ReportMetric(1/step.Seconds(), "tok/s")
	b.ReportMetric(100*float64(g.WeightBytes())/bandwidth/step.Seconds(), "%bandwidth")
	r, err := s.Replays(iters)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("a step %v: its graph launched and waited for %v, back to back %v; the copies alone %v; a wait on an idle stream %v, a hop onto the owner thread %v",
		step, r.Run, r.BackToBack, r.Copies, r.Wait, r.Hop)
	b.ReportMetric(float64(r.Run.Nanoseconds()), "graph-ns/op")
	times, err := s.StepTimes(5)
	if err != nil {
		b.Fatal(err)
	}
	logByOp(b, times)
}

// logByOp logs the steps' time by operator, the largest share first.
func logByOp(b *testing.B, times []cuda.StepTime) {
	list, all := timeByOp(times)
	b.Logf("steps one at a time (each with a launch and a wait): %v in all", all)
	for _, a := range list {
		b.Logf("  %-18s %4d launches %10v (%.0f%%)", a.op, a.n, a.total, 100*a.total.Seconds()/all.Seconds())
	}
}
