package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// The losses of the ONNX training operators that inference graphs also
// carry: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (the log
// of a softmax over axis 1 followed by the former).

type lossKernel struct {
	softmax bool
	dt      ir.DType
	wide    bool // int64 targets
	n, c, d int  // input [n, c, d] (d: product of the trailing axes)
	red     string
	ignore  int64
	hasIgn  bool
}

func buildLoss(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, t := c.in(0), c.in(1)
	switch x.DType {
	case ir.Float32, ir.Float64, ir.Float16, ir.BFloat16:
	default:
		return nil, 0, c.unsupported(x.DType)
	}
	wide, err := indexType(c, t)
	if err != nil {
		return nil, 0, err
	}
	if w := c.in(2); w != nil && (w.DType != x.DType || w.Shape.Elements() != x.Shape[1]) {
		return nil, 0, c.errorf("weights %s%v must be %s[%d]", w.DType, w.Shape, x.DType, x.Shape[1])
	}
	s := ints(x.Shape)
	at := c.attrs()
	k := &lossKernel{softmax: c.n.Op == "SoftmaxCrossEntropyLoss", dt: x.DType, wide: wide,
		n: s[0], c: s[1], d: prod(s[2:]), red: at.String("reduction", "mean"),
		ignore: at.Int("ignore_index", 0), hasIgn: at.Has("ignore_index")}
	// The log-probabilities live in scratch when the node does not output
	// them.
	return k, int64(8 * prod(s)), nil
}

func (k *lossKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	total := k.n * k.c * k.d
	logp := view[float64](scratch)[:total]
	for i := range logp {
		logp[i], _ = loadFloat(k.dt, in[0][i*e:])
	}
	if k.softmax {
		for b := 0; b < k.n; b++ {
			for j := 0; j < k.d; j++ {
				base := b*k.c*k.d + j
				m := math.Inf(-1)
				for ch := 0; ch < k.c; ch++ {
					m = math.Max(m, logp[base+ch*k.d])
				}
				sum := 0.0
				for ch := 0; ch < k.c; ch++ {
					sum += math.Exp(logp[base+ch*k.d] - m)
				}
				ls := m + math.Log(sum)
				for ch := 0; ch < k.c; ch++ {
					logp[base+ch*k.d] -= ls
				}
			}
		}
		if lp := outAt(out, 1); lp != nil {
			for i, v := range logp {
				storeFloat(k.dt, lp[i*e:], v)
			}
		}
	}
	weight := func(cls int) float64 {
		if len(in) > 2 && in[2] != nil {
			v, _ := loadFloat(k.dt, in[2][cls*e:])
			return v
		}
		return 1
	}
	var sum, wsum float64
	for b := 0; b < k.n; b++ {
		for j := 0; j < k.d; j++ {
			i := b*k.d + j
			t := indexAt(in[1], k.wide, i)
			var l float64
			if !(k.hasIgn && t == k.ignore) {
				cls := wrapIndex(t, k.c)
				wt := weight(cls)
				l = -logp[b*k.c*k.d+cls*k.d+j] * wt
				wsum += wt
			}
			if k.red == "none" {
				storeFloat(k.dt, out[0][i*e:], l)
			}
			sum += l
		}
	}
	switch k.red {
	case "sum":
		storeFloat(k.dt, out[0], sum)
	case "mean":
		storeFloat(k.dt, out[0], sum/wsum)
	}
}
