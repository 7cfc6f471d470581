package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// BatchNormalization in training mode (normalising by the batch's own
// statistics and updating the running ones) and NonZero.

// buildTrainBatchNorm is BatchNormalization with training_mode=1.
func buildTrainBatchNorm(c *buildContext) (Kernel, int64, error) {
	x, err := c.floatInput(5)
	if err != nil {
		return nil, 0, err
	}
	for i := 1; i < 5; i++ {
		if t := c.in(i); t.DType != x.DType || t.Shape.Elements() != x.Shape[1] {
			return nil, 0, c.errorf("input %d must be %s[%d]", i, x.DType, x.Shape[1])
		}
	}
	s := ints(x.Shape)
	at := c.attrs()
	return &trainBatchNormKernel{dt: x.DType, n: s[0], c: s[1], sp: prod(s[2:]),
		eps: float64(at.Float("epsilon", 1e-5)), momentum: float64(at.Float("momentum", 0.9))}, 0, nil
}

type trainBatchNormKernel struct {
	dt            ir.DType
	n, c, sp      int
	eps, momentum float64
}

func (k *trainBatchNormKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	ld := func(b []byte, i int) float64 { v, _ := loadFloat(k.dt, b[i*e:]); return v }
	cnt := float64(k.n * k.sp)
	for ch := 0; ch < k.c; ch++ {
		var sum, sq float64
		for b := 0; b < k.n; b++ {
			for j := 0; j < k.sp; j++ {
				v := ld(in[0], (b*k.c+ch)*k.sp+j)
				sum += v
				sq += v * v
			}
		}
		mean := sum / cnt
		vr := sq/cnt - mean*mean
		scale, bias := ld(in[1], ch), ld(in[2], ch)
		inv := scale / math.Sqrt(vr+k.eps)
		for b := 0; b < k.n; b++ {
			for j := 0; j < k.sp; j++ {
				i := (b*k.c+ch)*k.sp + j
				storeFloat(k.dt, out[0][i*e:], (ld(in[0], i)-mean)*inv+bias)
			}
		}
		if m := outAt(out, 1); m != nil {
			storeFloat(k.dt, m[ch*e:], ld(in[3], ch)*k.momentum+mean*(1-k.momentum))
		}
		if v := outAt(out, 2); v != nil {
			storeFloat(k.dt, v[ch*e:], ld(in[4], ch)*k.momentum+vr*(1-k.momentum))
		}
	}
}

type nonZeroKernel struct {
	float bool
	esize int
	shape []int
	count int
}

func buildNonZero(c *buildContext) (Kernel, int64, error) {
	x, y := c.in(0), c.out(0)
	return &nonZeroKernel{float: x.DType.IsFloat(), esize: x.DType.Size(), shape: ints(x.Shape), count: int(y.Shape[1])}, 0, nil
}

func (k *nonZeroKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	y := view[int64](out[0])
	if k.esize == 1 && len(k.shape) == 1 {
		// A mask: a byte an element, the indices themselves.
		j := 0
		for i, v := range in[0][:k.shape[0]] {
			if v == 0 {
				continue
			}
			if j == k.count {
				panic("more non-zero values than planned")
			}
			y[j] = int64(i)
			j++
		}
		return
	}
	st := rowStrides(k.shape)
	j := 0
	for i := 0; i < prod(k.shape); i++ {
		if !ir.NonZeroBytes(in[0][i*k.esize:(i+1)*k.esize], k.float) {
			continue
		}
		if j == k.count {
			panic("more non-zero values than planned")
		}
		for d, s := range st {
			y[d*k.count+j] = int64(i / s % k.shape[d])
		}
		j++
	}
}
