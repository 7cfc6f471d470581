package cpu

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// Window functions, Compress, Det and DynamicQuantizeLinear.

type windowKernel struct {
	dt ir.DType
	v  []float64
}

func buildWindow(c *buildContext) (Kernel, int64, error) {
	y := c.out(0)
	if _, ok := loadFloat(y.DType, make([]byte, 8)); !ok {
		return nil, 0, c.unsupported(y.DType)
	}
	n := int(y.Shape[0])
	den := float64(n)
	if c.attrs().Int("periodic", 1) == 0 {
		den = float64(n - 1)
	}
	k := &windowKernel{dt: y.DType, v: make([]float64, n)}
	for i := range k.v {
		x := 2 * math.Pi * float64(i) / den
		switch c.n.Op {
		case "HannWindow":
			k.v[i] = 0.5 - 0.5*math.Cos(x)
		case "HammingWindow":
			k.v[i] = 25.0/46 - (1-25.0/46)*math.Cos(x)
		case "BlackmanWindow":
			k.v[i] = 0.42 - 0.5*math.Cos(x) + 0.08*math.Cos(2*x)
		}
	}
	return k, 0, nil
}

func (k *windowKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	for i, v := range k.v {
		storeFloat(k.dt, out[0][i*e:], v)
	}
}

// compressKernel copies the kept slices: runs of inner elements of each of
// outer blocks, at the positions the constant condition selects.
type compressKernel struct {
	esize, outer, n, inner int
	keep                   []int
}

func buildCompress(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, cond := c.in(0), c.in(1)
	if !cond.IsConst() {
		return nil, 0, fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("condition", cond.Name))
	}
	v, err := cond.Int64s()
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	s := ints(x.Shape)
	k := &compressKernel{esize: x.DType.Size(), outer: 1, n: prod(s), inner: 1}
	if c.attrs().Has("axis") {
		axis, err := ir.NormAxis(c.attrs().Int("axis", 0), len(s))
		if err != nil {
			return nil, 0, c.errorf("%v", err)
		}
		k.outer, k.n, k.inner = prod(s[:axis]), s[axis], prod(s[axis+1:])
	}
	for i, b := range v {
		if b != 0 {
			k.keep = append(k.keep, i)
		}
	}
	return k, 0, nil
}

func (k *compressKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	copySlices(out[0], in[0], k.outer, k.n, k.inner*k.esize, k.keep)
}

// copySlices copies into dst, one after the other, the slices at positions
// pick of each of the outer blocks of src, which hold n slices of span
// bytes each.
func copySlices(dst, src []byte, outer, n, span int, pick []int) {
	o := 0
	for b := 0; b < outer; b++ {
		for _, i := range pick {
			s := (b*n + i) * span
			copy(dst[o:o+span], src[s:s+span])
			o += span
		}
	}
}

type detKernel struct {
	dt      ir.DType
	mats, m int
}

func buildDet(c *buildContext) (Kernel, int64, error) {
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, 0, c.unsupported(x.DType)
	}
	s := ints(x.Shape)
	m := s[len(s)-1]
	return &detKernel{dt: x.DType, mats: prod(s[:len(s)-2]), m: m}, int64(8 * m * m), nil
}

// Run computes each determinant by Gaussian elimination with partial
// pivoting.
func (k *detKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e, m := k.dt.Size(), k.m
	a := view[float64](scratch)[:m*m]
	for mat := 0; mat < k.mats; mat++ {
		for i := range a {
			a[i], _ = loadFloat(k.dt, in[0][(mat*m*m+i)*e:])
		}
		det := 1.0
		for col := 0; col < m; col++ {
			p := col
			for r := col + 1; r < m; r++ {
				if math.Abs(a[r*m+col]) > math.Abs(a[p*m+col]) {
					p = r
				}
			}
			if a[p*m+col] == 0 {
				det = 0
				break
			}
			if p != col {
				for j := 0; j < m; j++ {
					a[p*m+j], a[col*m+j] = a[col*m+j], a[p*m+j]
				}
				det = -det
			}
			det *= a[col*m+col]
			for r := col + 1; r < m; r++ {
				f := a[r*m+col] / a[col*m+col]
				for j := col; j < m; j++ {
					a[r*m+j] -= f * a[col*m+j]
				}
			}
		}
		storeFloat(k.dt, out[0][mat*e:], det)
	}
}

type dynQuantKernel struct{ n int }

func buildDynamicQuantize(c *buildContext) (Kernel, int64, error) {
	return &dynQuantKernel{n: int(c.in(0).Shape.Elements())}, 0, nil
}

func (k *dynQuantKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	x := f32s(in[0])[:k.n]
	lo, hi := float32(0), float32(0)
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	scale := (hi - lo) / 255
	zp := 0.0
	if scale != 0 {
		zp = math.Max(0, math.Min(255, math.RoundToEven(float64(-lo/scale))))
	}
	for i, v := range x {
		q := zp
		if scale != 0 {
			q = math.RoundToEven(float64(v/scale)) + zp
		}
		out[0][i] = byte(math.Max(0, math.Min(255, q)))
	}
	if s := outAt(out, 1); s != nil {
		f32s(s)[0] = scale
	}
	if z := outAt(out, 2); z != nil {
		z[0] = byte(zp)
	}
}
