package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// DefaultAlignment is the slot alignment when Options leaves it out: a cache
// line on the CPU.
const DefaultAlignment = 64

// Options tune Build.
type Options struct {
	// Alignment is the byte alignment of every slot; 0 means
	// DefaultAlignment. The CUDA backend wants 256.
	Alignment int64
	// Order is the schedule, step indices in execution order; nil lets
	// Build choose among several (see FileOrder).
	Order []int
	// FileOrder keeps the problem's own step order instead of trying the
	// memory-aware schedules.
	FileOrder bool
	// NoInPlace gives every output bytes apart from its step's inputs.
	NoInPlace bool
}

// Plan gives every tensor of a Problem its offset in the arena.
type Plan struct {
	Order   []int   // the schedule: step indices in execution order
	Offsets []int64 // per tensor: byte offset in the arena (a view: its root's plus its own offset)

	ArenaBytes int64 // arena size, a multiple of Alignment
	// Live is the bytes of the slots live at each step of Order; its
	// peak is LoadBytes.
	Live []int64
	// LoadBytes is LOAD, the lower bound of the schedule used: the most
	// slot bytes live at any one step.
	LoadBytes int64
	// PeakStep is the position in Order of the first step at which LOAD is
	// reached, and PeakTensors the slots live there (each a root, with the
	// tensors sharing it), largest first.
	PeakStep    int
	PeakTensors []int
	// FileOrderLoadBytes is LOAD of the problem's step order with nothing
	// aliased: every tensor, views included, in a slot of its own.
	FileOrderLoadBytes int64
	// NaiveBytes is the sum of all slots, views included, as if nothing
	// shared anything.
	NaiveBytes int64
	Alignment  int64

	// InPlace gives, per tensor, the input of its step whose slot it took
	// over in place, or -1.
	InPlace []int

	// Start and End bound, in positions of Order, when each tensor is in
	// use: for a root, all the steps its slot is reserved (its views' uses
	// included); for a view, from its write to its last read.
	Start, End []int

	Schedule  string    // the schedule that won: "file", "depth-first", "least memory" or "given"
	Heuristic string    // the placement that won
	Attempts  []Attempt // every placement tried for the winning schedule, in order
	// Schedules are the schedules considered, each with its LOAD and the
	// arena placed for it (0 when it was not placed: its LOAD alone ruled
	// it out, or planning had run out of time).
	Schedules []ScheduleAttempt
}

// ScheduleAttempt is what one schedule reached.
type ScheduleAttempt struct {
	Schedule   string `json:"schedule"`
	LoadBytes  int64  `json:"load_bytes"`
	ArenaBytes int64  `json:"arena_bytes"`
}

// Attempt is the arena one placement heuristic reached.
type Attempt struct {
	Heuristic  string `json:"heuristic"`
	ArenaBytes int64  `json:"arena_bytes"`
}

// Build plans p: it checks the problem, takes the schedule opts gives or
// else tries several (see the package documentation), works out every
// tensor's lifetime with the outputs that run in place, and places the
// roots so that the arena is as small as the heuristics can make it, never
// below LoadBytes. Of the schedules it keeps the one with the smallest
// arena, the file's order on ties.
func Build(p *Problem, opts Options) (*Plan, error) {
	align := opts.Alignment
	if align == 0 {
		align = DefaultAlignment
	}
	if align < 0 || align > maxAlignment {
		return nil, fmt.Errorf("plan: alignment %d is not in [1, %d]", align, maxAlignment)
	}
	if err := p.check(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	files := fileOrder(p, align)
	if err := p.checkOrder(files); err != nil {
		return nil, fmt.Errorf("plan: file order: %w", err)
	}
	share := inPlace
	if opts.NoInPlace {
		share = nil
	}

	// The candidate schedules, each with its liveness and LOAD.
	type candidate struct {
		name  string
		order []int
		lv    *liveness
		load  int64
	}
	var cands []candidate
	switch {
	case opts.Order != nil:
		order := slices.Clone(opts.Order)
		if err := p.checkOrder(order); err != nil {
			return nil, fmt.Errorf("plan: schedule: %w", err)
		}
		cands = append(cands, candidate{name: "given", order: order})
	case opts.FileOrder:
		cands = append(cands, candidate{name: "file", order: files})
	default:
		for _, sc := range schedules {
			order := files
			if sc.name != "file" {
				order = sc.order(p, align)
				if p.checkOrder(order) != nil {
					continue // cannot happen; the file order stands
				}
			}
			if slices.ContainsFunc(cands, func(c candidate) bool { return slices.Equal(c.order, order) }) {
				continue
			}
			cands = append(cands, candidate{name: sc.name, order: order})
		}
	}
	for i := range cands {
		cands[i].lv = analyze(p, cands[i].order, true, share)
		cands[i].load = cands[i].lv.load(p, align)
	}
	// Place the schedules in order of LOAD, the file's first among equals,
	// until no schedule left can beat the smallest arena so far, or the
	// placements have used up their work (see maxWork).
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(a.load, b.load) })

	pl := &Plan{
		Offsets:            make([]int64, len(p.Tensors)),
		FileOrderLoadBytes: analyze(p, files, false, nil).load(p, align),
		Alignment:          align,
		ArenaBytes:         -1,
	}
	for i := range p.Tensors {
		pl.NaiveBytes += AlignUp(p.Tensors[i].Size, align)
	}
	// The state takes the arena's first bytes (see Problem.State): the
	// other slots are placed after it.
	state := p.stateBytes(align)
	isState := make([]bool, len(p.Tensors))
	for _, id := range p.State {
		isState[id] = true
	}
	var best *candidate
	var bestOff []int64
	work := 0 // runs of bytes looked at, shared by all schedules (see maxWork)
	var owner []int
	for i := range cands {
		c := &cands[i]
		if best != nil && (c.load > pl.ArenaBytes || c.load == pl.ArenaBytes && c.name != "file" || work > maxWork) {
			pl.Schedules = append(pl.Schedules, ScheduleAttempt{c.name, c.load, 0})
			continue
		}
		var rs []rect
		var own []int // the tensor of each rectangle
		for i, r := range c.lv.root {
			if r == i && p.Tensors[i].Size > 0 && !isState[i] {
				rs = append(rs, rect{c.lv.start[i], c.lv.end[i], AlignUp(p.Tensors[i].Size, align)})
				own = append(own, i)
			}
		}
		off, arena, winner, tried := place(rs, c.lv.steps, c.load-state, &work)
		for k := range off {
			off[k] += state
		}
		arena += state
		for k := range tried {
			tried[k].ArenaBytes += state
		}
		pl.Schedules = append(pl.Schedules, ScheduleAttempt{c.name, c.load, arena})
		better := best == nil || arena < pl.ArenaBytes ||
			(arena == pl.ArenaBytes && c.name == "file")
		if better {
			best, bestOff, owner = c, off, own
			pl.ArenaBytes, pl.Heuristic, pl.Attempts = arena, winner, tried
		}
	}
	pl.Order, pl.Schedule, pl.LoadBytes = best.order, best.name, best.load
	pl.Start, pl.End = best.lv.start, best.lv.end
	pl.Live = best.lv.curve(p, align)
	for k, i := range owner {
		pl.Offsets[i] = bestOff[k]
	}
	var at int64
	for _, id := range p.State {
		pl.Offsets[id] = at
		at += AlignUp(p.Tensors[id].Size, align)
	}
	pl.PeakStep, pl.PeakTensors = best.lv.peak(p, align)
	pl.InPlace = make([]int, len(p.Tensors))
	for i, par := range best.lv.parent {
		pl.InPlace[i] = -1
		if !p.Tensors[i].IsView() && par >= 0 {
			pl.InPlace[i] = par
		}
	}
	pl.placeViews(p, best.lv.parent)
	return pl, nil
}

// FileOrderLoad is LOAD of p's own step order with nothing aliased, what
// Build reports as FileOrderLoadBytes, for a caller that plans a problem
// made from p (steps fused into one, say) and measures the plan against
// the problem it started from. alignment 0 means DefaultAlignment.
func FileOrderLoad(p *Problem, alignment int64) (int64, error) {
	if alignment == 0 {
		alignment = DefaultAlignment
	}
	if alignment < 0 || alignment > maxAlignment {
		return 0, fmt.Errorf("plan: alignment %d is not in [1, %d]", alignment, maxAlignment)
	}
	if err := p.check(); err != nil {
		return 0, fmt.Errorf("plan: %w", err)
	}
	return analyze(p, fileOrder(p, alignment), false, nil).load(p, alignment), nil
}

// placeViews sets the offset of every view from its parent's, parents first.
// A view the problem declares sits at its AliasOffset; an output that took
// over an input in place sits exactly on it.
func (pl *Plan) placeViews(p *Problem, parent []int) {
	placed := make([]bool, len(parent))
	var path []int
	for i := range parent {
		path = path[:0]
		for j := i; parent[j] >= 0 && !placed[j]; j = parent[j] {
			path = append(path, j)
		}
		for k := len(path) - 1; k >= 0; k-- {
			v := path[k]
			pl.Offsets[v] = pl.Offsets[parent[v]]
			if parent[v] == p.Tensors[v].Alias() {
				pl.Offsets[v] += p.Tensors[v].AliasOffset
			}
			placed[v] = true
		}
	}
}
