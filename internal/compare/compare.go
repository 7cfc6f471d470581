package compare

import "math"

// RelL2 is the relative L2 error ‖got − want‖₂ / ‖want‖₂, or the absolute
// ‖got − want‖₂ when want is all zeros. A NaN in got makes it NaN, which
// fails every ≤ bound. got must hold at least len(want) values.
func RelL2(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		num += d * d
		den += float64(want[i]) * float64(want[i])
	}
	if den == 0 {
		return math.Sqrt(num)
	}
	return math.Sqrt(num / den)
}
