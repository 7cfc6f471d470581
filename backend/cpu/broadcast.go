package cpu

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// maxDims bounds the rank of a loop nest after adjacent dimensions with the
// same broadcast pattern have been merged.
const maxDims = 16

// maxOperands is the most inputs one broadcast plan serves (Where has 3).
const maxOperands = 3

// runChunk is the longest piece of one contiguous run handed to a worker.
const runChunk = 1 << 13

// bplan is a broadcasting loop nest, decided once at build time. The output
// is contiguous and is visited row by row; each row is one contiguous run
// of inner elements, along which every input advances by 0 or 1 element.
// Only the start of a row needs index arithmetic. Long rows are cut into
// pieces so that a single row can still be shared between workers.
type bplan struct {
	nin    int
	inner  int                // elements per row
	step   [maxOperands]int   // per input: stride along a row, 0 or 1
	dims   []int              // outer dimensions, outermost first
	str    [maxOperands][]int // per input: element stride of each outer dim
	rows   int                // product of dims
	pieces int                // pieces per row
	chunk  int                // elements per piece (the last may be shorter)
	total  int                // output elements
}

// newBPlan plans the broadcast of the given input shapes to out.
func newBPlan(out ir.Shape, ins ...ir.Shape) (*bplan, error) {
	if len(ins) > maxOperands {
		return nil, fmt.Errorf("broadcast of %d operands", len(ins))
	}
	p := &bplan{nin: len(ins), total: int(out.Elements())}
	r := len(out)
	for _, s := range ins {
		if len(s) > r {
			return nil, fmt.Errorf("shape %v does not broadcast to %v", s, out)
		}
	}
	// Per output dim: its size and, per input, whether the input spans it
	// (full) or repeats along it (broadcast).
	type dim struct {
		size int
		full [maxOperands]bool
	}
	var dims []dim
	for i := 0; i < r; i++ {
		d := dim{size: int(out[i])}
		for k, s := range ins {
			j := i - (r - len(s))
			in := int64(1)
			if j >= 0 {
				in = s[j]
			}
			switch {
			case in == out[i]:
				d.full[k] = out[i] != 1
			case in == 1:
			default:
				return nil, fmt.Errorf("shape %v does not broadcast to %v", s, out)
			}
		}
		if d.size == 1 {
			continue
		}
		if n := len(dims); n > 0 && dims[n-1].full == d.full {
			dims[n-1].size *= d.size
			continue
		}
		dims = append(dims, d)
	}
	if len(dims) > maxDims {
		return nil, fmt.Errorf("broadcast of rank %d is too deep", len(dims))
	}
	p.inner = 1
	if n := len(dims); n > 0 {
		last := dims[n-1]
		p.inner = last.size
		for k := range ins {
			if last.full[k] {
				p.step[k] = 1
			}
		}
		dims = dims[:n-1]
	}
	p.dims = make([]int, len(dims))
	for k := range ins {
		p.str[k] = make([]int, len(dims))
		acc := 1
		if p.step[k] == 1 {
			acc = p.inner
		}
		for i := len(dims) - 1; i >= 0; i-- {
			if dims[i].full[k] {
				p.str[k][i] = acc
				acc *= dims[i].size
			}
		}
	}
	p.rows = 1
	for i, d := range dims {
		p.dims[i] = d.size
		p.rows *= d.size
	}
	if p.total == 0 {
		p.rows, p.inner = 0, 0
	}
	p.chunk = max(p.inner, 1)
	p.pieces = 1
	if p.inner > runChunk {
		p.pieces = ceilDiv(p.inner, runChunk)
		p.chunk = ceilDiv(p.inner, p.pieces)
	}
	return p, nil
}

// items is the number of pieces of work.
func (p *bplan) items() int { return p.rows * p.pieces }

// bcursor walks a bplan piece by piece.
type bcursor struct {
	p     *bplan
	idx   [maxDims]int
	row   int
	piece int
	off   [maxOperands]int // input element offsets at the start of the row
}

// seek positions a cursor on piece item.
func (p *bplan) seek(item int) bcursor {
	c := bcursor{p: p, row: item / p.pieces, piece: item % p.pieces}
	r := c.row
	for i := len(p.dims) - 1; i >= 0; i-- {
		d := p.dims[i]
		c.idx[i] = r % d
		r /= d
		for k := 0; k < p.nin; k++ {
			c.off[k] += c.idx[i] * p.str[k][i]
		}
	}
	return c
}

// span returns the current piece: the output element offset, its length and
// the input element offsets.
func (c *bcursor) span() (o, n int, in [maxOperands]int) {
	p := c.p
	start := c.piece * p.chunk
	n = min(p.chunk, p.inner-start)
	for k := 0; k < p.nin; k++ {
		in[k] = c.off[k] + start*p.step[k]
	}
	return c.row*p.inner + start, n, in
}

// next advances to the following piece.
func (c *bcursor) next() {
	p := c.p
	c.piece++
	if c.piece < p.pieces {
		return
	}
	c.piece = 0
	c.row++
	for i := len(p.dims) - 1; i >= 0; i-- {
		c.idx[i]++
		for k := 0; k < p.nin; k++ {
			c.off[k] += p.str[k][i]
		}
		if c.idx[i] < p.dims[i] {
			return
		}
		for k := 0; k < p.nin; k++ {
			c.off[k] -= c.idx[i] * p.str[k][i]
		}
		c.idx[i] = 0
	}
}
