package cpu

import "github.com/berth-ml/berth/ir"

// NonMaxSuppression runs at compile time only: its output size depends on
// every input value, so shape inference needs them all constant, and the
// kernel writes the selection it computed then.

type nmsKernel struct{ sel [][3]int64 }

func buildNMS(c *buildContext) (Kernel, int64, error) {
	sel, err := ir.NMSArgs(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if y := c.out(0); y.Shape.Elements() != int64(3*len(sel)) {
		return nil, 0, c.errorf("output %v does not hold %d selected boxes", y.Shape, len(sel))
	}
	return &nmsKernel{sel: sel}, 0, nil
}

func (k *nmsKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	y := view[int64](out[0])
	for i, s := range k.sel {
		copy(y[3*i:], s[:])
	}
}

// Unique, like NonMaxSuppression, is computed when the graph is compiled:
// its input is a constant.

type uniqueKernel struct {
	u     *ir.UniqueResult
	esize int
}

func buildUnique(c *buildContext) (Kernel, int64, error) {
	u, err := ir.Unique(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &uniqueKernel{u: u, esize: c.in(0).DType.Size()}, 0, nil
}

func (k *uniqueKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	u := k.u
	copySlices(out[0], in[0], u.Outer, u.N, u.Inner*k.esize, u.Slices)
	for i, v := range [][]int64{u.First, u.Inverse, u.Counts} {
		if y := outAt(out, i+1); y != nil {
			copy(view[int64](y), v)
		}
	}
}
