package tokenizer

// bigram is a candidate merge of two adjacent symbols: left and right are
// symbol indices, size the byte length of the merged text. A BPE bigram
// is ordered by rank (lower first), a SentencePiece one by score (higher
// first); equal ones go left to right.
type bigram struct {
	key         float64 // the rank, or minus the score: lower goes first
	left, right int32
	size        int32
}

func (a bigram) before(b bigram) bool {
	return a.key < b.key || a.key == b.key && a.left < b.left
}

// queue is a binary min-heap of bigrams.
type queue []bigram

func (q *queue) push(b bigram) {
	*q = append(*q, b)
	h := *q
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() bigram {
	h := *q
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h[l].before(h[m]) {
			m = l
		}
		if r := l + 1; r < n && h[r].before(h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// mergeQueued merges the adjacent symbols of the pairs q holds, best pair
// first, skipping a pair one of whose symbols a merge has changed since it
// was queued, and offers try each new pair a merge makes.
func mergeQueued(syms []symbol, q *queue, try func(l, r int32)) {
	for len(*q) > 0 {
		b := q.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		try(l.prev, b.left)
		try(b.left, l.next)
	}
}
