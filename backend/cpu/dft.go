package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// DFT and STFT by the direct O(n²) sum (the conformance sizes are small;
// a fast transform can replace it when models need one).

type dftKernel struct {
	dt                    ir.DType
	outer, n, inner, comp int // input [outer, n, inner, comp]
	length, outLen        int
	inverse               bool
}

func buildDFT(c *buildContext) (Kernel, int64, error) {
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	axis, length, outLen, err := ir.DFTGeometry(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(x.Shape)
	r := len(s)
	return &dftKernel{dt: x.DType, outer: prod(s[:axis]), n: s[axis], inner: prod(s[axis+1 : r-1]), comp: s[r-1],
		length: int(length), outLen: int(outLen), inverse: c.attrs().Int("inverse", 0) != 0}, 0, nil
}

func (k *dftKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	sign := -1.0
	if k.inverse {
		sign = 1
	}
	for o := 0; o < k.outer; o++ {
		for j := 0; j < k.inner; j++ {
			for f := 0; f < k.outLen; f++ {
				var re, im float64
				for t := 0; t < min(k.n, k.length); t++ {
					base := ((o*k.n+t)*k.inner + j) * k.comp
					xr, _ := loadFloat(k.dt, in[0][base*e:])
					xi := 0.0
					if k.comp == 2 {
						xi, _ = loadFloat(k.dt, in[0][(base+1)*e:])
					}
					a := sign * 2 * math.Pi * float64(f) * float64(t) / float64(k.length)
					cs, sn := math.Cos(a), math.Sin(a)
					re += xr*cs - xi*sn
					im += xr*sn + xi*cs
				}
				if k.inverse {
					re, im = re/float64(k.length), im/float64(k.length)
				}
				ob := ((o*k.outLen+f)*k.inner + j) * 2
				storeFloat(k.dt, out[0][ob*e:], re)
				storeFloat(k.dt, out[0][(ob+1)*e:], im)
			}
		}
	}
}

type stftKernel struct {
	dt                         ir.DType
	batch, n, comp             int
	step, length, frames, bins int
	window                     bool
}

func buildSTFT(c *buildContext) (Kernel, int64, error) {
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	step, length, frames, bins, err := ir.STFTGeometry(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if wd := c.in(2); wd != nil && wd.DType != x.DType {
		return nil, 0, c.errorf("window is %s, want %s", wd.DType, x.DType)
	}
	s := ints(x.Shape)
	return &stftKernel{dt: x.DType, batch: s[0], n: s[1], comp: s[2], step: int(step), length: int(length),
		frames: int(frames), bins: int(bins), window: c.in(2) != nil}, 0, nil
}

func (k *stftKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	for b := 0; b < k.batch; b++ {
		for fr := 0; fr < k.frames; fr++ {
			for f := 0; f < k.bins; f++ {
				var re, im float64
				for t := 0; t < k.length; t++ {
					base := (b*k.n + fr*k.step + t) * k.comp
					xr, _ := loadFloat(k.dt, in[0][base*e:])
					xi := 0.0
					if k.comp == 2 {
						xi, _ = loadFloat(k.dt, in[0][(base+1)*e:])
					}
					if k.window {
						wv, _ := loadFloat(k.dt, in[2][t*e:])
						xr, xi = xr*wv, xi*wv
					}
					a := -2 * math.Pi * float64(f) * float64(t) / float64(k.length)
					cs, sn := math.Cos(a), math.Sin(a)
					re += xr*cs - xi*sn
					im += xr*sn + xi*cs
				}
				ob := ((b*k.frames+fr)*k.bins + f) * 2
				storeFloat(k.dt, out[0][ob*e:], re)
				storeFloat(k.dt, out[0][(ob+1)*e:], im)
			}
		}
	}
}
