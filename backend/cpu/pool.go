package cpu

import (
	"math"

	"github.com/berth-ml/berth/backend/cpu/vmath"
	"github.com/berth-ml/berth/ir"
)

// poolKernel is MaxPool or AveragePool over 1 to 3 spatial dimensions
// (held as 3). For every output index along every dimension it knows the
// range of kernel taps that land inside the input and, for AveragePool with
// count_include_pad, how many land inside the explicitly padded input.
type poolKernel struct {
	dt          ir.DType
	isMax       bool
	planes      int // N·C
	in, out     [3]int
	inSp, outSp int
	stride, dil [3]int
	pad         [3]int
	kern        [3]int
	tlo, thi    [3][]int32 // per dim and output index: taps [tlo, thi) are inside
	padCount    [3][]int32 // per dim and output index: taps inside the padded input
	includePad  bool
	colMajor    bool // Indices in column-major order (storage_order 1)
	// s2 marks a float32 3×3 max pool of strides 2 and padding 1 on
	// planes that maxPool3s2 takes (on AVX-512).
	s2  bool
	c   int  // channels of an image
	ind bool // the indices output is wanted
	// blocked marks input and output in NCHW16c (poolBlocked).
	blocked bool
}

func buildPool(c *buildContext) (Kernel, int64, error) {
	x, y, err := c.inOut()
	if err != nil {
		return nil, 0, err
	}
	switch x.DType {
	case ir.Float32:
	case ir.Int8, ir.Uint8:
		if c.n.Op != "MaxPool" {
			return nil, 0, c.unsupported(x.DType)
		}
	default:
		return nil, 0, c.unsupported(x.DType)
	}
	r := x.Shape.Rank() - 2
	if r < 1 || r > 3 || y.Shape.Rank() != r+2 {
		return nil, 0, c.errorf("input %v and output %v must have 1 to 3 spatial dimensions", x.Shape, y.Shape)
	}
	if x.Shape[0] != y.Shape[0] || x.Shape[1] != y.Shape[1] {
		return nil, 0, c.errorf("output %v does not match input %v", y.Shape, x.Shape)
	}
	at := c.attrs()
	kern := at.Ints("kernel_shape", nil)
	if len(kern) != r {
		return nil, 0, c.errorf("kernel_shape %v must have %d values", kern, r)
	}
	kk := make([]int, r)
	for i, v := range kern {
		kk[i] = int(v)
	}
	w, err := windows(c, ints(x.Shape[2:]), kk, ints(y.Shape[2:]), at.Int("ceil_mode", 0) != 0)
	if err != nil {
		return nil, 0, err
	}
	k := &poolKernel{
		dt:         x.DType,
		isMax:      c.n.Op == "MaxPool",
		planes:     int(x.Shape[0] * x.Shape[1]),
		includePad: at.Int("count_include_pad", 0) != 0,
		colMajor:   at.Int("storage_order", 0) != 0,
		c:          int(x.Shape[1]),
		ind:        c.out(1) != nil,
	}
	if ind := c.out(1); ind != nil {
		if !k.isMax || ind.DType != ir.Int64 || ind.Shape.Elements() != y.Shape.Elements() {
			return nil, 0, c.errorf("indices output must be int64 %v", y.Shape)
		}
	}
	off := 3 - r
	for i := range 3 {
		k.in[i], k.out[i], k.stride[i], k.dil[i] = 1, 1, 1, 1
		kern := 1
		end := 0
		if j := i - off; j >= 0 {
			k.in[i], k.out[i], kern = int(x.Shape[2+j]), int(y.Shape[2+j]), kk[j]
			k.kern[i] = kern
			k.stride[i], k.dil[i], k.pad[i], end = w.stride[j], w.dil[j], w.begin[j], w.end[j]
		}
		n, o := k.in[i], k.out[i]
		k.tlo[i], k.thi[i], k.padCount[i] = make([]int32, o), make([]int32, o), make([]int32, o)
		for oi := 0; oi < o; oi++ {
			start := oi*k.stride[i] - k.pad[i]
			lo, hi, cnt := 0, 0, 0
			for t := 0; t < kern; t++ {
				p := start + t*k.dil[i]
				if p < 0 {
					lo = t + 1
				}
				if p < n {
					hi = t + 1
				}
				if p < n+end {
					cnt = t + 1
				}
			}
			k.tlo[i][oi], k.thi[i][oi], k.padCount[i][oi] = int32(lo), int32(max(hi, lo)), int32(cnt)
		}
	}
	k.inSp, k.outSp = prod(k.in[:]), prod(k.out[:])
	k.s2 = dw512 && k.isMax && k.dt == ir.Float32 && k.in[0] == 1 && k.kern == [3]int{0, 3, 3} &&
		k.stride == [3]int{1, 2, 2} && k.dil == [3]int{1, 1, 1} && k.pad == [3]int{0, 1, 1} &&
		k.out[1] == (k.in[1]+1)/2 && k.out[2] == (k.in[2]+1)/2
	return k, 0, nil
}

// maxPool3s2Planes runs planes [lo, hi) through maxPool3s2: whole chunks
// of sixteen outputs from thirty-two input columns, and a last one under
// masks.
func (k *poolKernel) maxPool3s2Planes(y, x []float32, lo, hi int) {
	full, masks := s2Chunks(k.in[2], k.out[2])
	maxPool3s2(&y[lo*k.outSp], &x[lo*k.inSp], k.in[1], k.in[2], k.out[1], k.out[2], full, masks, &depthwiseSplitIdx, hi-lo)
}

func (k *poolKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.blocked {
		rows := k.planes / blockLanes * k.out[1]
		w.forArgs(rows, w.parts(k.planes*k.outSp*4), k, args{1}, in, out, nil)
		return
	}
	w.forArgs(k.planes, w.parts(k.planes*k.outSp*4), k, args{}, in, out, nil)
}

func (k *poolKernel) rangeArgs(in, out [][]byte, _ []byte, a args, lo, hi int) {
	if a[0] == 1 {
		k.blockedRows(f32s(out[0]), f32s(in[0]), lo, hi)
		return
	}
	var ind []int64
	if b := outAt(out, 1); b != nil {
		ind = view[int64](b)
	}
	switch k.dt {
	case ir.Int8:
		maxPlanes(k, view[int8](out[0]), ind, view[int8](in[0]), lo, hi)
	case ir.Uint8:
		maxPlanes(k, out[0], ind, in[0], lo, hi)
	default:
		if k.isMax {
			if ind == nil && k.s2 && lo < hi {
				k.maxPool3s2Planes(f32s(out[0]), f32s(in[0]), lo, hi)
				return
			}
			if ind == nil && k.rowsFit() {
				x, y := f32s(in[0]), f32s(out[0])
				for p := lo; p < hi; p++ {
					maxPlaneRows(k, y[p*k.outSp:][:k.outSp], x[p*k.inSp:][:k.inSp])
				}
				return
			}
			maxPlanes(k, f32s(out[0]), ind, f32s(in[0]), lo, hi)
			return
		}
		x, y := f32s(in[0]), f32s(out[0])
		for p := lo; p < hi; p++ {
			k.avgPlane(y[p*k.outSp:][:k.outSp], x[p*k.inSp:][:k.inSp])
		}
	}
}

// globalPoolKernel averages or takes the maximum of every channel plane.
type globalPoolKernel struct {
	isMax  bool
	planes int
	sp     int
	c      int // channels of an image
	// blocked marks an NCHW16c input (conv_blocked.go): items are then
	// blocks of sixteen channels.
	blocked bool
}

func buildGlobalPool(c *buildContext) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 || y.DType != ir.Float32 {
		return nil, 0, c.unsupported(x.DType)
	}
	if x.Shape.Rank() < 2 {
		return nil, 0, c.errorf("input %v needs batch and channel dimensions", x.Shape)
	}
	planes := int(x.Shape[0] * x.Shape[1])
	if y.Shape.Elements() != int64(planes) {
		return nil, 0, c.errorf("output %v must have one element per channel of %v", y.Shape, x.Shape)
	}
	return &globalPoolKernel{isMax: c.n.Op == "GlobalMaxPool", planes: planes, sp: prod(ints(x.Shape[2:])), c: int(x.Shape[1])}, 0, nil
}

func (k *globalPoolKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	// Eight times the elements: what a global pool reads was mostly
	// written by every worker of the step before (a squeeze-and-
	// excitation block's convolution), and one worker reading all of it
	// would take the others' shares from their caches, which costs more
	// than handing them theirs.
	items := k.planes
	if k.blocked {
		items /= blockLanes
	}
	w.forArgs(items, w.parts(8*k.planes*k.sp), k, args{}, in, out, nil)
}

func (k *globalPoolKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	if k.blocked {
		k.blockedRange(x, y, lo, hi)
		return
	}
	if !k.isMax && vmath.Asm && vmath.Wide512 && k.sp > 0 && lo < hi {
		// Plane by plane in one call: small planes (7², 1280 of them
		// at the end of a classifier) cost a call and a horizontal sum
		// each otherwise.
		vmath.MeanRows512(&y[lo], &x[lo*k.sp], hi-lo, k.sp, 1/float64(k.sp))
		return
	}
	for p := lo; p < hi; p++ {
		xc := x[p*k.sp:][:k.sp]
		if k.isMax {
			best := float32(math.Inf(-1))
			for _, v := range xc {
				if v > best || v != v {
					best = v
					if v != v {
						break
					}
				}
			}
			y[p] = best
			continue
		}
		y[p] = float32(vmath.Sum(xc) / float64(k.sp))
	}
}
