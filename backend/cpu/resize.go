package cpu

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// Resize (and the older Upsample) map every output coordinate back to the
// input with the coordinate transformation ONNX names, then take the
// nearest element or interpolate linearly or cubically, separably along
// each axis. Nearest becomes an index-map gather (any dtype); linear and
// cubic keep, per axis and output index, a few taps (input index and
// weight) and combine them per output row.

// resizeKernel interpolates float32 data.
type resizeKernel struct {
	dims  []int // output dims
	ins   []int // input strides
	taps  []ir.Taps
	rows  int
	inner int
	extra float32 // extrapolation value
}

func buildResize(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if y.Shape.Rank() != x.Shape.Rank() || y.DType != x.DType {
		return nil, 0, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	rs, err := ir.ResizeTaps(c.g, c.n)
	if err != nil {
		return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, err)
	}
	r := x.Shape.Rank()
	if rs.Mode == "nearest" {
		maps := make([][]int32, r)
		for i, t := range rs.Axes {
			maps[i] = t.Index
			for o, out := range t.Outside {
				if out {
					maps[i][o] = -1
				}
			}
		}
		k, err := newIndexMap(c, x, y, maps)
		if err != nil {
			return nil, 0, err
		}
		k.value = ir.EncodeFloat(float64(rs.Extrapolation), x.DType)
		return k, 0, nil
	}
	if x.DType != ir.Float32 {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &resizeKernel{dims: ints(y.Shape), ins: rowStrides(ints(x.Shape)), taps: rs.Axes, extra: rs.Extrapolation}
	if r == 0 || y.Shape.Elements() == 0 {
		return nil, 0, c.errorf("cannot interpolate a scalar or empty tensor")
	}
	k.inner, k.rows = k.dims[r-1], prod(k.dims[:r-1])
	return k, 0, nil
}

func (k *resizeKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	work := k.rows * k.inner
	for _, t := range k.taps {
		work *= t.N
	}
	w.forArgs(k.rows, w.parts(work), k, args{}, in, out, nil)
}

func (k *resizeKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	r := len(k.dims)
	var oidx, tidx [maxDims]int
	if r-1 > maxDims {
		return
	}
	rem := lo
	for i := r - 2; i >= 0; i-- {
		oidx[i] = rem % k.dims[i]
		rem /= k.dims[i]
	}
	last := &k.taps[r-1]
	for row := lo; row < hi; row++ {
		d := y[row*k.inner : (row+1)*k.inner]
		outside := false
		for i := 0; i < r-1; i++ {
			if t := &k.taps[i]; t.Outside != nil && t.Outside[oidx[i]] {
				outside = true
			}
		}
		if outside {
			fill(d, k.extra)
		} else {
			clear(d)
			// Every combination of the outer axes' taps.
			for i := 0; i < r-1; i++ {
				tidx[i] = 0
			}
			for {
				wt, base := float32(1), 0
				for i := 0; i < r-1; i++ {
					t := &k.taps[i]
					j := oidx[i]*t.N + tidx[i]
					wt *= t.Weight[j]
					base += int(t.Index[j]) * k.ins[i]
				}
				if wt != 0 {
					interpRow(d, x[base:], last.Index, last.Weight, last.N, wt)
				}
				i := r - 2
				for ; i >= 0; i-- {
					tidx[i]++
					if tidx[i] < k.taps[i].N {
						break
					}
					tidx[i] = 0
				}
				if i < 0 {
					break
				}
			}
			if last.Outside != nil {
				for j, o := range last.Outside {
					if o {
						d[j] = k.extra
					}
				}
			}
		}
		for i := r - 2; i >= 0; i-- {
			oidx[i]++
			if oidx[i] < k.dims[i] {
				break
			}
			oidx[i] = 0
		}
	}
}

// interpRow adds wt·Σ_t w[j,t]·x[idx[j,t]] to every d[j].
func interpRow(d, x []float32, idx []int32, w []float32, n int, wt float32) {
	switch n {
	case 1:
		for j := range d {
			d[j] += wt * x[idx[j]]
		}
	case 2:
		for j := range d {
			i, v := idx[2*j:2*j+2], w[2*j:2*j+2]
			d[j] += wt * (v[0]*x[i[0]] + v[1]*x[i[1]])
		}
	default:
		for j := range d {
			var s float32
			for t := 0; t < n; t++ {
				s += w[j*n+t] * x[idx[j*n+t]]
			}
			d[j] += wt * s
		}
	}
}
