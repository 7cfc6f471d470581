package compare

import (
	"fmt"
	"math"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// AllClose compares two tensors' little-endian bytes of element type dt
// as ONNX's backend test runner does: floats as
// numpy.testing.assert_allclose(rtol=1e-3, atol=1e-7) (NaN matches NaN),
// every other type exactly. It returns "" when they agree, else what
// differs.
func AllClose(dt ir.DType, got, want []byte) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d bytes, the reference has %d", len(got), len(want))
	}
	if !dt.IsFloat() {
		if string(got) != string(want) {
			i := 0
			for got[i] == want[i] {
				i++
			}
			return fmt.Sprintf("values differ (first at element %d)", i/dt.Size())
		}
		return ""
	}
	g, w := Float64s(dt, got), Float64s(dt, want)
	bad, first := 0, -1
	for i := range g {
		if math.IsNaN(g[i]) && math.IsNaN(w[i]) || g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= 1e-7+1e-3*math.Abs(w[i])) {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	if bad > 0 {
		return fmt.Sprintf("%d of %d values differ; element %d is %v, want %v", bad, len(g), first, g[first], w[first])
	}
	return ""
}

// Float64s reads the floats of element type dt (float32, float64, float16
// or bfloat16) in the little-endian bytes b, at any alignment.
func Float64s(dt ir.DType, b []byte) []float64 {
	b = append(make([]byte, 0, len(b)+8), b...) // aligned for the typed views
	v := make([]float64, len(b)/max(dt.Size(), 1))
	for i := range v {
		switch dt {
		case ir.Float32:
			v[i] = float64(raw.F32(b)[i])
		case ir.Float64:
			v[i] = raw.F64(b)[i]
		case ir.Float16:
			v[i] = float64(dtype.F32FromF16(raw.U16(b)[i]))
		case ir.BFloat16:
			v[i] = float64(dtype.F32FromBF16(raw.U16(b)[i]))
		}
	}
	return v
}
