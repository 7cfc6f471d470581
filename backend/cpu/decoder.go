package cpu

import (
	"math"

	"github.com/berth-ml/berth/backend/cpu/vmath"
	"github.com/berth-ml/berth/ir"
)

// Kernels of the operators of ir.BerthDomain that a decoder's layers use
// in place of chains of ONNX nodes: RMSNorm and Rotary (see ir's
// infer_fused.go for what they compute).

// rmsNormKernel normalises rows of n values by their root mean square and
// scales them by the weights.
type rmsNormKernel struct {
	rows, n int
	eps     float64
	zeros   []float32 // the bias vmath.NormAffine adds: none
}

func buildRMSNorm(c *buildContext) (Kernel, int64, error) {
	rows, n, err := ir.RMSNormShape(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &rmsNormKernel{rows: int(rows), n: int(n), eps: float64(c.n.Attrs.Float("epsilon", 1e-5)), zeros: make([]float32, n)}, 0, nil
}

func (k *rmsNormKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.For(k.rows, k, in, out, scratch)
}

// Range normalises rows [lo, hi).
func (k *rmsNormKernel) Range(in, out [][]byte, _ []byte, lo, hi int) {
	x, scale, y := f32s(in[0]), f32s(in[1]), f32s(out[0])
	for r := lo; r < hi; r++ {
		row := x[r*k.n : (r+1)*k.n]
		inv := float32(1 / math.Sqrt(vmath.SumSqDev(row, 0)/float64(k.n)+k.eps))
		vmath.NormAffine(y[r*k.n:(r+1)*k.n], row, scale, k.zeros, 0, inv)
	}
}

// rotaryKernel rotates the pairs of each head's values of token i by the
// angles of row i of cos and sin.
type rotaryKernel struct {
	t, heads, d int
	halves      bool
}

func buildRotary(c *buildContext) (Kernel, int64, error) {
	t, heads, d, err := ir.RotaryShape(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &rotaryKernel{t: int(t), heads: int(heads), d: int(d), halves: c.n.Attrs.Int("halves", 0) == 1}, 0, nil
}

func (k *rotaryKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(k.t, w.parts(k.t*k.heads*k.d), k, args{}, in, out, scratch)
}

// rangeArgs rotates tokens [lo, hi). x and y may be the same bytes: each
// pair is read before it is written.
func (k *rotaryKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, cos, sin, y := f32s(in[0]), f32s(in[1]), f32s(in[2]), f32s(out[0])
	half := k.d / 2
	for i := lo; i < hi; i++ {
		c, s := cos[i*half:(i+1)*half], sin[i*half:(i+1)*half]
		for h := range k.heads {
			base := (i*k.heads + h) * k.d
			xr, yr := x[base:base+k.d], y[base:base+k.d]
			for j := range half {
				a, b := 2*j, 2*j+1
				if k.halves {
					a, b = j, j+half
				}
				x0, x1 := xr[a], xr[b]
				yr[a] = x0*c[j] - x1*s[j]
				yr[b] = x0*s[j] + x1*c[j]
			}
		}
	}
}
