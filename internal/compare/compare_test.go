package compare

import (
	"math"
	"testing"
)

func TestRelL2(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		got, want []float32
		rel       float64
	}{
		{[]float32{1, 2}, []float32{1, 2}, 0},
		{[]float32{3, 4}, []float32{0, 0}, 5},
		{[]float32{1, 0}, []float32{0, 1}, math.Sqrt2},
		{[]float32{2, 0}, []float32{1, 0}, 1},
	} {
		if got := RelL2(tc.got, tc.want); math.Abs(got-tc.rel) > 1e-12 {
			t.Errorf("RelL2(%v, %v) = %v, want %v", tc.got, tc.want, got, tc.rel)
		}
	}
	if e := RelL2([]float32{nan}, []float32{1}); !math.IsNaN(e) || e <= 1e-4 {
		t.Errorf("a NaN output gave %v", e)
	}
}
