package cpu

import (
	"math"
	"slices"

	"github.com/berth-ml/berth/ir"
)

// Less common operators, computed element by element through float64
// (exact for every integer type up to 2^53): CastLike, BitShift, Hardmax,
// OneHot, EyeLike, TopK, QuantizeLinear, DequantizeLinear, Celu, Mish and
// LRN.

func isFloatType(dt ir.DType) bool {
	switch dt {
	case ir.Float32, ir.Float64, ir.Float16, ir.BFloat16:
		return true
	}
	return false
}

// floatMapKernel applies f to every element of a floating-point tensor.
type floatMapKernel struct {
	dt ir.DType
	n  int
	f  func(float64) float64
}

func buildFloatMap(c *buildContext) (Kernel, int64, error) {
	x, err := c.floatInput(1)
	if err != nil {
		return nil, 0, err
	}
	k := &floatMapKernel{dt: x.DType, n: int(x.Shape.Elements())}
	switch c.n.Op {
	case "Celu":
		alpha := float64(c.attrs().Float("alpha", 1))
		k.f = func(v float64) float64 { return math.Max(0, v) + math.Min(0, alpha*(math.Exp(v/alpha)-1)) }
	case "Mish":
		k.f = func(v float64) float64 { return v * math.Tanh(math.Log1p(math.Exp(v))) }
	case "Gelu":
		switch a := c.attrs().String("approximate", "none"); a {
		case "none":
			k.f = func(v float64) float64 { return 0.5 * v * (1 + math.Erf(v/math.Sqrt2)) }
		case "tanh":
			s := math.Sqrt(2 / math.Pi)
			k.f = func(v float64) float64 { return 0.5 * v * (1 + math.Tanh(s*(v+0.044715*v*v*v))) }
		default:
			return nil, 0, c.errorf("approximate %q is not supported (none, tanh)", a)
		}
	}
	return k, 0, nil
}

func (k *floatMapKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	for i := 0; i < k.n; i++ {
		v, _ := loadFloat(k.dt, in[0][i*e:])
		storeFloat(k.dt, out[0][i*e:], k.f(v))
	}
}

// bitShiftKernel shifts unsigned integers, broadcasting numpy-style.
type bitShiftKernel struct {
	dt   ir.DType
	left bool
	b    *bcast
}

// bcast maps each output element to its two broadcast input elements.
type bcast struct {
	n      int
	ia, ib []int32
}

func newBcast(a, b, y ir.Shape) *bcast {
	ys := ints(y)
	n := prod(ys)
	bc := &bcast{n: n, ia: make([]int32, n), ib: make([]int32, n)}
	idx := func(s ir.Shape, i int) int32 {
		// Right-align s against y.
		off, stride := 0, 1
		rem := i
		coords := make([]int, len(ys))
		for d := len(ys) - 1; d >= 0; d-- {
			coords[d] = rem % max(ys[d], 1)
			rem /= max(ys[d], 1)
		}
		for d := len(s) - 1; d >= 0; d-- {
			c := coords[len(ys)-len(s)+d]
			if s[d] == 1 {
				c = 0
			}
			off += c * stride
			stride *= int(s[d])
		}
		return int32(off)
	}
	for i := 0; i < n; i++ {
		bc.ia[i], bc.ib[i] = idx(a, i), idx(b, i)
	}
	return bc
}

func buildBitShift(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	switch a.DType {
	case ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64:
	default:
		return nil, 0, c.unsupported(a.DType)
	}
	dir := c.attrs().String("direction", "")
	if dir != "LEFT" && dir != "RIGHT" {
		return nil, 0, c.errorf("direction %q must be LEFT or RIGHT", dir)
	}
	return &bitShiftKernel{dt: a.DType, left: dir == "LEFT", b: newBcast(a.Shape, b.Shape, y.Shape)}, 0, nil
}

func (k *bitShiftKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	load := func(b []byte, i int) uint64 {
		switch k.dt {
		case ir.Uint8:
			return uint64(b[i])
		case ir.Uint16:
			return uint64(view[uint16](b)[i])
		case ir.Uint32:
			return uint64(view[uint32](b)[i])
		}
		return view[uint64](b)[i]
	}
	for i := 0; i < k.b.n; i++ {
		x, s := load(in[0], int(k.b.ia[i])), load(in[1], int(k.b.ib[i]))
		v := x >> s
		if k.left {
			v = x << s
		}
		switch k.dt {
		case ir.Uint8:
			out[0][i] = byte(v)
		case ir.Uint16:
			view[uint16](out[0])[i] = uint16(v)
		case ir.Uint32:
			view[uint32](out[0])[i] = uint32(v)
		default:
			view[uint64](out[0])[i] = v
		}
	}
}

// bitwiseKernel applies BitwiseAnd, BitwiseOr, BitwiseXor (broadcasting
// numpy-style) or BitwiseNot to integers, byte by byte: the operations
// act on each bit alone, whatever the element type.
type bitwiseKernel struct {
	op string
	e  int    // element size
	n  int    // output elements (BitwiseNot)
	b  *bcast // nil for BitwiseNot
}

func buildBitwise(c *buildContext) (Kernel, int64, error) {
	unary := c.n.Op == "BitwiseNot"
	want := 2
	if unary {
		want = 1
	}
	if err := c.need(want); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if !x.DType.IsInt() {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &bitwiseKernel{op: c.n.Op, e: x.DType.Size(), n: int(y.Shape.Elements())}
	if !unary {
		k.b = newBcast(x.Shape, c.in(1).Shape, y.Shape)
	}
	return k, 0, nil
}

func (k *bitwiseKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, y := k.e, out[0]
	if k.b == nil {
		for i, v := range in[0][:k.n*e] {
			y[i] = ^v
		}
		return
	}
	for i := 0; i < k.b.n; i++ {
		a, b := in[0][int(k.b.ia[i])*e:], in[1][int(k.b.ib[i])*e:]
		for j := 0; j < e; j++ {
			switch k.op {
			case "BitwiseAnd":
				y[i*e+j] = a[j] & b[j]
			case "BitwiseOr":
				y[i*e+j] = a[j] | b[j]
			default:
				y[i*e+j] = a[j] ^ b[j]
			}
		}
	}
}

// hardmaxKernel writes 1 at the first maximum of each run of n values
// spaced str apart, 0 elsewhere.
type hardmaxKernel struct {
	dt            ir.DType
	outer, n, str int
}

func buildHardmax(c *buildContext) (Kernel, int64, error) {
	x, err := c.floatInput(1)
	if err != nil {
		return nil, 0, err
	}
	s := ints(x.Shape)
	def := int64(-1)
	if c.opset < 13 {
		def = 1
	}
	axis, err := ir.NormAxis(c.attrs().Int("axis", def), len(s))
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if c.opset < 13 {
		// The input is seen as a matrix [prod(:axis), prod(axis:)].
		return &hardmaxKernel{dt: x.DType, outer: prod(s[:axis]), n: prod(s[axis:]), str: 1}, 0, nil
	}
	return &hardmaxKernel{dt: x.DType, outer: prod(s[:axis]), n: s[axis], str: prod(s[axis+1:])}, 0, nil
}

func (k *hardmaxKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	clear(out[0])
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.str; j++ {
			base := o*k.n*k.str + j
			best, arg := math.Inf(-1), 0
			for i := 0; i < k.n; i++ {
				v, _ := loadFloat(k.dt, in[0][(base+i*k.str)*e:])
				if v > best {
					best, arg = v, i
				}
			}
			if k.n > 0 {
				storeFloat(k.dt, out[0][(base+arg*k.str)*e:], 1)
			}
		}
	}
}

type oneHotKernel struct {
	idt, vdt            ir.DType
	outer, depth, inner int
}

func buildOneHot(c *buildContext) (Kernel, int64, error) {
	if err := c.need(3); err != nil {
		return nil, 0, err
	}
	ind, y := c.in(0), c.out(0)
	if _, ok := loadFloat(ind.DType, make([]byte, 8)); !ok {
		return nil, 0, c.unsupported(ind.DType)
	}
	if _, ok := loadFloat(y.DType, make([]byte, 8)); !ok {
		return nil, 0, c.unsupported(y.DType)
	}
	axis, err := ir.NormAxis(c.attrs().Int("axis", -1), y.Shape.Rank())
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(y.Shape)
	return &oneHotKernel{idt: ind.DType, vdt: y.DType, outer: prod(s[:axis]), depth: s[axis], inner: prod(s[axis+1:])}, 0, nil
}

func (k *oneHotKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, ie := k.vdt.Size(), k.idt.Size()
	off, on := in[2][:e], in[2][e:2*e]
	for o := 0; o < k.outer; o++ {
		for d := 0; d < k.depth; d++ {
			for j := 0; j < k.inner; j++ {
				copy(out[0][((o*k.depth+d)*k.inner+j)*e:], off)
			}
		}
		for j := 0; j < k.inner; j++ {
			v, _ := loadFloat(k.idt, in[0][(o*k.inner+j)*ie:])
			i := int64(v)
			if i < 0 {
				i += int64(k.depth)
			}
			if i >= 0 && i < int64(k.depth) {
				copy(out[0][((o*k.depth+int(i))*k.inner+j)*e:], on)
			}
		}
	}
}

type eyeLikeKernel struct {
	dt   ir.DType
	r, c int
	k    int
}

func buildEyeLike(c *buildContext) (Kernel, int64, error) {
	y := c.out(0)
	if _, ok := loadFloat(y.DType, make([]byte, 8)); !ok && y.DType != ir.Bool {
		return nil, 0, c.unsupported(y.DType)
	}
	return &eyeLikeKernel{dt: y.DType, r: int(y.Shape[0]), c: int(y.Shape[1]), k: int(c.attrs().Int("k", 0))}, 0, nil
}

func (k *eyeLikeKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	clear(out[0])
	e := k.dt.Size()
	for i := 0; i < k.r; i++ {
		if j := i + k.k; j >= 0 && j < k.c {
			if k.dt == ir.Bool {
				out[0][i*k.c+j] = 1
			} else {
				storeFloat(k.dt, out[0][(i*k.c+j)*e:], 1)
			}
		}
	}
}

type topKKernel struct {
	dt                 ir.DType
	outer, n, inner, k int
	largest            bool
}

func buildTopK(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if _, ok := loadFloat(x.DType, make([]byte, 8)); !ok {
		return nil, 0, c.unsupported(x.DType)
	}
	s := ints(x.Shape)
	axis, err := ir.NormAxis(c.attrs().Int("axis", -1), len(s))
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	return &topKKernel{dt: x.DType, outer: prod(s[:axis]), n: s[axis], inner: prod(s[axis+1:]),
		k: int(y.Shape[axis]), largest: c.attrs().Int("largest", 1) != 0}, int64(12 * s[axis]), nil
}

func (k *topKKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	vals := view[float64](scratch)[:k.n]
	idx := view[int32](scratch[8*k.n:])[:k.n]
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			for i := 0; i < k.n; i++ {
				vals[i], _ = loadFloat(k.dt, in[0][((o*k.n+i)*k.inner+j)*e:])
				idx[i] = int32(i)
			}
			// Sorted by value, equal values by index, as ONNX requires.
			slices.SortStableFunc(idx, func(a, b int32) int {
				va, vb := vals[a], vals[b]
				if !k.largest {
					va, vb = vb, va
				}
				switch {
				case va > vb:
					return -1
				case va < vb:
					return 1
				}
				return 0
			})
			for i := 0; i < k.k; i++ {
				p := (o*k.k+i)*k.inner + j
				storeFloat(k.dt, out[0][p*e:], vals[idx[i]])
				if ix := outAt(out, 1); ix != nil {
					view[int64](ix)[p] = int64(idx[i])
				}
			}
		}
	}
}

// quantKernel is QuantizeLinear (float → int8/uint8/int16/…, rounding half
// to even and saturating) or DequantizeLinear (int → float), per tensor or
// per axis.
type quantKernel struct {
	quant        bool
	xdt, ydt     ir.DType
	sdt, zdt     ir.DType
	outer, n, in int // axis of n channels; per tensor: n = 1
	lo, hi       float64
}

func buildQuantize(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, s, z, y := c.in(0), c.in(1), c.in(2), c.out(0)
	k := &quantKernel{quant: c.n.Op == "QuantizeLinear", xdt: x.DType, ydt: y.DType, sdt: s.DType}
	for _, t := range []*ir.Tensor{x, s, y} {
		if _, ok := loadFloat(t.DType, make([]byte, 8)); !ok {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	if z != nil {
		k.zdt = z.DType
	}
	xs := ints(x.Shape)
	k.outer, k.n, k.in = 1, 1, prod(xs)
	if s.Shape.Elements() > 1 {
		axis, err := ir.NormAxis(c.attrs().Int("axis", 1), len(xs))
		if err != nil {
			return nil, 0, c.errorf("%v", err)
		}
		k.outer, k.n, k.in = prod(xs[:axis]), xs[axis], prod(xs[axis+1:])
	}
	if k.quant {
		switch y.DType {
		case ir.Uint8, ir.Int8, ir.Uint16, ir.Int16:
			lo, hi := intRange(y.DType)
			k.lo, k.hi = float64(lo), float64(hi)
		default:
			return nil, 0, c.unsupported(y.DType)
		}
	}
	return k, 0, nil
}

func (k *quantKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	xe, ye, se, ze := k.xdt.Size(), k.ydt.Size(), k.sdt.Size(), k.zdt.Size()
	var zp []byte
	if len(in) > 2 {
		zp = in[2]
	}
	for o := 0; o < k.outer; o++ {
		for ch := 0; ch < k.n; ch++ {
			scale, _ := loadFloat(k.sdt, in[1][ch*se:])
			zero := 0.0
			if zp != nil {
				zero, _ = loadFloat(k.zdt, zp[ch*ze:])
			}
			base := (o*k.n + ch) * k.in
			for i := base; i < base+k.in; i++ {
				v, _ := loadFloat(k.xdt, in[0][i*xe:])
				if k.quant {
					q := math.RoundToEven(float64(float32(v)/float32(scale))) + zero
					storeFloat(k.ydt, out[0][i*ye:], math.Min(k.hi, math.Max(k.lo, q)))
				} else {
					storeFloat(k.ydt, out[0][i*ye:], float64(float32(v-zero)*float32(scale)))
				}
			}
		}
	}
}

// lrnKernel is local response normalisation across channels.
type lrnKernel struct {
	dt                ir.DType
	n, c, inner, size int
	alpha, beta, bias float64
}

func buildLRN(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x := c.in(0)
	if !isFloatType(x.DType) || x.Shape.Rank() < 2 {
		return nil, 0, c.errorf("input must be a floating-point tensor [N,C,...], is %s%v", x.DType, x.Shape)
	}
	s := ints(x.Shape)
	at := c.attrs()
	return &lrnKernel{dt: x.DType, n: s[0], c: s[1], inner: prod(s[2:]), size: int(at.Int("size", 1)),
		alpha: float64(at.Float("alpha", 1e-4)), beta: float64(at.Float("beta", 0.75)), bias: float64(at.Float("bias", 1))}, 0, nil
}

func (k *lrnKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	lo, hi := (k.size-1)/2, (k.size-1+1)/2
	at := func(b, ch, j int) int { return ((b*k.c+ch)*k.inner + j) * e }
	for b := 0; b < k.n; b++ {
		for ch := 0; ch < k.c; ch++ {
			for j := 0; j < k.inner; j++ {
				sum := 0.0
				for c2 := max(0, ch-lo); c2 <= min(k.c-1, ch+hi); c2++ {
					v, _ := loadFloat(k.dt, in[0][at(b, c2, j):])
					sum += v * v
				}
				v, _ := loadFloat(k.dt, in[0][at(b, ch, j):])
				storeFloat(k.dt, out[0][at(b, ch, j):], v/math.Pow(k.bias+k.alpha/float64(k.size)*sum, k.beta))
			}
		}
	}
}
