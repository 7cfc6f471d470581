package cpu

import (
	"math"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

// Indexed reads and writes: GatherElements, ScatterElements (and the older
// Scatter), GatherND and ScatterND. Elements move as bytes, so every dtype
// is supported; Scatter reductions support the numeric types.

// indexAt reads index i of an int32 or int64 index tensor.
func indexAt(b []byte, wide bool, i int) int64 {
	if wide {
		return view[int64](b)[i]
	}
	return int64(view[int32](b)[i])
}

// wrapIndex resolves a possibly negative index against dim; it panics (an
// error of the run) when the index is out of range.
func wrapIndex(v int64, dim int) int {
	if v < 0 {
		v += int64(dim)
	}
	if v < 0 || v >= int64(dim) {
		panic("index out of range")
	}
	return int(v)
}

func indexType(c *buildContext, t *ir.Tensor) (bool, error) {
	switch t.DType {
	case ir.Int64:
		return true, nil
	case ir.Int32:
		return false, nil
	}
	return false, c.errorf("indices must be int32 or int64, are %s", t.DType)
}

// elementsAxis checks the type of the indices ind of GatherElements or
// ScatterElements (wide: int64) and resolves the axis against data x.
func elementsAxis(c *buildContext, x, ind *ir.Tensor) (wide bool, axis int, err error) {
	if wide, err = indexType(c, ind); err != nil {
		return false, 0, err
	}
	if axis, err = ir.NormAxis(c.attrs().Int("axis", 0), x.Shape.Rank()); err != nil {
		return false, 0, c.errorf("%v", err)
	}
	return wide, axis, nil
}

type elementsKernel struct {
	scatter bool
	wide    bool
	esize   int
	axis    int
	data    []int // shape of data
	idx     []int // shape of indices (and updates)
	red     reduction
}

func buildGatherElements(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, ind, y := c.in(0), c.in(1), c.out(0)
	wide, axis, err := elementsAxis(c, x, ind)
	if err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank()
	if ind.Shape.Rank() != r || !y.Shape.Equal(ind.Shape) || y.DType != x.DType {
		return nil, 0, c.errorf("indices %v and output %v must have the rank of data %v", ind.Shape, y.Shape, x.Shape)
	}
	return &elementsKernel{wide: wide, esize: x.DType.Size(), axis: axis, data: ints(x.Shape), idx: ints(ind.Shape)}, 0, nil
}

func buildScatterElements(c *buildContext) (Kernel, int64, error) {
	if err := c.need(3); err != nil {
		return nil, 0, err
	}
	x, ind, upd, y := c.in(0), c.in(1), c.in(2), c.out(0)
	wide, axis, err := elementsAxis(c, x, ind)
	if err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank()
	if ind.Shape.Rank() != r || !upd.Shape.Equal(ind.Shape) || !y.Shape.Equal(x.Shape) || upd.DType != x.DType {
		return nil, 0, c.errorf("indices %v and updates %v must match, with the rank of data %v", ind.Shape, upd.Shape, x.Shape)
	}
	red, err := reductionOf(c, x.DType)
	if err != nil {
		return nil, 0, err
	}
	return &elementsKernel{scatter: true, wide: wide, esize: x.DType.Size(), axis: axis, data: ints(x.Shape), idx: ints(ind.Shape), red: red}, 0, nil
}

func (k *elementsKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	ds, is := rowStrides(k.data), rowStrides(k.idx)
	n := prod(k.idx)
	if k.scatter {
		copyDistinct(out[0], in[0])
	}
	e := k.esize
	for i := 0; i < n; i++ {
		// The data offset of index position i with the axis coordinate
		// replaced by the index value.
		off, rem := 0, i
		for d := range k.idx {
			coord := rem / is[d]
			rem %= is[d]
			if d == k.axis {
				coord = wrapIndex(indexAt(in[1], k.wide, i), k.data[d])
			}
			off += coord * ds[d]
		}
		if k.scatter {
			k.red.apply(out[0][off*e:(off+1)*e], in[2][i*e:(i+1)*e])
		} else {
			copy(out[0][i*e:(i+1)*e], in[0][off*e:(off+1)*e])
		}
	}
}

// reduction is how a scatter combines an update with the value it lands
// on: none (replace), add, mul, max or min.
type reduction struct {
	op string
	dt ir.DType
}

func reductionOf(c *buildContext, dt ir.DType) (reduction, error) {
	op := c.attrs().String("reduction", "none")
	switch op {
	case "none":
	case "add", "mul", "max", "min":
		if _, ok := loadFloat(dt, make([]byte, 8)); !ok {
			return reduction{}, c.unsupported(dt)
		}
	default:
		return reduction{}, c.errorf("reduction %q is not supported", op)
	}
	return reduction{op: op, dt: dt}, nil
}

func (r reduction) apply(dst, src []byte) {
	if r.op == "none" {
		copy(dst, src)
		return
	}
	a, _ := loadFloat(r.dt, dst)
	b, _ := loadFloat(r.dt, src)
	switch r.op {
	case "add":
		a += b
	case "mul":
		a *= b
	case "max":
		a = math.Max(a, b)
	case "min":
		a = math.Min(a, b)
	}
	storeFloat(r.dt, dst, a)
}

// loadFloat reads one element of a numeric type as float64 (exact for
// every integer up to 2^53).
func loadFloat(dt ir.DType, b []byte) (float64, bool) {
	switch dt {
	case ir.Float32:
		return float64(view[float32](b)[0]), true
	case ir.Float64:
		return view[float64](b)[0], true
	case ir.Float16:
		return float64(dtype.F32FromF16(view[uint16](b)[0])), true
	case ir.BFloat16:
		return float64(dtype.F32FromBF16(view[uint16](b)[0])), true
	case ir.Int8:
		return float64(int8(b[0])), true
	case ir.Uint8:
		return float64(b[0]), true
	case ir.Int16:
		return float64(view[int16](b)[0]), true
	case ir.Uint16:
		return float64(view[uint16](b)[0]), true
	case ir.Int32:
		return float64(view[int32](b)[0]), true
	case ir.Uint32:
		return float64(view[uint32](b)[0]), true
	case ir.Int64:
		return float64(view[int64](b)[0]), true
	case ir.Uint64:
		return float64(view[uint64](b)[0]), true
	}
	return 0, false
}

// storeFloat writes v as one element of a numeric type.
func storeFloat(dt ir.DType, b []byte, v float64) {
	switch dt {
	case ir.Float32:
		view[float32](b)[0] = float32(v)
	case ir.Float64:
		view[float64](b)[0] = v
	case ir.Float16:
		view[uint16](b)[0] = dtype.F16FromF32(float32(v))
	case ir.BFloat16:
		view[uint16](b)[0] = dtype.BF16FromF32(float32(v))
	case ir.Int8:
		b[0] = byte(int8(v))
	case ir.Uint8:
		b[0] = byte(v)
	case ir.Int16:
		view[int16](b)[0] = int16(v)
	case ir.Uint16:
		view[uint16](b)[0] = uint16(v)
	case ir.Int32:
		view[int32](b)[0] = int32(v)
	case ir.Uint32:
		view[uint32](b)[0] = uint32(v)
	case ir.Int64:
		view[int64](b)[0] = int64(v)
	case ir.Uint64:
		view[uint64](b)[0] = uint64(v)
	}
}

// ndKernel is GatherND or ScatterND: indices [b..., m..., k] address
// slices of data [b..., d1..dk, rest...] (b batch dims).
type ndKernel struct {
	scatter bool
	wide    bool
	esize   int
	batch   int   // batch_dims
	data    []int // shape of data
	k       int   // index depth
	tuples  int   // index tuples per batch
	batches int
	slice   int // elements of one addressed slice
	red     reduction
}

func buildGatherND(c *buildContext) (Kernel, int64, error)  { return buildND(c, false) }
func buildScatterND(c *buildContext) (Kernel, int64, error) { return buildND(c, true) }

func buildND(c *buildContext, scatter bool) (Kernel, int64, error) {
	need := 2
	if scatter {
		need = 3
	}
	if err := c.need(need); err != nil {
		return nil, 0, err
	}
	x, ind, y := c.in(0), c.in(1), c.out(0)
	wide, err := indexType(c, ind)
	if err != nil {
		return nil, 0, err
	}
	b := int(c.attrs().Int("batch_dims", 0))
	is := ints(ind.Shape)
	if len(is) < 1 || b < 0 || b >= len(is) || b > x.Shape.Rank() {
		return nil, 0, c.errorf("indices %v do not fit data %v with batch_dims %d", ind.Shape, x.Shape, b)
	}
	k := is[len(is)-1]
	ds := ints(x.Shape)
	if b+k > len(ds) || y.DType != x.DType {
		return nil, 0, c.errorf("indices %v address more axes than data %v has", ind.Shape, x.Shape)
	}
	kn := &ndKernel{scatter: scatter, wide: wide, esize: x.DType.Size(), batch: b, data: ds, k: k,
		batches: prod(ds[:b]), tuples: prod(is[b : len(is)-1]), slice: prod(ds[b+k:])}
	if scatter {
		if !y.Shape.Equal(x.Shape) {
			return nil, 0, c.errorf("output %v must match data %v", y.Shape, x.Shape)
		}
		if kn.red, err = reductionOf(c, x.DType); err != nil {
			return nil, 0, err
		}
	}
	if want := int64(kn.batches * kn.tuples * kn.slice); y.Shape.Elements() != want && !scatter {
		return nil, 0, c.errorf("output %v does not hold %d elements", y.Shape, want)
	}
	return kn, 0, nil
}

func (k *ndKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.scatter {
		copyDistinct(out[0], in[0])
	}
	ds := rowStrides(k.data)
	e := k.esize
	per := 1 // elements of data per batch
	for _, d := range k.data[k.batch:] {
		per *= d
	}
	span := k.slice * e
	for b := 0; b < k.batches; b++ {
		for t := 0; t < k.tuples; t++ {
			row := b*k.tuples + t
			off := b * per
			for j := 0; j < k.k; j++ {
				axis := k.batch + j
				off += wrapIndex(indexAt(in[1], k.wide, row*k.k+j), k.data[axis]) * ds[axis]
			}
			if !k.scatter {
				copy(out[0][row*span:(row+1)*span], in[0][off*e:off*e+span])
				continue
			}
			dst, src := out[0][off*e:off*e+span], in[2][row*span:(row+1)*span]
			if k.red.op == "none" {
				copy(dst, src)
				continue
			}
			for i := 0; i < k.slice; i++ {
				k.red.apply(dst[i*e:(i+1)*e], src[i*e:(i+1)*e])
			}
		}
	}
}
