package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// gridSampleKernel samples a 2-D image at normalised grid positions, as
// ONNX's GridSample-16 (and PyTorch's grid_sample) does.
type gridSampleKernel struct {
	dt, gdt            ir.DType
	n, c, h, w, ho, wo int
	mode, padding      string
	align              bool
}

func buildGridSample(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, grid := c.in(0), c.in(1)
	if !isFloatType(x.DType) || !isFloatType(grid.DType) {
		return nil, 0, c.errorf("input %s and grid %s must be floating point", x.DType, grid.DType)
	}
	at := c.attrs()
	k := &gridSampleKernel{dt: x.DType, gdt: grid.DType, mode: at.String("mode", "bilinear"),
		padding: at.String("padding_mode", "zeros"), align: at.Int("align_corners", 0) != 0}
	switch k.mode {
	case "linear", "cubic":
		// Opset 20's names for the 2-D modes.
		k.mode = "bi" + k.mode
	case "bilinear", "nearest", "bicubic":
	default:
		return nil, 0, c.errorf("mode %q is not supported", k.mode)
	}
	switch k.padding {
	case "zeros", "border", "reflection":
	default:
		return nil, 0, c.errorf("padding_mode %q is not supported", k.padding)
	}
	s, gs := ints(x.Shape), ints(grid.Shape)
	k.n, k.c, k.h, k.w, k.ho, k.wo = s[0], s[1], s[2], s[3], gs[1], gs[2]
	return k, 0, nil
}

// reflectCoord folds x into [lo, hi] by reflection at both ends.
func reflectCoord(x, lo, hi float64) float64 {
	rng := hi - lo
	if rng <= 0 {
		return lo
	}
	if x < lo {
		d := lo - x
		n := math.Floor(d / rng)
		r := d - n*rng
		if int64(n)%2 == 0 {
			return lo + r
		}
		return hi - r
	}
	if x > hi {
		d := x - hi
		n := math.Floor(d / rng)
		r := d - n*rng
		if int64(n)%2 == 0 {
			return hi - r
		}
		return lo + r
	}
	return x
}

func (k *gridSampleKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, ge := k.dt.Size(), k.gdt.Size()
	lo := func(size int) (float64, float64) {
		if k.align {
			return 0, float64(size - 1)
		}
		return -0.5, float64(size) - 0.5
	}
	xlo, xhi := lo(k.w)
	ylo, yhi := lo(k.h)
	denorm := func(v float64, size int) float64 {
		if k.align {
			return (v + 1) / 2 * float64(size-1)
		}
		return ((v+1)*float64(size) - 1) / 2
	}
	for b := 0; b < k.n; b++ {
		for ch := 0; ch < k.c; ch++ {
			img := in[0][(b*k.c+ch)*k.h*k.w*e:]
			pixel := func(y, x int) float64 {
				switch k.padding {
				case "zeros":
					if x < 0 || x >= k.w || y < 0 || y >= k.h {
						return 0
					}
				case "border":
					x, y = min(max(x, 0), k.w-1), min(max(y, 0), k.h-1)
				case "reflection":
					x = int(reflectCoord(float64(x), xlo, xhi))
					y = int(reflectCoord(float64(y), ylo, yhi))
					x, y = min(max(x, 0), k.w-1), min(max(y, 0), k.h-1)
				}
				v, _ := loadFloat(k.dt, img[(y*k.w+x)*e:])
				return v
			}
			for i := 0; i < k.ho; i++ {
				for j := 0; j < k.wo; j++ {
					gi := ((b*k.ho+i)*k.wo + j) * 2
					gx, _ := loadFloat(k.gdt, in[1][gi*ge:])
					gy, _ := loadFloat(k.gdt, in[1][(gi+1)*ge:])
					x, y := denorm(gx, k.w), denorm(gy, k.h)
					// Nearest and bilinear move an outside location in
					// first; bicubic pads each of its taps alone (as
					// PyTorch and ONNX Runtime do).
					switch pad := k.padding; {
					case k.mode == "bicubic":
					case pad == "border":
						x, y = math.Min(math.Max(x, 0), float64(k.w-1)), math.Min(math.Max(y, 0), float64(k.h-1))
					case pad == "reflection":
						x, y = reflectCoord(x, xlo, xhi), reflectCoord(y, ylo, yhi)
					}
					var v float64
					switch k.mode {
					case "nearest":
						v = pixel(int(math.RoundToEven(y)), int(math.RoundToEven(x)))
					case "bilinear":
						x0, y0 := math.Floor(x), math.Floor(y)
						dx, dy := x-x0, y-y0
						xi, yi := int(x0), int(y0)
						v = (1-dy)*((1-dx)*pixel(yi, xi)+dx*pixel(yi, xi+1)) + dy*((1-dx)*pixel(yi+1, xi)+dx*pixel(yi+1, xi+1))
					case "bicubic":
						x0, y0 := math.Floor(x), math.Floor(y)
						wx, wy := cubicWeights(x-x0), cubicWeights(y-y0)
						xi, yi := int(x0)-1, int(y0)-1
						for a := 0; a < 4; a++ {
							row := 0.0
							for bb := 0; bb < 4; bb++ {
								row += wx[bb] * pixel(yi+a, xi+bb)
							}
							v += wy[a] * row
						}
					}
					storeFloat(k.dt, out[0][(((b*k.c+ch)*k.ho+i)*k.wo+j)*e:], v)
				}
			}
		}
	}
}

// cubicWeights are the four weights of the cubic convolution (A = -0.75)
// at fractional offset t.
func cubicWeights(t float64) [4]float64 {
	const a = -0.75
	f1 := func(x float64) float64 { return ((a+2)*x-(a+3))*x*x + 1 }
	f2 := func(x float64) float64 { return ((a*x-5*a)*x+8*a)*x - 4*a }
	return [4]float64{f2(t + 1), f1(t), f1(1 - t), f2(2 - t)}
}
