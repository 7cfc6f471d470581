package ir

import (
	"slices"
	"sort"
)

// UniqueResult is what Unique computes: the distinct slices of X along an
// axis (or its distinct elements when flattened) with, for each, its first
// index in X and its count, and for each slice of X the index of its
// distinct slice.
type UniqueResult struct {
	Shape   Shape   // of Y
	Slices  []int   // for each slice of Y, the index of the slice of X it copies
	Inner   int     // elements of one slice
	Outer   int     // blocks before the axis
	N       int     // slices of X along the axis
	First   []int64 // indices output
	Inverse []int64
	Counts  []int64
}

// Unique runs Unique on a constant input.
func Unique(g *Graph, n *Node) (*UniqueResult, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	if !x.IsConst() {
		return nil, NeedValue("input", x.Name)
	}
	var v []float64
	if x.DType.IsFloat() {
		v, err = x.Float64s()
	} else {
		var iv []int64
		iv, err = x.Int64s()
		for _, e := range iv {
			v = append(v, float64(e))
		}
	}
	if err != nil {
		return nil, err
	}
	r := &UniqueResult{Outer: 1, N: len(v), Inner: 1}
	shape := Shape{int64(len(v))}
	axis := -1
	if n.Attrs.Has("axis") {
		if axis, err = NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank()); err != nil {
			return nil, err
		}
		r.Outer, r.N, r.Inner = int(product(x.Shape[:axis])), int(x.Shape[axis]), int(product(x.Shape[axis+1:]))
		shape = x.Shape.Clone()
	}
	slice := func(i int) []float64 {
		var s []float64
		for o := 0; o < r.Outer; o++ {
			s = append(s, v[(o*r.N+i)*r.Inner:(o*r.N+i+1)*r.Inner]...)
		}
		return s
	}
	var firsts []int
	r.Inverse = make([]int64, r.N)
	for i := 0; i < r.N; i++ {
		k := slices.IndexFunc(firsts, func(f int) bool { return slices.Equal(slice(f), slice(i)) })
		if k < 0 {
			k = len(firsts)
			firsts = append(firsts, i)
			r.Counts = append(r.Counts, 0)
		}
		r.Counts[k]++
		r.Inverse[i] = int64(k)
	}
	order := make([]int, len(firsts))
	for i := range order {
		order[i] = i
	}
	if n.Attrs.Int("sorted", 1) != 0 {
		sort.SliceStable(order, func(a, b int) bool {
			return slices.Compare(slice(firsts[order[a]]), slice(firsts[order[b]])) < 0
		})
	}
	rank := make([]int64, len(order))
	counts := make([]int64, len(order))
	for pos, k := range order {
		rank[k] = int64(pos)
		r.Slices = append(r.Slices, firsts[k])
		r.First = append(r.First, int64(firsts[k]))
		counts[pos] = r.Counts[k]
	}
	r.Counts = counts
	for i := range r.Inverse {
		r.Inverse[i] = rank[r.Inverse[i]]
	}
	if axis < 0 {
		shape[0] = int64(len(order))
	} else {
		shape[axis] = int64(len(order))
	}
	r.Shape = shape
	return r, nil
}

func init() {
	register(func(g *Graph, n *Node) ([]Type, error) {
		x, err := operand(g, n, 1, 1)
		if err != nil {
			return nil, err
		}
		u, err := Unique(g, n)
		if err != nil {
			return nil, err
		}
		k := int64(len(u.Slices))
		return []Type{{DType: x.DType, Shape: u.Shape}, {DType: Int64, Shape: Shape{k}},
			{DType: Int64, Shape: Shape{int64(u.N)}}, {DType: Int64, Shape: Shape{k}}}, nil
	}, "Unique")
}
