package plan

import (
	"cmp"
	"slices"
)

// liveness is what a schedule makes of a problem: which slot every tensor
// lives in and during which steps.
type liveness struct {
	steps int // time points: the steps of the schedule, at least one

	// parent is the tensor whose bytes each tensor uses (-1 for a root):
	// the problem's aliases, plus the inputs that outputs took over in
	// place.
	parent []int
	root   []int // the root whose slot each tensor lives in

	// start and end bound, in schedule positions, when a tensor is in use:
	// for a view, from its write to its last read; for a root, the whole
	// time its slot is reserved, its views' uses included.
	start, end []int
}

// inPlace is the one rule for in-place execution. Step s may write its
// output out into the slot of its input in when
//
//  1. s is InPlace, or in is one of the inputs s lists in Overwrite;
//     and out is s's first output (a
//     normalisation's other outputs, mean and deviation, are written
//     before the rows are read);
//  2. in and out have the same element type and the same, non-zero,
//     byte size;
//  3. in owns its bytes, or views the whole of them: every link of its
//     aliases is at offset 0 and of in's size, so out lands exactly on an
//     input of the kernel; and any other input of s that views the same
//     bytes views all of them too (a slice of in, read after out has
//     overwritten part of it, would read the wrong values) and, where the
//     takeover is through Overwrite, is listed there too (the step reads
//     its other inputs whole);
//  4. in dies at s: no later step reads in or anything sharing its slot,
//     and neither in nor anything sharing its slot is a graph input or a
//     graph output.
//
// inPlace checks 1 to 3 from the problem alone; 4 depends on the schedule,
// and analyze (which decides) and Verify (which checks) each establish it
// on their own.
func inPlace(p *Problem, s, in, out int) bool {
	st := &p.Steps[s]
	listed := st.InPlace
	if !listed && !slices.Contains(st.Overwrite, in) {
		return false
	}
	if len(st.Outputs) == 0 || st.Outputs[0] != out {
		return false
	}
	ti, to := &p.Tensors[in], &p.Tensors[out]
	if ti.Size == 0 || ti.Size != to.Size || ti.DType != to.DType {
		return false
	}
	r, whole := wholeRoot(p, in)
	if !whole {
		return false
	}
	for _, j := range st.Inputs {
		rj, wj := wholeRoot(p, j)
		if rj != r {
			continue
		}
		if !wj || p.Tensors[j].Size != ti.Size {
			return false
		}
		if !listed && j != in && !slices.Contains(st.Overwrite, j) {
			// The step reads this one whole, not element by element.
			return false
		}
	}
	return true
}

// wholeRoot follows id's aliases to the tensor that owns its bytes, and
// reports whether id views all of them: every link at offset 0 and of the
// same size.
func wholeRoot(p *Problem, id int) (root int, whole bool) {
	whole = true
	for p.Tensors[id].Alias() >= 0 {
		t := &p.Tensors[id]
		if t.AliasOffset != 0 || p.Tensors[t.Alias()].Size != t.Size {
			whole = false
		}
		id = t.Alias()
	}
	return id, whole
}

// analyze computes the liveness of p under order. With views false, every
// tensor is a root with a slot of its own, as if nothing aliased anything.
// share decides in-place takeovers (Build passes inPlace); nil allows none.
func analyze(p *Problem, order []int, views bool, share func(p *Problem, s, in, out int) bool) *liveness {
	n := len(p.Tensors)
	lv := &liveness{
		steps:  max(len(order), 1),
		parent: make([]int, n),
		start:  make([]int, n),
		end:    make([]int, n),
	}

	// Each tensor's own uses: written at start, last read at end.
	for t, s := range order {
		for _, id := range p.Steps[s].Outputs {
			lv.start[id], lv.end[id] = t, t
		}
	}
	for _, id := range p.Inputs {
		lv.start[id], lv.end[id] = 0, 0
	}
	for t, s := range order {
		for _, id := range p.Steps[s].Inputs {
			lv.end[id] = t // t only grows
		}
	}
	for _, id := range p.Outputs {
		lv.end[id] = lv.steps - 1
	}
	for _, id := range p.State {
		lv.end[id] = lv.steps - 1
	}

	for i := range lv.parent {
		lv.parent[i] = -1
		if views {
			lv.parent[i] = p.Tensors[i].Alias()
		}
	}
	lv.resolve()
	if share == nil {
		return lv
	}

	// In place: an output that starts a slot of its own may take over the
	// slot of an input whose last use is this step, unless a graph input or
	// output lives there or another output of the step took it already. The
	// merged slot lives on as long as the output does.
	kept := make([]bool, n)
	for _, id := range p.Outputs {
		kept[lv.root[id]] = true
	}
	for _, id := range p.Inputs {
		kept[lv.root[id]] = true
	}
	takenAt := make([]int, n)
	for i := range takenAt {
		takenAt[i] = -1
	}
	for t, s := range order {
		for _, out := range p.Steps[s].Outputs {
			if lv.root[out] != out || lv.start[out] != t {
				continue
			}
			for _, in := range p.Steps[s].Inputs {
				r := lv.find(in)
				if r != out && lv.end[r] == t && !kept[r] && takenAt[r] != t && share(p, s, in, out) {
					lv.parent[out] = in
					lv.root[out] = r
					lv.end[r] = lv.end[out]
					kept[r] = kept[out]
					takenAt[r] = t
					break
				}
			}
		}
	}
	lv.resolve()
	return lv
}

// find is the root of id while in-place takeovers are being decided: the
// recorded root, followed on while that root has itself been taken over.
func (lv *liveness) find(id int) int {
	r := lv.root[id]
	for lv.root[r] != r {
		r = lv.root[r]
	}
	return r
}

// resolve sets root from parent and widens every root's lifetime to cover
// its views. Tensors' own lifetimes (start and end of views) are unchanged.
func (lv *liveness) resolve() {
	lv.root = make([]int, len(lv.parent))
	for i := range lv.root {
		lv.root[i] = -1
	}
	var path []int
	for i := range lv.root {
		j := i
		path = path[:0]
		for lv.root[j] < 0 && lv.parent[j] >= 0 {
			path = append(path, j)
			j = lv.parent[j]
		}
		r := lv.root[j]
		if r < 0 {
			r, lv.root[j] = j, j
		}
		for _, k := range path {
			lv.root[k] = r
		}
	}
	for i, r := range lv.root {
		if r != i {
			lv.start[r] = min(lv.start[r], lv.start[i])
			lv.end[r] = max(lv.end[r], lv.end[i])
		}
	}
}

// curve is the number of slot bytes, each root's size rounded up to align,
// live at each step.
func (lv *liveness) curve(p *Problem, align int64) []int64 {
	delta := make([]int64, lv.steps+1)
	for i, r := range lv.root {
		if r == i {
			a := AlignUp(p.Tensors[i].Size, align)
			delta[lv.start[i]] += a
			delta[lv.end[i]+1] -= a
		}
	}
	live := make([]int64, lv.steps)
	var sum int64
	for t := range live {
		sum += delta[t]
		live[t] = sum
	}
	return live
}

// load is LOAD: the peak of the curve.
func (lv *liveness) load(p *Problem, align int64) int64 {
	var peak int64
	for _, b := range lv.curve(p, align) {
		peak = max(peak, b)
	}
	return peak
}

// peak returns the first schedule position at which LOAD is reached and the
// roots live there, largest first.
func (lv *liveness) peak(p *Problem, align int64) (int, []int) {
	at, best := 0, int64(-1)
	for t, live := range lv.curve(p, align) {
		if live > best {
			at, best = t, live
		}
	}
	var roots []int
	for i, r := range lv.root {
		if r == i && p.Tensors[i].Size > 0 && lv.start[i] <= at && at <= lv.end[i] {
			roots = append(roots, i)
		}
	}
	slices.SortStableFunc(roots, func(a, b int) int { return cmp.Compare(p.Tensors[b].Size, p.Tensors[a].Size) })
	return at, roots
}
