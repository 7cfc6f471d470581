package plan

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

// inPlace reports whether step s may write its output out over the bytes of
// its input in, which no later step reads (analyze has checked that). It is
// the one rule for in-place execution, and must allow only an out that fits
// in in's bytes and a kernel that reads each element of in before it writes
// the same element of out.
//
// It allows nothing yet: every output gets bytes apart from all of its
// step's inputs. Verify rejects plans in which an output overlaps an input of
// its step, and must learn the same rule when this one allows anything.
func inPlace(p *Problem, s, in, out int) bool { return false }

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

	for i := range lv.parent {
		lv.parent[i] = -1
		if views {
			lv.parent[i] = p.Tensors[i].Alias
		}
	}
	lv.resolve()
	if share == nil {
		return lv
	}

	// In place: an output that starts a slot of its own may take over the
	// slot of an input whose last use is this step, unless a graph output
	// lives there or another output of the step took it already. The merged
	// slot lives on as long as the output does.
	kept := make([]bool, n)
	for _, id := range p.Outputs {
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

// load is LOAD: the largest number of slot bytes, each root's size rounded up
// to align, live at any one step.
func (lv *liveness) load(p *Problem, align int64) int64 {
	delta := make([]int64, lv.steps+1)
	for i, r := range lv.root {
		if r == i {
			a := alignUp(p.Tensors[i].Size, align)
			delta[lv.start[i]] += a
			delta[lv.end[i]+1] -= a
		}
	}
	var live, peak int64
	for _, d := range delta {
		live += d
		peak = max(peak, live)
	}
	return peak
}
