package plan

import (
	"cmp"
	"slices"
)

// timeIndex holds the rectangles placed so far and finds the bytes taken by
// those whose lifetimes meet a given lifetime.
//
// It is a segment tree over the steps. A lifetime [s, e] is stored at the
// O(log T) nodes whose step ranges tile it, so the lifetimes that meet
// [s, e] are those stored at nodes whose ranges meet [s, e]. Each node keeps
// the bytes stored there as sorted runs (the rectangles stored at one node
// are all live together, hence disjoint; those touching end to end become
// one run), and also the union of the bytes stored anywhere below it, so
// that a query takes a whole subtree inside [s, e] at once and visits
// O(log T) nodes.
type timeIndex struct {
	leaves int      // a power of two, at least the number of steps
	own    [][]span // per node: the bytes of the lifetimes stored there
	below  [][]span // per node: the union of own over its subtree
	mark   []int32  // per node: the last insertion that updated below
	serial int32
	stack  []subtree
}

// subtree is a node of the tree and the steps it covers.
type subtree struct{ node, first, last int }

func newTimeIndex(steps int) *timeIndex {
	leaves := 1
	for leaves < steps {
		leaves *= 2
	}
	return &timeIndex{
		leaves: leaves,
		own:    make([][]span, 2*leaves),
		below:  make([][]span, 2*leaves),
		mark:   make([]int32, 2*leaves),
	}
}

// reset empties the index for another packing.
func (x *timeIndex) reset() {
	for i := range x.own {
		x.own[i] = x.own[i][:0]
		x.below[i] = x.below[i][:0]
	}
	clear(x.mark)
	x.serial = 0
}

// insert stores the bytes sp for the lifetime [s, e].
func (x *timeIndex) insert(sp span, s, e int) {
	x.serial++
	for l, r := s+x.leaves, e+x.leaves+1; l < r; l, r = l/2, r/2 {
		if l%2 == 1 {
			x.store(l, sp)
			l++
		}
		if r%2 == 1 {
			r--
			x.store(r, sp)
		}
	}
}

func (x *timeIndex) store(node int, sp span) {
	// No query meets a leaf only in part, so a leaf's own runs would go
	// unread: its runs below serve.
	if node < x.leaves {
		x.own[node] = unite(x.own[node], sp)
	}
	for v := node; v >= 1 && x.mark[v] != x.serial; v /= 2 {
		x.mark[v] = x.serial
		x.below[v] = unite(x.below[v], sp)
	}
}

// meeting appends to lists the sorted runs of bytes, node by node, that
// together are exactly the bytes taken at some step of [s, e]. Runs of
// different lists may overlap.
func (x *timeIndex) meeting(lists [][]span, s, e int) [][]span {
	x.stack = append(x.stack[:0], subtree{1, 0, x.leaves - 1})
	for len(x.stack) > 0 {
		t := x.stack[len(x.stack)-1]
		x.stack = x.stack[:len(x.stack)-1]
		switch {
		case len(x.below[t.node]) == 0 || t.last < s || t.first > e:
		case s <= t.first && t.last <= e:
			lists = append(lists, x.below[t.node])
		default:
			if len(x.own[t.node]) > 0 {
				lists = append(lists, x.own[t.node])
			}
			mid := (t.first + t.last) / 2
			x.stack = append(x.stack, subtree{2 * t.node, t.first, mid}, subtree{2*t.node + 1, mid + 1, t.last})
		}
	}
	return lists
}

// merge appends the runs of the sorted lists to dst, all sorted by offset.
// It keeps the lists in a heap ordered by their first runs, and uses up the
// lists in doing so.
func merge(dst []span, lists [][]span) []span {
	less := func(i, j int) bool { return lists[i][0].off < lists[j][0].off }
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(lists) {
				return
			}
			if c+1 < len(lists) && less(c+1, c) {
				c++
			}
			if !less(c, i) {
				return
			}
			lists[i], lists[c] = lists[c], lists[i]
			i = c
		}
	}
	for i := len(lists)/2 - 1; i >= 0; i-- {
		down(i)
	}
	for len(lists) > 0 {
		dst = append(dst, lists[0][0])
		if lists[0] = lists[0][1:]; len(lists[0]) == 0 {
			lists[0] = lists[len(lists)-1]
			lists = lists[:len(lists)-1]
		}
		down(0)
	}
	return dst
}

// unite adds sp to runs, which are sorted and disjoint, merging it with the
// runs it overlaps or touches.
func unite(runs []span, sp span) []span {
	// runs[i:j] are those that overlap or touch sp.
	i, _ := slices.BinarySearchFunc(runs, sp.off, func(r span, off int64) int { return cmp.Compare(r.end, off) })
	j, _ := slices.BinarySearchFunc(runs[i:], sp.end+1, func(r span, end int64) int { return cmp.Compare(r.off, end) })
	j += i
	if i == j {
		return slices.Insert(runs, i, sp)
	}
	if runs[i].off < sp.off {
		sp.off, sp.lowDies = runs[i].off, runs[i].lowDies
	}
	if runs[j-1].end > sp.end {
		sp.end, sp.highDies = runs[j-1].end, runs[j-1].highDies
	}
	runs[i] = sp
	return slices.Delete(runs, i+1, j)
}
