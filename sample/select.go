package sample

import (
	"math/bits"
	"slices"
)

// Candidate order is decreasing logit, and increasing id among equal
// logits: a strict total order, so every selection and sort below is
// deterministic.

// before reports whether token a comes before token b in candidate order.
func before(l []float32, a, b int32) bool {
	la, lb := l[a], l[b]
	return la > lb || la == lb && a < b
}

// sortCandidates sorts the tokens c into candidate order.
func sortCandidates(l []float32, c []int32) {
	slices.SortFunc(c, func(a, b int32) int {
		switch {
		case before(l, a, b):
			return -1
		case before(l, b, a):
			return 1
		}
		return 0
	})
}

// selectTop reorders the tokens c so that c[:k] holds the first k of them
// in candidate order, in no particular order among themselves.
func selectTop(l []float32, c []int32, k int) {
	switch {
	case k <= 0 || k >= len(c):
	case k <= len(c)/16:
		heapSelect(l, c, k)
	default:
		quickSelect(l, c, k)
	}
}

// heapSelect is selectTop for a k much smaller than len(c): c[:k] is kept
// as a heap whose root is the last of them in candidate order, and one
// pass over the rest replaces the root with each token that comes before
// it. Most tokens of a row of logits cost one comparison with the root.
func heapSelect(l []float32, c []int32, k int) {
	h := c[:k]
	for i := k/2 - 1; i >= 0; i-- {
		siftDown(l, h, i)
	}
	for i := k; i < len(c); i++ {
		if before(l, c[i], h[0]) {
			h[0], c[i] = c[i], h[0]
			siftDown(l, h, 0)
		}
	}
}

// siftDown restores the heap h (each parent after its children in
// candidate order) below node i.
func siftDown(l []float32, h []int32, i int) {
	for {
		child := 2*i + 1
		if child >= len(h) {
			return
		}
		if child+1 < len(h) && before(l, h[child], h[child+1]) {
			child++
		}
		if !before(l, h[i], h[child]) {
			return
		}
		h[i], h[child] = h[child], h[i]
		i = child
	}
}

// quickSelect is selectTop by Hoare's selection with a median-of-three
// pivot, in linear expected time; a range that will not shrink is sorted
// instead, which bounds the worst case by n log n.
func quickSelect(l []float32, c []int32, k int) {
	lo, hi := 0, len(c)-1 // c[k] lies in c[lo:hi+1]
	budget := 2 * bits.Len(uint(len(c)))
	for hi-lo > 16 {
		if budget == 0 {
			sortCandidates(l, c[lo:hi+1])
			return
		}
		budget--
		mid := int(uint(lo+hi) >> 1)
		if before(l, c[mid], c[lo]) {
			c[mid], c[lo] = c[lo], c[mid]
		}
		if before(l, c[hi], c[mid]) {
			c[hi], c[mid] = c[mid], c[hi]
			if before(l, c[mid], c[lo]) {
				c[mid], c[lo] = c[lo], c[mid]
			}
		}
		pivot := c[mid]
		i, j := lo, hi
		for i <= j {
			for before(l, c[i], pivot) {
				i++
			}
			for before(l, pivot, c[j]) {
				j--
			}
			if i <= j {
				c[i], c[j] = c[j], c[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default: // c[k] is the pivot, in its place
			return
		}
	}
	// Insertion sort of the short range left.
	for i := lo + 1; i <= hi; i++ {
		for j := i; j > lo && before(l, c[j], c[j-1]); j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
