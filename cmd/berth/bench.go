package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/device"
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
	// WorkspaceBytes is what the libraries (cuBLAS, cuDNN) take beside
	// the arena and the weights.
	WorkspaceBytes  int64 `json:"workspace_bytes"`
	SyntheticInputs bool  `json:"synthetic_inputs"`
	// Plans is how many plans the session kept (one per set of input
	// shapes for a model with open shapes); Symbols gives the size each
	// open dimension took in the timed runs, MaxDims the bounds given.
	Plans   int              `json:"plans"`
	Symbols map[string]int64 `json:"symbols,omitempty"`
	MaxDims map[string]int64 `json:"max_dims,omitempty"`
}

// symbolsOf reads the size of each symbol from the inputs given for the
// graph inputs want.
func symbolsOf(want []berth.TensorInfo, inputs []berth.Tensor) map[string]int64 {
	out := map[string]int64{}
	for _, w := range want {
		for _, in := range inputs {
			if in.Name != w.Name || w.Symbols == nil || len(in.Shape) != len(w.Symbols) {
				continue
			}
			for k, sym := range w.Symbols {
				if sym != "" {
					out[sym] = in.Shape[k]
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	iters := fs.Int("iters", 20, "timed runs")
	warmup := fs.Int("warmup", 3, "untimed runs first")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	profile := fs.Bool("profile", false, "after timing, time each step over --iters runs and print the time per operator (CPU)")
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
		sizes := map[string]int64{}
		for k, v := range c.maxDims.m {
			sizes[k] = v
		}
		for k, v := range c.dims.m {
			sizes[k] = v
		}
		inputs, err = syntheticInputs(exe.Inputs(), sizes)
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
	if exe.Device() == berth.CUDA && !exe.Open() {
		// Stage the inputs once in the session's pinned buffers, which a
		// run only reads: the timed runs then copy them to the device but
		// not into the staging first, as a caller producing its inputs in
		// place would.
		bufs := s.InputBuffers()
		for i := range bufs {
			copy(bufs[i].Data, inputs[i].Data)
		}
		inputs = bufs
	}
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
		WorkspaceBytes:  exe.WorkspaceBytes(),
		SyntheticInputs: synthetic,
		Plans:           s.Plans(),
		Symbols:         symbolsOf(exe.Inputs(), inputs),
		MaxDims:         c.maxDims.m,
	}
	if ran := s.Executable(); exe.Open() && ran != nil {
		// Without a bound each plan has its own arena: report the one
		// the timed runs used.
		if res.ActivationBytes == 0 {
			res.ActivationBytes = ran.ArenaBytes()
		}
		res.WeightBytes, res.WorkspaceBytes = ran.WeightBytes(), ran.WorkspaceBytes()
	}
	res.MedianMS, res.MinMS, res.P90MS, res.MeanMS = stats(times)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	fmt.Fprintf(stdout, "%s on %s, %d threads, %d runs after %d warm-up\n", path, res.Device, res.Threads, res.Iters, res.Warmup)
	fmt.Fprintf(stdout, "  median %.3f ms   min %.3f ms   p90 %.3f ms   mean %.3f ms\n", res.MedianMS, res.MinMS, res.P90MS, res.MeanMS)
	fmt.Fprintf(stdout, "  allocs/run %d (%d in all)   peak RSS %.1f MB   arena %s   weights %s", res.AllocsPerRun, res.AllocsTotal, res.PeakRSSMB, humanBytes(res.ActivationBytes), humanBytes(res.WeightBytes))
	if res.WorkspaceBytes > 0 {
		fmt.Fprintf(stdout, "   libraries' workspace %s", humanBytes(res.WorkspaceBytes))
	}
	fmt.Fprintln(stdout)
	if len(res.Symbols) > 0 {
		fmt.Fprintf(stdout, "  symbols %v   plans %d\n", res.Symbols, res.Plans)
	}
	if synthetic && len(inputs) > 0 {
		fmt.Fprintln(stderr, "bench: no --input given; using synthetic inputs (floats in [-1,1), integers 0, bools false)")
	}
	if *profile {
		return printProfile(ctx, s, inputs, *iters, stdout)
	}
	return nil
}

// printProfile times every step over iters runs and prints, per operator
// (fused steps as "MatMul+Add+Relu"), the steps, the median run's share
// of time and milliseconds per run, slowest first.
func printProfile(ctx context.Context, s *berth.Session, inputs []berth.Tensor, iters int, w io.Writer) error {
	type agg struct {
		op    string
		steps int
		total time.Duration
	}
	byOp := map[string]*agg{}
	var all time.Duration
	for i := 0; i < iters; i++ {
		st, err := s.Profile(ctx, inputs...)
		if err != nil {
			return err
		}
		for _, t := range st {
			a := byOp[t.Op]
			if a == nil {
				a = &agg{op: t.Op}
				byOp[t.Op] = a
			}
			if i == 0 {
				a.steps++
			}
			a.total += t.Time
			all += t.Time
		}
	}
	rows := make([]*agg, 0, len(byOp))
	for _, a := range byOp {
		rows = append(rows, a)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].total > rows[j].total })
	fmt.Fprintf(w, "  per operator, mean of %d profiled runs (%.3f ms of steps per run):\n", iters, ms(all)/float64(iters))
	for _, a := range rows {
		fmt.Fprintf(w, "  %8.3f ms %5.1f%%  %4d× %s\n", ms(a.total)/float64(iters), 100*float64(a.total)/float64(max(all, 1)), a.steps, a.op)
	}
	return nil
}

// settle brings the process to a steady state before timing: it collects
// the garbage of loading and compiling, so that no collection lands inside
// the timed runs, then runs until a batch of runs allocates nothing — the
// Go runtime fills its per-thread caches (goroutine wait records, threads)
// during the first runs of a new session. A batch is 10 runs, or as many
// as fill a second when runs are long (a language model's prompt), at
// least one. It gives up after 20 batches; whatever still allocates is
// then counted.
func settle(ctx context.Context, s *berth.Session, inputs []berth.Tensor) error {
	runtime.GC()
	var before, after runtime.MemStats
	for batch := 0; batch < 20; batch++ {
		runtime.ReadMemStats(&before)
		start := time.Now()
		for i := 0; i < 10 && (i == 0 || time.Since(start) < time.Second); i++ {
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
//
// An open dimension takes the size sizes gives its symbol (--dim, else
// --max-dim); without one there is nothing to make up, and the error
// says which flag would give it.
//
// Nothing is allocated for inputs that together, with the float32 values
// of the floating-point ones, would need more than the machine's memory
// (the memory limit compiling defaults to): an executable whose plans
// follow from input values has no plan to check before its inputs come.
func syntheticInputs(want []berth.TensorInfo, sizes map[string]int64) ([]berth.Tensor, error) {
	shapes := make([]ir.Shape, len(want))
	var need int64
	for i, w := range want {
		if w.Sequence || w.Shape == nil {
			return nil, fmt.Errorf("input %q is %s: give it with --input", w.Name, describe(w))
		}
		shape := ir.Shape(slices.Clone(w.Shape))
		for k, d := range shape {
			if d >= 0 {
				continue
			}
			sym := ""
			if w.Symbols != nil {
				sym = w.Symbols[k]
			}
			n, ok := sizes[sym]
			if sym == "" || !ok {
				return nil, fmt.Errorf("input %q is %s: give it with --input, or its sizes with --dim SYMBOL=N", w.Name, describe(w))
			}
			shape[k] = n
		}
		if err := shape.Validate(); err != nil {
			return nil, fmt.Errorf("input %q: %w", w.Name, err)
		}
		shapes[i] = shape
		// Each at most 2⁴⁰ elements of at most 16 bytes: no overflow.
		need += shape.Bytes(w.DType)
		if w.DType.IsFloat() {
			need += 4 * shape.Elements()
		}
	}
	if limit := device.HostMemory(); limit > 0 && need > limit {
		return nil, fmt.Errorf("inputs made up at the sizes given (%s) would need %d bytes, more than the machine's %d: give smaller sizes or the inputs with --input", sizesString(sizes), need, limit)
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]berth.Tensor, len(want))
	for i, w := range want {
		shape := shapes[i]
		w.Shape = shape
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

// sizesString prints symbol sizes as SYMBOL=N, sorted by symbol.
func sizesString(sizes map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sizes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, sizes[k]))
	}
	return strings.Join(parts, " ")
}
