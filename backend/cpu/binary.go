package cpu

import (
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// binFn computes one run of a broadcasting binary op: o[i] = a[i·sa] op
// b[i·sb], where each stride is 0 (a repeated scalar) or 1, never both 0.
type binFn[T, O any] func(o []O, a, b []T, sa, sb int)

// binKernel runs a binary op, or a variadic one (Sum, Mean, Max, Min) as a
// chain of binary steps, over numpy broadcasting.
type binKernel[T, O any] struct {
	fn    binFn[T, O]
	nin   int
	first *bplan   // out = in[0] op in[1]
	acc   []*bplan // acc[j]: out = out op in[j] (variadic ops only)
	mean  *unaryKernel
}

// Step selectors carried in args[0].
const stepFirst = -1

func (k *binKernel[T, O]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.nin == 1 {
		copyDistinct(out[0], in[0])
		return
	}
	// A variadic op may run in place on any of its inputs; if that input is
	// not one of the first two, start from it so it is read before the
	// output overwrites it.
	alias := -1
	for j := 2; j < k.nin; j++ {
		if raw.SameStart(out[0], in[j]) {
			alias = j
			break
		}
	}
	if alias < 0 {
		k.step(w, k.first, stepFirst, in, out)
		for j := 2; j < k.nin; j++ {
			k.step(w, k.acc[j], j, in, out)
		}
	} else {
		for j := 0; j < k.nin; j++ {
			if j != alias {
				k.step(w, k.acc[j], j, in, out)
			}
		}
	}
	if k.mean != nil {
		k.mean.run(w, out, out, args{int64(k.nin)})
	}
}

func (k *binKernel[T, O]) step(w *Workers, p *bplan, j int, in, out [][]byte) {
	// Four times the elements, as globalPoolKernel does: the operands
	// were mostly written by every worker of the step before
	// (EfficientNet-B0's 7² excitation scales).
	w.forArgs(p.items(), w.parts(4*p.total), k, args{int64(j)}, in, out, nil)
}

func (k *binKernel[T, O]) rangeArgs(in, out [][]byte, _ []byte, a args, lo, hi int) {
	o := view[O](out[0])
	var p *bplan
	var x, y []T
	if j := int(a[0]); j == stepFirst {
		p, x, y = k.first, view[T](in[0]), view[T](in[1])
	} else {
		p, x, y = k.acc[j], view[T](out[0]), view[T](in[j])
	}
	c := p.seek(lo)
	for it := lo; it < hi; it++ {
		oo, n, off := c.span()
		d := o[oo : oo+n]
		sa, sb := p.step[0], p.step[1]
		if sa == 0 && sb == 0 {
			// Both operands are constant along the run: compute once, fill.
			k.fn(d[:1], x[off[0]:], y[off[1]:], 1, 1)
			fill(d[1:], d[0])
		} else {
			k.fn(d, x[off[0]:], y[off[1]:], sa, sb)
		}
		c.next()
	}
}

func fill[T any](d []T, v T) {
	for i := range d {
		d[i] = v
	}
}

// opKind groups the binary operators by the types they take and give.
type opKind int

const (
	arith   opKind = iota // numbers → same type
	compare               // numbers (and bool for Equal) → bool
	logic                 // bool → bool
)

func kindOf(op string) opKind {
	switch op {
	case "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual":
		return compare
	case "And", "Or", "Xor":
		return logic
	}
	return arith
}

func buildBinary(c *buildContext) (Kernel, int64, error) {
	op := c.n.Op
	nin := len(c.n.Inputs)
	variadic := op == "Sum" || op == "Mean" || op == "Max" || op == "Min"
	if !variadic && nin != 2 {
		return nil, 0, c.errorf("takes 2 inputs, has %d", nin)
	}
	if nin < 1 {
		return nil, 0, c.errorf("has no input")
	}
	if err := c.need(nin); err != nil {
		return nil, 0, err
	}
	dt := c.in(0).DType
	for i := 1; i < nin; i++ {
		if t := c.in(i); t.DType != dt {
			return nil, 0, c.errorf("inputs mix %s and %s", dt, t.DType)
		}
	}
	y := c.out(0)
	want := dt
	if kindOf(op) != arith {
		want = ir.Bool
	}
	if y.DType != want {
		return nil, 0, c.errorf("output is %s, want %s", y.DType, want)
	}
	var k Kernel
	var err error
	switch kind := kindOf(op); {
	case kind == compare && dt == ir.Bool:
		if op != "Equal" {
			return nil, 0, c.unsupported(dt)
		}
		k, err = newBin[uint8, uint8](c, eqLoop[uint8])
	case kind == arith || kind == compare:
		newKernel := numberBinaries[dt]
		if newKernel == nil {
			return nil, 0, c.unsupported(dt)
		}
		k, err = newKernel(c, op)
	default:
		if dt != ir.Bool {
			return nil, 0, c.unsupported(dt)
		}
		var fn binFn[uint8, uint8]
		switch op {
		case "And":
			fn = andLoop
		case "Or":
			fn = orLoop
		default:
			fn = xorLoop
		}
		k, err = newBin(c, fn)
	}
	if err != nil {
		return nil, 0, err
	}
	return k, 0, nil
}

// numberBinaries holds numberBinary for each number type.
var numberBinaries = map[ir.DType]func(c *buildContext, op string) (Kernel, error){
	ir.Float32: numberBinary[float32], ir.Float64: numberBinary[float64],
	ir.Int8: numberBinary[int8], ir.Int16: numberBinary[int16],
	ir.Int32: numberBinary[int32], ir.Int64: numberBinary[int64],
	ir.Uint8: numberBinary[uint8], ir.Uint16: numberBinary[uint16],
	ir.Uint32: numberBinary[uint32], ir.Uint64: numberBinary[uint64],
}

// numberBinary builds the kernel of an arithmetic or comparison operator
// on T.
func numberBinary[T number](c *buildContext, op string) (Kernel, error) {
	if kindOf(op) == compare {
		return newCompare[T](c, op)
	}
	return newArith[T](c, op)
}

func newArith[T number](c *buildContext, op string) (Kernel, error) {
	fn := arithGeneric[T](op)
	if op == "Add" || op == "Sub" || op == "Mul" || op == "Div" {
		if f, ok := any(arithF32(op)).(binFn[T, T]); ok {
			fn = f // float32: the vector loops
		}
	}
	if fn == nil {
		return nil, c.errorf("unknown binary operator")
	}
	k, err := newBin(c, fn)
	if err != nil {
		return nil, err
	}
	if op == "Mean" {
		dt := c.in(0).DType
		if !dt.IsFloat() {
			return nil, c.unsupported(dt)
		}
		k.mean = &unaryKernel{fn: asBytes(divByCountLoop[T]), isize: dt.Size(), osize: dt.Size(),
			n: int(c.out(0).Shape.Elements()), cost: 1}
	}
	return k, nil
}

// arithGeneric is the loop of an arithmetic operator for T, or nil.
func arithGeneric[T number](op string) binFn[T, T] {
	var fn binFn[T, T]
	switch op {
	case "Add", "Sum", "Mean":
		fn = addLoop[T]
	case "Sub":
		fn = subLoop[T]
	case "Mul":
		fn = mulLoop[T]
	case "Div":
		fn = divLoop[T]
	case "Max":
		fn = maxLoop[T]
	case "Min":
		fn = minLoop[T]
	}
	return fn
}

func newCompare[T number](c *buildContext, op string) (Kernel, error) {
	var fn binFn[T, uint8]
	switch op {
	case "Equal":
		fn = eqLoop[T]
	case "Less":
		fn = ltLoop[T]
	case "Greater":
		fn = gtLoop[T]
	case "LessOrEqual":
		fn = leLoop[T]
	default:
		fn = geLoop[T]
	}
	return newBin(c, fn)
}

// newBin plans the broadcast steps of a binary or variadic op.
func newBin[T, O any](c *buildContext, fn binFn[T, O]) (*binKernel[T, O], error) {
	nin := len(c.n.Inputs)
	y := c.out(0).Shape
	k := &binKernel[T, O]{fn: fn, nin: nin}
	if nin == 1 {
		if !c.in(0).Shape.Equal(y) {
			return nil, c.errorf("output shape %v differs from input shape %v", y, c.in(0).Shape)
		}
		return k, nil
	}
	var err error
	if k.first, err = newBPlan(y, c.in(0).Shape, c.in(1).Shape); err != nil {
		return nil, c.errorf("%v", err)
	}
	if nin > 2 {
		k.acc = make([]*bplan, nin)
		for j := range nin {
			if k.acc[j], err = newBPlan(y, y, c.in(j).Shape); err != nil {
				return nil, c.errorf("%v", err)
			}
		}
	}
	return k, nil
}
