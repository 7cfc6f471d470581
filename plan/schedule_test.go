package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomDAG is a random problem of n steps: each reads one to three earlier
// tensors (or graph inputs) and writes one or two.
func randomDAG(rng *rand.Rand, n int) *Problem {
	p := &Problem{}
	add := func() int {
		p.Tensors = append(p.Tensors, Tensor{Name: fmt.Sprintf("t%d", len(p.Tensors)), Size: 1 + rng.Int64N(4096)})
		return len(p.Tensors) - 1
	}
	for range 1 + rng.IntN(3) {
		p.Inputs = append(p.Inputs, add())
	}
	for s := range n {
		st := Step{Name: fmt.Sprintf("s%d", s), Op: []string{"Conv", "Relu", "Add"}[rng.IntN(3)]}
		for range 1 + rng.IntN(3) {
			st.Inputs = append(st.Inputs, rng.IntN(len(p.Tensors)))
		}
		for range 1 + rng.IntN(2) {
			st.Outputs = append(st.Outputs, add())
		}
		if rng.IntN(5) == 0 { // a whole view of the first output
			v := add()
			p.Tensors[v].SetAlias(st.Outputs[0])
			p.Tensors[v].Size = p.Tensors[st.Outputs[0]].Size
			p.Steps = append(p.Steps, st)
			st = Step{Name: fmt.Sprintf("s%d/view", s), Op: "Reshape", Inputs: []int{st.Outputs[0]}, Outputs: []int{v}}
		}
		p.Steps = append(p.Steps, st)
	}
	p.Outputs = append(p.Outputs, len(p.Tensors)-1)
	return p
}

// Every schedule Build tries is a topological order of every step.
func TestSchedulesAreTopological(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 7))
		p := randomDAG(rng, 1+rng.IntN(80))
		if err := p.check(); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, sc := range schedules {
			if err := p.checkOrder(sc.order(p, 64)); err != nil {
				t.Fatalf("seed %d: the %s schedule: %v", seed, sc.name, err)
			}
		}
	}
}

// The greedy schedule runs a branch's memory-freeing steps first: of two
// independent branches, each a large tensor reduced to a small one, it
// finishes one before it opens the other.
func TestLeastMemoryOrderFinishesBranches(t *testing.T) {
	p := &Problem{
		Tensors: []Tensor{
			{Name: "x", Size: 64},
			{Name: "a1", Size: 4096}, {Name: "b1", Size: 4096},
			{Name: "a2", Size: 64}, {Name: "b2", Size: 64},
			{Name: "y", Size: 64},
		},
		Steps: []Step{
			{Name: "a1", Op: "Conv", Inputs: []int{0}, Outputs: []int{1}},
			{Name: "b1", Op: "Conv", Inputs: []int{0}, Outputs: []int{2}},
			{Name: "a2", Op: "Pool", Inputs: []int{1}, Outputs: []int{3}},
			{Name: "b2", Op: "Pool", Inputs: []int{2}, Outputs: []int{4}},
			{Name: "y", Op: "Concat", Inputs: []int{3, 4}, Outputs: []int{5}},
		},
		Inputs:  []int{0},
		Outputs: []int{5},
	}
	for _, sc := range schedules[1:] {
		order := sc.order(p, 64)
		if fmt.Sprint(order) != "[0 2 1 3 4]" {
			t.Errorf("the %s schedule is %v, want [0 2 1 3 4]", sc.name, order)
		}
	}
}
