package cpu

import (
	"math"
	"testing"
)

// TestClampKernels runs Relu, Clip, Square and Cube on the assembly kernels and wants the
// bits of the Go loops, for every length up to 40, in place and not, on
// values that include NaN, ±0, ±Inf, subnormals and the bounds themselves.
func TestClampKernels(t *testing.T) {
	special := []float32{float32(math.NaN()), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-45, -1e-45, 6, -6, 0.5, -0.5, 3, 7, -1}
	var a args
	setFarg(&a, 0, 0)
	setFarg(&a, 1, 6)
	for n := 0; n <= 40; n++ {
		src := make([]float32, n)
		for i := range src {
			src[i] = special[(i*7+n)%len(special)] * float32(1+i%3)
		}
		for _, c := range []struct {
			name string
			asm  func(d, s []byte, a args)
			ref  func(d, s []float32, a args)
		}{{"relu", reluF32, reluLoop[float32]}, {"clip", clipF32, clipLoop[float32]},
			{"square", squareF32, squareLoop[float32]}, {"cube", cubeF32, cubeLoop[float32]}} {
			want := make([]float32, n)
			c.ref(want, src, a)
			got := make([]float32, n)
			c.asm(f32bytes(got), f32bytes(src), a)
			inPlace := append([]float32(nil), src...)
			c.asm(f32bytes(inPlace), f32bytes(inPlace), a)
			for i := range want {
				w := math.Float32bits(want[i])
				if math.Float32bits(got[i]) != w || math.Float32bits(inPlace[i]) != w {
					t.Fatalf("%s n=%d element %d (%v): got %v / %v in place, want %v", c.name, n, i, src[i], got[i], inPlace[i], want[i])
				}
			}
		}
	}
}
