package cpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// padKernel is Pad in constant, reflect, edge or wrap mode. For every output
// index along every dimension it knows the input index it reads, or -1 for
// the constant; negative pads crop.
type padKernel struct {
	esize   int
	maps    [][]int32 // per dim: input index of each output index, or -1
	ins     []int     // input strides (elements)
	dims    []int     // output dims
	rows    int       // output rows (all dims but the last)
	inner   int       // output row length
	value   uint64    // constant bits (little-endian, esize bytes)
	valueIn bool      // the constant comes from input 2 at run time
}

func buildPad(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != y.DType || x.Shape.Rank() != y.Shape.Rank() {
		return nil, 0, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	r := x.Shape.Rank()
	at := c.attrs()
	if r > maxIndexRank {
		return nil, 0, c.errorf("rank %d is above the %d this kernel indexes", r, maxIndexRank)
	}
	for i, n := range x.Shape {
		if n > math.MaxInt32 {
			return nil, 0, c.errorf("input %v is too long along axis %d to index with 32 bits", x.Shape, i)
		}
	}
	maps, err := ir.PadMaps(c.g, c.n)
	if err != nil {
		return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, err)
	}
	k := &padKernel{esize: x.DType.Size(), dims: ints(y.Shape), ins: rowStrides(ints(x.Shape)), maps: maps}
	for i, m := range maps {
		if int64(len(m)) != y.Shape[i] {
			return nil, 0, c.errorf("output %v, the pads give %d along axis %d", y.Shape, len(m), i)
		}
	}
	if r == 0 {
		k.inner, k.rows = 1, 1
	} else {
		k.inner = k.dims[r-1]
		k.rows = prod(k.dims[:r-1])
	}
	if y.Shape.Elements() == 0 {
		k.rows = 0
	}
	if t := c.in(2); t != nil && t.Shape.Elements() > 0 {
		if t.DType != x.DType {
			return nil, 0, c.errorf("constant_value is %s, want %s", t.DType, x.DType)
		}
		k.valueIn = true
	} else if !x.DType.Valid() {
		return nil, 0, c.unsupported(x.DType)
	} else {
		k.value = ir.EncodeFloat(float64(at.Float("value", 0)), x.DType)
	}
	return k, 0, nil
}

func (k *padKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	v := k.value
	if k.valueIn {
		var b [8]byte
		copy(b[:], in[2][:k.esize])
		v = binary.LittleEndian.Uint64(b[:])
	}
	w.forArgs(k.rows, w.parts(k.rows*k.inner), k, args{int64(v)}, in, out, nil)
}

func (k *padKernel) rangeArgs(in, out [][]byte, _ []byte, a args, lo, hi int) {
	switch k.esize {
	case 1:
		padRows(k, in[0], out[0], uint8(a[0]), lo, hi)
	case 2:
		padRows(k, view[uint16](in[0]), view[uint16](out[0]), uint16(a[0]), lo, hi)
	case 4:
		padRows(k, view[uint32](in[0]), view[uint32](out[0]), uint32(a[0]), lo, hi)
	case 8:
		padRows(k, view[uint64](in[0]), view[uint64](out[0]), uint64(a[0]), lo, hi)
	}
}

// maxIndexRank is the highest rank a padKernel takes (its index lives
// on the stack).
const maxIndexRank = 64

func padRows[T any](k *padKernel, x, y []T, v T, lo, hi int) {
	r := len(k.dims)
	var idx [maxIndexRank]int
	rem := lo
	for i := r - 2; i >= 0; i-- {
		idx[i] = rem % k.dims[i]
		rem /= k.dims[i]
	}
	var last []int32
	if r > 0 {
		last = k.maps[r-1]
	}
	for row := lo; row < hi; row++ {
		d := y[row*k.inner : (row+1)*k.inner]
		base, inside := 0, true
		for i := 0; i < r-1; i++ {
			s := k.maps[i][idx[i]]
			if s < 0 {
				inside = false
				break
			}
			base += int(s) * k.ins[i]
		}
		switch {
		case !inside:
			fill(d, v)
		case r == 0:
			d[0] = x[0]
		default:
			for j, s := range last[:len(d)] {
				if s < 0 {
					d[j] = v
				} else {
					d[j] = x[base+int(s)]
				}
			}
		}
		for i := r - 2; i >= 0; i-- {
			idx[i]++
			if idx[i] < k.dims[i] {
				break
			}
			idx[i] = 0
		}
	}
}
