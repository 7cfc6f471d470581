package plan

import (
	"container/heap"
	"slices"
)

// A schedule is one topological order of the steps. Build plans several
// and keeps the one whose arena is smallest, the file's own order on ties.
type schedule struct {
	name  string
	order func(p *Problem, align int64) []int
}

// schedules are the orders Build tries, the file's first.
var schedules = []schedule{
	{"file", fileOrder},
	{"depth-first", depthFirstOrder},
	{"least memory", leastMemoryOrder},
}

// fileOrder is the order the model file gave the steps.
func fileOrder(p *Problem, _ int64) []int {
	order := make([]int, len(p.Steps))
	for i := range order {
		order[i] = i
	}
	return order
}

// producers returns, for every tensor, the step that writes it (-1 for a
// graph input).
func producers(p *Problem) []int {
	by := make([]int, len(p.Tensors))
	for i := range by {
		by[i] = -1
	}
	for s := range p.Steps {
		for _, id := range p.Steps[s].Outputs {
			by[id] = s
		}
	}
	return by
}

// depthFirstOrder runs each step as soon as the step that needs it is
// reached in a depth-first walk back from the graph outputs: a post-order,
// which finishes one branch before it starts the next, so that fewer
// branches' tensors are live at once. Steps no output depends on follow in
// file order, each after what it reads.
func depthFirstOrder(p *Problem, _ int64) []int {
	by := producers(p)
	done := make([]bool, len(p.Steps))
	order := make([]int, 0, len(p.Steps))
	// An explicit stack: graphs may be 100k steps deep. Each frame is a
	// step and the next of its inputs to visit.
	type frame struct{ step, next int }
	var stack []frame
	visit := func(s int) {
		if s < 0 || done[s] {
			return
		}
		done[s] = true
		stack = append(stack[:0], frame{s, 0})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			ins := p.Steps[f.step].Inputs
			if f.next == len(ins) {
				order = append(order, f.step)
				stack = stack[:len(stack)-1]
				continue
			}
			q := by[ins[f.next]]
			f.next++
			if q >= 0 && !done[q] {
				done[q] = true
				stack = append(stack, frame{q, 0})
			}
		}
	}
	for _, id := range p.Outputs {
		visit(by[id])
	}
	for s := range p.Steps {
		visit(s)
	}
	return order
}

// leastMemoryOrder is a greedy list schedule: of the steps whose inputs are
// all written, it runs next the one that adds the fewest live bytes (the
// slots its outputs open, whether they own them or view them, less the
// slots its inputs close), the earliest in
// the file among equals. Steps are rated when they become ready and again
// whenever a slot they read comes down to its last reader.
func leastMemoryOrder(p *Problem, align int64) []int {
	n := len(p.Tensors)
	by := producers(p)
	root := make([]int, n)
	for i := range root {
		r := i
		for p.Tensors[r].Alias() >= 0 {
			r = p.Tensors[r].Alias()
		}
		root[i] = r
	}
	// readers[r]: the steps still to run that read slot r; waiting[s]: the
	// inputs of s not yet written.
	readers := make([]int, n)
	kept := make([]bool, n)
	for _, id := range p.Outputs {
		kept[root[id]] = true
	}
	for _, id := range p.Inputs {
		kept[root[id]] = true
	}
	consumers := make([][]int, n) // steps reading each slot, once per step
	waiting := make([]int, len(p.Steps))
	var seen []int
	for s := range p.Steps {
		seen = seen[:0]
		for _, id := range p.Steps[s].Inputs {
			if r := root[id]; !slices.Contains(seen, r) {
				seen = append(seen, r)
				readers[r]++
				consumers[r] = append(consumers[r], s)
			}
			if by[id] >= 0 {
				waiting[s]++
			}
		}
	}
	users := make([][]int, n) // steps reading each tensor, once per input
	for s := range p.Steps {
		for _, id := range p.Steps[s].Inputs {
			users[id] = append(users[id], s)
		}
	}

	// opened: the slot is reserved, by a graph input or a step that wrote
	// it or a view of it (a Concat's input may be written into the
	// Concat's output long before the Concat runs).
	opened := make([]bool, n)
	for _, id := range p.Inputs {
		opened[root[id]] = true
	}

	// delta is what running s now adds to the live bytes.
	delta := func(s int) int64 {
		var d int64
		st := &p.Steps[s]
		for k, id := range st.Outputs {
			r := root[id]
			if !opened[r] && !slices.ContainsFunc(st.Outputs[:k], func(j int) bool { return root[j] == r }) {
				d += AlignUp(p.Tensors[r].Size, align)
			}
		}
		for k, id := range st.Inputs {
			r := root[id]
			if readers[r] == 1 && !kept[r] && !slices.ContainsFunc(st.Inputs[:k], func(j int) bool { return root[j] == r }) {
				d -= AlignUp(p.Tensors[r].Size, align)
			}
		}
		return d
	}
	ready := &readyHeap{}
	rating := make([]int64, len(p.Steps))
	for s := range p.Steps {
		if waiting[s] == 0 {
			rating[s] = delta(s)
			heap.Push(ready, rated{s, rating[s]})
		}
	}
	ran := make([]bool, len(p.Steps))
	order := make([]int, 0, len(p.Steps))
	for ready.Len() > 0 {
		r := heap.Pop(ready).(rated)
		if ran[r.step] || r.delta != rating[r.step] {
			continue // a stale rating
		}
		s := r.step
		ran[s] = true
		order = append(order, s)
		for _, id := range p.Steps[s].Outputs {
			opened[root[id]] = true
		}
		seen = seen[:0]
		for _, id := range p.Steps[s].Inputs {
			rt := root[id]
			if slices.Contains(seen, rt) {
				continue
			}
			seen = append(seen, rt)
			if readers[rt]--; readers[rt] == 1 && !kept[rt] {
				for _, c := range consumers[rt] {
					if !ran[c] && waiting[c] == 0 {
						rating[c] = delta(c)
						heap.Push(ready, rated{c, rating[c]})
					}
				}
			}
		}
		for _, id := range p.Steps[s].Outputs {
			for _, c := range users[id] {
				if waiting[c]--; waiting[c] == 0 {
					rating[c] = delta(c)
					heap.Push(ready, rated{c, rating[c]})
				}
			}
		}
	}
	return order
}

// rated is a ready step and what running it would add to the live bytes.
type rated struct {
	step  int
	delta int64
}

// readyHeap orders ready steps by delta, then by their place in the file.
type readyHeap []rated

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	if h[i].delta != h[j].delta {
		return h[i].delta < h[j].delta
	}
	return h[i].step < h[j].step
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(rated)) }
func (h *readyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
