package plan_test

import (
	"strings"
	"testing"

	"github.com/berth-ml/berth/plan"
)

// cacheProblem is a decoder step in miniature: two state tensors (a
// layer's keys and values), each updated in place by a step that writes
// the run's rows into it (or, together, both by one step), read by an
// attention step after the updates, with activations of other sizes
// around them.
func cacheProblem(together bool) (p *plan.Problem, kNew, vNew int) {
	b := &builder{}
	x := b.input(300)
	k := b.input(1000)
	v := b.input(1000)
	b.p.State = []int{k, v}
	q := b.op("MatMul", 300, x)
	kr := b.op("MatMul", 100, x)
	if together {
		outs := b.step("CacheWrites", []int{k, v, kr}, 1000, 1000)
		kNew, vNew = outs[0], outs[1]
		b.p.Steps[len(b.p.Steps)-1].Updates = outs
	} else {
		kNew = b.op("CacheWrite", 1000, k, kr)
		b.p.Steps[len(b.p.Steps)-1].Updates = []int{kNew}
		vNew = b.op("CacheWrite", 1000, v, kr)
		b.p.Steps[len(b.p.Steps)-1].Updates = []int{vNew}
	}
	b.p.Tensors[kNew].SetAlias(k)
	b.p.Tensors[vNew].SetAlias(v)
	a := b.op("CachedAttention", 300, q, kNew, vNew)
	b.output(b.op("Add", 300, a, x))
	return &b.p, kNew, vNew
}

// TestStatePlacement: the state takes the arena's first bytes in its
// order, whatever the rest of the problem, and Verify accepts the plan.
func TestStatePlacement(t *testing.T) {
	for _, opts := range []plan.Options{{}, {FileOrder: true}, {NoInPlace: true}, {Alignment: 256}} {
		p, kNew, _ := cacheProblem(false)
		pl, err := plan.Build(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Verify(p, pl); err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
		align := pl.Alignment
		if pl.Offsets[p.State[0]] != 0 || pl.Offsets[p.State[1]] != (1000+align-1)/align*align {
			t.Errorf("%+v: state at %d and %d", opts, pl.Offsets[p.State[0]], pl.Offsets[p.State[1]])
		}
		if pl.Offsets[kNew] != pl.Offsets[p.State[0]] {
			t.Errorf("%+v: the update is at %d, its state at %d", opts, pl.Offsets[kNew], pl.Offsets[p.State[0]])
		}
		state := 2 * ((1000 + align - 1) / align * align)
		for id := range p.Tensors {
			r := id
			for p.Tensors[r].IsView() {
				r = p.Tensors[r].Alias()
			}
			if r != p.State[0] && r != p.State[1] && p.Tensors[id].Size > 0 && pl.Offsets[id] < state {
				t.Errorf("%+v: %q at %d, inside the state's %d bytes", opts, p.Tensors[id].Name, pl.Offsets[id], state)
			}
		}
	}
}

// TestStateVerify: Verify refuses plans that break the state's rules.
func TestStateVerify(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(p *plan.Problem, pl *plan.Plan)
		want  string
	}{
		{"state moved", func(p *plan.Problem, pl *plan.Plan) {
			// The two state tensors swapped.
			a, b := p.State[0], p.State[1]
			pl.Offsets[a], pl.Offsets[b] = pl.Offsets[b], pl.Offsets[a]
			for id := range p.Tensors {
				if p.Tensors[id].Alias() == a {
					pl.Offsets[id] = pl.Offsets[a]
				} else if p.Tensors[id].Alias() == b {
					pl.Offsets[id] = pl.Offsets[b]
				}
			}
		}, "state tensor"},
		{"old value read after the update", func(p *plan.Problem, pl *plan.Plan) {
			// The attention reads the cache as it was, after the update.
			att := &p.Steps[4]
			att.Inputs[1] = p.State[0]
		}, "after step"},
		{"activation in the state", func(p *plan.Problem, pl *plan.Plan) {
			pl.Offsets[p.Steps[0].Outputs[0]] = 0
		}, "overlap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, _ := cacheProblem(false)
			pl, err := plan.Build(p, plan.Options{FileOrder: true})
			if err != nil {
				t.Fatal(err)
			}
			c.spoil(p, pl)
			err = plan.Verify(p, pl)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Verify: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestStateCheck: Build refuses state that is not a graph input, and
// updates that do not view all of a state tensor.
func TestStateCheck(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(p *plan.Problem)
	}{
		{"state not an input", func(p *plan.Problem) { p.State = append(p.State, p.Steps[0].Outputs[0]) }},
		{"state twice", func(p *plan.Problem) { p.State = append(p.State, p.State[0]) }},
		{"update of no state", func(p *plan.Problem) {
			p.Tensors[p.Steps[0].Outputs[0]].SetAlias(p.Steps[0].Inputs[0])
			p.Steps[0].Updates = p.Steps[0].Outputs
		}},
		{"update not an output", func(p *plan.Problem) { p.Steps[0].Updates = []int{p.Steps[2].Outputs[0]} }},
		{"update at an offset", func(p *plan.Problem) { p.Tensors[p.Steps[2].Outputs[0]].AliasOffset = 64 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, _ := cacheProblem(false)
			c.spoil(p)
			if _, err := plan.Build(p, plan.Options{}); err == nil {
				t.Error("Build accepted the problem")
			}
		})
	}
}

// TestStateTwoUpdates: one step may update two state tensors (a layer's
// keys and values written by one kernel); Verify accepts its plans and
// refuses one where a later step reads either old value.
func TestStateTwoUpdates(t *testing.T) {
	for _, opts := range []plan.Options{{}, {FileOrder: true}, {NoInPlace: true}} {
		p, _, _ := cacheProblem(true)
		pl, err := plan.Build(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Verify(p, pl); err != nil {
			t.Fatalf("%+v: %v", opts, err)
		}
	}
	for state := range 2 {
		p, _, _ := cacheProblem(true)
		pl, err := plan.Build(p, plan.Options{FileOrder: true})
		if err != nil {
			t.Fatal(err)
		}
		att := &p.Steps[len(p.Steps)-2]
		att.Inputs[1+state] = p.State[state]
		if err := plan.Verify(p, pl); err == nil || !strings.Contains(err.Error(), "after step") {
			t.Errorf("state %d read after its update: Verify says %v", state, err)
		}
	}
}

// TestStateOldReadsComeFirst: a step that reads a state's old value runs
// before the update in the plans Build makes, and an order that runs it
// after (the problem's own, or Options.Order) is refused.
func TestStateOldReadsComeFirst(t *testing.T) {
	build := func(readFirst bool) *plan.Problem {
		b := &builder{}
		x := b.input(100)
		k := b.input(1000)
		b.p.State = []int{k}
		var old int
		if readFirst {
			old = b.op("ReduceSum", 100, k)
		}
		kNew := b.op("CacheWrite", 1000, k, x)
		b.p.Tensors[kNew].SetAlias(k)
		b.p.Steps[len(b.p.Steps)-1].Updates = []int{kNew}
		if !readFirst {
			old = b.op("ReduceSum", 100, k)
		}
		a := b.op("CachedAttention", 100, x, kNew)
		b.output(b.op("Add", 100, a, old))
		return &b.p
	}
	for _, opts := range []plan.Options{{}, {NoInPlace: true}} {
		p := build(true)
		pl, err := plan.Build(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := plan.Verify(p, pl); err != nil {
			t.Errorf("%+v (%s schedule): %v", opts, pl.Schedule, err)
		}
	}
	for _, c := range []struct {
		p    *plan.Problem
		opts plan.Options
	}{{build(false), plan.Options{}}, {build(true), plan.Options{Order: []int{1, 0, 2, 3}}}} {
		if _, err := plan.Build(c.p, c.opts); err == nil || !strings.Contains(err.Error(), "after an update") {
			t.Errorf("a read of the old value after the update (order %v): Build says %v", c.opts.Order, err)
		}
	}
}
