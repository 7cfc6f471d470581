package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// TestResize checks bilinear (half_pixel, align_corners) and nearest
// (asymmetric, floor) resizing of the two spatial axes against direct
// formulas.
func TestResize(t *testing.T) {
	xs := []int64{2, 3, 5, 7}
	for _, c := range []struct {
		mode, ctm, nearest string
		oh, ow             int64
	}{
		{"linear", "half_pixel", "", 10, 14},
		{"linear", "half_pixel", "", 3, 4},
		{"linear", "align_corners", "", 9, 5},
		{"linear", "asymmetric", "", 8, 11},
		{"nearest", "asymmetric", "floor", 10, 21},
		{"nearest", "half_pixel", "round_prefer_ceil", 3, 9},
	} {
		t.Run(fmt.Sprintf("%s/%s/%dx%d", c.mode, c.ctm, c.oh, c.ow), func(t *testing.T) {
			x := randF32(int(elems(xs)))
			ys := []int64{2, 3, c.oh, c.ow}
			coord := func(o, in, out int64) float64 {
				s := float64(out) / float64(in)
				switch c.ctm {
				case "half_pixel":
					return (float64(o)+0.5)/s - 0.5
				case "align_corners":
					return float64(o) * float64(in-1) / float64(out-1)
				}
				return float64(o) / s
			}
			clampI := func(v, n int64) int64 { return max(0, min(v, n-1)) }
			want := make([]float64, elems(ys))
			for i := range want {
				idx := unravel(int64(i), ys)
				plane := x[(idx[0]*3+idx[1])*35:]
				at := func(h, w int64) float64 { return float64(plane[clampI(h, 5)*7+clampI(w, 7)]) }
				fh, fw := coord(idx[2], 5, c.oh), coord(idx[3], 7, c.ow)
				if c.mode == "nearest" {
					pick := func(f float64) int64 {
						if c.nearest == "floor" {
							return int64(math.Floor(f))
						}
						fl := math.Floor(f)
						if f-fl >= 0.5 {
							return int64(fl) + 1
						}
						return int64(fl)
					}
					want[i] = at(pick(fh), pick(fw))
					continue
				}
				h0, w0 := math.Floor(fh), math.Floor(fw)
				rh, rw := fh-h0, fw-w0
				a, b := int64(h0), int64(w0)
				want[i] = (1-rh)*((1-rw)*at(a, b)+rw*at(a, b+1)) + rh*((1-rw)*at(a+1, b)+rw*at(a+1, b+1))
			}
			tg := newTGraph(13)
			attrs := ir.Attrs{"mode": {Kind: ir.AttrString, String: c.mode}, "coordinate_transformation_mode": {Kind: ir.AttrString, String: c.ctm}}
			if c.nearest != "" {
				attrs["nearest_mode"] = ir.Attr{Kind: ir.AttrString, String: c.nearest}
			}
			n := tg.node("Resize", attrs, []ir.TensorID{tg.input("x", ir.Float32, xs...), ir.NoTensor, ir.NoTensor,
				tg.constant("sizes", ir.Int64, i64Bytes(ys), 4)}, out{ir.Float32, ys})
			near(t, "Y", asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 1e-6, 1e-6)
		})
	}
}
