package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// The arithmetic binary operators on float16 and bfloat16, computed
// through float64 with numpy broadcasting (the fast kernels cover float32,
// float64 and the integers).

// halfOr is build for every node but one whose two inputs are float16 or
// bfloat16, which goes to buildHalfBinary.
func halfOr(build buildFunc) buildFunc {
	return func(c *buildContext) (Kernel, int64, error) {
		if x := c.in(0); x != nil && (x.DType == ir.Float16 || x.DType == ir.BFloat16) && len(c.n.Inputs) == 2 {
			return buildHalfBinary(c)
		}
		return build(c)
	}
}

type halfBinaryKernel struct {
	dt ir.DType
	b  *bcast
	f  func(a, b float64) float64
}

func buildHalfBinary(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	if b.DType != a.DType || y.DType != a.DType {
		return nil, 0, c.errorf("inputs and output mix %s, %s and %s", a.DType, b.DType, y.DType)
	}
	k := &halfBinaryKernel{dt: a.DType, b: newBcast(a.Shape, b.Shape, y.Shape)}
	switch c.n.Op {
	case "Add":
		k.f = func(a, b float64) float64 { return a + b }
	case "Sub":
		k.f = func(a, b float64) float64 { return a - b }
	case "Mul":
		k.f = func(a, b float64) float64 { return a * b }
	case "Div":
		k.f = func(a, b float64) float64 { return a / b }
	case "Max":
		k.f = func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Max(a, b)
		}
	case "Min":
		k.f = func(a, b float64) float64 {
			if math.IsNaN(a) || math.IsNaN(b) {
				return math.NaN()
			}
			return math.Min(a, b)
		}
	case "Mod":
		if c.attrs().Int("fmod", 0) == 0 {
			return nil, 0, c.errorf("a floating-point Mod needs fmod=1")
		}
		k.f = math.Mod
	}
	return k, 0, nil
}

func (k *halfBinaryKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	for i := 0; i < k.b.n; i++ {
		x, _ := loadFloat(k.dt, in[0][int(k.b.ia[i])*e:])
		y, _ := loadFloat(k.dt, in[1][int(k.b.ib[i])*e:])
		storeFloat(k.dt, out[0][i*e:], k.f(x, y))
	}
}
