package berth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/npytest"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/plan"
)

// openFixture is a model of testdata/open (scripts/gen_open_fixtures.py,
// scripts/gen_ort_fixtures.py) with its input sets, each of other shapes,
// and the reference's outputs (PyTorch's or ONNX Runtime's).
type openFixture struct {
	name    string
	model   string
	inputs  []string
	symbols []string
	sets    [][]berth.Tensor // named inputs per set
	outputs [][]*npy.Array   // the reference's outputs per set
	// byValue marks models whose output sizes follow from values the
	// graph computes: no one plan serves all their runs.
	byValue bool
}

func loadOpenFixtures(t testing.TB) []openFixture {
	t.Helper()
	dirs := testenv.Glob(t, "testdata/open/*", "run scripts/gen_open_fixtures.py")
	var out []openFixture
	for _, dir := range dirs {
		var meta struct {
			Inputs         []string                     `json:"inputs"`
			DynamicAxes    map[string]map[string]string `json:"dynamic_axes"`
			ValueDependent bool                         `json:"value_dependent"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		f := openFixture{name: filepath.Base(dir), model: filepath.Join(dir, "model.onnx"), inputs: meta.Inputs, byValue: meta.ValueDependent}
		for _, in := range meta.Inputs {
			for _, sym := range meta.DynamicAxes[in] {
				if !slices.Contains(f.symbols, sym) {
					f.symbols = append(f.symbols, sym)
				}
			}
		}
		for k := 0; ; k++ {
			set := filepath.Join(dir, fmt.Sprintf("set_%d", k))
			if _, err := os.Stat(set); err != nil {
				break
			}
			var ins []berth.Tensor
			for i, a := range npytest.ReadSet(t, set, "input") {
				ins = append(ins, berth.Tensor{Name: meta.Inputs[i], DType: a.DType, Shape: a.Shape, Data: a.Data})
			}
			f.sets = append(f.sets, ins)
			f.outputs = append(f.outputs, npytest.ReadSet(t, set, "output"))
		}
		out = append(out, f)
	}
	return out
}

// TestOpenModels runs models whose files leave batch, sequence or image
// size open, loaded as they are, with one session for input sets of
// several shapes, and compares every output with the reference's.
func TestOpenModels(t *testing.T) {
	for _, f := range loadOpenFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			m := loadModel(t, f.model)
			if !m.Open() {
				t.Fatal("the model is not open")
			}
			syms := m.Symbols()
			slices.Sort(syms)
			want := slices.Clone(f.symbols)
			slices.Sort(want)
			if !slices.Equal(syms, want) {
				t.Errorf("symbols %q, the export named %q", syms, want)
			}
			_, s := newSession(t, m, berth.Options{Threads: 2})
			// Twice through the sets: the second pass reuses each plan.
			for pass := range 2 {
				for k, ins := range f.sets {
					outs, err := s.Run(context.Background(), ins...)
					if err != nil {
						t.Fatalf("set %d: %v", k, err)
					}
					checkOpenOutputs(t, fmt.Sprintf("set %d", k), outs, f.outputs[k])
					if pass == 1 {
						// The plans of one session share packed weights:
						// each computes the same bits as the model
						// compiled for that shape alone.
						alone := runAlone(t, m, ins)
						for i := range outs {
							if !bytes.Equal(outs[i].Data, alone[i].Data) {
								t.Errorf("set %d output %d differs from the model compiled for that shape alone", k, i)
							}
						}
					}
				}
				// One plan (a root) per set of input shapes; the plans
				// after a stage, one per computed value, are its own.
				if shapes := distinctShapes(f.sets); s.Plans() != shapes {
					t.Errorf("pass %d: the session keeps %d plans for %d shapes", pass, s.Plans(), shapes)
				}
			}
		})
	}
}

// distinctShapes counts the sets of input shapes among sets.
func distinctShapes(sets [][]berth.Tensor) int {
	seen := map[string]bool{}
	for _, set := range sets {
		key := ""
		for _, x := range set {
			key += fmt.Sprint(x.Shape)
		}
		seen[key] = true
	}
	return len(seen)
}

// symbolSizes is the size each of m's symbols takes in the input sets,
// the largest over the sets.
func symbolSizes(m *berth.Model, sets ...[]berth.Tensor) map[string]int64 {
	sizes := map[string]int64{}
	for _, in := range m.Inputs() {
		for _, set := range sets {
			for _, x := range set {
				if x.Name != in.Name || in.Symbols == nil {
					continue
				}
				for i, sym := range in.Symbols {
					if sym != "" {
						sizes[sym] = max(sizes[sym], x.Shape[i])
					}
				}
			}
		}
	}
	return sizes
}

// runAlone runs m on ins in a session of its own, every symbol fixed at
// the sizes ins give.
func runAlone(t *testing.T, m *berth.Model, ins []berth.Tensor) []berth.Tensor {
	t.Helper()
	_, s := newSession(t, m, berth.Options{Threads: 2, Dims: symbolSizes(m, ins)})
	outs, err := s.Run(context.Background(), ins...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range outs {
		outs[i] = outs[i].Clone()
	}
	return outs
}

// loadModel loads the model at path, closed when the test ends.
func loadModel(t testing.TB, path string) *berth.Model {
	t.Helper()
	m, err := berth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// newSession compiles m for the CPU with opts and opens a session of it;
// both are closed when the test ends.
func newSession(t testing.TB, m *berth.Model, opts berth.Options) (*berth.Executable, *berth.Session) {
	t.Helper()
	return newSessionOn(t, m, berth.CPU, opts)
}

// newSessionOn is newSession on dev.
func newSessionOn(t testing.TB, m *berth.Model, dev berth.Device, opts berth.Options) (*berth.Executable, *berth.Session) {
	t.Helper()
	exe, err := berth.Compile(m, dev, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exe.Close() })
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return exe, s
}

func checkOpenOutputs(t *testing.T, what string, outs []berth.Tensor, want []*npy.Array) {
	t.Helper()
	if len(outs) != len(want) {
		t.Fatalf("%s: %d outputs, want %d", what, len(outs), len(want))
	}
	for i, o := range outs {
		if !slices.Equal(o.Shape, want[i].Shape) {
			t.Errorf("%s: output %d (%s) has shape %v, the reference's %v", what, i, o.Name, o.Shape, want[i].Shape)
			continue
		}
		got, err := o.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		w := (berth.Tensor{DType: want[i].DType, Shape: want[i].Shape, Data: want[i].Data})
		wv, err := w.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if e := compare.RelL2(got, wv); !(e <= 1e-4) {
			t.Errorf("%s: output %d (%s): rel L2 %.3g against the reference", what, i, o.Name, e)
		}
	}
}

// TestOpenModelPlans checks the plan cache of an open session: with room
// for one plan, a session that alternates two shapes compiles each anew
// and still computes right; with room for both, runs after the first of
// each shape allocate nothing.
func TestOpenModelPlans(t *testing.T) {
	f := loadOpenFixtures(t)[0]
	m := loadModel(t, f.model)
	for _, plans := range []int{1, 2} {
		exe, s := newSession(t, m, berth.Options{Threads: 1, Plans: plans})
		ctx := context.Background()
		for round := range 3 {
			for k := range 2 {
				outs, err := s.Run(ctx, f.sets[k]...)
				if err != nil {
					t.Fatal(err)
				}
				checkOpenOutputs(t, fmt.Sprintf("plans %d, round %d, set %d", plans, round, k), outs, f.outputs[k])
			}
		}
		if s.Plans() != plans {
			t.Errorf("the session keeps %d plans, want %d", s.Plans(), plans)
		}
		if plans == 2 {
			allocs := testing.AllocsPerRun(20, func() {
				for k := range 2 {
					if _, err := s.Run(ctx, f.sets[k]...); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per two runs of shapes the session has plans for", allocs)
			}
		}
		s.Close()
		exe.Close()
	}
}

// TestOpenModelErrors feeds an open model inputs that cannot be: each is
// an error that says what is wrong, never a panic.
func TestOpenModelErrors(t *testing.T) {
	var bert openFixture
	for _, f := range loadOpenFixtures(t) {
		if f.name == "bert" {
			bert = f
		}
	}
	if bert.name == "" {
		t.Fatal("no bert fixture")
	}
	m := loadModel(t, bert.model)
	ids, mask := bert.sets[1][0], bert.sets[1][1]
	other := bert.sets[0][1] // another sequence length
	cases := []struct {
		name string
		opts berth.Options
		ins  []berth.Tensor
		want string
	}{
		{"symbol differs between inputs", berth.Options{}, []berth.Tensor{ids, other}, "another input gives"},
		{"above the bound", berth.Options{MaxDims: map[string]int64{"seq": 8}}, []berth.Tensor{ids, mask}, "above its bound 8"},
		{"not the fixed size", berth.Options{Dims: map[string]int64{"batch": 2, "seq": 7}}, []berth.Tensor{ids, mask}, "[2,7]"},
		{"wrong rank", berth.Options{}, []berth.Tensor{ids, {Name: "attention_mask", DType: mask.DType, Shape: []int64{24}, Data: mask.Data}}, "rank"},
		{"short data", berth.Options{}, []berth.Tensor{ids, {Name: "attention_mask", DType: mask.DType, Shape: mask.Shape, Data: mask.Data[:8]}}, "bytes"},
		{"wrong type", berth.Options{}, []berth.Tensor{ids, {Name: "attention_mask", DType: berth.Float32, Shape: mask.Shape, Data: mask.Data[:len(mask.Data)/2]}}, "int64"},
		{"missing input", berth.Options{}, []berth.Tensor{ids}, "attention_mask"},
		{"unknown input", berth.Options{}, []berth.Tensor{ids, mask, {Name: "x", DType: berth.Float32, Shape: []int64{}, Data: make([]byte, 4)}}, `"x"`},
		{"zero sequence", berth.Options{}, []berth.Tensor{{Name: "input_ids", DType: ids.DType, Shape: []int64{2, 0}}, {Name: "attention_mask", DType: mask.DType, Shape: []int64{2, 0}}}, ""},
		{"huge dims", berth.Options{}, []berth.Tensor{{Name: "input_ids", DType: ids.DType, Shape: []int64{1 << 40, 1 << 40}}, mask}, "elements"},
		{"negative dims", berth.Options{}, []berth.Tensor{{Name: "input_ids", DType: ids.DType, Shape: []int64{-2, 12}}, mask}, "negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, s := newSession(t, m, c.opts)
			_, err := s.Run(context.Background(), c.ins...)
			if c.want == "" {
				// Empty inputs may run or be refused; either way no panic.
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	// Options naming symbols the model does not have are refused.
	if _, err := berth.Compile(m, berth.CPU, berth.Options{Dims: map[string]int64{"sequence": 4}}); err == nil || !strings.Contains(err.Error(), "batch, seq") {
		t.Errorf("Dims with an unknown symbol: got %v, want an error listing the symbols", err)
	}
}

// TestOpenModelFixedDims compiles an open model with every symbol fixed:
// the executable is planned at once, like a model with static shapes, and
// matches PyTorch at that shape.
func TestOpenModelFixedDims(t *testing.T) {
	for _, f := range loadOpenFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			m := loadModel(t, f.model)
			ins := f.sets[1]
			dims := symbolSizes(m, ins)
			exe := compileWith(t, m, berth.Options{Dims: dims})
			if exe.Open() != f.byValue {
				t.Fatalf("with every symbol fixed (%v) the executable is open: %v", dims, exe.Open())
			}
			s, err := exe.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			outs, err := s.Run(context.Background(), ins...)
			if err != nil {
				t.Fatal(err)
			}
			checkOpenOutputs(t, "fixed", outs, f.outputs[1])
			// Compiled again once the model has learned which inputs
			// decide shapes by value: the same.
			_, again := newSession(t, m, berth.Options{Dims: dims})
			outs, err = again.Run(context.Background(), ins...)
			if err != nil {
				t.Fatal(err)
			}
			checkOpenOutputs(t, "fixed, compiled again", outs, f.outputs[1])
		})
	}
}

// TestOpenModelBound runs a model with open dimensions under a bound: the
// executable is planned at the bound, every run within it takes its
// turn in one arena of that size (allocated with the session), runs of
// shapes the session has seen allocate nothing, and a run beyond the
// bound is refused.
func TestOpenModelBound(t *testing.T) {
	for _, f := range loadOpenFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			m := loadModel(t, f.model)
			// The bound is each symbol's largest size over the sets.
			bound := symbolSizes(m, f.sets...)
			exe := compileWith(t, m, berth.Options{Threads: 1, MaxDims: bound})
			if f.byValue {
				// No one plan at the bound: runs are still refused past it.
				checkBoundRefused(t, exe, f, bound)
				return
			}
			if exe.ArenaBytes() == 0 {
				t.Fatal("no plan at the bound")
			}
			fixed := compileWith(t, m, berth.Options{Threads: 1, Dims: bound})
			if exe.ArenaBytes() != fixed.ArenaBytes() {
				t.Errorf("the arena at the bound is %d bytes, the plan with those sizes fixed %d", exe.ArenaBytes(), fixed.ArenaBytes())
			}
			fixed.Close()
			s, err := exe.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for round := range 2 {
				for k, ins := range f.sets {
					outs, err := s.Run(ctx, ins...)
					if err != nil {
						t.Fatalf("set %d: %v", k, err)
					}
					checkOpenOutputs(t, fmt.Sprintf("round %d, set %d", round, k), outs, f.outputs[k])
					if a := s.Arena(); a == nil || a.Size() != exe.ArenaBytes() {
						t.Errorf("set %d ran in an arena other than the bound's", k)
					}
					// One plan serves the bound: the plan at the bound or
					// it refit to the run's shapes.
					_, bound := exe.Plan()
					if _, pl := s.Executable().Plan(); pl != bound && pl.Schedule != plan.RefitSchedule {
						t.Errorf("set %d has a plan of its own (%s)", k, pl.Schedule)
					}
					if round == 1 {
						alone := runAlone(t, m, ins)
						for i := range outs {
							if !bytes.Equal(outs[i].Data, alone[i].Data) {
								t.Errorf("set %d output %d differs from the model compiled for that shape alone", k, i)
							}
						}
					}
				}
			}
			allocs := testing.AllocsPerRun(10, func() {
				for _, ins := range f.sets {
					if _, err := s.Run(ctx, ins...); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per round of shapes within the bound", allocs)
			}
			s.Close()
			checkBoundRefused(t, exe, f, bound)
		})
	}
}

// checkBoundRefused runs f's last input set with its first dimension one
// past its bound: the run is refused with an error naming the bound.
func checkBoundRefused(t *testing.T, exe *berth.Executable, f openFixture, bound map[string]int64) {
	t.Helper()
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last := f.sets[len(f.sets)-1]
	sym := ""
	for _, in := range exe.Inputs() {
		if in.Name == last[0].Name && in.Symbols != nil {
			sym = in.Symbols[0]
		}
	}
	if sym == "" {
		t.Fatalf("input %q has no symbol first", last[0].Name)
	}
	big := slices.Clone(last)
	for i := range big {
		if in := exe.Inputs()[i]; in.Symbols == nil || in.Symbols[0] != sym {
			continue // a scalar or an input without that symbol first
		}
		big[i].Shape = slices.Clone(big[i].Shape)
		big[i].Shape[0] = bound[sym] + 1
		big[i].Data = make([]byte, len(big[i].Data)/int(last[i].Shape[0])*int(big[i].Shape[0]))
	}
	if _, err := s.Run(context.Background(), big...); err == nil || !strings.Contains(err.Error(), "above its bound") {
		t.Errorf("a run past the bound: got %v, want an error naming the bound", err)
	}
}

// TestOpenModelStagesNoAllocations runs the models whose output sizes
// follow from computed values (their plans are stages and the plans
// after them) over input sets they have all seen: the runs allocate
// nothing.
func TestOpenModelStagesNoAllocations(t *testing.T) {
	for _, f := range loadOpenFixtures(t) {
		if !f.byValue {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			m := loadModel(t, f.model)
			_, s := newSession(t, m, berth.Options{Threads: 1})
			ctx := context.Background()
			for k, ins := range f.sets {
				outs, err := s.Run(ctx, ins...)
				if err != nil {
					t.Fatal(err)
				}
				checkOpenOutputs(t, fmt.Sprintf("set %d", k), outs, f.outputs[k])
			}
			allocs := testing.AllocsPerRun(10, func() {
				for _, ins := range f.sets {
					if _, err := s.Run(ctx, ins...); err != nil {
						t.Fatal(err)
					}
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per round of input sets seen before", allocs)
			}
		})
	}
}

// TestOpenConcurrentSessions runs sessions of one executable with open
// shapes on several goroutines, each through every input set: the plans
// they compile share the model's store of packed weights and its plan at
// the bound, and every output is PyTorch's.
func TestOpenConcurrentSessions(t *testing.T) {
	for _, f := range loadOpenFixtures(t) {
		if f.name != "cnn" && f.name != "nms" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			m := loadModel(t, f.model)
			bound := symbolSizes(m, f.sets...)
			exe := compileWith(t, m, berth.Options{Threads: 1, MaxDims: bound})
			var wg sync.WaitGroup
			for g := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s, err := exe.NewSession()
					if err != nil {
						t.Error(err)
						return
					}
					defer s.Close()
					for round := range 2 {
						for k := range f.sets {
							k := (k + g) % len(f.sets)
							outs, err := s.Run(context.Background(), f.sets[k]...)
							if err != nil {
								t.Error(err)
								return
							}
							checkOpenOutputs(t, fmt.Sprintf("goroutine %d, round %d, set %d", g, round, k), outs, f.outputs[k])
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
