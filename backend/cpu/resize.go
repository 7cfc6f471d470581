package cpu

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// Resize (and the older Upsample) map every output coordinate back to the
// input with the coordinate transformation ONNX names, then take the
// nearest element or interpolate linearly or cubically, separably along
// each axis. Nearest becomes an index-map gather (any dtype); linear and
// cubic keep, per axis and output index, a few taps (input index and
// weight) and combine them per output row.

// axisTaps holds the taps of one axis: n per output index.
type axisTaps struct {
	n       int
	idx     []int32
	w       []float32
	outside []bool // tf_crop_and_resize: the coordinate left the input
}

// resizeKernel interpolates float32 data.
type resizeKernel struct {
	dims  []int // output dims
	ins   []int // input strides
	taps  []axisTaps
	rows  int
	inner int
	extra float32 // extrapolation value
}

func buildResize(c *bctx) (Kernel, int64, error) {
	if err := c.need(1); err != nil {
		return nil, 0, err
	}
	x, y := c.in(0), c.out(0)
	r := x.Shape.Rank()
	if y.Shape.Rank() != r || y.DType != x.DType {
		return nil, 0, c.errorf("output %s%v does not match input %s%v", y.DType, y.Shape, x.DType, x.Shape)
	}
	at := c.attrs()
	mode := at.String("mode", "nearest")
	ctm := at.String("coordinate_transformation_mode", "half_pixel")
	nearest := at.String("nearest_mode", "round_prefer_floor")
	var scales []float64
	var roi []float64
	scaleIn := 2
	if c.n.Op == "Upsample" || c.opset < 11 {
		// Upsample and Resize-10: scales only, asymmetric, floor.
		ctm, nearest, scaleIn = "asymmetric", "floor", 1
		if v := at.Floats("scales", nil); v != nil {
			for _, f := range v {
				scales = append(scales, float64(f))
			}
		}
	}
	if t := c.in(scaleIn); t != nil && t.Shape.Elements() > 0 {
		if !t.IsConst() {
			return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("scales", t.Name))
		}
		v, err := t.Float64s()
		if err != nil {
			return nil, 0, c.errorf("scales: %v", err)
		}
		scales = v
	}
	if ctm == "tf_crop_and_resize" {
		t := c.in(1)
		if t != nil && !t.IsConst() {
			return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("roi", t.Name))
		}
		if t == nil || t.Shape.Elements() != int64(2*r) {
			return nil, 0, c.errorf("tf_crop_and_resize needs a constant roi of %d values", 2*r)
		}
		v, err := t.Float64s()
		if err != nil {
			return nil, 0, c.errorf("roi: %v", err)
		}
		roi = v
	}
	if scales != nil && len(scales) != r {
		return nil, 0, c.errorf("%d scales for rank %d", len(scales), r)
	}
	n := 1
	switch mode {
	case "nearest":
	case "linear", "bilinear", "trilinear":
		n, mode = 2, "linear"
	case "cubic", "bicubic":
		n, mode = 4, "cubic"
	default:
		return nil, 0, c.errorf("mode %q is not supported", mode)
	}
	if at.Int("antialias", 0) != 0 {
		return nil, 0, c.errorf("antialias is not supported")
	}
	cubicA := float64(at.Float("cubic_coeff_a", -0.75))
	exclude := at.Int("exclude_outside", 0) != 0
	extra := at.Float("extrapolation_value", 0)
	taps := make([]axisTaps, r)
	for i := 0; i < r; i++ {
		in, out := int(x.Shape[i]), int(y.Shape[i])
		scale := float64(out) / float64(in)
		if scales != nil {
			scale = scales[i]
		}
		if in == 0 && out > 0 {
			return nil, 0, c.errorf("cannot resize an empty axis")
		}
		outW := scale * float64(in)
		t := axisTaps{n: n, idx: make([]int32, out*n), w: make([]float32, out*n)}
		for o := 0; o < out; o++ {
			var xo float64
			xr := float64(o)
			switch ctm {
			case "half_pixel":
				xo = (xr+0.5)/scale - 0.5
			case "pytorch_half_pixel":
				xo = -0.5
				if outW != 1 {
					xo = (xr+0.5)/scale - 0.5
				}
			case "align_corners":
				if outW != 1 {
					xo = xr * float64(in-1) / (outW - 1)
				}
			case "asymmetric":
				xo = xr / scale
			case "tf_half_pixel_for_nearest", "tf_half_pixel_for_nn":
				xo = (xr + 0.5) / scale
			case "tf_crop_and_resize":
				lo, hi := roi[i], roi[r+i]
				if outW == 1 {
					xo = (hi - lo) * float64(in-1) / 2
				} else {
					xo = xr * (hi - lo) * float64(in-1) / (outW - 1)
				}
				xo += lo * float64(in-1)
				if xo < 0 || xo > float64(in-1) {
					if t.outside == nil {
						t.outside = make([]bool, out)
					}
					t.outside[o] = true
				}
			default:
				return nil, 0, c.errorf("coordinate_transformation_mode %q is not supported", ctm)
			}
			idx, w := t.idx[o*n:(o+1)*n], t.w[o*n:(o+1)*n]
			f := math.Floor(xo)
			ratio := xo - f
			switch mode {
			case "nearest":
				up := false
				if ratio != 0 {
					switch nearest {
					case "round_prefer_floor":
						up = ratio > 0.5
					case "round_prefer_ceil":
						up = ratio >= 0.5
					case "floor":
					case "ceil":
						up = true
					default:
						return nil, 0, c.errorf("nearest_mode %q is not supported", nearest)
					}
				}
				k := int(f)
				if up {
					k++
				}
				idx[0], w[0] = int32(max(0, min(k, in-1))), 1
			case "linear":
				k := int(f)
				for j, wt := range [2]float64{1 - ratio, ratio} {
					idx[j], w[j] = int32(max(0, min(k+j, in-1))), float32(wt)
				}
			case "cubic":
				k := int(f) - 1
				cs := cubicCoeffs(ratio, cubicA)
				sum := 0.0
				for j := range cs {
					if exclude && (k+j < 0 || k+j >= in) {
						cs[j] = 0
					}
					sum += cs[j]
				}
				for j := range cs {
					if exclude {
						cs[j] /= sum
					}
					idx[j], w[j] = int32(max(0, min(k+j, in-1))), float32(cs[j])
				}
			}
		}
		taps[i] = t.compact()
	}
	if mode == "nearest" {
		maps := make([][]int32, r)
		for i, t := range taps {
			maps[i] = t.idx
			for o, out := range t.outside {
				if out {
					maps[i][o] = -1
				}
			}
		}
		k, err := newIndexMap(c, x, y, maps)
		if err != nil {
			return nil, 0, err
		}
		k.value = encodeFloat(float64(extra), x.DType)
		return k, 0, nil
	}
	if x.DType != ir.Float32 {
		return nil, 0, c.unsupported(x.DType)
	}
	k := &resizeKernel{dims: ints(y.Shape), ins: rowStrides(ints(x.Shape)), taps: taps, extra: extra}
	if r == 0 || y.Shape.Elements() == 0 {
		return nil, 0, c.errorf("cannot interpolate a scalar or empty tensor")
	}
	k.inner, k.rows = k.dims[r-1], prod(k.dims[:r-1])
	return k, 0, nil
}

// cubicCoeffs are the four Keys cubic convolution weights for taps at
// −1, 0, 1, 2 relative to floor(x), with ratio = x − floor(x).
func cubicCoeffs(ratio, a float64) [4]float64 {
	r1, r2 := ratio+1, 1-ratio
	return [4]float64{
		((a*r1-5*a)*r1+8*a)*r1 - 4*a,
		((a+2)*ratio-(a+3))*ratio*ratio + 1,
		((a+2)*r2-(a+3))*r2*r2 + 1,
		((a*(r2+1)-5*a)*(r2+1)+8*a)*(r2+1) - 4*a,
	}
}

// compact reduces an axis whose every output reads exactly one input with
// weight 1 (an unscaled axis, say) to one tap per output.
func (t axisTaps) compact() axisTaps {
	if t.n == 1 {
		return t
	}
	out := len(t.idx) / t.n
	single := axisTaps{n: 1, idx: make([]int32, out), w: make([]float32, out), outside: t.outside}
	for o := 0; o < out; o++ {
		found := -1
		for j := 0; j < t.n; j++ {
			switch w := t.w[o*t.n+j]; {
			case w == 0:
			case w == 1 && found < 0:
				found = j
			default:
				return t
			}
		}
		if found < 0 {
			return t
		}
		single.idx[o], single.w[o] = t.idx[o*t.n+found], 1
	}
	return single
}

func (k *resizeKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	work := k.rows * k.inner
	for _, t := range k.taps {
		work *= t.n
	}
	w.forArgs(k.rows, w.parts(work), k, args{}, in, out, nil)
}

func (k *resizeKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	x, y := f32s(in[0]), f32s(out[0])
	r := len(k.dims)
	var oidx, tidx [maxDims]int
	if r-1 > maxDims {
		return
	}
	rem := lo
	for i := r - 2; i >= 0; i-- {
		oidx[i] = rem % k.dims[i]
		rem /= k.dims[i]
	}
	last := &k.taps[r-1]
	for row := lo; row < hi; row++ {
		d := y[row*k.inner : (row+1)*k.inner]
		outside := false
		for i := 0; i < r-1; i++ {
			if t := &k.taps[i]; t.outside != nil && t.outside[oidx[i]] {
				outside = true
			}
		}
		if outside {
			fill(d, k.extra)
		} else {
			clear(d)
			// Every combination of the outer axes' taps.
			for i := 0; i < r-1; i++ {
				tidx[i] = 0
			}
			for {
				wt, base := float32(1), 0
				for i := 0; i < r-1; i++ {
					t := &k.taps[i]
					j := oidx[i]*t.n + tidx[i]
					wt *= t.w[j]
					base += int(t.idx[j]) * k.ins[i]
				}
				if wt != 0 {
					interpRow(d, x[base:], last.idx, last.w, last.n, wt)
				}
				i := r - 2
				for ; i >= 0; i-- {
					tidx[i]++
					if tidx[i] < k.taps[i].n {
						break
					}
					tidx[i] = 0
				}
				if i < 0 {
					break
				}
			}
			if last.outside != nil {
				for j, o := range last.outside {
					if o {
						d[j] = k.extra
					}
				}
			}
		}
		for i := r - 2; i >= 0; i-- {
			oidx[i]++
			if oidx[i] < k.dims[i] {
				break
			}
			oidx[i] = 0
		}
	}
}

// interpRow adds wt·Σ_t w[j,t]·x[idx[j,t]] to every d[j].
func interpRow(d, x []float32, idx []int32, w []float32, n int, wt float32) {
	switch n {
	case 1:
		for j := range d {
			d[j] += wt * x[idx[j]]
		}
	case 2:
		for j := range d {
			i, v := idx[2*j:2*j+2], w[2*j:2*j+2]
			d[j] += wt * (v[0]*x[i[0]] + v[1]*x[i[1]])
		}
	default:
		for j := range d {
			var s float32
			for t := 0; t < n; t++ {
				s += w[j*n+t] * x[idx[j*n+t]]
			}
			d[j] += wt * s
		}
	}
}
