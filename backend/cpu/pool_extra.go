package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// MeanVarianceNormalization, MaxPool with its Indices output, and
// MaxUnpool.

// buildMaxPool is buildPool, or buildMaxPoolIndices where the Indices
// output is wanted.
func buildMaxPool(c *buildContext) (Kernel, int64, error) {
	if c.out(1) != nil {
		return buildMaxPoolIndices(c)
	}
	return buildPool(c)
}

type mvnKernel struct {
	dt      ir.DType
	shape   []int
	reduced []bool
}

func buildMVN(c *buildContext) (Kernel, int64, error) {
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &mvnKernel{dt: x.DType, shape: ints(x.Shape), reduced: make([]bool, x.Shape.Rank())}
	for _, a := range c.attrs().Ints("axes", []int64{0, 2, 3}) {
		i, err := ir.NormAxis(a, x.Shape.Rank())
		if err != nil {
			return nil, 0, c.errorf("%v", err)
		}
		k.reduced[i] = true
	}
	return k, int64(16 * x.Shape.Elements()), nil
}

func (k *mvnKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, n := k.dt.Size(), prod(k.shape)
	st := rowStrides(k.shape)
	// group maps element i to its reduction group (the index with the
	// reduced coordinates zeroed).
	group := func(i int) int {
		g := 0
		for d, s := range st {
			if !k.reduced[d] {
				g += (i / s % k.shape[d]) * s
			}
		}
		return g
	}
	f := view[float64](scratch)
	sum, sq := f[:n], f[n:2*n]
	clear(sum)
	clear(sq)
	cnt := 1
	for d, r := range k.reduced {
		if r {
			cnt *= k.shape[d]
		}
	}
	for i := 0; i < n; i++ {
		v, _ := loadFloat(k.dt, in[0][i*e:])
		g := group(i)
		sum[g] += v
		sq[g] += v * v
	}
	for i := 0; i < n; i++ {
		v, _ := loadFloat(k.dt, in[0][i*e:])
		g := group(i)
		mean := sum[g] / float64(cnt)
		vr := sq[g]/float64(cnt) - mean*mean
		storeFloat(k.dt, out[0][i*e:], (v-mean)/(math.Sqrt(vr)+1e-9))
	}
}

// maxPoolIndicesKernel is a direct MaxPool that also writes, for each
// output, the flat index of the maximum in the input (row-major, or
// column-major over the spatial axes with storage_order=1).
type maxPoolIndicesKernel struct {
	dt       ir.DType
	n, c     int
	in, out  []int
	kern     []int
	win      *ir.Window
	colMajor bool
}

func buildMaxPoolIndices(c *buildContext) (Kernel, int64, error) {
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	win, err := ir.SpatialWindow(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(x.Shape)
	k := &maxPoolIndicesKernel{dt: x.DType, n: s[0], c: s[1], in: s[2:], win: win, colMajor: c.attrs().Int("storage_order", 0) == 1}
	for i, o := range win.Out {
		k.out = append(k.out, int(o))
		k.kern = append(k.kern, int(win.Kernel[i]))
	}
	return k, int64(8 * len(k.out)), nil
}

func (k *maxPoolIndicesKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, r := k.dt.Size(), len(k.in)
	inSp, outSp, kSp := prod(k.in), prod(k.out), prod(k.kern)
	pos := view[int](scratch)[:r]
	for plane := 0; plane < k.n*k.c; plane++ {
		for o := 0; o < outSp; o++ {
			best, arg := math.Inf(-1), -1
			for kk := 0; kk < kSp; kk++ {
				off, ok := windowInput(k.win, k.in, k.out, k.kern, o, kk, pos)
				if !ok {
					continue
				}
				v, _ := loadFloat(k.dt, in[0][(plane*inSp+off)*e:])
				if arg < 0 || v > best {
					best, arg = v, off
					if k.colMajor {
						arg = 0
						for d := r - 1; d >= 0; d-- {
							arg = arg*k.in[d] + pos[d]
						}
					}
				}
			}
			i := plane*outSp + o
			storeFloat(k.dt, out[0][i*e:], best)
			view[int64](out[1])[i] = int64(plane*inSp + arg)
		}
	}
}

// windowInput places kernel tap kk of output position o of window win
// over an input of shape in (out and kern are the shapes of the output and
// of the kernel): pos gets the tap's input coordinates and off their
// row-major offset; ok is false where the tap falls in the padding.
func windowInput(win *ir.Window, in, out, kern []int, o, kk int, pos []int) (off int, ok bool) {
	for d := len(in) - 1; d >= 0; d-- {
		od, kd := o%out[d], kk%kern[d]
		o, kk = o/out[d], kk/kern[d]
		p := od*int(win.Strides[d]) - int(win.Pads[d]) + kd*int(win.Dilations[d])
		if p < 0 || p >= in[d] {
			return 0, false
		}
		pos[d] = p
	}
	for d := range in {
		off = off*in[d] + pos[d]
	}
	return off, true
}

type maxUnpoolKernel struct {
	dt    ir.DType
	wide  bool
	n     int   // elements of X
	inner []int // the shape the indices address
	outer []int // the output shape (inner padded at the end of each axis)
}

func buildMaxUnpool(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, ind, y := c.in(0), c.in(1), c.out(0)
	wide, err := indexType(c, ind)
	if err != nil {
		return nil, 0, err
	}
	inner, err := ir.MaxUnpoolShape(c.g, c.n, false)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if inner.Rank() != y.Shape.Rank() {
		return nil, 0, c.errorf("output_shape %v does not have the rank of %v", y.Shape, inner)
	}
	for i := range inner {
		if inner[i] > y.Shape[i] {
			return nil, 0, c.errorf("output_shape %v is smaller than the unpooled %v", y.Shape, inner)
		}
	}
	return &maxUnpoolKernel{dt: x.DType, wide: wide, n: int(x.Shape.Elements()), inner: ints(inner), outer: ints(y.Shape)}, 0, nil
}

// Run scatters every input value to the flat index of the output that
// the pooling recorded.
func (k *maxUnpoolKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	clear(out[0])
	size := prod(k.inner)
	for j := 0; j < k.n; j++ {
		idx := int(indexAt(in[1], k.wide, j))
		if idx < 0 || idx >= size {
			panic("index out of range")
		}
		// Re-address idx from the inner shape to the output's.
		dst, stride := 0, 1
		for d := len(k.inner) - 1; d >= 0; d-- {
			dst += idx % k.inner[d] * stride
			idx /= k.inner[d]
			stride *= k.outer[d]
		}
		copy(out[0][dst*e:(dst+1)*e], in[0][j*e:(j+1)*e])
	}
}
