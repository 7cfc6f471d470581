package plan_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// smallProblem is x → a → v (a view of a) → y, with a scratch buffer at the
// first step.
func smallProblem() *plan.Problem {
	b := &builder{}
	x := b.input(100)
	a := b.step("Conv", []int{x}, 200, 50)[0]
	v := b.view(a, 120, 64)
	b.output(b.op("Relu", 120, v))
	return &b.p
}

func TestVerifyRejects(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(p *plan.Problem, pl *plan.Plan)
		want  string
	}{
		{"output over its input", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[4] = pl.Offsets[1] }, "overlap"},
		{"scratch over an input", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[2] = pl.Offsets[0] }, "overlap"},
		{"view moved", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[3] += 8 }, "not at"},
		{"view outside its root", func(p *plan.Problem, pl *plan.Plan) {
			p.Tensors[3].AliasOffset = 100
			pl.Offsets[3] = pl.Offsets[1] + 100
		}, "not inside its root"},
		{"read before write", func(p *plan.Problem, pl *plan.Plan) { pl.Order = []int{1, 0, 2} }, "before any step writes it"},
		{"step twice", func(p *plan.Problem, pl *plan.Plan) { pl.Order = []int{0, 0, 2} }, "run twice"},
		{"steps missing", func(p *plan.Problem, pl *plan.Plan) { pl.Order = pl.Order[:2] }, "schedule has 2 steps"},
		{"misaligned", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[4] += 8 }, "not a non-negative multiple"},
		{"negative offset", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[4] = -64 }, "not a non-negative multiple"},
		{"beyond the arena", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets[4] = pl.ArenaBytes }, "beyond the arena"},
		{"arena not aligned", func(p *plan.Problem, pl *plan.Plan) { pl.ArenaBytes += 1 }, "not a multiple"},
		{"wrong lower bound", func(p *plan.Problem, pl *plan.Plan) { pl.LoadBytes -= 64 }, "LOAD"},
		{"offsets missing", func(p *plan.Problem, pl *plan.Plan) { pl.Offsets = pl.Offsets[:3] }, "offsets for"},
		{"written twice", func(p *plan.Problem, pl *plan.Plan) { p.Steps[2].Outputs = []int{1} }, "already written"},
		{"never written", func(p *plan.Problem, pl *plan.Plan) { p.Steps[2].Outputs = nil }, "never written"},
		{"alias cycle", func(p *plan.Problem, pl *plan.Plan) { p.Tensors[1].SetAlias(3) }, "circle"},
		{"overwrites what it does not read", func(p *plan.Problem, pl *plan.Plan) { p.Steps[2].Overwrite = []int{0} }, "does not read"},
		{"no alignment", func(p *plan.Problem, pl *plan.Plan) { pl.Alignment = 0 }, "alignment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := smallProblem()
			pl, err := plan.Build(p, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.Verify(p, pl); err != nil {
				t.Fatalf("before spoiling: %v", err)
			}
			tt.spoil(p, pl)
			err = plan.Verify(p, pl)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Verify = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// A plan written by hand, not by Build, passes when it is sound.
func TestVerifyHandMade(t *testing.T) {
	p := smallProblem()
	pl := &plan.Plan{
		Order: []int{0, 1, 2},
		// x and the scratch share nothing with a; y reuses x's bytes.
		Offsets:    []int64{0, 256, 128, 256 + 64, 0},
		ArenaBytes: 512,
		LoadBytes:  128 + 256 + 64,
		Alignment:  64,
	}
	if err := plan.Verify(p, pl); err != nil {
		t.Fatal(err)
	}
	pl.Offsets[4] = 384 // y now overlaps a, which is live until y is written
	if err := plan.Verify(p, pl); err == nil {
		t.Fatal("an overlap went unnoticed")
	}
}

// Verify finds an overlap exactly when a pairwise check of every two roots
// finds one.
func TestVerifyAgreesWithPairwiseCheck(t *testing.T) {
	caught := 0
	for seed := range uint64(1000) {
		rng := rand.New(rand.NewPCG(seed, 5))
		p := randomProblem(rng, 1+rng.IntN(40))
		// The pairwise check knows nothing of in-place execution, which
		// TestVerifyInPlace covers.
		pl, err := plan.Build(p, plan.Options{NoInPlace: true})
		if err != nil {
			t.Fatal(err)
		}
		var roots []int
		for i, tn := range p.Tensors {
			if !tn.IsView() && AlignUp(tn.Size, pl.Alignment) <= pl.ArenaBytes && tn.Size > 0 {
				roots = append(roots, i)
			}
		}
		if len(roots) == 0 {
			continue
		}
		// Move one root anywhere in the arena, and its views along with it.
		r := roots[rng.IntN(len(roots))]
		slot := AlignUp(p.Tensors[r].Size, pl.Alignment)
		pl.Offsets[r] = pl.Alignment * rng.Int64N((pl.ArenaBytes-slot)/pl.Alignment+1)
		for i := range p.Tensors {
			pl.Offsets[i] = offsetOf(p, pl, i)
		}

		want := false
		for _, a := range roots {
			for _, b := range roots {
				if a < b && pl.Start[a] <= pl.End[b] && pl.Start[b] <= pl.End[a] &&
					pl.Offsets[a] < pl.Offsets[b]+AlignUp(p.Tensors[b].Size, pl.Alignment) &&
					pl.Offsets[b] < pl.Offsets[a]+AlignUp(p.Tensors[a].Size, pl.Alignment) {
					want = true
				}
			}
		}
		err = plan.Verify(p, pl)
		if got := err != nil; got != want {
			t.Fatalf("seed %d: Verify says %v, the pairwise check says overlap %v", seed, err, want)
		}
		if want {
			caught++
		}
	}
	if caught < 100 {
		t.Fatalf("only %d of the moves made an overlap; the test proves little", caught)
	}
}

// offsetOf is where tensor i lies given its root's offset.
func offsetOf(p *plan.Problem, pl *plan.Plan, i int) int64 {
	if t := p.Tensors[i]; t.IsView() {
		return offsetOf(p, pl, t.Alias()) + t.AliasOffset
	}
	return pl.Offsets[i]
}

func AlignUp(n, a int64) int64 { return (n + a - 1) / a * a }

func TestBuildRejects(t *testing.T) {
	root := func(name string, size int64) plan.Tensor { return plan.Tensor{Name: name, Size: size} }
	step := func(in, out int) plan.Step {
		return plan.Step{Name: "s", Op: "Op", Inputs: []int{in}, Outputs: []int{out}}
	}
	tests := []struct {
		name string
		p    plan.Problem
		opts plan.Options
		want string
	}{
		{"negative size", plan.Problem{Tensors: []plan.Tensor{root("x", -1)}, Inputs: []int{0}}, plan.Options{}, "negative size"},
		{"alias out of range", plan.Problem{Tensors: []plan.Tensor{root("x", 8), viewOf("v", 8, 7, 0)}, Inputs: []int{0}}, plan.Options{}, "not another tensor"},
		{"alias of itself", plan.Problem{Tensors: []plan.Tensor{viewOf("x", 8, 0, 0)}}, plan.Options{}, "not another tensor"},
		{"view too big", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), viewOf("v", 8, 0, 4)},
			Steps:   []plan.Step{step(0, 1)}, Inputs: []int{0},
		}, plan.Options{}, "does not fit"},
		{"alias cycle", plan.Problem{
			Tensors: []plan.Tensor{viewOf("a", 8, 1, 0), viewOf("b", 8, 0, 0)},
		}, plan.Options{}, "cycle"},
		{"input is a view", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), viewOf("v", 8, 0, 0)}, Inputs: []int{0, 1},
		}, plan.Options{}, "is a view"},
		{"written twice", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), root("y", 8)},
			Steps:   []plan.Step{step(0, 1), step(0, 1)}, Inputs: []int{0},
		}, plan.Options{}, "written twice"},
		{"input written", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8)}, Steps: []plan.Step{step(0, 0)}, Inputs: []int{0},
		}, plan.Options{}, "written twice"},
		{"never written", plan.Problem{Tensors: []plan.Tensor{root("x", 8)}}, plan.Options{}, "neither a graph input nor written"},
		{"index out of range", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8)}, Steps: []plan.Step{step(0, 3)}, Inputs: []int{0},
		}, plan.Options{}, "out of range"},
		{"output out of range", plan.Problem{Tensors: []plan.Tensor{root("x", 8)}, Inputs: []int{0}, Outputs: []int{1}}, plan.Options{}, "out of range"},
		{"file order reads early", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), root("y", 8), root("z", 8)},
			Steps:   []plan.Step{step(1, 2), step(0, 1)}, Inputs: []int{0},
		}, plan.Options{}, "before it is written"},
		{"schedule reads early", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), root("y", 8), root("z", 8)},
			Steps:   []plan.Step{step(0, 1), step(1, 2)}, Inputs: []int{0},
		}, plan.Options{Order: []int{1, 0}}, "before it is written"},
		{"schedule repeats", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), root("y", 8), root("z", 8)},
			Steps:   []plan.Step{step(0, 1), step(0, 2)}, Inputs: []int{0},
		}, plan.Options{Order: []int{0, 0}}, "listed twice"},
		{"schedule short", plan.Problem{
			Tensors: []plan.Tensor{root("x", 8), root("y", 8)},
			Steps:   []plan.Step{step(0, 1)}, Inputs: []int{0},
		}, plan.Options{Order: []int{}}, "0 steps listed"},
		{"bad alignment", plan.Problem{}, plan.Options{Alignment: -64}, "alignment"},
		{"too large", plan.Problem{Tensors: []plan.Tensor{root("x", 1<<62)}, Inputs: []int{0}}, plan.Options{}, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := plan.Build(&tt.p, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Build = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestBuildCorners(t *testing.T) {
	t.Run("no steps", func(t *testing.T) {
		b := &builder{}
		x, y := b.input(100), b.input(0)
		b.output(x, y)
		pl := check(t, &b.p, plan.Options{})
		if pl.ArenaBytes != 128 || pl.LoadBytes != 128 {
			t.Fatalf("arena %d, LOAD %d; want 128", pl.ArenaBytes, pl.LoadBytes)
		}
	})
	t.Run("empty", func(t *testing.T) {
		pl := check(t, &plan.Problem{}, plan.Options{})
		if pl.ArenaBytes != 0 {
			t.Fatalf("arena %d", pl.ArenaBytes)
		}
	})
	t.Run("alignment", func(t *testing.T) {
		p := smallProblem()
		for _, align := range []int64{1, 3, 64, 256, 4096} {
			pl := check(t, p, plan.Options{Alignment: align})
			if pl.ArenaBytes%align != 0 {
				t.Errorf("alignment %d: arena %d", align, pl.ArenaBytes)
			}
		}
	})
	t.Run("schedule", func(t *testing.T) {
		// Two independent branches: running one to the end before the
		// other keeps fewer bytes live than interleaving them.
		b := &builder{}
		x := b.input(64)
		a1 := b.op("Op", 1024, x)
		b1 := b.op("Op", 1024, x)
		a2 := b.op("Op", 64, a1)
		b2 := b.op("Op", 64, b1)
		b.output(b.op("Add", 64, a2, b2))
		file := check(t, &b.p, plan.Options{FileOrder: true})
		better := check(t, &b.p, plan.Options{Order: []int{0, 2, 1, 3, 4}})
		if chosen := check(t, &b.p, plan.Options{}); chosen.LoadBytes > better.LoadBytes || chosen.Schedule == "file" {
			t.Fatalf("Build chose the %s schedule, LOAD %d; the depth-first one has %d", chosen.Schedule, chosen.LoadBytes, better.LoadBytes)
		}
		if !slices.Equal(better.Order, []int{0, 2, 1, 3, 4}) || better.LoadBytes >= file.LoadBytes {
			t.Fatalf("LOAD %d with the schedule, %d in file order", better.LoadBytes, file.LoadBytes)
		}
		if better.FileOrderLoadBytes != file.FileOrderLoadBytes {
			t.Fatalf("file-order LOAD depends on the schedule: %d, %d", better.FileOrderLoadBytes, file.FileOrderLoadBytes)
		}
	})
}

// Verify accepts an output over its input exactly where the in-place rule
// allows it, and Build takes over exactly there.
func TestVerifyInPlace(t *testing.T) {
	// x → Conv → a → op → b → MatMul → y, with a and b of 256 bytes.
	base := func() *plan.Problem {
		return &plan.Problem{
			Tensors: []plan.Tensor{
				{Name: "x", Size: 64},
				{Name: "a", Size: 256},
				{Name: "b", Size: 256},
				{Name: "y", Size: 64},
			},
			Steps: []plan.Step{
				{Name: "conv", Op: "Conv", Inputs: []int{0}, Outputs: []int{1}},
				{Name: "op", Op: "Relu", InPlace: true, Inputs: []int{1}, Outputs: []int{2}},
				{Name: "fc", Op: "MatMul", Inputs: []int{2}, Outputs: []int{3}},
			},
			Inputs:  []int{0},
			Outputs: []int{3},
		}
	}
	const a, b = 1, 2
	tests := []struct {
		name   string
		change func(p *plan.Problem)
		in     int // the tensor b may land on
		ok     bool
	}{
		{"elementwise", func(p *plan.Problem) {}, a, true},
		{"binary", func(p *plan.Problem) { p.Steps[1].Op, p.Steps[1].Inputs = "Add", []int{0, 1} }, a, true},
		{"softmax", func(p *plan.Problem) { p.Steps[1].Op = "Softmax" }, a, true},
		{"whole view", func(p *plan.Problem) {
			p.Tensors = append(p.Tensors, viewOf("v", 256, a, 0))
			p.Steps = slices.Insert(p.Steps, 1, plan.Step{Name: "reshape", Op: "Reshape", Inputs: []int{a}, Outputs: []int{4}})
			p.Steps[2].Inputs = []int{4}
		}, 4, true},
		{"not elementwise", func(p *plan.Problem) { p.Steps[1].Op, p.Steps[1].InPlace = "Transpose", false }, a, false},
		// A fused producer listing a residual in Overwrite.
		{"overwrite listed", func(p *plan.Problem) {
			p.Steps[1].InPlace = false
			p.Steps[1].Op, p.Steps[1].Inputs, p.Steps[1].Overwrite = "Conv", []int{0, a}, []int{a}
		}, a, true},
		{"overwrite lists another input", func(p *plan.Problem) {
			p.Tensors[0].Size = 256
			p.Steps[0].Inputs = nil
			p.Inputs = nil
			p.Steps = slices.Insert(p.Steps, 0, plan.Step{Name: "in", Op: "Neg", Outputs: []int{0}})
			p.Steps[2].InPlace = false
			p.Steps[2].Op, p.Steps[2].Inputs, p.Steps[2].Overwrite = "Conv", []int{0, a}, []int{0}
		}, a, false},
		{"overwrite in another domain", func(p *plan.Problem) {
			p.Steps[1].InPlace = false
			p.Steps[1].Op, p.Steps[1].Domain, p.Steps[1].Inputs, p.Steps[1].Overwrite = "Conv", "com.example", []int{0, a}, []int{a}
		}, a, true},
		{"overwrite while reading a view of it", func(p *plan.Problem) {
			p.Tensors = append(p.Tensors, viewOf("v", 256, a, 0))
			p.Steps = slices.Insert(p.Steps, 1, plan.Step{Name: "reshape", Op: "Reshape", Inputs: []int{a}, Outputs: []int{4}})
			p.Steps[2].InPlace = false
			p.Steps[2].Op, p.Steps[2].Inputs, p.Steps[2].Overwrite = "Conv", []int{4, a}, []int{a}
		}, a, false},
		{"overwrite of another size", func(p *plan.Problem) {
			p.Steps[1].InPlace = false
			p.Steps[1].Op, p.Steps[1].Inputs, p.Steps[1].Overwrite = "Conv", []int{0, a}, []int{a}
			p.Tensors[b].Size = 192
		}, a, false},
		{"not marked in place", func(p *plan.Problem) { p.Steps[1].InPlace = false }, a, false},
		{"another type", func(p *plan.Problem) { p.Tensors[b].DType = ir.Float16 }, a, false},
		{"another size", func(p *plan.Problem) { p.Tensors[b].Size = 200 }, a, false},
		{"read later", func(p *plan.Problem) { p.Steps[2].Inputs = []int{b, a} }, a, false},
		{"graph output", func(p *plan.Problem) { p.Outputs = append(p.Outputs, a) }, a, false},
		{"graph input", func(p *plan.Problem) {
			p.Tensors[0].Size = 256
			p.Steps[1].Inputs = []int{0, 1}
			p.Steps[1].Op = "Add"
		}, 0, false},
		{"second output", func(p *plan.Problem) {
			p.Tensors = append(p.Tensors, plan.Tensor{Name: "m", Size: 64})
			p.Steps[1].Outputs = []int{4, b}
		}, a, false},
		{"a slice of it read too", func(p *plan.Problem) {
			p.Tensors = append(p.Tensors, viewOf("v", 64, a, 0))
			p.Steps = slices.Insert(p.Steps, 1, plan.Step{Name: "slice", Op: "Slice", Inputs: []int{a}, Outputs: []int{4}})
			p.Steps[2].Op, p.Steps[2].Inputs = "Add", []int{a, 4}
		}, a, false},
		{"part of a view", func(p *plan.Problem) {
			p.Tensors[a].Size = 512
			p.Tensors = append(p.Tensors, viewOf("v", 256, a, 0))
			p.Steps = slices.Insert(p.Steps, 1, plan.Step{Name: "slice", Op: "Slice", Inputs: []int{a}, Outputs: []int{4}})
			p.Steps[2].Inputs = []int{4}
		}, 4, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.change(p)
			pl := check(t, p, plan.Options{})
			if shared := pl.Offsets[b] == pl.Offsets[tt.in]; shared != tt.ok {
				t.Fatalf("Build put b at %d and its input at %d; want in place %v", pl.Offsets[b], pl.Offsets[tt.in], tt.ok)
			}
			if tt.ok {
				if got := pl.Report(p).Tensors[b].InPlaceOf; got != p.Tensors[tt.in].Name {
					t.Fatalf("the report says b is in place of %q, want %q", got, p.Tensors[tt.in].Name)
				}
				return
			}
			if pl.InPlace[b] == tt.in {
				t.Fatalf("InPlace[b] = %d, its input", pl.InPlace[b])
			}
			// Put b on its input by hand: Verify must refuse.
			pl, err := plan.Build(p, plan.Options{NoInPlace: true})
			if err != nil {
				t.Fatal(err)
			}
			pl.Offsets[b] = pl.Offsets[tt.in]
			err = plan.Verify(p, pl)
			if err == nil || !strings.Contains(err.Error(), "overlap") || !strings.Contains(err.Error(), `"b"`) {
				t.Fatalf("Verify = %v, want b's overlap refused", err)
			}
		})
	}
}
