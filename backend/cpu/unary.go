package cpu

import (
	"math"

	"github.com/berth-ml/berth/backend/cpu/vmath"
	"github.com/berth-ml/berth/ir"
)

// Element type sets of the generic loops.
type (
	float  interface{ ~float32 | ~float64 }
	signed interface {
		~int8 | ~int16 | ~int32 | ~int64
	}
	unsigned interface {
		~uint8 | ~uint16 | ~uint32 | ~uint64
	}
	integer interface{ signed | unsigned }
	number  interface{ float | integer }
)

// unaryFn processes one contiguous share of an elementwise op; d and s hold
// the same number of elements and may be the same memory.
type unaryFn func(d, s []byte, a args)

// asBytes adapts a typed loop to unaryFn.
func asBytes[T, U any](f func(d []U, s []T, a args)) unaryFn {
	return func(d, s []byte, a args) { f(view[U](d), view[T](s), a) }
}

// unaryKernel is any elementwise op with one input: the loop is chosen at
// build time, parameters travel in args.
type unaryKernel struct {
	fn           unaryFn
	isize, osize int // bytes per element of input and output
	n            int // elements
	cost         int // relative cost of one element, for the parallel grain
	a            args
}

func (k *unaryKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	k.run(w, in, out, k.a)
}

func (k *unaryKernel) run(w *Workers, in, out [][]byte, a args) {
	w.forArgs(k.n, w.parts(k.n*k.cost), k, a, in, out, nil)
}

func (k *unaryKernel) rangeArgs(in, out [][]byte, _ []byte, a args, lo, hi int) {
	k.fn(out[0][lo*k.osize:hi*k.osize], in[0][lo*k.isize:hi*k.isize], a)
}

// farg and setFarg store float parameters in args.
func farg(a args, i int) float64        { return math.Float64frombits(uint64(a[i])) }
func setFarg(a *args, i int, v float64) { a[i] = int64(math.Float64bits(v)) }

// unaryLoop is the loop of a unary op for one element type and the
// relative cost of one element.
type unaryLoop struct {
	fn   unaryFn
	cost int
}

// unaryLoops[dt][op] is the loop of unary op on dt.
var unaryLoops = map[ir.DType]map[string]unaryLoop{
	ir.Float32: float32Loops(), ir.Float64: floatLoops[float64](),
	ir.Int8: numberLoops[int8](), ir.Int16: numberLoops[int16](),
	ir.Int32: numberLoops[int32](), ir.Int64: numberLoops[int64](),
	ir.Uint8: numberLoops[uint8](), ir.Uint16: numberLoops[uint16](),
	ir.Uint32: numberLoops[uint32](), ir.Uint64: numberLoops[uint64](),
	ir.Bool: {"Not": {notLoop, 1}},
}

// unaryFor picks the loop of op for dtype dt and the cost of one element.
func unaryFor(op string, dt ir.DType) (unaryFn, int, bool) {
	l, ok := unaryLoops[dt][op]
	return l.fn, l.cost, ok
}

// numberLoops are the loops of the ops that are exact on every number
// type.
func numberLoops[T number]() map[string]unaryLoop {
	return map[string]unaryLoop{
		"Relu": {asBytes(reluLoop[T]), 1}, "Neg": {asBytes(negLoop[T]), 1},
		"Abs": {asBytes(absLoop[T]), 1}, "Sign": {asBytes(signLoop[T]), 1},
		"Clip": {asBytes(clipLoop[T]), 1}, "Square": {asBytes(squareLoop[T]), 1},
		"Cube": {asBytes(cubeLoop[T]), 1}, "Copy": {asBytes(copyLoop[T]), 1},
	}
}

// floatLoops are numberLoops and the loops of the floating-point ops.
func floatLoops[T float]() map[string]unaryLoop {
	m := numberLoops[T]()
	for op, l := range map[string]unaryLoop{
		"LeakyRelu": {asBytes(leakyReluLoop[T]), 1}, "Sigmoid": {asBytes(sigmoidLoop[T]), 8},
		"HardSigmoid": {asBytes(hardSigmoidLoop[T]), 1}, "HardSwish": {asBytes(hardSwishLoop[T]), 1},
		"Tanh": {asBytes(tanhLoop[T]), 8}, "Erf": {asBytes(erfLoop[T]), 8},
		"Exp": {asBytes(expLoop[T]), 8}, "Log": {asBytes(logLoop[T]), 8},
		"Sqrt": {asBytes(sqrtLoop[T]), 2}, "Reciprocal": {asBytes(reciprocalLoop[T]), 1},
		"Floor": {asBytes(floorLoop[T]), 1}, "Ceil": {asBytes(ceilLoop[T]), 1},
		"Round": {asBytes(roundLoop[T]), 1}, "Sin": {asBytes(sinLoop[T]), 8},
		"Cos": {asBytes(cosLoop[T]), 8}, "Tan": {asBytes(tanLoop[T]), 8},
		"Asin": {asBytes(asinLoop[T]), 8}, "Acos": {asBytes(acosLoop[T]), 8},
		"Atan": {asBytes(atanLoop[T]), 8}, "Sinh": {asBytes(sinhLoop[T]), 8},
		"Cosh": {asBytes(coshLoop[T]), 8}, "Asinh": {asBytes(asinhLoop[T]), 8},
		"Acosh": {asBytes(acoshLoop[T]), 8}, "Atanh": {asBytes(atanhLoop[T]), 8},
		"Softplus": {asBytes(softplusLoop[T]), 16}, "Softsign": {asBytes(softsignLoop[T]), 1},
		"Elu": {asBytes(eluLoop[T]), 8}, "Selu": {asBytes(seluLoop[T]), 8},
		"ThresholdedRelu": {asBytes(thresholdedReluLoop[T]), 1}, "Shrink": {asBytes(shrinkLoop[T]), 1},
	} {
		m[op] = l
	}
	return m
}

// float32Loops are floatLoops with the vectorised float32 loops (clamp.go,
// vmath.go) in place of those that go through float64 math one element at
// a time.
func float32Loops() map[string]unaryLoop {
	m := floatLoops[float32]()
	vector := func(f func(d, s []float32)) unaryLoop {
		return unaryLoop{func(d, s []byte, _ args) { f(view[float32](d), view[float32](s)) }, 2}
	}
	for op, l := range map[string]unaryLoop{
		"Relu": {reluF32, 1}, "Clip": {clipF32, 1}, "Square": {squareF32, 1}, "Cube": {cubeF32, 1},
		"Exp": vector(vmath.Exps), "Sigmoid": vector(vmath.Sigmoids), "Tanh": vector(vmath.Tanhs),
		"Erf": vector(vmath.Erfs), "Gelu": vector(vmath.Gelus),
		"GeluTanh": vector(vmath.GeluTanhs), // Gelu with approximate=tanh
	} {
		m[op] = l
	}
	return m
}

// unaryInput returns the input of an elementwise op of one input, checking
// that the output has its type and size.
func unaryInput(c *buildContext) (*ir.Tensor, error) {
	if err := c.need(1); err != nil {
		return nil, err
	}
	x, y := c.in(0), c.out(0)
	if x.Shape.Elements() != y.Shape.Elements() || x.DType != y.DType {
		return nil, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	return x, nil
}

// newUnaryKernel is the unaryKernel that runs fn, of the given cost, over
// the elements of t.
func newUnaryKernel(fn unaryFn, cost int, t *ir.Tensor) *unaryKernel {
	return &unaryKernel{fn: fn, isize: t.DType.Size(), osize: t.DType.Size(), n: int(t.Shape.Elements()), cost: cost}
}

func buildUnary(c *buildContext) (Kernel, int64, error) {
	x, err := unaryInput(c)
	if err != nil {
		return nil, 0, err
	}
	op := c.n.Op
	if op == "Gelu" {
		switch ap := c.attrs().String("approximate", "none"); ap {
		case "none":
		case "tanh":
			op = "GeluTanh"
		default:
			return nil, 0, c.errorf("approximate=%q is not one of none and tanh", ap)
		}
	}
	fn, cost, ok := unaryFor(op, x.DType)
	if !ok {
		return nil, 0, c.unsupported(x.DType)
	}
	k := newUnaryKernel(fn, cost, x)
	at := c.attrs()
	switch c.n.Op {
	case "LeakyRelu":
		setFarg(&k.a, 0, float64(at.Float("alpha", 0.01)))
	case "HardSigmoid":
		setFarg(&k.a, 0, float64(at.Float("alpha", 0.2)))
		setFarg(&k.a, 1, float64(at.Float("beta", 0.5)))
	case "HardSwish":
		setFarg(&k.a, 0, float64(float32(1.0/6)))
		setFarg(&k.a, 1, 0.5)
	case "Elu":
		setFarg(&k.a, 0, float64(at.Float("alpha", 1)))
	case "Selu":
		setFarg(&k.a, 0, float64(at.Float("alpha", 1.67326319217681884765625)))
		setFarg(&k.a, 1, float64(at.Float("gamma", 1.05070102214813232421875)))
	case "ThresholdedRelu":
		setFarg(&k.a, 0, float64(at.Float("alpha", 1)))
	case "Shrink":
		setFarg(&k.a, 0, float64(at.Float("bias", 0)))
		setFarg(&k.a, 1, float64(at.Float("lambd", 0.5)))
	}
	return k, 0, nil
}

// clipKernel reads its bounds at run time from the optional min and max
// inputs (opset ≥ 11), or uses the attributes of older opsets.
type clipKernel struct {
	unaryKernel
	dt      ir.DType
	runtime bool // bounds come from inputs 1 and 2
}

func buildClip(c *buildContext) (Kernel, int64, error) {
	x, err := unaryInput(c)
	if err != nil {
		return nil, 0, err
	}
	fn, _, ok := unaryFor("Clip", x.DType)
	if !ok {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &clipKernel{dt: x.DType}
	k.unaryKernel = *newUnaryKernel(fn, 1, x)
	for i := 1; i <= 2; i++ {
		if t := c.in(i); t != nil {
			if t.DType != x.DType || t.Shape.Elements() != 1 {
				return nil, 0, c.errorf("bound %q must be a %s scalar, not %s%v", t.Name, x.DType, t.DType, t.Shape)
			}
			k.runtime = true
		}
	}
	if x.DType.IsFloat() {
		setFarg(&k.a, 0, math.Inf(-1))
		setFarg(&k.a, 1, math.Inf(1))
		if at := c.attrs(); !k.runtime {
			if at.Has("min") {
				setFarg(&k.a, 0, float64(at.Float("min", 0)))
			}
			if at.Has("max") {
				setFarg(&k.a, 1, float64(at.Float("max", 0)))
			}
		}
	} else {
		k.a[0], k.a[1] = intRange(x.DType)
	}
	return k, 0, nil
}

func (k *clipKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	a := k.a
	if k.runtime {
		for i := 1; i <= 2; i++ {
			if i >= len(in) || in[i] == nil {
				continue
			}
			if k.dt.IsFloat() {
				setFarg(&a, i-1, scalarFloat(in[i], k.dt))
			} else {
				a[i-1] = scalarInt(in[i], k.dt)
			}
		}
	}
	k.run(w, in, out, a)
}

// intRange returns the smallest and largest value of an integer type, as
// int64 (uint64's top half saturates).
func intRange(dt ir.DType) (lo, hi int64) {
	switch dt {
	case ir.Int8:
		return math.MinInt8, math.MaxInt8
	case ir.Int16:
		return math.MinInt16, math.MaxInt16
	case ir.Int32:
		return math.MinInt32, math.MaxInt32
	case ir.Uint8:
		return 0, math.MaxUint8
	case ir.Uint16:
		return 0, math.MaxUint16
	case ir.Uint32:
		return 0, math.MaxUint32
	case ir.Uint64:
		return 0, -1 // all bits set: converts back to MaxUint64
	}
	return math.MinInt64, math.MaxInt64
}

// scalarFloat reads element 0 of a float buffer.
func scalarFloat(b []byte, dt ir.DType) float64 {
	switch dt {
	case ir.Float32:
		return float64(view[float32](b)[0])
	case ir.Float64:
		return view[float64](b)[0]
	}
	return float64(scalarInt(b, dt))
}

// scalarInt reads element 0 of an integer or bool buffer as int64 (uint64
// keeps its bits).
func scalarInt(b []byte, dt ir.DType) int64 {
	if first := firstInts[dt]; first != nil {
		return first(b)
	}
	return 0
}

// firstInts holds firstInt for each number type and bool.
var firstInts = map[ir.DType]func(b []byte) int64{
	ir.Int8: firstInt[int8], ir.Uint8: firstInt[uint8], ir.Bool: firstInt[uint8],
	ir.Int16: firstInt[int16], ir.Uint16: firstInt[uint16],
	ir.Int32: firstInt[int32], ir.Uint32: firstInt[uint32],
	ir.Int64: firstInt[int64], ir.Uint64: firstInt[uint64],
	ir.Float32: firstInt[float32], ir.Float64: firstInt[float64],
}

// firstInt reads element 0 of b, T values, as int64.
func firstInt[T number](b []byte) int64 { return int64(view[T](b)[0]) }
