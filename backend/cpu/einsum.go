package cpu

import "github.com/berth-ml/berth/ir"

// einsumKernel sums the product of the operands over every assignment of
// the labels, accumulating into the output element the output labels name.
type einsumKernel struct {
	dt      ir.DType
	e       *ir.Einsum
	strides [][]int // per operand, the element stride of each label (0: absent or broadcast)
	ostride []int
}

func buildEinsum(c *buildContext) (Kernel, int64, error) {
	var shapes []ir.Shape
	for i := range c.n.Inputs {
		t := c.in(i)
		if t == nil {
			return nil, 0, c.errorf("input %d is missing", i)
		}
		if !isFloatType(t.DType) && !t.DType.IsInt() {
			return nil, 0, c.unsupported(t.DType)
		}
		shapes = append(shapes, t.Shape)
	}
	e, err := ir.ParseEinsum(c.attrs().String("equation", ""), shapes)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	k := &einsumKernel{dt: c.in(0).DType, e: e}
	for i, axes := range e.Operands {
		st := make([]int, len(e.Sizes))
		rs := rowStrides(ints(shapes[i]))
		for d, l := range axes {
			if shapes[i][d] != 1 {
				st[l] += rs[d]
			}
		}
		k.strides = append(k.strides, st)
	}
	k.ostride = make([]int, len(e.Sizes))
	outShape := make([]int, len(e.Output))
	for d, l := range e.Output {
		outShape[d] = int(e.Sizes[l])
	}
	rs := rowStrides(outShape)
	for d, l := range e.Output {
		k.ostride[l] += rs[d]
	}
	// Scratch: the float64 accumulators, then the label counters.
	return k, int64(8*prod(outShape) + 8*len(e.Sizes)), nil
}

func (k *einsumKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	n := len(out[0]) / e
	acc := view[float64](scratch)[:n]
	clear(acc)
	sizes := k.e.Sizes
	idx := view[int](scratch[8*n:])[:len(sizes)]
	clear(idx)
	total := 1
	for _, s := range sizes {
		total *= int(s)
	}
	for it := 0; it < total; it++ {
		p := 1.0
		for op, st := range k.strides {
			off := 0
			for l, s := range st {
				off += idx[l] * s
			}
			v, _ := loadFloat(k.dt, in[op][off*e:])
			p *= v
		}
		o := 0
		for l, s := range k.ostride {
			o += idx[l] * s
		}
		acc[o] += p
		for l := len(idx) - 1; l >= 0; l-- {
			idx[l]++
			if idx[l] < int(sizes[l]) {
				break
			}
			idx[l] = 0
		}
	}
	for i, v := range acc {
		storeFloat(k.dt, out[0][i*e:], v)
	}
}
