package cpu

import (
	"math"

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

// floatOp returns the loop of a floating-point unary op for T, the cost of
// one element, and whether the op exists.
func floatOp[T float](op string) (unaryFn, int, bool) {
	var f func(d, s []T, a args)
	cost := 1
	switch op {
	case "Relu":
		f = reluLoop[T]
	case "LeakyRelu":
		f = leakyReluLoop[T]
	case "Sigmoid":
		f, cost = sigmoidLoop[T], 8
	case "HardSigmoid":
		f = hardSigmoidLoop[T]
	case "HardSwish":
		f = hardSwishLoop[T]
	case "Tanh":
		f, cost = tanhLoop[T], 8
	case "Erf":
		f, cost = erfLoop[T], 8
	case "Exp":
		f, cost = expLoop[T], 8
	case "Log":
		f, cost = logLoop[T], 8
	case "Sqrt":
		f, cost = sqrtLoop[T], 2
	case "Neg":
		f = negLoop[T]
	case "Abs":
		f = absLoop[T]
	case "Sign":
		f = signLoop[T]
	case "Reciprocal":
		f = reciprocalLoop[T]
	case "Floor":
		f = floorLoop[T]
	case "Ceil":
		f = ceilLoop[T]
	case "Round":
		f = roundLoop[T]
	case "Sin":
		f, cost = sinLoop[T], 8
	case "Cos":
		f, cost = cosLoop[T], 8
	case "Softplus":
		f, cost = softplusLoop[T], 16
	case "Elu":
		f, cost = eluLoop[T], 8
	case "Selu":
		f, cost = seluLoop[T], 8
	case "Clip":
		f = clipLoop[T]
	case "Square":
		f = squareLoop[T]
	case "Cube":
		f = cubeLoop[T]
	case "Copy":
		f = copyLoop[T]
	case "Softsign":
		f = softsignLoop[T]
	case "ThresholdedRelu":
		f = thresholdedReluLoop[T]
	case "Shrink":
		f = shrinkLoop[T]
	case "Tan":
		f, cost = tanLoop[T], 8
	case "Asin":
		f, cost = asinLoop[T], 8
	case "Acos":
		f, cost = acosLoop[T], 8
	case "Atan":
		f, cost = atanLoop[T], 8
	case "Sinh":
		f, cost = sinhLoop[T], 8
	case "Cosh":
		f, cost = coshLoop[T], 8
	case "Asinh":
		f, cost = asinhLoop[T], 8
	case "Acosh":
		f, cost = acoshLoop[T], 8
	case "Atanh":
		f, cost = atanhLoop[T], 8
	default:
		return nil, 0, false
	}
	return asBytes(f), cost, true
}

// vecOp returns the vectorised float32 loop of op (vmath.go), if it has
// one. These replace floatOp's loops for float32, which go through float64
// math one element at a time.
func vecOp(op string) (unaryFn, bool) {
	var f func(d, s []float32)
	switch op {
	case "Exp":
		f = vExp
	case "Sigmoid":
		f = vSigmoid
	case "Tanh":
		f = vTanh
	case "Erf":
		f = vErf
	case "Gelu":
		f = vGelu
	case "GeluTanh": // Gelu with approximate=tanh
		f = vGeluTanh
	default:
		return nil, false
	}
	return func(d, s []byte, _ args) { f(view[float32](d), view[float32](s)) }, true
}

// intOp is floatOp for integer types; only ops that are exact on integers
// exist.
func intOp[T integer](op string) (unaryFn, bool) {
	var f func(d, s []T, a args)
	switch op {
	case "Relu":
		f = reluLoop[T]
	case "Neg":
		f = negLoop[T]
	case "Abs":
		f = absLoop[T]
	case "Sign":
		f = signLoop[T]
	case "Clip":
		f = clipLoop[T]
	case "Square":
		f = squareLoop[T]
	case "Cube":
		f = cubeLoop[T]
	case "Copy":
		f = copyLoop[T]
	default:
		return nil, false
	}
	return asBytes(f), true
}

// unaryFor picks the loop of op for dtype dt.
func unaryFor(op string, dt ir.DType) (unaryFn, int, bool) {
	switch dt {
	case ir.Float32:
		if fn, ok := vecOp(op); ok {
			return fn, 2, true
		}
		switch op {
		case "Relu":
			return reluF32, 1, true
		case "Clip":
			return clipF32, 1, true
		case "Square":
			return squareF32, 1, true
		case "Cube":
			return cubeF32, 1, true
		}
		return floatOp[float32](op)
	case ir.Float64:
		return floatOp[float64](op)
	}
	var f unaryFn
	var ok bool
	switch dt {
	case ir.Int8:
		f, ok = intOp[int8](op)
	case ir.Int16:
		f, ok = intOp[int16](op)
	case ir.Int32:
		f, ok = intOp[int32](op)
	case ir.Int64:
		f, ok = intOp[int64](op)
	case ir.Uint8:
		f, ok = intOp[uint8](op)
	case ir.Uint16:
		f, ok = intOp[uint16](op)
	case ir.Uint32:
		f, ok = intOp[uint32](op)
	case ir.Uint64:
		f, ok = intOp[uint64](op)
	case ir.Bool:
		if op == "Not" {
			f, ok = notLoop, true
		}
	}
	return f, 1, ok
}

func buildUnary(c *bctx) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.Shape.Elements() != y.Shape.Elements() || x.DType != y.DType {
		return nil, 0, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
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
	k := &unaryKernel{fn: fn, isize: x.DType.Size(), osize: y.DType.Size(), n: int(x.Shape.Elements()), cost: cost}
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

func buildClip(c *bctx) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.Shape.Elements() != y.Shape.Elements() || x.DType != y.DType {
		return nil, 0, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	fn, _, ok := unaryFor("Clip", x.DType)
	if !ok {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &clipKernel{dt: x.DType}
	k.unaryKernel = unaryKernel{fn: fn, isize: x.DType.Size(), osize: x.DType.Size(), n: int(x.Shape.Elements()), cost: 1}
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
	switch dt {
	case ir.Int8:
		return int64(int8(b[0]))
	case ir.Uint8, ir.Bool:
		return int64(b[0])
	case ir.Int16:
		return int64(view[int16](b)[0])
	case ir.Uint16:
		return int64(view[uint16](b)[0])
	case ir.Int32:
		return int64(view[int32](b)[0])
	case ir.Uint32:
		return int64(view[uint32](b)[0])
	case ir.Int64:
		return view[int64](b)[0]
	case ir.Uint64:
		return int64(view[uint64](b)[0])
	case ir.Float32:
		return int64(view[float32](b)[0])
	case ir.Float64:
		return int64(view[float64](b)[0])
	}
	return 0
}
