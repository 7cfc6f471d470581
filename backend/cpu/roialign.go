package cpu

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// RoiAlign (as ONNX Runtime computes it), MelWeightMatrix, and Dropout in
// training mode with a ratio of zero (the identity, deterministic).

// buildDropout is buildView but in training mode, where only a ratio of
// zero is supported.
func buildDropout(c *buildContext) (Kernel, int64, error) {
	if t := c.in(2); t != nil && t.IsConst() && len(t.Data) > 0 && t.Data[0] != 0 {
		ratio := 0.5
		if r := c.in(1); r != nil {
			if !r.IsConst() {
				return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("training-mode ratio", r.Name))
			}
			ratio, _ = loadFloat(r.DType, alignedCopy(r.Data))
		}
		if ratio != 0 {
			return nil, 0, c.errorf("training mode with a non-zero ratio (random) is not supported")
		}
		return &identityMaskKernel{}, 0, nil
	}
	return buildView(c)
}

func alignedCopy(b []byte) []byte {
	d := alignedBytes(int64(len(b)))
	copy(d, b)
	return d
}

// identityMaskKernel copies its input and sets its mask output to true.
type identityMaskKernel struct{}

func (identityMaskKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	copyDistinct(out[0], in[0])
	if m := outAt(out, 1); m != nil {
		fill(m, 1)
	}
}

type roiAlignKernel struct {
	dt, rdt         ir.DType
	wide            bool
	c, h, w, oh, ow int
	rois            int
	scale, offset   float64
	sampling        int
	max, halfPixel  bool
}

func buildRoiAlign(c *buildContext) (Kernel, int64, error) {
	x, rois, bi := c.in(0), c.in(1), c.in(2)
	if !isFloatType(x.DType) || !isFloatType(rois.DType) {
		return nil, 0, c.errorf("input %s and rois %s must be floating point", x.DType, rois.DType)
	}
	wide, err := indexType(c, bi)
	if err != nil {
		return nil, 0, err
	}
	at := c.attrs()
	k := &roiAlignKernel{dt: x.DType, rdt: rois.DType, wide: wide, c: int(x.Shape[1]), h: int(x.Shape[2]), w: int(x.Shape[3]),
		oh: int(at.Int("output_height", 1)), ow: int(at.Int("output_width", 1)), rois: int(rois.Shape[0]),
		scale: float64(at.Float("spatial_scale", 1)), sampling: int(at.Int("sampling_ratio", 0))}
	switch m := at.String("mode", "avg"); m {
	case "avg":
	case "max":
		k.max = true
	default:
		return nil, 0, c.errorf("mode %q is not supported", m)
	}
	ctm := "output_half_pixel"
	if c.opset >= 16 {
		ctm = at.String("coordinate_transformation_mode", "half_pixel")
	}
	k.halfPixel = ctm == "half_pixel"
	if k.halfPixel {
		k.offset = 0.5
	}
	return k, 0, nil
}

func (k *roiAlignKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, re := k.dt.Size(), k.rdt.Size()
	for r := 0; r < k.rois; r++ {
		var box [4]float64
		for i := range box {
			box[i], _ = loadFloat(k.rdt, in[1][(r*4+i)*re:])
			box[i] = box[i]*k.scale - k.offset
		}
		b := int(indexAt(in[2], k.wide, r))
		sw, sh := box[0], box[1]
		rw, rh := box[2]-box[0], box[3]-box[1]
		if !k.halfPixel {
			rw, rh = math.Max(rw, 1), math.Max(rh, 1)
		}
		bh, bw := rh/float64(k.oh), rw/float64(k.ow)
		gh, gw := k.sampling, k.sampling
		if k.sampling <= 0 {
			gh, gw = int(math.Ceil(rh/float64(k.oh))), int(math.Ceil(rw/float64(k.ow)))
		}
		count := float64(max(gh*gw, 1))
		for ch := 0; ch < k.c; ch++ {
			plane := in[0][(b*k.c+ch)*k.h*k.w*e:]
			px := func(y, x int) float64 { v, _ := loadFloat(k.dt, plane[(y*k.w+x)*e:]); return v }
			for ph := 0; ph < k.oh; ph++ {
				for pw := 0; pw < k.ow; pw++ {
					acc := 0.0
					first := true
					for iy := 0; iy < gh; iy++ {
						y := sh + float64(ph)*bh + (float64(iy)+0.5)*bh/float64(gh)
						for ix := 0; ix < gw; ix++ {
							x := sw + float64(pw)*bw + (float64(ix)+0.5)*bw/float64(gw)
							if y < -1 || y > float64(k.h) || x < -1 || x > float64(k.w) {
								if k.max && first {
									acc, first = 0, false
								}
								continue
							}
							y, x := math.Max(y, 0), math.Max(x, 0)
							yl, xl := int(y), int(x)
							yh, xh := yl+1, xl+1
							if yl >= k.h-1 {
								yl, yh, y = k.h-1, k.h-1, float64(k.h-1)
							}
							if xl >= k.w-1 {
								xl, xh, x = k.w-1, k.w-1, float64(k.w-1)
							}
							ly, lx := y-float64(yl), x-float64(xl)
							hy, hx := 1-ly, 1-lx
							v1, v2, v3, v4 := hy*hx*px(yl, xl), hy*lx*px(yl, xh), ly*hx*px(yh, xl), ly*lx*px(yh, xh)
							if k.max {
								m := math.Max(math.Max(v1, v2), math.Max(v3, v4))
								if first || m > acc {
									acc, first = m, false
								}
							} else {
								acc += v1 + v2 + v3 + v4
							}
						}
					}
					if !k.max {
						acc /= count
					}
					storeFloat(k.dt, out[0][(((r*k.c+ch)*k.oh+ph)*k.ow+pw)*e:], acc)
				}
			}
		}
	}
}

type melKernel struct {
	dt ir.DType
	v  []float64
}

func buildMelWeightMatrix(c *buildContext) (Kernel, int64, error) {
	bins, dft, rate, lo, hi, err := ir.MelWeightMatrixArgs(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	y := c.out(0)
	if _, ok := loadFloat(y.DType, make([]byte, 8)); !ok {
		return nil, 0, c.unsupported(y.DType)
	}
	spec := int(dft/2 + 1)
	nb := int(bins)
	mel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	loM, hiM := mel(lo), mel(hi)
	step := (hiM - loM) / float64(nb+2)
	freq := make([]int, nb+2)
	for i := range freq {
		f := 700 * (math.Pow(10, (float64(i)*step+loM)/2595) - 1)
		freq[i] = int(math.Floor(float64(dft+1) * f / float64(rate)))
	}
	v := make([]float64, spec*nb)
	set := func(j, i int, x float64) {
		if j >= 0 && j < spec {
			v[j*nb+i] = x
		}
	}
	for i := 0; i < nb; i++ {
		l, m, h := freq[i], freq[i+1], freq[i+2]
		if m == l {
			set(m, i, 1)
		} else {
			for j := l; j <= m; j++ {
				set(j, i, float64(j-l)/float64(m-l))
			}
		}
		if h > m {
			for j := m; j < h; j++ {
				set(j, i, float64(h-j)/float64(h-m))
			}
		}
	}
	return &melKernel{dt: y.DType, v: v}, 0, nil
}

func (k *melKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	for i, x := range k.v {
		storeFloat(k.dt, out[0][i*e:], x)
	}
}
