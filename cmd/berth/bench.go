package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/ir"
)

type benchResult struct {
	Model    string  `json:"model"`
	Device   string  `json:"device"`
	Threads  int     `json:"threads"`
	Iters    int     `json:"iters"`
	Warmup   int     `json:"warmup"`
	MedianMS float64 `json:"median_ms"`
	MinMS    float64 `json:"min_ms"`
	P90MS    float64 `json:"p90_ms"`
	MeanMS   float64 `json:"mean_ms"`
	// AllocsPerRun counts heap allocations as testing.AllocsPerRun does:
	// those of the whole process over the timed runs, divided by the runs
	// and rounded down; AllocsTotal is the exact count.
	AllocsPerRun    uint64  `json:"allocs_per_run"`
	AllocsTotal     uint64  `json:"allocs_total"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	ActivationBytes int64   `json:"activation_bytes"`
	WeightBytes     int64   `json:"weight_bytes"`
	SyntheticInputs bool    `json:"synthetic_inputs"`
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	iters := fs.Int("iters", 20, "timed runs")
	warmup := fs.Int("warmup", 3, "untimed runs first")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	path, err := parseModel(fs, args, false)
	if err != nil {
		return err
	}
	if *iters < 1 || *warmup < 0 {
		return usageError{"--iters must be ≥ 1 and --warmup ≥ 0"}
	}
	m, exe, err := c.compile(path)
	if err != nil {
		return err
	}
	defer m.Close()
	var inputs []berth.Tensor
	synthetic := len(c.inputs) == 0
	if synthetic {
		inputs, err = syntheticInputs(exe.Inputs())
	} else {
		inputs, err = bindInputs(c.inputs, exe.Inputs())
	}
	if err != nil {
		return err
	}
	s, err := exe.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < *warmup; i++ {
		if _, err := s.Run(ctx, inputs...); err != nil {
			return err
		}
	}
	if err := settle(ctx, s, inputs); err != nil {
		return err
	}
	times := make([]float64, *iters)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range times {
		start := time.Now()
		if _, err := s.Run(ctx, inputs...); err != nil {
			return err
		}
		times[i] = ms(time.Since(start))
	}
	runtime.ReadMemStats(&after)
	res := benchResult{
		Model: path, Device: string(exe.Device()), Threads: threadsOf(c.threads),
		Iters: *iters, Warmup: *warmup,
		AllocsPerRun:    (after.Mallocs - before.Mallocs) / uint64(*iters),
		AllocsTotal:     after.Mallocs - before.Mallocs,
		PeakRSSMB:       peakRSSMB(),
		ActivationBytes: exe.ArenaBytes(),
		WeightBytes:     exe.WeightBytes(),
		SyntheticInputs: synthetic,
	}
	res.MedianMS, res.MinMS, res.P90MS, res.MeanMS = stats(times)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "%s on %s, %d threads, %d runs after %d warm-up\n", path, res.Device, res.Threads, res.Iters, res.Warmup)
	fmt.Fprintf(stdout, "  median %.3f ms   min %.3f ms   p90 %.3f ms   mean %.3f ms\n", res.MedianMS, res.MinMS, res.P90MS, res.MeanMS)
	fmt.Fprintf(stdout, "  allocs/run %d (%d in all)   peak RSS %.1f MB   arena %s   weights %s\n", res.AllocsPerRun, res.AllocsTotal, res.PeakRSSMB, humanBytes(res.ActivationBytes), humanBytes(res.WeightBytes))
	if synthetic && len(inputs) > 0 {
		fmt.Fprintln(stderr, "bench: no --input given; using synthetic inputs (floats in [-1,1), integers 0, bools false)")
	}
	return nil
}

// settle brings the process to a steady state before timing: it collects
// the garbage of loading and compiling, so that no collection lands inside
// the timed runs, then runs until a batch of runs allocates nothing — the
// Go runtime fills its per-thread caches (goroutine wait records, threads)
// during the first runs of a new session. It gives up after a bounded
// number of runs; whatever still allocates is then counted.
func settle(ctx context.Context, s *berth.Session, inputs []berth.Tensor) error {
	runtime.GC()
	var before, after runtime.MemStats
	for batch := 0; batch < 20; batch++ {
		runtime.ReadMemStats(&before)
		for i := 0; i < 10; i++ {
			if _, err := s.Run(ctx, inputs...); err != nil {
				return err
			}
		}
		runtime.ReadMemStats(&after)
		if after.Mallocs == before.Mallocs {
			return nil
		}
	}
	return nil
}

func threadsOf(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// stats returns the median, minimum, 90th percentile and mean of ms.
func stats(ms []float64) (median, lo, p90, mean float64) {
	s := slices.Clone(ms)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	p90 = s[min(n-1, int(math.Ceil(0.9*float64(n)))-1)]
	for _, v := range s {
		mean += v
	}
	return median, s[0], p90, mean / float64(n)
}

// syntheticInputs fills each input deterministically: floats uniform in
// [-1, 1), integers and bools zero (always a valid index or flag).
func syntheticInputs(want []berth.TensorInfo) ([]berth.Tensor, error) {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]berth.Tensor, len(want))
	for i, w := range want {
		shape := ir.Shape(w.Shape)
		t := berth.Tensor{Name: w.Name, DType: w.DType, Shape: w.Shape, Data: make([]byte, shape.Bytes(w.DType))}
		if w.DType.IsFloat() {
			v := make([]float32, shape.Elements())
			for j := range v {
				v[j] = float32(r.Float64()*2 - 1)
			}
			if err := arena.EncodeF32(t.Data, w.DType, v); err != nil {
				return nil, fmt.Errorf("input %q: %w", w.Name, err)
			}
		}
		out[i] = t
	}
	return out, nil
}
