package cpu

import (
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// castKernel converts between element types. Float to integer truncates
// toward zero; anything to bool tests for non-zero; float16 and bfloat16
// round to nearest even through float32.
type castKernel struct {
	from, to ir.DType
	n        int
}

func buildCast(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.Shape.Elements() != y.Shape.Elements() {
		return nil, 0, c.errorf("output %v and input %v differ in size", y.Shape, x.Shape)
	}
	if !castable(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	if !castable(y.DType) {
		return nil, 0, c.unsupported(y.DType)
	}
	return &castKernel{from: x.DType, to: y.DType, n: int(x.Shape.Elements())}, 0, nil
}

func castable(d ir.DType) bool { return d.Valid() }

func (k *castKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.from == k.to {
		copyDistinct(out[0], in[0])
		return
	}
	w.forArgs(k.n, w.parts(k.n), k, args{}, in, out, nil)
}

func (k *castKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	s := in[0][lo*k.from.Size() : hi*k.from.Size()]
	d := out[0][lo*k.to.Size() : hi*k.to.Size()]
	castBytes(d, k.to, s, k.from)
}

// castBytes converts the elements of s (type from) into d (type to).
func castBytes(d []byte, to ir.DType, s []byte, from ir.DType) {
	half := func(t ir.DType) bool { return t == ir.Float16 || t == ir.BFloat16 }
	if !half(from) && !half(to) {
		castNumbers(d, to, s, from)
		return
	}
	// Through float32, a block at a time.
	var buf [256]float32
	n := len(s) / from.Size()
	for i := 0; i < n; i += len(buf) {
		m := min(len(buf), n-i)
		f := buf[:m]
		src := s[i*from.Size() : (i+m)*from.Size()]
		switch from {
		case ir.Float16:
			dtype.F32sFromF16s(f, view[uint16](src))
		case ir.BFloat16:
			dtype.F32sFromBF16s(f, view[uint16](src))
		default:
			castNumbers(raw.Bytes(f), ir.Float32, src, from)
		}
		dst := d[i*to.Size() : (i+m)*to.Size()]
		switch to {
		case ir.Float16:
			dtype.F16sFromF32s(view[uint16](dst), f)
		case ir.BFloat16:
			dtype.BF16sFromF32s(view[uint16](dst), f)
		default:
			castNumbers(dst, to, raw.Bytes(f), ir.Float32)
		}
	}
}

// castNumbers converts between the types other than float16 and bfloat16.
func castNumbers(d []byte, to ir.DType, s []byte, from ir.DType) {
	switch to {
	case ir.Float32:
		castTo(view[float32](d), s, from)
	case ir.Float64:
		castTo(view[float64](d), s, from)
	case ir.Int8:
		castTo(view[int8](d), s, from)
	case ir.Int16:
		castTo(view[int16](d), s, from)
	case ir.Int32:
		castTo(view[int32](d), s, from)
	case ir.Int64:
		castTo(view[int64](d), s, from)
	case ir.Uint8:
		castTo(view[uint8](d), s, from)
	case ir.Uint16:
		castTo(view[uint16](d), s, from)
	case ir.Uint32:
		castTo(view[uint32](d), s, from)
	case ir.Uint64:
		castTo(view[uint64](d), s, from)
	case ir.Bool:
		toBool(d, s, from)
	}
}

func castTo[D number](d []D, s []byte, from ir.DType) {
	switch from {
	case ir.Float32:
		convert(d, view[float32](s))
	case ir.Float64:
		convert(d, view[float64](s))
	case ir.Int8:
		convert(d, view[int8](s))
	case ir.Int16:
		convert(d, view[int16](s))
	case ir.Int32:
		convert(d, view[int32](s))
	case ir.Int64:
		convert(d, view[int64](s))
	case ir.Uint8:
		convert(d, s)
	case ir.Uint16:
		convert(d, view[uint16](s))
	case ir.Uint32:
		convert(d, view[uint32](s))
	case ir.Uint64:
		convert(d, view[uint64](s))
	case ir.Bool:
		s = s[:len(d)]
		for i, v := range s {
			d[i] = D(b2u(v != 0))
		}
	}
}

func convert[D, S number](d []D, s []S) {
	s = s[:len(d)]
	for i, v := range s {
		d[i] = D(v)
	}
}

func toBool(d []byte, s []byte, from ir.DType) {
	switch from {
	case ir.Float32:
		nonZero(d, view[float32](s))
	case ir.Float64:
		nonZero(d, view[float64](s))
	case ir.Int8, ir.Uint8, ir.Bool:
		nonZero(d, s)
	case ir.Int16, ir.Uint16:
		nonZero(d, view[uint16](s))
	case ir.Int32, ir.Uint32:
		nonZero(d, view[uint32](s))
	case ir.Int64, ir.Uint64:
		nonZero(d, view[uint64](s))
	}
}

func nonZero[S number](d []byte, s []S) {
	s = s[:len(d)]
	for i, v := range s {
		d[i] = b2u(v != 0)
	}
}
