package cpu

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// reducePlan describes a reduction after merging adjacent dimensions that
// are both reduced or both kept. The innermost merged dimension (length l)
// is either reduced — every output element sums whole contiguous runs — or
// kept — every output row of l elements accumulates whole input runs.
type reducePlan struct {
	l           int
	lastReduced bool
	kdims, kstr []int // kept dims (other than the innermost) and their input strides
	rdims, rstr []int // reduced dims (other than the innermost) and their input strides
	items       int   // output elements (lastReduced) or output rows
	count       int   // input elements per output element
}

func newReducePlan(shape []int, reduced []bool) (*reducePlan, error) {
	type dim struct {
		size, stride int
		red          bool
	}
	var ds []dim
	st := 1
	strides := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		strides[i] = st
		st *= shape[i]
	}
	p := &reducePlan{count: 1}
	for i, n := range shape {
		if reduced[i] {
			p.count *= n
		}
		if n == 1 {
			continue
		}
		if k := len(ds); k > 0 && ds[k-1].red == reduced[i] {
			ds[k-1].size *= n
			ds[k-1].stride = strides[i]
			continue
		}
		ds = append(ds, dim{n, strides[i], reduced[i]})
	}
	if len(ds) > maxDims {
		return nil, fmt.Errorf("reduction of rank %d is too deep", len(ds))
	}
	p.l = 1
	if k := len(ds); k > 0 {
		p.l, p.lastReduced = ds[k-1].size, ds[k-1].red
		ds = ds[:k-1]
	}
	for _, d := range ds {
		if d.red {
			p.rdims, p.rstr = append(p.rdims, d.size), append(p.rstr, d.stride)
		} else {
			p.kdims, p.kstr = append(p.kdims, d.size), append(p.kstr, d.stride)
		}
	}
	p.items = prod(p.kdims)
	return p, nil
}

// reduceKind selects the combining rule.
type reduceKind int

const (
	reduceSum reduceKind = iota
	reduceMean
	reduceMax
	reduceMin
	reduceProd
	reduceL1
	reduceL2
	reduceSumSquare
	reduceLogSum
	reduceLogSumExp
)

var reduceKinds = map[string]reduceKind{
	"ReduceSum": reduceSum, "ReduceMean": reduceMean, "ReduceMax": reduceMax,
	"ReduceMin": reduceMin, "ReduceProd": reduceProd, "ReduceL1": reduceL1,
	"ReduceL2": reduceL2, "ReduceSumSquare": reduceSumSquare,
	"ReduceLogSum": reduceLogSum, "ReduceLogSumExp": reduceLogSumExp,
}

// Element transforms applied before summing.
const (
	preNone = iota
	preAbs
	preSquare
	preExp
)

// pre is the transform a summing kind applies to each element.
func (k reduceKind) pre() int {
	switch k {
	case reduceL1:
		return preAbs
	case reduceL2, reduceSumSquare:
		return preSquare
	case reduceLogSumExp:
		return preExp
	}
	return preNone
}

// sums reports whether the kind adds (transformed) elements.
func (k reduceKind) sums() bool {
	return k != reduceMax && k != reduceMin && k != reduceProd
}

// reduceKernel reduces T values, accumulating sums in A (float64 for
// floats, int64 for integers).
type reduceKernel[T, A number] struct {
	p    *reducePlan
	kind reduceKind
	copy bool // nothing to reduce: the output is the input
	outN int
}

func buildReduce(c *buildContext) (Kernel, int64, error) {
	x, y, err := c.inOut()
	if err != nil {
		return nil, 0, err
	}
	at := c.attrs()
	axes := at.Ints("axes", nil)
	if c.in(1) != nil {
		v, err := c.constInts(1)
		if err != nil {
			return nil, 0, err
		}
		axes = v
	}
	r := x.Shape.Rank()
	reduced := make([]bool, r)
	if len(axes) == 0 {
		if at.Int("noop_with_empty_axes", 0) != 0 {
			if !x.Shape.Equal(y.Shape) {
				return nil, 0, c.errorf("output %v differs from input %v", y.Shape, x.Shape)
			}
			return newReduce(c, nil, true, int(y.Shape.Elements()))
		}
		for i := range reduced {
			reduced[i] = true
		}
	}
	for _, a := range axes {
		i, err := ir.NormAxis(a, r)
		if err != nil {
			return nil, 0, c.errorf("axes: %v", err)
		}
		reduced[i] = true
	}
	want := int64(1)
	for i, d := range x.Shape {
		if !reduced[i] {
			want *= d
		}
	}
	if y.Shape.Elements() != want {
		return nil, 0, c.errorf("output %v does not hold the %d elements of the reduction of %v", y.Shape, want, x.Shape)
	}
	p, err := newReducePlan(ints(x.Shape), reduced)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return newReduce(c, p, false, int(want))
}

func newReduce(c *buildContext, p *reducePlan, cp bool, outN int) (Kernel, int64, error) {
	kind := reduceKinds[c.n.Op]
	dt := c.in(0).DType
	if !dt.IsFloat() && (kind == reduceL2 || kind == reduceLogSum || kind == reduceLogSumExp) {
		return nil, 0, c.unsupported(dt)
	}
	var k Kernel
	switch dt {
	case ir.Float32:
		k = &reduceKernel[float32, float64]{p, kind, cp, outN}
	case ir.Float64:
		k = &reduceKernel[float64, float64]{p, kind, cp, outN}
	case ir.Int32:
		k = &reduceKernel[int32, int64]{p, kind, cp, outN}
	case ir.Int64:
		k = &reduceKernel[int64, int64]{p, kind, cp, outN}
	default:
		return nil, 0, c.unsupported(dt)
	}
	var scratch int64
	if !cp && !p.lastReduced && kind != reduceMax && kind != reduceMin {
		scratch = int64(outN) * 8
	}
	return k, scratch, nil
}

func (k *reduceKernel[T, A]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.copy {
		copyDistinct(out[0], in[0])
		return
	}
	work := k.outN * max(k.p.count, 1)
	w.forArgs(k.p.items, w.parts(work), k, args{}, in, out, scratch)
}

func (k *reduceKernel[T, A]) rangeArgs(in, out [][]byte, scratch []byte, _ args, lo, hi int) {
	x, y := view[T](in[0]), view[T](out[0])
	p := k.p
	var kidx, ridx [maxDims]int
	// Position the kept-dims odometer on item lo.
	base := odometerAt(kidx[:], p.kdims, p.kstr, lo)
	nr := prod(p.rdims)
	for it := lo; it < hi; it++ {
		if p.lastReduced {
			y[it] = k.reduceRuns(x, base, nr, &ridx)
		} else {
			k.reduceRows(y[it*p.l:(it+1)*p.l], x, base, nr, &ridx, scratch, it)
		}
		base = odometerNext(kidx[:], p.kdims, p.kstr, base)
	}
}

// reduceRuns combines the nr contiguous runs of length l that make up one
// output element.
func (k *reduceKernel[T, A]) reduceRuns(x []T, base, nr int, ridx *[maxDims]int) T {
	p := k.p
	off := base
	*ridx = [maxDims]int{}
	switch {
	case k.kind.sums():
		var s A
		pre := k.kind.pre()
		for r := 0; r < nr; r++ {
			s += sumRun[T, A](x[off:off+p.l], pre)
			off = k.nextRed(ridx, off)
		}
		return finish[T](s, k.kind, p.count)
	case k.kind == reduceProd:
		s := A(1)
		for r := 0; r < nr; r++ {
			for _, v := range x[off : off+p.l] {
				s *= A(v)
			}
			off = k.nextRed(ridx, off)
		}
		return T(s)
	default:
		var best T
		first := true
		for r := 0; r < nr; r++ {
			for _, v := range x[off : off+p.l] {
				if first || k.better(v, best) {
					best, first = v, false
				}
			}
			off = k.nextRed(ridx, off)
		}
		return best
	}
}

// reduceRows combines nr input rows into one output row.
func (k *reduceKernel[T, A]) reduceRows(y, x []T, base, nr int, ridx *[maxDims]int, scratch []byte, it int) {
	p := k.p
	off := base
	*ridx = [maxDims]int{}
	switch {
	case k.kind.sums() || k.kind == reduceProd:
		acc := view[A](scratch)[it*p.l : (it+1)*p.l]
		if k.kind == reduceProd {
			fill(acc, 1)
		} else {
			clear(acc)
		}
		pre := k.kind.pre()
		for r := 0; r < nr; r++ {
			accRow(acc, x[off:off+p.l], pre, k.kind == reduceProd)
			off = k.nextRed(ridx, off)
		}
		for j, s := range acc {
			y[j] = finish[T](s, k.kind, p.count)
		}
	default:
		for r := 0; r < nr; r++ {
			src := x[off : off+p.l]
			if r == 0 {
				copy(y, src)
			} else {
				for j, v := range src {
					if k.better(v, y[j]) {
						y[j] = v
					}
				}
			}
			off = k.nextRed(ridx, off)
		}
	}
}

// accRow accumulates one input row into acc elementwise.
func accRow[T, A number](acc []A, x []T, pre int, mul bool) {
	x = x[:len(acc)]
	switch {
	case mul:
		for j, v := range x {
			acc[j] *= A(v)
		}
	case pre == preNone:
		for j, v := range x {
			acc[j] += A(v)
		}
	default:
		for j, v := range x {
			acc[j] += transform[A](v, pre)
		}
	}
}

// transform applies a summing kind's element transform.
func transform[A, T number](v T, pre int) A {
	a := A(v)
	switch pre {
	case preAbs:
		if a < 0 {
			a = -a
		}
	case preSquare:
		a *= a
	case preExp:
		a = A(math.Exp(float64(a)))
	}
	return a
}

// finish turns a sum into the kind's result.
func finish[T, A number](s A, kind reduceKind, n int) T {
	switch kind {
	case reduceMean:
		return meanOf[T](s, n)
	case reduceL2:
		return T(math.Sqrt(float64(s)))
	case reduceLogSum, reduceLogSumExp:
		return T(math.Log(float64(s)))
	}
	return T(s)
}

// better reports whether v replaces best for Max/Min; NaN wins.
func (k *reduceKernel[T, A]) better(v, best T) bool {
	if v != v {
		return best == best
	}
	if k.kind == reduceMax {
		return v > best
	}
	return v < best
}

// nextRed advances the reduced-dims odometer and returns the new offset.
func (k *reduceKernel[T, A]) nextRed(ridx *[maxDims]int, off int) int {
	return odometerNext(ridx[:], k.p.rdims, k.p.rstr, off)
}

// sumRun adds the transformed elements of a contiguous run.
func sumRun[T, A number](x []T, pre int) A {
	if pre != preNone {
		var s A
		for _, v := range x {
			s += transform[A](v, pre)
		}
		return s
	}
	var s0, s1 A
	for len(x) >= 2 {
		s0 += A(x[0])
		s1 += A(x[1])
		x = x[2:]
	}
	if len(x) == 1 {
		s0 += A(x[0])
	}
	return s0 + s1
}

// meanOf divides a sum by a count (integer division for integer types; an
// empty integer mean is 0).
func meanOf[T, A number](s A, n int) T {
	if n == 0 {
		if _, isInt := any(s).(int64); isInt {
			return 0
		}
	}
	return T(s / A(n))
}
