package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// The optimizers of the ai.onnx.preview.training domain (Adagrad, Momentum,
// Adam): one update step each, computed in float64 per element with the
// formulas of the ONNX specification.

type trainingKernel struct {
	op       string
	rt       ir.DType   // dtype of R
	dts      []ir.DType // dtype of each X
	n        int        // tensors updated
	elems    []int      // elements of each X
	decay    float64    // Adagrad decay_factor
	eps      float64    // Adagrad, Adam epsilon
	norm     float64    // norm_coefficient
	normPost float64    // Adam norm_coefficient_post
	alpha    float64    // Momentum, Adam alpha
	beta     float64    // Momentum, Adam beta
	nesterov bool       // Momentum mode
}

func buildTraining(c *buildContext) (Kernel, int64, error) {
	cnt, err := ir.TrainingTensors(c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	at := c.attrs()
	k := &trainingKernel{op: c.n.Op, rt: c.in(0).DType, n: cnt,
		norm: float64(at.Float("norm_coefficient", 0))}
	switch c.n.Op {
	case "Adagrad":
		k.decay = float64(at.Float("decay_factor", 0))
		k.eps = float64(at.Float("epsilon", 0))
	case "Momentum":
		for _, a := range []string{"alpha", "beta", "mode", "norm_coefficient"} {
			if !at.Has(a) {
				return nil, 0, c.errorf("attribute %q is required", a)
			}
		}
		k.alpha = float64(at.Float("alpha", 0))
		k.beta = float64(at.Float("beta", 0))
		switch m := at.String("mode", ""); m {
		case "standard":
		case "nesterov":
			k.nesterov = true
		default:
			return nil, 0, c.errorf("mode %q is neither \"standard\" nor \"nesterov\"", m)
		}
	case "Adam":
		k.alpha = float64(at.Float("alpha", 0.9))
		k.beta = float64(at.Float("beta", 0.999))
		k.eps = float64(at.Float("epsilon", 1e-6))
		k.normPost = float64(at.Float("norm_coefficient_post", 0))
	}
	for i := range cnt {
		x := c.in(2 + i)
		switch x.DType {
		case ir.Float32, ir.Float64, ir.Float16, ir.BFloat16:
		default:
			return nil, 0, c.unsupported(x.DType)
		}
		k.dts = append(k.dts, x.DType)
		k.elems = append(k.elems, int(x.Shape.Elements()))
	}
	return k, 0, nil
}

func (k *trainingKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	r, _ := loadFloat(k.rt, in[0])
	t := float64(view[int64](in[1])[0])
	n := k.n
	for i := range n {
		dt, e := k.dts[i], k.dts[i].Size()
		x, g := in[2+i], in[2+n+i]
		at := func(b []byte, j int) float64 { v, _ := loadFloat(dt, b[j*e:]); return v }
		put := func(b []byte, j int, v float64) {
			if b != nil {
				storeFloat(dt, b[j*e:], v)
			}
		}
		xo := outAt(out, i)
		switch k.op {
		case "Adagrad":
			h, ho := in[2+2*n+i], outAt(out, n+i)
			rate := r / (1 + t*k.decay)
			for j := range k.elems[i] {
				xv := at(x, j)
				gr := k.norm*xv + at(g, j)
				hn := at(h, j) + gr*gr
				put(ho, j, hn)
				put(xo, j, xv-rate*gr/(math.Sqrt(hn)+k.eps))
			}
		case "Momentum":
			v, vo := in[2+2*n+i], outAt(out, n+i)
			beta := k.beta
			if t <= 0 {
				beta = 1
			}
			for j := range k.elems[i] {
				xv := at(x, j)
				gr := k.norm*xv + at(g, j)
				vn := k.alpha*at(v, j) + beta*gr
				put(vo, j, vn)
				if k.nesterov {
					put(xo, j, xv-r*(gr+k.alpha*vn))
				} else {
					put(xo, j, xv-r*vn)
				}
			}
		case "Adam":
			v, h := in[2+2*n+i], in[2+3*n+i]
			vo, ho := outAt(out, n+i), outAt(out, 2*n+i)
			rate := r
			if t > 0 {
				rate = r * math.Sqrt(1-math.Pow(k.beta, t)) / (1 - math.Pow(k.alpha, t))
			}
			for j := range k.elems[i] {
				xv := at(x, j)
				gr := k.norm*xv + at(g, j)
				vn := k.alpha*at(v, j) + (1-k.alpha)*gr
				hn := k.beta*at(h, j) + (1-k.beta)*gr*gr
				put(vo, j, vn)
				put(ho, j, hn)
				xn := xv - rate*vn/(math.Sqrt(hn)+k.eps)
				put(xo, j, (1-k.normPost)*xn)
			}
		}
	}
}
