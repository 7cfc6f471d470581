package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// powKernel raises a floating-point or integer base to an exponent of its
// own type set (Pow's T and T1 may differ), with broadcasting.
type powKernel[T, E number] struct{ p *bplan }

func (k *powKernel[T, E]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(k.p.items(), w.parts(k.p.total*8), k, args{}, in, out, nil)
}

func (k *powKernel[T, E]) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	o, x, y := view[T](out[0]), view[T](in[0]), view[E](in[1])
	p := k.p
	c := p.seek(lo)
	for it := lo; it < hi; it++ {
		oo, n, off := c.span()
		powLoop(o[oo:oo+n], x[off[0]:], y[off[1]:], p.step[0], p.step[1])
		c.next()
	}
}

// powLoop computes o[i] = a[i·sa] ** b[i·sb]. Floating-point bases go
// through math.Pow in float64; integer bases use exact repeated squaring.
func powLoop[T, E number](o []T, a []T, b []E, sa, sb int) {
	var z T
	_, isFloat := any(z).(float32)
	if _, ok := any(z).(float64); ok {
		isFloat = true
	}
	i, j := 0, 0
	for k := range o {
		x, e := a[i], b[j]
		if isFloat {
			o[k] = T(math.Pow(float64(x), float64(e)))
		} else {
			o[k] = ipow(x, float64(e))
		}
		i += sa
		j += sb
	}
}

// ipow is x**e for an integer x and an exponent that is truncated to an
// integer; a negative exponent gives the truncated real result.
func ipow[T number](x T, ef float64) T {
	e := int64(ef)
	if e < 0 {
		switch {
		case x == 1:
			return 1
		case x == 0:
			return 0
		case -x == 1:
			if e%2 == 0 {
				return 1
			}
			return x
		}
		return 0
	}
	r := T(1)
	for e > 0 {
		if e&1 == 1 {
			r *= x
		}
		x *= x
		e >>= 1
	}
	return r
}

func buildPow(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, e, y := c.in(0), c.in(1), c.out(0)
	if y.DType != x.DType {
		return nil, 0, c.errorf("output is %s, want %s", y.DType, x.DType)
	}
	// A constant scalar exponent with a cheap exact form becomes a unary op.
	if e.IsConst() && e.Shape.Elements() == 1 && x.Shape.Equal(y.Shape) {
		if v, err := e.Float64s(); err == nil {
			op := ""
			switch v[0] {
			case 1:
				op = "Copy"
			case 2:
				op = "Square"
			case 3:
				op = "Cube"
			case 0.5:
				if x.DType.IsFloat() {
					op = "Sqrt"
				}
			}
			if op != "" {
				if fn, cost, ok := unaryFor(op, x.DType); ok {
					return newUnaryKernel(fn, cost, x), 0, nil
				}
			}
		}
	}
	p, err := newBPlan(y.Shape, x.Shape, e.Shape)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	newPow := powKernels[x.DType][e.DType]
	if newPow == nil {
		return nil, 0, c.errorf("dtype %s to the power of %s is not supported by the CPU backend", x.DType, e.DType)
	}
	return newPow(p), 0, nil
}

// powKernels[x][e] makes the kernel that raises x to the power of e.
var powKernels = map[ir.DType]map[ir.DType]func(p *bplan) Kernel{
	ir.Float32: powsOf[float32](), ir.Float64: powsOf[float64](),
	ir.Int32: powsOf[int32](), ir.Int64: powsOf[int64](),
}

// powsOf is the row of powKernels that raises T.
func powsOf[T number]() map[ir.DType]func(p *bplan) Kernel {
	return map[ir.DType]func(p *bplan) Kernel{
		ir.Float32: newPow[T, float32], ir.Float64: newPow[T, float64],
		ir.Int8: newPow[T, int8], ir.Int16: newPow[T, int16],
		ir.Int32: newPow[T, int32], ir.Int64: newPow[T, int64],
		ir.Uint8: newPow[T, uint8], ir.Uint16: newPow[T, uint16],
		ir.Uint32: newPow[T, uint32], ir.Uint64: newPow[T, uint64],
	}
}

func newPow[T, E number](p *bplan) Kernel { return &powKernel[T, E]{p} }

// whereKernel selects X where the condition holds and Y elsewhere, with
// broadcasting over all three; elements move as raw words of their size.
type whereKernel[T any] struct{ p *bplan }

func (k *whereKernel[T]) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(k.p.items(), w.parts(k.p.total), k, args{}, in, out, nil)
}

func (k *whereKernel[T]) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	o, cond, x, y := view[T](out[0]), in[0], view[T](in[1]), view[T](in[2])
	p := k.p
	c := p.seek(lo)
	for it := lo; it < hi; it++ {
		oo, n, off := c.span()
		whereLoop(o[oo:oo+n], cond[off[0]:], x[off[1]:], y[off[2]:], p.step[0], p.step[1], p.step[2])
		c.next()
	}
}

func whereLoop[T any](o []T, cond []byte, x, y []T, sc, sx, sy int) {
	if sc == 0 {
		// One condition for the whole run: a copy or a fill.
		src, s := y, sy
		if cond[0] != 0 {
			src, s = x, sx
		}
		if s == 1 {
			copy(o, src[:len(o)])
		} else {
			fill(o, src[0])
		}
		return
	}
	cond = cond[:len(o)]
	i, j := 0, 0
	for k := range o {
		if cond[k] != 0 {
			o[k] = x[i]
		} else {
			o[k] = y[j]
		}
		i += sx
		j += sy
	}
}

func buildWhere(c *buildContext) (Kernel, int64, error) {
	if err := c.need(3); err != nil {
		return nil, 0, err
	}
	cond, x, yy, out := c.in(0), c.in(1), c.in(2), c.out(0)
	if cond.DType != ir.Bool {
		return nil, 0, c.errorf("condition is %s, want bool", cond.DType)
	}
	if x.DType != yy.DType || out.DType != x.DType {
		return nil, 0, c.errorf("X, Y and output types differ (%s, %s, %s)", x.DType, yy.DType, out.DType)
	}
	p, err := newBPlan(out.Shape, cond.Shape, x.Shape, yy.Shape)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	switch x.DType.Size() {
	case 1:
		return &whereKernel[uint8]{p}, 0, nil
	case 2:
		return &whereKernel[uint16]{p}, 0, nil
	case 4:
		return &whereKernel[uint32]{p}, 0, nil
	case 8:
		return &whereKernel[uint64]{p}, 0, nil
	}
	return nil, 0, c.unsupported(x.DType)
}
