package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// Integer matrix products (MatMulInteger, QLinearMatMul) and
// ReverseSequence.

// intMatMulKernel multiplies batched integer matrices with zero points
// (per tensor), accumulating in int32; QLinearMatMul then requantises.
type intMatMulKernel struct {
	qlinear    bool
	adt, bdt   ir.DType
	ydt        ir.DType
	m, k, n    int
	batch      int
	aOff, bOff []int // per output batch, the first element of its A and B matrices
	ai, bi     int   // input index of a and b
	azi, bzi   int   // input index of the zero points (-1: none)
	lo, hi     float64
}

// checkQuantized checks that the zero points (the inputs at zeroPoints)
// are per tensor and, for the QLinear form of an op, that so are the
// scales (inputs 1, 4 and 6) and that the output type y is uint8 or int8,
// whose range it returns.
func checkQuantized(c *buildContext, qlinear bool, y ir.DType, zeroPoints ...int) (lo, hi float64, err error) {
	for _, zi := range zeroPoints {
		if z := c.in(zi); z != nil && z.Shape.Elements() != 1 {
			return 0, 0, c.errorf("zero point %v: only per-tensor zero points are supported", z.Shape)
		}
	}
	if !qlinear {
		return 0, 0, nil
	}
	if y != ir.Uint8 && y != ir.Int8 {
		return 0, 0, c.unsupported(y)
	}
	for _, si := range []int{1, 4, 6} {
		if s := c.in(si); s == nil || s.Shape.Elements() != 1 {
			return 0, 0, c.errorf("only per-tensor scales are supported")
		}
	}
	l, h := intRange(y)
	return float64(l), float64(h), nil
}

func buildMatMulInteger(c *buildContext) (Kernel, int64, error) {
	k := &intMatMulKernel{qlinear: c.n.Op == "QLinearMatMul", ai: 0, bi: 1, azi: 2, bzi: 3}
	if k.qlinear {
		k.bi, k.azi, k.bzi = 3, 2, 5
	}
	a, b, y := c.in(k.ai), c.in(k.bi), c.out(0)
	if a == nil || b == nil {
		return nil, 0, c.errorf("inputs are missing")
	}
	k.adt, k.bdt, k.ydt = a.DType, b.DType, y.DType
	var err error
	if k.lo, k.hi, err = checkQuantized(c, k.qlinear, y.DType, k.azi, k.bzi); err != nil {
		return nil, 0, err
	}
	as, bs := a.Shape, b.Shape
	if as.Rank() == 1 {
		as = ir.Shape{1, as[0]}
	}
	if bs.Rank() == 1 {
		bs = ir.Shape{bs[0], 1}
	}
	ra, rb := as.Rank(), bs.Rank()
	k.m, k.k, k.n = int(as[ra-2]), int(as[ra-1]), int(bs[rb-1])
	batch, err := ir.Broadcast(as[:ra-2], bs[:rb-2])
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	bsz := ints(batch)
	k.batch = prod(bsz)
	abs, bbs := ints(as[:ra-2]), ints(bs[:rb-2])
	for i := 0; i < k.batch; i++ {
		k.aOff = append(k.aOff, bcastOffset(i, bsz, abs)*k.m*k.k)
		k.bOff = append(k.bOff, bcastOffset(i, bsz, bbs)*k.k*k.n)
	}
	return k, 0, nil
}

// bcastOffset maps flat index i of shape out to the flat index of the
// operand of shape in broadcast to it (right-aligned).
func bcastOffset(i int, out, in []int) int {
	off, stride := 0, 1
	for d := len(out) - 1; d >= 0; d-- {
		c := i % out[d]
		i /= out[d]
		if j := d - (len(out) - len(in)); j >= 0 {
			if in[j] != 1 {
				off += c * stride
			}
			stride *= in[j]
		}
	}
	return off
}

func (k *intMatMulKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	zero := func(i int, dt ir.DType) int64 {
		if i < len(in) && in[i] != nil {
			v, _ := loadFloat(dt, in[i])
			return int64(v)
		}
		return 0
	}
	az, bz := zero(k.azi, k.adt), zero(k.bzi, k.bdt)
	elem := func(b []byte, dt ir.DType, i int) int64 {
		if dt == ir.Int8 {
			return int64(int8(b[i]))
		}
		return int64(b[i])
	}
	var scale, yz float64
	if k.qlinear {
		as, _ := loadFloat(ir.Float32, in[1])
		bs, _ := loadFloat(ir.Float32, in[4])
		ys, _ := loadFloat(ir.Float32, in[6])
		scale = as * bs / ys
		yz = float64(zero(7, k.ydt))
	}
	a, b := in[k.ai], in[k.bi]
	for bt := 0; bt < k.batch; bt++ {
		for i := 0; i < k.m; i++ {
			for j := 0; j < k.n; j++ {
				var acc int64
				for p := 0; p < k.k; p++ {
					acc += (elem(a, k.adt, k.aOff[bt]+i*k.k+p) - az) * (elem(b, k.bdt, k.bOff[bt]+p*k.n+j) - bz)
				}
				o := (bt*k.m+i)*k.n + j
				if !k.qlinear {
					view[int32](out[0])[o] = int32(acc)
					continue
				}
				q := math.RoundToEven(float64(acc)*scale) + yz
				storeFloat(k.ydt, out[0][o:], math.Max(k.lo, math.Min(k.hi, q)))
			}
		}
	}
}

type reverseSequenceKernel struct {
	esize              int
	seq, batch, inner  int
	batchAxis, seqAxis int
	wide               bool
}

func buildReverseSequence(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, lens := c.in(0), c.in(1)
	wide, err := indexType(c, lens)
	if err != nil {
		return nil, 0, err
	}
	at := c.attrs()
	k := &reverseSequenceKernel{esize: x.DType.Size(), batchAxis: int(at.Int("batch_axis", 1)), seqAxis: int(at.Int("time_axis", 0)), wide: wide}
	if k.batchAxis+k.seqAxis != 1 || k.batchAxis < 0 || k.seqAxis < 0 {
		return nil, 0, c.errorf("batch_axis and time_axis must be 0 and 1")
	}
	s := ints(x.Shape)
	k.seq, k.batch, k.inner = s[k.seqAxis], s[k.batchAxis], prod(s[2:])
	return k, 0, nil
}

func (k *reverseSequenceKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	span := k.inner * k.esize
	at := func(t, b int) int {
		if k.seqAxis == 0 {
			return (t*k.batch + b) * span
		}
		return (b*k.seq + t) * span
	}
	for b := 0; b < k.batch; b++ {
		n := int(indexAt(in[1], k.wide, b))
		for t := 0; t < k.seq; t++ {
			src := t
			if t < n {
				src = n - 1 - t
			}
			copy(out[0][at(t, b):at(t, b)+span], in[0][at(src, b):at(src, b)+span])
		}
	}
}

// intConvKernel is a direct integer convolution with per-tensor zero
// points; QLinearConv adds an int32 bias and requantises.
type intConvKernel struct {
	qlinear          bool
	xdt, wdt, ydt    ir.DType
	xi, wi, xzi, wzi int
	n, c, m, group   int
	in, out, kern    []int
	win              *ir.Window
	lo, hi           float64
}

func buildIntConv(c *buildContext) (Kernel, int64, error) {
	win, err := ir.IntConvWindow(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	k := &intConvKernel{qlinear: c.n.Op == "QLinearConv", win: win, group: int(c.attrs().Int("group", 1))}
	k.xi, k.wi, k.xzi, k.wzi = ir.IntConvInputs(c.n.Op)
	x, w, y := c.in(k.xi), c.in(k.wi), c.out(0)
	k.xdt, k.wdt, k.ydt = x.DType, w.DType, y.DType
	for _, t := range []*ir.Tensor{x, w} {
		if t.DType != ir.Uint8 && t.DType != ir.Int8 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	if k.lo, k.hi, err = checkQuantized(c, k.qlinear, y.DType, k.xzi, k.wzi); err != nil {
		return nil, 0, err
	}
	xs, ws := ints(x.Shape), ints(w.Shape)
	k.n, k.c, k.m = xs[0], xs[1], ws[0]
	k.in, k.kern, k.out = xs[2:], ws[2:], make([]int, len(xs)-2)
	for i, o := range win.Out {
		k.out[i] = int(o)
	}
	return k, int64(8 * len(k.out)), nil
}

func (k *intConvKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	zero := func(i int, dt ir.DType) int64 {
		if i < len(in) && in[i] != nil {
			v, _ := loadFloat(dt, in[i])
			return int64(v)
		}
		return 0
	}
	elem := func(b []byte, dt ir.DType, i int) int64 {
		if dt == ir.Int8 {
			return int64(int8(b[i]))
		}
		return int64(b[i])
	}
	xz, wz := zero(k.xzi, k.xdt), zero(k.wzi, k.wdt)
	var scale, yz float64
	if k.qlinear {
		xs, _ := loadFloat(ir.Float32, in[1])
		ws, _ := loadFloat(ir.Float32, in[4])
		ys, _ := loadFloat(ir.Float32, in[6])
		scale, yz = xs*ws/ys, float64(zero(7, k.ydt))
	}
	r := len(k.in)
	inSp, outSp, kSp := prod(k.in), prod(k.out), prod(k.kern)
	cg, mg := k.c/k.group, k.m/k.group
	pos := view[int](scratch)[:r]
	x, wt := in[k.xi], in[k.wi]
	for b := 0; b < k.n; b++ {
		for m := 0; m < k.m; m++ {
			g := m / mg
			for o := 0; o < outSp; o++ {
				var acc int64
				for ci := 0; ci < cg; ci++ {
					ch := g*cg + ci
					for kk := 0; kk < kSp; kk++ {
						off, ok := windowInput(k.win, k.in, k.out, k.kern, o, kk, pos)
						if !ok {
							continue
						}
						xv := elem(x, k.xdt, (b*k.c+ch)*inSp+off) - xz
						wv := elem(wt, k.wdt, (m*cg+ci)*kSp+kk) - wz
						acc += xv * wv
					}
				}
				i := (b*k.m+m)*outSp + o
				if !k.qlinear {
					view[int32](out[0])[i] = int32(acc)
					continue
				}
				if len(in) > 8 && in[8] != nil {
					acc += int64(view[int32](in[8])[m])
				}
				q := math.RoundToEven(float64(acc)*scale) + yz
				storeFloat(k.ydt, out[0][i:], math.Max(k.lo, math.Min(k.hi, q)))
			}
		}
	}
}
