package berth_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

func f32Tensor(shape []int64, v ...float32) berth.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return berth.Tensor{DType: ir.Float32, Shape: shape, Data: b}
}

func boolTensor(v bool) berth.Tensor {
	b := []byte{0}
	if v {
		b[0] = 1
	}
	return berth.Tensor{DType: ir.Bool, Shape: []int64{}, Data: b}
}

func f32Values(t berth.Tensor) []float32 {
	v := make([]float32, len(t.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
	}
	return v
}

// TestControlFlow runs If, Loop and Scan models on the CPU and compares
// their outputs with values worked out by hand.
func TestControlFlow(t *testing.T) {
	x := f32Tensor([]int64{3}, 1, -2, 3)
	cases := []struct {
		name   string
		model  []byte
		inputs []berth.Tensor
		shapes [][]int64
		want   [][]float32
	}{
		{"if/then", onnxtest.NestedIfModel(1), []berth.Tensor{boolTensor(true), x},
			[][]int64{{3}}, [][]float32{{2, -4, 6}}},
		{"if/else", onnxtest.NestedIfModel(1), []berth.Tensor{boolTensor(false), x},
			[][]int64{{3}}, [][]float32{{-1, 2, -3}}},
		{"if/nested-then", onnxtest.NestedIfModel(4), []berth.Tensor{boolTensor(true), x},
			[][]int64{{3}}, [][]float32{{2, -4, 6}}},
		{"if/nested-else", onnxtest.NestedIfModel(4), []berth.Tensor{boolTensor(false), x},
			[][]int64{{3}}, [][]float32{{-1, 2, -3}}},
		{"loop/3", onnxtest.LoopModel(3), []berth.Tensor{f32Tensor([]int64{2}, 1, 10)},
			[][]int64{{2}, {3, 2}}, [][]float32{{3, 30}, {1, 10, 2, 20, 3, 30}}},
		{"loop/0", onnxtest.LoopModel(0), []berth.Tensor{f32Tensor([]int64{2}, 1, 10)},
			[][]int64{{2}, {0, 2}}, [][]float32{{0, 0}, {}}},
		{"scan/forward", onnxtest.ScanModel(false), []berth.Tensor{f32Tensor([]int64{2}, 0, 100), f32Tensor([]int64{3, 2}, 1, 2, 3, 4, 5, 6)},
			[][]int64{{2}, {3, 2}}, [][]float32{{9, 112}, {1, 102, 4, 106, 9, 112}}},
		{"scan/reverse", onnxtest.ScanModel(true), []berth.Tensor{f32Tensor([]int64{2}, 0, 100), f32Tensor([]int64{3, 2}, 1, 2, 3, 4, 5, 6)},
			[][]int64{{2}, {3, 2}}, [][]float32{{9, 112}, {5, 106, 8, 110, 9, 112}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadBytes(t, c.model)
			exe := compileWith(t, m, berth.Options{Threads: 1})
			outs := runOnce(t, exe, c.inputs)
			if len(outs) != len(c.want) {
				t.Fatalf("%d outputs, want %d", len(outs), len(c.want))
			}
			for i := range outs {
				if !slices.Equal(outs[i].Shape, c.shapes[i]) {
					t.Errorf("output %d has shape %v, want %v", i, outs[i].Shape, c.shapes[i])
				}
				got := f32Values(outs[i])
				if !slices.EqualFunc(got, c.want[i], func(a, b float32) bool { return math.Abs(float64(a-b)) < 1e-6 }) {
					t.Errorf("output %d = %v, want %v", i, got, c.want[i])
				}
			}
		})
	}
}

// TestControlFlowErrors expects clear load errors for control flow that
// berth cannot plan statically.
func TestControlFlowErrors(t *testing.T) {
	cases := []struct {
		name  string
		model []byte
		want  string
	}{
		{"nesting-too-deep", onnxtest.NestedIfModel(ir.MaxSubgraphDepth + 1), "nest more than 16 levels"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := berth.LoadBytes(c.model, "")
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
	m, err := berth.LoadBytes(onnxtest.NestedIfModel(ir.MaxSubgraphDepth), "")
	if err != nil {
		t.Fatalf("nesting at the limit: %v", err)
	}
	m.Close()
}

// TestLoopRunDoesNotAllocate checks that a session runs a Loop (and the
// kernels of its body) without allocating.
func TestLoopRunDoesNotAllocate(t *testing.T) {
	for _, model := range [][]byte{onnxtest.LoopModel(5), onnxtest.ScanModel(false), onnxtest.NestedIfModel(3)} {
		m := loadBytes(t, model)
		exe, s := newSession(t, m, berth.Options{Threads: 1})
		var inputs []berth.Tensor
		for _, info := range exe.Inputs() {
			n := int64(1)
			for _, d := range info.Shape {
				n *= d
			}
			inputs = append(inputs, berth.Tensor{DType: info.DType, Shape: info.Shape, Data: make([]byte, n*int64(info.DType.Size()))})
		}
		ctx := context.Background()
		if allocs := testing.AllocsPerRun(20, func() {
			if _, err := s.Run(ctx, inputs...); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s: Session.Run allocates %.1f times per run", m.Graph().Name, allocs)
		}
	}
}

// TestConstantControlFlowFolds binds the inputs that decide the control
// flow as constants: an If on a constant condition is replaced by the
// branch it takes, and a Loop whose inputs are all constants is computed
// at load time.
func TestConstantControlFlowFolds(t *testing.T) {
	x := f32Tensor([]int64{3}, 1, -2, 3)
	cases := []struct {
		name   string
		model  []byte
		consts map[string]berth.Tensor
		inputs []berth.Tensor
		gone   string // the operator that no longer appears in the graph
		want   [][]float32
	}{
		{"if-true", onnxtest.NestedIfModel(3), map[string]berth.Tensor{"cond": boolTensor(true)}, []berth.Tensor{x}, "If", [][]float32{{2, -4, 6}}},
		{"if-false", onnxtest.NestedIfModel(3), map[string]berth.Tensor{"cond": boolTensor(false)}, []berth.Tensor{x}, "If", [][]float32{{-1, 2, -3}}},
		{"loop", onnxtest.LoopModel(2), map[string]berth.Tensor{"x": f32Tensor([]int64{2}, 1, 10)}, nil, "Loop", [][]float32{{2, 20}, {1, 10, 2, 20}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "model.onnx")
			if err := os.WriteFile(path, c.model, 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := berth.LoadWith(path, berth.LoadOptions{Constants: c.consts})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if n := m.Graph().OpCounts()[c.gone]; n != 0 {
				t.Errorf("%d %s nodes remain", n, c.gone)
			}
			exe := compileWith(t, m, berth.Options{Threads: 1})
			outs := runOnce(t, exe, c.inputs)
			for i := range c.want {
				if got := f32Values(outs[i]); !slices.Equal(got, c.want[i]) {
					t.Errorf("output %d = %v, want %v", i, got, c.want[i])
				}
			}
		})
	}
}

// TestControlFlowConcurrentSessions runs a Loop in several sessions at
// once: each session's subgraph tensors live in its own arena.
func TestControlFlowConcurrentSessions(t *testing.T) {
	m := loadBytes(t, onnxtest.LoopModel(4))
	exe := compileWith(t, m, berth.Options{Threads: 1})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := exe.NewSession()
			if err != nil {
				errs <- err.Error()
				return
			}
			defer s.Close()
			v := float32(g)
			for r := 0; r < 50; r++ {
				outs, err := s.Run(context.Background(), f32Tensor([]int64{2}, v, -v))
				if err != nil {
					errs <- err.Error()
					return
				}
				if got := f32Values(outs[0]); got[0] != 4*v || got[1] != -4*v {
					errs <- fmt.Sprintf("session %d: sum %v, want [%v %v]", g, got, 4*v, -4*v)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestEndlessLoopCancels runs a Loop that never ends by itself: cancelling
// the run's context stops it between two iterations.
func TestEndlessLoopCancels(t *testing.T) {
	m := loadBytes(t, onnxtest.EndlessLoopModel())
	_, s := newSession(t, m, berth.Options{Threads: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Run(ctx, f32Tensor([]int64{2}, 1, 2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run returned %v, want the context's deadline error", err)
	}
	// The session stays usable.
	if _, err := s.Run(ctx, f32Tensor([]int64{2}, 1, 2)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Run returned %v", err)
	}
}

// TestNestedLoopsLoadQuickly loads constant loops nested too deep to
// compute at load time (1000^4 iterations): loading stays fast, and a
// small nest still folds or runs to the right count.
func TestNestedLoopsLoadQuickly(t *testing.T) {
	start := time.Now()
	m, err := berth.LoadBytes(onnxtest.NestedLoopModel(4, 1000), "")
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("loading took %v", d)
	}
	m, err = berth.LoadBytes(onnxtest.NestedLoopModel(3, 4), "")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exe := compileWith(t, m, berth.Options{Threads: 1})
	outs := runOnce(t, exe, nil)
	if got := f32Values(outs[0]); len(got) != 1 || got[0] != 64 {
		t.Errorf("y = %v, want [64]", got)
	}
}

// openFixtureNamed returns the fixture of testdata/open called name.
// runOpenSets runs every input set of f in s, checks the outputs against
// f's, and hands check the operators of the plan that gave them.
func runOpenSets(t *testing.T, s *berth.Session, f openFixture, check func(set int, ops map[string]int)) {
	t.Helper()
	for k, ins := range f.sets {
		outs, err := s.Run(context.Background(), ins...)
		if err != nil {
			t.Fatalf("set %d: %v", k, err)
		}
		checkOpenOutputs(t, fmt.Sprintf("set %d", k), outs, f.outputs[k])
		ops := map[string]int{}
		countOps(s.Executable().Model().Graph(), ops)
		check(k, ops)
	}
}

func openFixtureNamed(t *testing.T, name string) openFixture {
	t.Helper()
	for _, f := range loadOpenFixtures(t) {
		if f.name == name {
			return f
		}
	}
	t.Fatalf("no fixture %q under testdata/open", name)
	return openFixture{}
}

// countOps counts the nodes of g (subgraphs included) by operator.
func countOps(g *ir.Graph, ops map[string]int) {
	for i := range g.Nodes {
		ops[g.Nodes[i].Op]++
		for _, sub := range g.Nodes[i].Subgraphs() {
			countOps(sub, ops)
		}
	}
}

// TestIfCondition runs If nodes whose branches cannot both be planned at
// the shapes of a run. Where the condition follows from an input (ifrate:
// If(sr == 16000) groups by 4 or by 3, and at the shapes of one rate the
// other branch does not infer or gives another shape), the session binds
// that input by value and plans only the branch taken; an If whose
// condition is computed at run time and whose branches agree keeps both
// (ifrate's second output); one whose branches disagree (ifstage) becomes
// a stage that computes the condition, and the plans after it take one
// branch each. Outputs are ONNX Runtime's (scripts/gen_ort_fixtures.py).
func TestIfCondition(t *testing.T) {
	t.Run("input", func(t *testing.T) {
		f := openFixtureNamed(t, "ifrate")
		m := loadModel(t, f.model)
		_, s := newSession(t, m, berth.Options{Threads: 1})
		runOpenSets(t, s, f, func(k int, ops map[string]int) {
			// y's If is gone (its branch inlined), z's stays with both
			// branches.
			if ops["If"] != 1 || ops["Add"] != 1 || ops["Neg"] != 1 {
				t.Errorf("set %d: the plan holds %d If, %d Add, %d Neg; want z's If alone with both branches", k, ops["If"], ops["Add"], ops["Neg"])
			}
		})
		// The rate's other branch at these shapes: n = 6 does not group by
		// 4. ONNX Runtime refuses it too.
		bad := slices.Clone(f.sets[2])
		bad[1] = berth.Tensor{Name: "sr", DType: berth.Int64, Shape: []int64{}, Data: binary.LittleEndian.AppendUint64(nil, 16000)}
		_, err := s.Run(context.Background(), bad...)
		if err == nil || !strings.Contains(err.Error(), "Reshape") {
			t.Errorf("the branch that cannot run at these shapes: got %v, want an error naming its Reshape", err)
		}
	})
	t.Run("computed", func(t *testing.T) {
		f := openFixtureNamed(t, "ifstage")
		m := loadModel(t, f.model)
		_, s := newSession(t, m, berth.Options{Threads: 1})
		for range 2 {
			runOpenSets(t, s, f, func(k int, ops map[string]int) {
				if ops["If"] != 0 {
					t.Errorf("set %d: the final plan holds %d If nodes, want its branch inlined", k, ops["If"])
				}
			})
		}
	})
	t.Run("branches-differ", func(t *testing.T) {
		// The condition is an input and the branches give float[3] (x)
		// and float[2] (an initializer): each run plans the branch its
		// condition takes.
		m := loadBytes(t, onnxtest.MismatchedIfModel())
		_, s := newSession(t, m, berth.Options{Threads: 1})
		x := f32Tensor([]int64{3}, 1, -2, 3)
		for _, c := range []struct {
			cond  bool
			shape []int64
		}{{true, []int64{3}}, {false, []int64{2}}, {true, []int64{3}}} {
			outs, err := s.Run(context.Background(), boolTensor(c.cond), x)
			if err != nil {
				t.Fatalf("cond %v: %v", c.cond, err)
			}
			if !slices.Equal(outs[0].Shape, c.shape) {
				t.Errorf("cond %v: output shape %v, want %v", c.cond, outs[0].Shape, c.shape)
			}
			if c.cond && !slices.Equal(outs[0].Data, x.Data) {
				t.Errorf("cond true: output %v is not the input x %v", f32Values(outs[0]), f32Values(x))
			}
		}
		if s.Plans() != 2 {
			t.Errorf("the session keeps %d plans, want one per condition", s.Plans())
		}
	})
}
