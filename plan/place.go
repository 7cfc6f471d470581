package plan

import (
	"cmp"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// rect is a root to place: the steps its slot is reserved for, [start, end],
// and the slot's size in bytes.
type rect struct {
	start, end int
	size       int64
}

// span is bytes [off, end) taken by one placed rectangle, or by several
// that touch end to end. lowDies and highDies are the last steps of the
// rectangles at its bottom and at its top.
type span struct {
	off, end          int64
	lowDies, highDies int
}

// A heuristic places rectangles one by one in its order, each into the
// best-fitting gap among the rectangles placed before it that meet it in
// time. A two-sided heuristic fills the arena from both ends up to LOAD
// (see fit).
type heuristic struct {
	name     string
	order    func(a, b *rect) int // negative: a is placed first
	twoSided bool
}

// heuristics are tried in turn; the first is the TFLite/XLA baseline.
var heuristics = []heuristic{
	{"size", bySize, false},
	{"breadth", byBreadth, false},
	{"length", byLength, false},
	{"start", byStart, false},
	{"start, two-sided", byStart, true}, // meets LOAD on chains and residual blocks
	{"size, two-sided", bySize, true},
	{"breadth, two-sided", byBreadth, true},
	{"length, two-sided", byLength, true},
}

// bySize places the largest first, earlier ones first among equals.
func bySize(a, b *rect) int {
	return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.start, b.start))
}

// byBreadth places first the largest product of size and lifetime: the
// bytes × steps the rectangle covers.
func byBreadth(a, b *rect) int {
	breadth := func(r *rect) float64 { return float64(r.size) * float64(r.end-r.start+1) }
	return cmp.Or(cmp.Compare(breadth(b), breadth(a)), bySize(a, b))
}

// byLength places the longest-lived first, larger ones first among equals.
func byLength(a, b *rect) int {
	return cmp.Or(cmp.Compare(b.end-b.start, a.end-a.start), bySize(a, b))
}

// byStart places in order of first use, the longest-lived first among those
// born together. When lifetimes nest, this stacks every rectangle on the
// ones that enclose it and so meets LOAD.
func byStart(a, b *rect) int {
	return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end), cmp.Compare(b.size, a.size))
}

// maxWork bounds the work of placement (runs of bytes merged, times the
// depth of the merge's heap) before it stops trying further heuristics and
// schedules: about a second's work. Only graphs in which thousands of
// tensors are live at once, each with a hole beside it, get near it.
const maxWork = 100_000_000

// place packs rs with each heuristic in turn, stopping early at load, the
// lower bound, or once the work it has done, added to the work done before
// (*work), exceeds maxWork; it returns the smallest packing found. The
// first heuristic always runs.
func place(rs []rect, steps int, load int64, work *int) (off []int64, arena int64, winner string, tried []Attempt) {
	x := newTimeIndex(steps)
	order := make([]int32, len(rs))
	arena = -1
	for _, h := range heuristics {
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortFunc(order, func(a, b int32) int {
			return cmp.Or(h.order(&rs[a], &rs[b]), cmp.Compare(a, b))
		})
		o, top, w := pack(rs, order, x, h.twoSided, load)
		*work += w
		tried = append(tried, Attempt{Heuristic: h.name, ArenaBytes: top})
		if arena < 0 || top < arena {
			off, arena, winner = o, top, h.name
		}
		if arena <= load || *work > maxWork {
			break
		}
	}
	// Short of LOAD: a bounded search over perturbed orders, largest
	// first with each size scaled by a random factor (seeded, so plans
	// are reproducible).
	rng := rand.New(rand.NewPCG(1, uint64(len(rs))))
	keys := make([]float64, len(rs))
	for t := 0; t < perturbedTries && len(rs) <= perturbedMax && arena > load && *work <= maxWork; t++ {
		for i := range order {
			order[i] = int32(i)
			keys[i] = float64(rs[i].size) * (1 + rng.Float64())
		}
		slices.SortFunc(order, func(a, b int32) int {
			return cmp.Or(cmp.Compare(keys[b], keys[a]), cmp.Compare(a, b))
		})
		o, top, w := pack(rs, order, x, t%2 == 1, load)
		*work += w
		if top < arena {
			off, arena, winner = o, top, "perturbed size"
			tried = append(tried, Attempt{Heuristic: winner, ArenaBytes: top})
		}
	}
	return off, arena, winner, tried
}

// perturbedTries bounds the perturbed orders place tries after its
// heuristics, on problems of at most perturbedMax rectangles.
const (
	perturbedTries = 64
	perturbedMax   = 4096
)

// pack places the rectangles in the given order and returns their offsets,
// the bytes they span and the work it took: the runs of bytes it looked at.
func pack(rs []rect, order []int32, x *timeIndex, twoSided bool, ceiling int64) (off []int64, top int64, work int) {
	x.reset()
	off = make([]int64, len(rs))
	var spans []span
	var lists [][]span
	for _, id := range order {
		r := &rs[id]
		lists = x.meeting(lists[:0], r.start, r.end)
		spans = merge(spans[:0], lists)
		work += (len(spans) + len(lists)) * bits.Len(uint(len(lists))) // a heap merge's cost
		off[id] = fit(spans, r, twoSided, ceiling)
		top = max(top, off[id]+r.size)
		x.insert(span{off[id], off[id] + r.size, r.end, r.end}, r.start, r.end)
	}
	return off, top, work
}

// fit chooses the offset of r, given the spans (sorted by offset) of the
// placed rectangles that meet it in time: the smallest gap between them that
// holds it, the lowest among equals, or else the top of the highest span.
//
// Two-sided, the space up to ceiling is a gap too, and r goes to the end of
// its gap whose neighbour dies nearest the time r does, an end of the arena
// counting as dying half a step away: rectangles freed together leave one
// hole, and the middle stays free for what comes. On a chain this puts
// tensors alternately at the bottom and at the top, which meets LOAD
// exactly.
func fit(spans []span, r *rect, twoSided bool, ceiling int64) int64 {
	// edge is the neighbour of a gap at an end of the arena. Distances are
	// in half steps.
	const edge = -1
	distance := func(dies int) int {
		if dies == edge {
			return 1
		}
		return 2 * abs(r.end-dies)
	}
	best, bestGap := int64(-1), int64(math.MaxInt64)
	try := func(lo, hi int64, below, above int) {
		if gap := hi - lo; gap >= r.size && gap < bestGap {
			best, bestGap = lo, gap
			if twoSided && distance(above) < distance(below) {
				best = hi - r.size
			}
		}
	}
	lo, below := int64(0), edge // the bottom of the next gap, and who lies under it
	for _, sp := range spans {
		if sp.off > lo {
			try(lo, sp.off, below, sp.lowDies)
		}
		if sp.end > lo {
			lo, below = sp.end, sp.highDies
		}
	}
	if twoSided && lo < ceiling {
		try(lo, ceiling, below, edge)
	}
	if best < 0 {
		return lo
	}
	return best
}

func abs(x int) int { return max(x, -x) }
