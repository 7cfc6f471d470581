package cpu

import (
	"math"
	"testing"
)

// TestArithKernels runs the float32 vector loops against the Go loops for
// every operator, stride pattern and length up to 40, in place and not,
// and wants the same bits.
func TestArithKernels(t *testing.T) {
	special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-45, -3e-39, 1.5, -2.25, 1e30, -1e-30, 7, 0.1}
	ops := []struct {
		name string
		vec  binFn[float32, float32]
		ref  binFn[float32, float32]
	}{{"add", addF32, addLoop[float32]}, {"sub", subF32, subLoop[float32]},
		{"mul", mulF32, mulLoop[float32]}, {"div", divF32, divLoop[float32]}}
	for n := 1; n <= 40; n++ {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = special[(i*5+n)%len(special)] * float32(1+i%4)
			b[i] = special[(i*3+2*n)%len(special)] - float32(i%3)
		}
		for _, op := range ops {
			for _, st := range [][2]int{{1, 1}, {1, 0}, {0, 1}} {
				want, got := make([]float32, n), make([]float32, n)
				op.ref(want, a, b, st[0], st[1])
				op.vec(got, a, b, st[0], st[1])
				inPlace := append([]float32(nil), a...)
				if st[0] == 1 {
					op.vec(inPlace, inPlace, b, st[0], st[1])
				} else {
					copy(inPlace, want)
				}
				for i := range want {
					w := math.Float32bits(want[i])
					if math.Float32bits(got[i]) != w || math.Float32bits(inPlace[i]) != w {
						t.Fatalf("%s n=%d strides %v element %d: got %v / %v in place, want %v", op.name, n, st, i, got[i], inPlace[i], want[i])
					}
				}
			}
		}
	}
}
