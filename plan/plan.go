package plan

import (
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
	// Order is the schedule, step indices in execution order; nil means the
	// problem's own step order.
	Order []int
}

// Plan gives every tensor of a Problem its offset in the arena.
type Plan struct {
	Order   []int   // the schedule: step indices in execution order
	Offsets []int64 // per tensor: byte offset in the arena (a view: its root's plus its own offset)

	ArenaBytes int64 // arena size, a multiple of Alignment
	// LoadBytes is LOAD, the lower bound of the schedule used: the most
	// slot bytes live at any one step.
	LoadBytes int64
	// FileOrderLoadBytes is LOAD of the problem's step order with nothing
	// aliased: every tensor, views included, in a slot of its own.
	FileOrderLoadBytes int64
	// NaiveBytes is the sum of all slots, views included, as if nothing
	// shared anything.
	NaiveBytes int64
	Alignment  int64

	// Start and End bound, in positions of Order, when each tensor is in
	// use: for a root, all the steps its slot is reserved (its views' uses
	// included); for a view, from its write to its last read.
	Start, End []int

	Heuristic string    // the placement that won
	Attempts  []Attempt // every placement tried, in order
}

// Attempt is the arena one placement heuristic reached.
type Attempt struct {
	Heuristic  string `json:"heuristic"`
	ArenaBytes int64  `json:"arena_bytes"`
}

// Build plans p: it checks the problem and the schedule, works out every
// tensor's lifetime, and places the roots so that the arena is as small as
// the heuristics can make it, never below LoadBytes.
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
	fileOrder := make([]int, len(p.Steps))
	for i := range fileOrder {
		fileOrder[i] = i
	}
	if err := p.checkOrder(fileOrder); err != nil {
		return nil, fmt.Errorf("plan: file order: %w", err)
	}
	order := fileOrder
	if opts.Order != nil {
		order = slices.Clone(opts.Order)
		if err := p.checkOrder(order); err != nil {
			return nil, fmt.Errorf("plan: schedule: %w", err)
		}
	}

	lv := analyze(p, order, true, inPlace)
	pl := &Plan{
		Order:              order,
		Offsets:            make([]int64, len(p.Tensors)),
		LoadBytes:          lv.load(p, align),
		FileOrderLoadBytes: analyze(p, fileOrder, false, nil).load(p, align),
		Alignment:          align,
		Start:              lv.start,
		End:                lv.end,
	}
	for i := range p.Tensors {
		pl.NaiveBytes += alignUp(p.Tensors[i].Size, align)
	}

	var rs []rect
	var owner []int // the tensor of each rectangle
	for i, r := range lv.root {
		if r == i && p.Tensors[i].Size > 0 {
			rs = append(rs, rect{lv.start[i], lv.end[i], alignUp(p.Tensors[i].Size, align)})
			owner = append(owner, i)
		}
	}
	off, arena, winner, tried := place(rs, lv.steps, pl.LoadBytes)
	pl.ArenaBytes, pl.Heuristic, pl.Attempts = arena, winner, tried
	for k, i := range owner {
		pl.Offsets[i] = off[k]
	}
	pl.placeViews(p, lv.parent)
	return pl, nil
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
			if parent[v] == p.Tensors[v].Alias {
				pl.Offsets[v] += p.Tensors[v].AliasOffset
			}
			placed[v] = true
		}
	}
}
