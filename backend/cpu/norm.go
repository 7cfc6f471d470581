package cpu

import (
	"math"

	"github.com/berth-ml/berth/backend/cpu/vmath"
	"github.com/berth-ml/berth/ir"
)

// batchNormKernel is inference-mode BatchNormalization: per channel,
// y = x·a + b with a = scale/√(var+ε) and b = bias − mean·a, computed in
// float64 (once at build time when the statistics are constant).
type batchNormKernel struct {
	planes, c, sp int
	eps           float64
	ab            []float64 // a[0:c], b[c:2c]; nil when computed per run
}

func buildBatchNorm(c *buildContext) (Kernel, int64, error) {
	if c.attrs().Int("training_mode", 0) != 0 {
		return buildTrainBatchNorm(c)
	}
	if err := c.need(5); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	for i := 0; i < 5; i++ {
		if t := c.in(i); t.DType != ir.Float32 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	for i := 1; i < len(c.n.Outputs); i++ {
		if c.out(i) != nil {
			return nil, 0, c.errorf("the running statistics outputs (training mode) are not supported")
		}
	}
	if x.Shape.Rank() < 2 || !x.Shape.Equal(y.Shape) || y.DType != ir.Float32 {
		return nil, 0, c.errorf("input %v and output %v must be equal shapes with a channel dimension", x.Shape, y.Shape)
	}
	ch := int(x.Shape[1])
	for i := 1; i < 5; i++ {
		if c.in(i).Shape.Elements() != int64(ch) {
			return nil, 0, c.errorf("input %d %v must have %d elements", i, c.in(i).Shape, ch)
		}
	}
	k := &batchNormKernel{planes: int(x.Shape[0]) * ch, c: ch, sp: prod(ints(x.Shape[2:])),
		eps: float64(c.attrs().Float("epsilon", 1e-5))}
	if c.in(1).IsConst() && c.in(2).IsConst() && c.in(3).IsConst() && c.in(4).IsConst() {
		k.ab = make([]float64, 2*ch)
		k.coefficients(k.ab, constF32(c.in(1)), constF32(c.in(2)), constF32(c.in(3)), constF32(c.in(4)))
		return k, 0, nil
	}
	return k, int64(16 * ch), nil
}

func (k *batchNormKernel) coefficients(ab []float64, scale, bias, mean, variance []float32) {
	for i := 0; i < k.c; i++ {
		a := float64(scale[i]) / math.Sqrt(float64(variance[i])+k.eps)
		ab[i] = a
		ab[k.c+i] = float64(bias[i]) - float64(mean[i])*a
	}
}

func (k *batchNormKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.ab == nil {
		k.coefficients(view[float64](scratch), f32s(in[1]), f32s(in[2]), f32s(in[3]), f32s(in[4]))
	}
	w.forArgs(k.planes, w.parts(k.planes*k.sp), k, args{}, in, out, scratch)
}

func (k *batchNormKernel) rangeArgs(in, out [][]byte, scratch []byte, _ args, lo, hi int) {
	ab := k.ab
	if ab == nil {
		ab = view[float64](scratch)
	}
	x, y := f32s(in[0]), f32s(out[0])
	for p := lo; p < hi; p++ {
		ch := p % k.c
		a, b := ab[ch], ab[k.c+ch]
		xs := x[p*k.sp:][:k.sp]
		ys := y[p*k.sp:][:k.sp]
		for i, v := range xs {
			ys[i] = float32(float64(v)*a + b)
		}
	}
}

// layerNormKernel normalises each row of d = prod(shape[axis:]) elements to
// zero mean and unit variance (sums in float64), then scales and shifts;
// it can also output the mean and 1/σ of every row.
type layerNormKernel struct {
	rows, d       int
	eps           float64
	scaleN, biasN int       // elements of Scale and B (d or 1; 0: absent)
	zeros         []float32 // d zeros: the bias when B is absent
}

func buildLayerNorm(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if err := c.allFloat32(x, c.in(1), c.in(2), y, c.out(1), c.out(2)); err != nil {
		return nil, 0, err
	}
	if !x.Shape.Equal(y.Shape) {
		return nil, 0, c.errorf("output %v differs from input %v", y.Shape, x.Shape)
	}
	axis, err := ir.NormAxis(c.attrs().Int("axis", -1), x.Shape.Rank())
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	k := &layerNormKernel{
		rows: prod(ints(x.Shape[:axis])),
		d:    prod(ints(x.Shape[axis:])),
		eps:  float64(c.attrs().Float("epsilon", 1e-5)),
	}
	for i, dst := range []*int{&k.scaleN, &k.biasN} {
		if t := c.in(1 + i); t != nil {
			n := int(t.Shape.Elements())
			if n != k.d && n != 1 {
				return nil, 0, c.errorf("input %q %v must have %d elements", t.Name, t.Shape, k.d)
			}
			*dst = n
		}
	}
	for i := 1; i <= 2; i++ {
		if t := c.out(i); t != nil && t.Shape.Elements() != int64(k.rows) {
			return nil, 0, c.errorf("output %q %v must have %d elements", t.Name, t.Shape, k.rows)
		}
	}
	if k.scaleN == k.d && k.biasN == 0 {
		k.zeros = make([]float32, k.d)
	}
	return k, 0, nil
}

func (k *layerNormKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(k.rows, w.parts(k.rows*k.d*3), k, args{}, in, out, nil)
}

func (k *layerNormKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	scale := f32s(in[1])
	var bias, means, invs []float32
	if k.biasN > 0 {
		bias = f32s(in[2])
	}
	if b := outAt(out, 1); b != nil {
		means = f32s(b)
	}
	if b := outAt(out, 2); b != nil {
		invs = f32s(b)
	}
	d := k.d
	for r := lo; r < hi; r++ {
		xs := x[r*d:][:d]
		ys := y[r*d:][:d]
		mean := vmath.Sum(xs) / float64(d)
		mf := float32(mean)
		// Σ(x−mf)² = Σ(x−mean)² + d·(mean−mf)², as Σ(x−mean) = 0.
		dm := mean - float64(mf)
		variance := max(vmath.SumSqDev(xs, mf)/float64(d)-dm*dm, 0)
		inv := 1 / math.Sqrt(variance+k.eps)
		if means != nil {
			means[r] = mf
		}
		if invs != nil {
			invs[r] = float32(inv)
		}
		switch {
		case k.scaleN == d && k.biasN == d:
			vmath.NormAffine(ys, xs, scale[:d], bias[:d], mf, float32(inv))
		case k.scaleN == d && k.biasN == 0:
			vmath.NormAffine(ys, xs, scale[:d], k.zeros, mf, float32(inv))
		default:
			for i, v := range xs {
				s, b := scale[0], float32(0)
				if k.scaleN > 1 {
					s = scale[i]
				}
				if k.biasN == 1 {
					b = bias[0]
				} else if k.biasN > 1 {
					b = bias[i]
				}
				ys[i] = float32((float64(v)-mean)*inv*float64(s) + float64(b))
			}
		}
	}
}

// softmaxKernel is Softmax or LogSoftmax over n elements spaced stride
// apart, for each of outer·stride independent vectors. Opset 13 and later
// reduce along one axis; older opsets flatten everything from the axis on.
type softmaxKernel struct {
	log           bool
	outer, n, str int
}

func buildSoftmax(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 {
		return nil, 0, c.unsupported(x.DType)
	}
	if !x.Shape.Equal(y.Shape) || y.DType != x.DType {
		return nil, 0, c.errorf("output %s%v differs from input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	outer, length, stride, err := ir.SoftmaxRows(c.n, c.opset, x.Shape)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	k := &softmaxKernel{log: c.n.Op == "LogSoftmax", outer: int(outer), n: int(length), str: int(stride)}
	return k, 0, nil
}

func (k *softmaxKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	v := k.outer * k.str
	w.forArgs(v, w.parts(v*k.n*8), k, args{}, in, out, nil)
}

func (k *softmaxKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	for v := lo; v < hi; v++ {
		o, i := v/k.str, v%k.str
		base := o*k.n*k.str + i
		if k.str == 1 {
			softmaxRow(y[base:base+k.n], x[base:base+k.n], k.log)
		} else {
			softmaxStrided(y[base:], x[base:], k.n, k.str, k.log)
		}
	}
}
