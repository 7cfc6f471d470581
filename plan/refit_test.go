package plan_test

import (
	"strings"
	"testing"

	"github.com/berth-ml/berth/plan"
)

// scaled is one problem at a size n: a chain of products and activations
// (Relu, which may run in place), a reshape viewing its input whole, a
// view of the second half of a tensor, and a residual add, every size
// proportional to n, as a model's activations are to its batch.
func scaled(n int64) *plan.Problem {
	var b builder
	x := b.input(64 * n)
	a := b.op("MatMul", 256*n, x)
	r := b.op("Relu", 256*n, a)
	v := b.view(r, 256*n, 0)
	h := b.view(v, 128*n, 128*n)
	c := b.op("MatMul", 64*n, h)
	d := b.op("Add", 64*n, c, x)
	y := b.op("Relu", 64*n, d)
	b.output(y)
	return &b.p
}

func TestRefit(t *testing.T) {
	opts := plan.Options{Alignment: 64}
	bound := scaled(10)
	pl, err := plan.Build(bound, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{10, 7, 3, 1} {
		p := scaled(n)
		got, err := plan.Refit(p, bound, pl, opts)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if err := plan.Verify(p, got); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if got.ArenaBytes != pl.ArenaBytes || got.Schedule != plan.RefitSchedule {
			t.Errorf("n=%d: arena %d, schedule %q; want the bound's arena %d, refit", n, got.ArenaBytes, got.Schedule, pl.ArenaBytes)
		}
		for i := range p.Tensors {
			if p.Tensors[i].Alias() < 0 && pl.InPlace[i] < 0 && got.Offsets[i] != pl.Offsets[i] {
				t.Errorf("n=%d: root %q moved from %d to %d", n, p.Tensors[i].Name, pl.Offsets[i], got.Offsets[i])
			}
			if k := pl.InPlace[i]; k >= 0 && got.Offsets[i] != got.Offsets[k] {
				t.Errorf("n=%d: %q no longer lies on %q, which it took over in place", n, p.Tensors[i].Name, p.Tensors[k].Name)
			}
		}
		if n < 10 && got.LoadBytes >= pl.LoadBytes {
			t.Errorf("n=%d: LOAD %d, not below the bound's %d", n, got.LoadBytes, pl.LoadBytes)
		}
	}
	// Past the bound, or with other steps, the plan does not serve.
	if _, err := plan.Refit(scaled(11), bound, pl, opts); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("a larger problem: got %v, want an error", err)
	}
	other := scaled(5)
	other.Steps[1].Op = "Sigmoid"
	if _, err := plan.Refit(other, bound, pl, opts); err == nil {
		t.Error("a problem of other steps was refit")
	}
}

// concatAt is a problem at size n whose Concat lists its pieces or not,
// as a Concat of channels lists them at a batch of one only (ir.Pieces):
// two products of one input, joined, and a product of the whole.
func concatAt(n int64, pieces bool) *plan.Problem {
	var b builder
	x := b.input(64 * n)
	l := b.op("MatMul", 128*n, x)
	r := b.op("MatMul", 64*n, x)
	c := b.op("Concat", 192*n, l, r)
	if pieces {
		b.p.Steps[len(b.p.Steps)-1].Pieces = []plan.Piece{{Part: l, Whole: c}, {Part: r, Whole: c, Offset: 128 * n}}
	}
	b.output(b.op("MatMul", 64*n, c))
	return &b.p
}

// TestRefitPieces refits a plan whose Concat lists its pieces at one size
// and not at the other: unshared, they are copies between slots, and the
// plan serves.
func TestRefitPieces(t *testing.T) {
	opts := plan.Options{Alignment: 64, NoInPlace: true}
	for _, tc := range []struct {
		name          string
		bound, within bool
	}{{"within", false, true}, {"bound", true, false}, {"both", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			bound := concatAt(4, tc.bound)
			pl, err := plan.Build(bound, opts)
			if err != nil {
				t.Fatal(err)
			}
			p := concatAt(1, tc.within)
			got, err := plan.Refit(p, bound, pl, opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := plan.Verify(p, got); err != nil {
				t.Fatal(err)
			}
		})
	}
}
