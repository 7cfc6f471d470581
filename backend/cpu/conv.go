package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// convKernel is an N-dimensional convolution (1 to 3 spatial dimensions,
// held as 3 with leading unit dimensions). A depthwise convolution (one
// input channel per group) runs directly; every other one is lowered per
// image and group to im2col, written straight into packed GEMM panels in
// scratch, times the prepacked weights.
type convKernel struct {
	nb, c, m, g int // images, input channels, output channels, groups
	cg, mg      int // input and output channels per group
	in, out     [3]int
	kern        [3]int
	stride, dil [3]int
	pad         [3]int // leading pads; trailing ones only clip
	inSp, outSp int    // input and output elements per channel
	kvol        int    // kernel elements per input channel
	kdim        int    // cg·kvol, the depth of the product
	pointwise   bool   // 1×1 kernel, unit stride, no padding: im2col is a copy
	depthwise   bool
	hasBias     bool
	wPre        []float32 // packed weights, aSize floats per group; nil when W is computed at run time
	aSize       int
	bSize       int // floats of one group's packed im2col matrix
	wOff        int // scratch float offset of run-time packed weights
}

func buildConv(c *bctx) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, wt, b, y := c.in(0), c.in(1), c.in(2), c.out(0)
	for _, t := range []*ir.Tensor{x, wt, b, y} {
		if t != nil && t.DType != ir.Float32 {
			return nil, 0, c.unsupported(t.DType)
		}
	}
	r := x.Shape.Rank() - 2
	if r < 1 || r > 3 {
		return nil, 0, c.errorf("input %v must have 1 to 3 spatial dimensions", x.Shape)
	}
	if wt.Shape.Rank() != r+2 || y.Shape.Rank() != r+2 {
		return nil, 0, c.errorf("weight %v and output %v must have rank %d", wt.Shape, y.Shape, r+2)
	}
	at := c.attrs()
	k := &convKernel{nb: int(x.Shape[0]), c: int(x.Shape[1]), m: int(wt.Shape[0]), g: int(at.Int("group", 1))}
	if k.g <= 0 || k.c%k.g != 0 || k.m%k.g != 0 {
		return nil, 0, c.errorf("group %d does not divide %d input and %d output channels", k.g, k.c, k.m)
	}
	k.cg, k.mg = k.c/k.g, k.m/k.g
	if int(wt.Shape[1]) != k.cg {
		return nil, 0, c.errorf("weight %v needs %d input channels per group", wt.Shape, k.cg)
	}
	if int(y.Shape[0]) != k.nb || int(y.Shape[1]) != k.m {
		return nil, 0, c.errorf("output %v, want [%d,%d,...]", y.Shape, k.nb, k.m)
	}
	if b != nil {
		if b.Shape.Elements() != int64(k.m) {
			return nil, 0, c.errorf("bias %v must have %d elements", b.Shape, k.m)
		}
		k.hasBias = true
	}
	kern := ints(wt.Shape[2:])
	if ks := at.Ints("kernel_shape", nil); ks != nil && !ir.Shape(ks).Equal(wt.Shape[2:]) {
		return nil, 0, c.errorf("kernel_shape %v differs from weight %v", ks, wt.Shape)
	}
	w, err := windows(c, ints(x.Shape[2:]), kern, ints(y.Shape[2:]), false)
	if err != nil {
		return nil, 0, err
	}
	off := 3 - r
	for i := range 3 {
		k.in[i], k.out[i], k.kern[i], k.stride[i], k.dil[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < r; i++ {
		k.in[off+i], k.out[off+i], k.kern[off+i] = int(x.Shape[2+i]), int(y.Shape[2+i]), kern[i]
		k.stride[off+i], k.dil[off+i], k.pad[off+i] = w.stride[i], w.dil[i], w.begin[i]
	}
	k.inSp, k.outSp = prod(k.in[:]), prod(k.out[:])
	k.kvol = prod(k.kern[:])
	k.kdim = k.cg * k.kvol
	k.pointwise = k.kvol == 1 && k.stride == [3]int{1, 1, 1} && k.pad == [3]int{} && k.in == k.out
	if k.g > 1 && k.cg == 1 {
		k.depthwise = true
		return k, 0, nil
	}
	k.aSize = packedASize(k.mg, k.kdim)
	k.bSize = packedBSize(k.kdim, k.outSp)
	floats := k.g * k.bSize
	if wt.IsConst() {
		k.wPre = make([]float32, k.g*k.aSize)
		k.packWeights(k.wPre, constF32(wt))
	} else {
		k.wOff = floats
		floats += k.g * k.aSize
	}
	return k, int64(floats) * 4, nil
}

// packWeights packs every group's [mg, kdim] weight block.
func (k *convKernel) packWeights(dst, w []float32) {
	for gi := 0; gi < k.g; gi++ {
		packA(dst[gi*k.aSize:], w[gi*k.mg*k.kdim:], k.mg, k.kdim, k.kdim, 1, 1, 0, ceilDiv(k.mg, gemmMR))
	}
}

func (k *convKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.depthwise {
		planes := k.nb * k.m
		w.forArgs(planes, w.parts(planes*k.outSp*k.kvol), k, args{phaseDepthwise}, in, out, scratch)
		return
	}
	if k.wPre == nil {
		k.packWeights(f32s(scratch)[k.wOff:], f32s(in[1]))
	}
	pb := ceilDiv(k.outSp, gemmNR)
	mt, nt := gemmTiles(k.mg, k.outSp, w.Threads())
	g := gemm{m: k.mg, n: k.outSp, mt: mt, nt: nt}
	for n := 0; n < k.nb; n++ {
		w.forArgs(k.g*pb, w.parts(k.g*pb*gemmNR*k.kdim), k, args{phasePack, int64(n)}, in, out, scratch)
		w.forArgs(k.g*g.tiles(), w.parts(k.g*k.mg*k.outSp*k.kdim/8), k, args{phaseTiles, int64(n), int64(mt), int64(nt)}, in, out, scratch)
	}
}

const phaseDepthwise = 2

func (k *convKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	var bias []float32
	if k.hasBias {
		bias = f32s(in[2])
	}
	switch a[0] {
	case phaseDepthwise:
		wt := f32s(in[1])
		mult := k.mg
		for p := lo; p < hi; p++ {
			n, mo := p/k.m, p%k.m
			var bv float32
			if bias != nil {
				bv = bias[mo]
			}
			xc := x[(n*k.c+mo/mult)*k.inSp:][:k.inSp]
			k.depthwisePlane(y[p*k.outSp:][:k.outSp], xc, wt[mo*k.kvol:][:k.kvol], bv)
		}
	case phasePack:
		n := int(a[1])
		s := f32s(scratch)
		pb := ceilDiv(k.outSp, gemmNR)
		for it := lo; it < hi; it++ {
			gi, q := it/pb, it%pb
			xg := x[(n*k.c+gi*k.cg)*k.inSp:]
			k.im2col(s[gi*k.bSize:], xg, q)
		}
	case phaseTiles:
		n := int(a[1])
		s := f32s(scratch)
		wp := k.wPre
		if wp == nil {
			wp = s[k.wOff:]
		}
		g := gemm{m: k.mg, n: k.outSp, k: k.kdim, ldc: k.outSp, mt: int(a[2]), nt: int(a[3])}
		tiles := g.tiles()
		for it := lo; it < hi; {
			gi, t0 := it/tiles, it%tiles
			t1 := min(tiles, t0+hi-it)
			g.a = wp[gi*k.aSize:]
			g.b = s[gi*k.bSize:]
			g.c = y[(n*k.m+gi*k.mg)*k.outSp:]
			if bias != nil {
				g.rowBias = bias[gi*k.mg:]
			}
			g.run(t0, t1)
			it += t1 - t0
		}
	}
}

// window is the geometry of a sliding window along each spatial dimension.
type window struct {
	stride, dil, begin, end []int
}

// windows reads strides, dilations and pads (explicit or auto_pad, resolved
// as ONNX does) and checks them against the output size. With ceil the
// output may round up (pooling's ceil_mode).
func windows(c *bctx, in, kern, out []int, ceil bool) (window, error) {
	r := len(in)
	at := c.attrs()
	w := window{stride: make([]int, r), dil: make([]int, r), begin: make([]int, r), end: make([]int, r)}
	get := func(name string, def int, dst []int) error {
		v := at.Ints(name, nil)
		if v == nil {
			for i := range dst {
				dst[i] = def
			}
			return nil
		}
		if len(v) != len(dst) {
			return c.errorf("attribute %s has %d values, want %d", name, len(v), len(dst))
		}
		for i, x := range v {
			dst[i] = int(x)
		}
		return nil
	}
	if err := get("strides", 1, w.stride); err != nil {
		return w, err
	}
	if err := get("dilations", 1, w.dil); err != nil {
		return w, err
	}
	for i := 0; i < r; i++ {
		if w.stride[i] < 1 || w.dil[i] < 1 || kern[i] < 1 {
			return w, c.errorf("kernel %v, strides %v and dilations %v must be positive", kern, w.stride, w.dil)
		}
	}
	switch ap := at.String("auto_pad", "NOTSET"); ap {
	case "NOTSET", "":
		pads := make([]int, 2*r)
		if err := get("pads", 0, pads); err != nil {
			return w, err
		}
		copy(w.begin, pads[:r])
		copy(w.end, pads[r:])
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := 0; i < r; i++ {
			span := (kern[i]-1)*w.dil[i] + 1
			total := max(0, (out[i]-1)*w.stride[i]+span-in[i])
			if ap == "SAME_UPPER" {
				w.begin[i] = total / 2
			} else {
				w.begin[i] = total - total/2
			}
			w.end[i] = total - w.begin[i]
		}
	default:
		return w, c.errorf("unknown auto_pad %q", ap)
	}
	for i := 0; i < r; i++ {
		span := (kern[i]-1)*w.dil[i] + 1
		num := in[i] + w.begin[i] + w.end[i] - span
		want, alt := 0, -1
		if num >= 0 {
			want = num/w.stride[i] + 1
			if ceil && num%w.stride[i] != 0 {
				want++
				if (want-1)*w.stride[i] >= in[i]+w.begin[i] {
					// PyTorch drops a last window that starts in the
					// trailing pad; older shape inference keeps it.
					alt = want
					want--
				}
			}
		}
		if out[i] != want && out[i] != alt {
			return w, c.errorf("output size %d along spatial axis %d, the window geometry gives %d", out[i], i, want)
		}
	}
	return w, nil
}
