package cpu

import (
	"encoding/binary"
	"math"

	"github.com/berth-ml/berth/ir"
)

// constKernel writes bytes known at build time (Shape, Constant,
// ConstantOfShape): a pattern repeated to fill the output.
type constKernel struct {
	pattern []byte
}

func (k *constKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	d := out[0]
	if len(k.pattern) == 0 {
		return
	}
	if len(k.pattern) >= len(d) {
		copy(d, k.pattern)
		return
	}
	// Doubling copies fill the output with the pattern.
	n := copy(d, k.pattern)
	for n < len(d) {
		n += copy(d[n:], d[:n])
	}
}

func buildShape(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	start, end := ir.ShapeSlice(c.n, x.Shape.Rank())
	dims := x.Shape[start:end]
	if y.DType != ir.Int64 || y.Shape.Elements() != int64(len(dims)) {
		return nil, 0, c.errorf("output %s%v must be int64 [%d]", y.DType, y.Shape, len(dims))
	}
	return &constKernel{pattern: ir.Int64Bytes(dims)}, 0, nil
}

func buildSize(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	if y := c.out(0); y.DType != ir.Int64 || y.Shape.Elements() != 1 {
		return nil, 0, c.errorf("output %s%v must be an int64 scalar", y.DType, y.Shape)
	}
	return &constKernel{pattern: ir.Int64Bytes([]int64{c.in(0).Shape.Elements()})}, 0, nil
}

func buildConstantOfShape(c *buildContext) (Kernel, int64, error) {
	y := c.out(0)
	v := c.attrs().Tensor("value")
	if v == nil {
		if y.DType != ir.Float32 {
			return nil, 0, c.errorf("output is %s but no value is given (the default is float32 0)", y.DType)
		}
		return &constKernel{pattern: make([]byte, 4)}, 0, nil
	}
	if v.DType != y.DType || v.Shape.Elements() != 1 || len(v.Data) != v.DType.Size() {
		return nil, 0, c.errorf("value %s%v must be one %s", v.DType, v.Shape, y.DType)
	}
	return &constKernel{pattern: append([]byte(nil), v.Data...)}, 0, nil
}

func buildConstant(c *buildContext) (Kernel, int64, error) {
	y := c.out(0)
	at := c.attrs()
	var data []byte
	switch {
	case at.Tensor("value") != nil:
		data = at.Tensor("value").Data
	case at.Has("value_float"):
		data = binary.LittleEndian.AppendUint32(nil, math.Float32bits(at.Float("value_float", 0)))
	case at.Has("value_floats"):
		for _, f := range at.Floats("value_floats", nil) {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
		}
	case at.Has("value_int"):
		data = ir.Int64Bytes([]int64{at.Int("value_int", 0)})
	case at.Has("value_ints"):
		data = ir.Int64Bytes(at.Ints("value_ints", nil))
	default:
		return nil, 0, c.errorf("no supported value attribute")
	}
	if int64(len(data)) != y.Bytes() {
		return nil, 0, c.errorf("value holds %d bytes, output %s%v needs %d", len(data), y.DType, y.Shape, y.Bytes())
	}
	return &constKernel{pattern: append([]byte(nil), data...)}, 0, nil
}

// rangeKernel is Range: out[i] = start + i·delta, with start and delta
// read at run time; the length is the static output size.
type rangeKernel struct {
	fill func(d, start, delta []byte, n int) // a rangeFill
	n    int
}

func buildRange(c *buildContext) (Kernel, int64, error) {
	if err := c.need(3); err != nil {
		return nil, 0, err
	}
	y := c.out(0)
	for i := 0; i < 3; i++ {
		if t := c.in(i); t.DType != y.DType || t.Shape.Elements() != 1 {
			return nil, 0, c.errorf("input %q %s%v must be a %s scalar", t.Name, t.DType, t.Shape, y.DType)
		}
	}
	fill := rangeFills[y.DType]
	if fill == nil {
		return nil, 0, c.unsupported(y.DType)
	}
	return &rangeKernel{fill: fill, n: int(y.Shape.Elements())}, 0, nil
}

// rangeFills holds rangeFill for each type Range supports.
var rangeFills = map[ir.DType]func(d, start, delta []byte, n int){
	ir.Float32: rangeFill[float32], ir.Float64: rangeFill[float64],
	ir.Int16: rangeFill[int16], ir.Int32: rangeFill[int32], ir.Int64: rangeFill[int64],
}

func (k *rangeKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	k.fill(out[0], in[0], in[2], k.n)
}

// rangeFill sets the first n T values of d to start + i·delta, with start
// and delta the first T value of their bytes.
func rangeFill[T number](db, startb, deltab []byte, n int) {
	d, start, delta := view[T](db)[:n], view[T](startb)[0], view[T](deltab)[0]
	for i := range d {
		d[i] = start + T(i)*delta
	}
}
