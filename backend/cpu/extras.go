package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// Operators beyond the core set: cheap to provide, common in exported
// models.

func buildIsX(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if y.DType != ir.Bool || x.Shape.Elements() != y.Shape.Elements() {
		return nil, 0, c.errorf("output %s%v must be bool %v", y.DType, y.Shape, x.Shape)
	}
	k := &unaryKernel{isize: x.DType.Size(), osize: 1, n: int(x.Shape.Elements()), cost: 1}
	isInf := c.n.Op == "IsInf"
	switch x.DType {
	case ir.Float32:
		k.fn = asBytes(isNaNLoop[float32])
		if isInf {
			k.fn = asBytes(isInfLoop[float32])
		}
	case ir.Float64:
		k.fn = asBytes(isNaNLoop[float64])
		if isInf {
			k.fn = asBytes(isInfLoop[float64])
		}
	default:
		return nil, 0, c.unsupported(x.DType)
	}
	at := c.attrs()
	k.a[0], k.a[1] = at.Int("detect_negative", 1), at.Int("detect_positive", 1)
	return k, 0, nil
}

// buildPRelu is y = x where x ≥ 0, slope·x elsewhere, with the slope
// broadcast to x; a legacy channel slope (see ir.LegacyPReluSlope) goes
// through float64.
func buildPRelu(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, s, y := c.in(0), c.in(1), c.out(0)
	if ls := ir.LegacyPReluSlope(c.g, x.Shape, s.Shape); !ls.Equal(s.Shape) {
		return &halfBinaryKernel{dt: x.DType, b: newBcast(x.Shape, ls, y.Shape), f: func(a, b float64) float64 {
			if a < 0 {
				return a * b
			}
			return a
		}}, 0, nil
	}
	if s.DType != x.DType || y.DType != x.DType {
		return nil, 0, c.errorf("input, slope and output types differ (%s, %s, %s)", x.DType, s.DType, y.DType)
	}
	var k Kernel
	var err error
	switch x.DType {
	case ir.Float32:
		k, err = newBin(c, preluLoop[float32])
	case ir.Float64:
		k, err = newBin(c, preluLoop[float64])
	case ir.Int32:
		k, err = newBin(c, preluLoop[int32])
	case ir.Int64:
		k, err = newBin(c, preluLoop[int64])
	default:
		return nil, 0, c.unsupported(x.DType)
	}
	return k, 0, err
}

func preluLoop[T number](o, a, b []T, sa, sb int) {
	i, j := 0, 0
	for k := range o {
		x := a[i]
		if x < 0 {
			x *= b[j]
		}
		o[k] = x
		i += sa
		j += sb
	}
}

// buildMod is the remainder: with fmod=1 it has the sign of the dividend
// (C's fmod, required for floats), else that of the divisor (Python's %).
// An integer remainder by zero is 0.
func buildMod(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	if b.DType != a.DType || y.DType != a.DType {
		return nil, 0, c.errorf("input and output types differ (%s, %s, %s)", a.DType, b.DType, y.DType)
	}
	fmod := c.attrs().Int("fmod", 0) != 0
	if a.DType.IsFloat() && !fmod {
		return nil, 0, c.errorf("fmod must be 1 for %s", a.DType)
	}
	newMod := modKernels[a.DType]
	if newMod == nil {
		return nil, 0, c.unsupported(a.DType)
	}
	k, err := newMod(c, fmod)
	return k, 0, err
}

// modKernels holds the Mod kernel of each number type; the float ones are
// always fmod.
var modKernels = map[ir.DType]func(c *buildContext, fmod bool) (Kernel, error){
	ir.Float32: fmodFor[float32], ir.Float64: fmodFor[float64],
	ir.Int8: modFor[int8], ir.Int16: modFor[int16],
	ir.Int32: modFor[int32], ir.Int64: modFor[int64],
	ir.Uint8: modFor[uint8], ir.Uint16: modFor[uint16],
	ir.Uint32: modFor[uint32], ir.Uint64: modFor[uint64],
}

func fmodFor[T float](c *buildContext, _ bool) (Kernel, error) { return newBin(c, fmodFloatLoop[T]) }

func modFor[T integer](c *buildContext, fmod bool) (Kernel, error) {
	if fmod {
		return newBin(c, fmodIntLoop[T])
	}
	return newBin(c, modIntLoop[T])
}

func fmodFloatLoop[T float](o, a, b []T, sa, sb int) {
	i, j := 0, 0
	for k := range o {
		o[k] = T(math.Mod(float64(a[i]), float64(b[j])))
		i += sa
		j += sb
	}
}

func fmodIntLoop[T integer](o, a, b []T, sa, sb int) {
	i, j := 0, 0
	for k := range o {
		if d := b[j]; d != 0 {
			o[k] = a[i] % d
		} else {
			o[k] = 0
		}
		i += sa
		j += sb
	}
}

func modIntLoop[T integer](o, a, b []T, sa, sb int) {
	i, j := 0, 0
	for k := range o {
		d := b[j]
		var r T
		if d != 0 {
			r = a[i] % d
			if r != 0 && (r < 0) != (d < 0) {
				r += d
			}
		}
		o[k] = r
		i += sa
		j += sb
	}
}

// buildTile repeats the input along every axis: output index o along an
// axis of size n reads input index o mod n.
func buildTile(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	reps, err := c.constInts(1)
	if err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank()
	if len(reps) != r || y.Shape.Rank() != r || y.DType != x.DType {
		return nil, 0, c.errorf("repeats %v do not fit input %v and output %s%v", reps, x.Shape, y.DType, y.Shape)
	}
	maps := make([][]int32, r)
	for i := range maps {
		n := int(x.Shape[i])
		if n > math.MaxInt32 {
			return nil, 0, c.errorf("input %v is too long along axis %d to index with 32 bits", x.Shape, i)
		}
		if int64(n)*reps[i] != y.Shape[i] {
			return nil, 0, c.errorf("output %v is not input %v repeated %v times", y.Shape, x.Shape, reps)
		}
		maps[i] = make([]int32, y.Shape[i])
		for o := range maps[i] {
			maps[i][o] = int32(o % n)
		}
	}
	k, err := newIndexMap(c, x, y, maps)
	return k, 0, err
}

// newIndexMap builds a gather whose output index along each axis reads a
// fixed input index (the Pad machinery without padding).
func newIndexMap(c *buildContext, x, y *ir.Tensor, maps [][]int32) (*padKernel, error) {
	if r := y.Shape.Rank(); r > maxIndexRank {
		return nil, c.errorf("rank %d is above the %d this kernel indexes", r, maxIndexRank)
	}
	k := &padKernel{esize: x.DType.Size(), dims: ints(y.Shape), ins: rowStrides(ints(x.Shape)), maps: maps}
	r := len(k.dims)
	k.inner, k.rows = 1, 1
	if r > 0 {
		k.inner, k.rows = k.dims[r-1], prod(k.dims[:r-1])
	}
	if y.Shape.Elements() == 0 {
		k.rows = 0
	}
	return k, nil
}

// buildDepthToSpace and buildSpaceToDepth are a reshape, a transpose and a
// reshape, so one strided copy.
func buildDepthToSpace(c *buildContext) (Kernel, int64, error) {
	return buildBlocks(c, true)
}

func buildSpaceToDepth(c *buildContext) (Kernel, int64, error) {
	return buildBlocks(c, false)
}

func buildBlocks(c *buildContext, toSpace bool) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	b := int(c.attrs().Int("blocksize", 0))
	if x.Shape.Rank() != 4 || y.DType != x.DType || b <= 0 {
		return nil, 0, c.errorf("needs a rank-4 input and a positive blocksize, has %v and %d", x.Shape, b)
	}
	n, ch, h, w := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2]), int(x.Shape[3])
	var shape, str []int
	if toSpace {
		if ch%(b*b) != 0 {
			return nil, 0, c.errorf("%d channels do not divide into blocks of %d", ch, b*b)
		}
		co := ch / (b * b)
		if c.attrs().String("mode", "DCR") == "CRD" {
			s := rowStrides([]int{n, co, b, b, h, w})
			shape, str = []int{n, co, h, b, w, b}, []int{s[0], s[1], s[4], s[2], s[5], s[3]}
		} else {
			s := rowStrides([]int{n, b, b, co, h, w})
			shape, str = []int{n, co, h, b, w, b}, []int{s[0], s[3], s[4], s[1], s[5], s[2]}
		}
	} else {
		if h%b != 0 || w%b != 0 {
			return nil, 0, c.errorf("spatial size %dx%d does not divide into blocks of %d", h, w, b)
		}
		s := rowStrides([]int{n, ch, h / b, b, w / b, b})
		shape, str = []int{n, b, b, ch, h / b, w / b}, []int{s[0], s[3], s[5], s[1], s[2], s[4]}
	}
	if int64(prod(shape)) != y.Shape.Elements() {
		return nil, 0, c.errorf("output %v does not hold input %v", y.Shape, x.Shape)
	}
	st, err := newStrided(x.DType.Size(), shape, str, 0)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &stridedKernel{st}, 0, nil
}

// triluKernel keeps the upper (or lower) triangle of the last two
// dimensions, above (below) diagonal k, and zeroes the rest.
type triluKernel struct {
	esize      int
	mats, n, m int
	upper      bool
	k          int64 // when in[1] is absent
}

func buildTrilu(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	r := x.Shape.Rank()
	if r < 2 || !x.Shape.Equal(y.Shape) || x.DType != y.DType {
		return nil, 0, c.errorf("input %v must have rank 2 or more and match output %v", x.Shape, y.Shape)
	}
	if t := c.in(1); t != nil && (t.DType != ir.Int64 || t.Shape.Elements() != 1) {
		return nil, 0, c.errorf("k must be an int64 scalar")
	}
	s := ints(x.Shape)
	return &triluKernel{esize: x.DType.Size(), mats: prod(s[:r-2]), n: s[r-2], m: s[r-1],
		upper: c.attrs().Int("upper", 1) != 0}, 0, nil
}

func (k *triluKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	diag := k.k
	if len(in) > 1 && in[1] != nil {
		diag = view[int64](in[1])[0]
	}
	x, y := in[0], out[0]
	row := k.m * k.esize
	for mat := 0; mat < k.mats; mat++ {
		for i := 0; i < k.n; i++ {
			off := (mat*k.n + i) * row
			d, s := y[off:off+row], x[off:off+row]
			// Columns j with j-i >= diag (upper) or j-i <= diag (lower).
			cut := int(max(0, min(int64(k.m), int64(i)+diag)))
			if !k.upper {
				cut = int(max(0, min(int64(k.m), int64(i)+diag+1)))
				copyDistinct(d[:cut*k.esize], s[:cut*k.esize])
				clear(d[cut*k.esize:])
				continue
			}
			clear(d[:cut*k.esize])
			copyDistinct(d[cut*k.esize:], s[cut*k.esize:])
		}
	}
}

// argKernel is ArgMax or ArgMin along one axis: n values spaced str apart
// for each of outer·str positions. NaN counts as the extreme, as in numpy.
type argKernel[T number] struct{ argPlan }

// argPlan is an ArgMax or ArgMin of any element type.
type argPlan struct {
	isMax, last bool
	outer, n    int
	str         int
}

// argKernels makes the kernel of ArgMax and ArgMin for each type they
// support.
var argKernels = map[ir.DType]func(argPlan) Kernel{
	ir.Float32: newArgKernel[float32], ir.Float64: newArgKernel[float64],
	ir.Int8: newArgKernel[int8], ir.Uint8: newArgKernel[uint8],
	ir.Int32: newArgKernel[int32], ir.Int64: newArgKernel[int64],
}

func newArgKernel[T number](p argPlan) Kernel { return &argKernel[T]{p} }

func buildArg(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	r := x.Shape.Rank()
	axis, err := ir.NormAxis(c.attrs().Int("axis", 0), max(r, 1))
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(x.Shape)
	if r == 0 {
		s = []int{1}
	}
	outer, n, str := prod(s[:axis]), s[axis], prod(s[axis+1:])
	if y.DType != ir.Int64 || y.Shape.Elements() != int64(outer*str) {
		return nil, 0, c.errorf("output %s%v must be int64 with %d elements", y.DType, y.Shape, outer*str)
	}
	if n == 0 {
		return nil, 0, c.errorf("cannot reduce an empty axis")
	}
	newArg := argKernels[x.DType]
	if newArg == nil {
		return nil, 0, c.unsupported(x.DType)
	}
	isMax, last := c.n.Op == "ArgMax", c.attrs().Int("select_last_index", 0) != 0
	return newArg(argPlan{isMax, last, outer, n, str}), 0, nil
}

func (k *argKernel[T]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	v := k.outer * k.str
	w.forArgs(v, w.parts(v*k.n), k, args{}, in, out, nil)
}

func (k *argKernel[T]) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := view[T](in[0]), view[int64](out[0])
	for v := lo; v < hi; v++ {
		o, i := v/k.str, v%k.str
		base := o*k.n*k.str + i
		best, at := x[base], 0
		for j := 1; j < k.n; j++ {
			e := x[base+j*k.str]
			if best != best {
				break // the first NaN wins
			}
			var better bool
			switch {
			case e != e:
				better = true
			case k.isMax:
				better = e > best || (k.last && e == best)
			default:
				better = e < best || (k.last && e == best)
			}
			if better {
				best, at = e, j
			}
		}
		y[v] = int64(at)
	}
}

// cumSumKernel is CumSum along a constant axis, optionally exclusive
// and/or reversed; float sums accumulate in float64.
type cumSumKernel[T, A number] struct {
	outer, n, str      int
	exclusive, reverse bool
}

func buildCumSum(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if !x.Shape.Equal(y.Shape) || x.DType != y.DType {
		return nil, 0, c.errorf("output %s%v differs from input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	ax, err := c.constInts(1)
	if err != nil {
		return nil, 0, err
	}
	if len(ax) != 1 {
		return nil, 0, c.errorf("axis must be one value")
	}
	axis, err := ir.NormAxis(ax[0], x.Shape.Rank())
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(x.Shape)
	at := c.attrs()
	outer, n, str := prod(s[:axis]), s[axis], prod(s[axis+1:])
	ex, rev := at.Int("exclusive", 0) != 0, at.Int("reverse", 0) != 0
	switch x.DType {
	case ir.Float32:
		return &cumSumKernel[float32, float64]{outer, n, str, ex, rev}, 0, nil
	case ir.Float64:
		return &cumSumKernel[float64, float64]{outer, n, str, ex, rev}, 0, nil
	case ir.Int32:
		return &cumSumKernel[int32, int64]{outer, n, str, ex, rev}, 0, nil
	case ir.Int64:
		return &cumSumKernel[int64, int64]{outer, n, str, ex, rev}, 0, nil
	}
	return nil, 0, c.unsupported(x.DType)
}

func (k *cumSumKernel[T, A]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	v := k.outer * k.str
	w.forArgs(v, w.parts(v*k.n), k, args{}, in, out, nil)
}

func (k *cumSumKernel[T, A]) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := view[T](in[0]), view[T](out[0])
	for v := lo; v < hi; v++ {
		o, i := v/k.str, v%k.str
		base := o*k.n*k.str + i
		var s A
		for t := 0; t < k.n; t++ {
			j := t
			if k.reverse {
				j = k.n - 1 - t
			}
			at := base + j*k.str
			e := A(x[at])
			if k.exclusive {
				y[at] = T(s)
				s += e
			} else {
				s += e
				y[at] = T(s)
			}
		}
	}
}

// instanceNormKernel normalises every channel plane of every image, then
// applies the channel's scale and bias.
type instanceNormKernel struct {
	planes, c, sp int
	eps           float64
}

func buildInstanceNorm(c *buildContext) (Kernel, int64, error) {
	if err := c.need(3); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	for _, t := range []*ir.Tensor{x, c.in(1), c.in(2), y} {
		if t.DType != ir.Float32 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	if x.Shape.Rank() < 3 || !x.Shape.Equal(y.Shape) {
		return nil, 0, c.errorf("input %v must have spatial dimensions and match output %v", x.Shape, y.Shape)
	}
	ch := int(x.Shape[1])
	if c.in(1).Shape.Elements() != int64(ch) || c.in(2).Shape.Elements() != int64(ch) {
		return nil, 0, c.errorf("scale and bias must have %d elements", ch)
	}
	return &instanceNormKernel{planes: int(x.Shape[0]) * ch, c: ch, sp: prod(ints(x.Shape[2:])),
		eps: float64(c.attrs().Float("epsilon", 1e-5))}, 0, nil
}

func (k *instanceNormKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(k.planes, w.parts(k.planes*k.sp*3), k, args{}, in, out, nil)
}

func (k *instanceNormKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y, scale, bias := f32s(in[0]), f32s(out[0]), f32s(in[1]), f32s(in[2])
	for p := lo; p < hi; p++ {
		xs, ys := x[p*k.sp:][:k.sp], y[p*k.sp:][:k.sp]
		mean := sum64(xs) / float64(k.sp)
		var ss float64
		for _, v := range xs {
			d := float64(v) - mean
			ss += d * d
		}
		ch := p % k.c
		a := float64(scale[ch]) / math.Sqrt(ss/float64(k.sp)+k.eps)
		b := float64(bias[ch])
		for i, v := range xs {
			ys[i] = float32((float64(v)-mean)*a + b)
		}
	}
}
