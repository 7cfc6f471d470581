package cpu

import (
	"math"

	"github.com/berth-ml/berth/backend/cpu/vmath"
)

// Softmax loops over one vector.

// softmaxRow is the contiguous case; y may be x. The exponentials and the
// scaling are vectorised (vmath.go); the sum is accumulated in float64.
func softmaxRow(y, x []float32, log bool) {
	x = x[:len(y)]
	m := vmath.Max(x)
	if log {
		// Sum the exponentials through a buffer: y may be x, which is
		// still needed.
		var buf [64]float32
		var sum float64
		for i := 0; i < len(x); i += len(buf) {
			c := x[i:min(i+len(buf), len(x))]
			sum += vmath.ExpSum(buf[:len(c)], c, m)
		}
		off := float64(m) + math.Log(sum)
		for i, v := range x {
			y[i] = float32(float64(v) - off)
		}
		return
	}
	sum := vmath.ExpSum(y, x, m)
	vmath.Scale(y, y, float32(1/sum))
}

// softmaxStrided handles n elements spaced str apart; y may be x.
func softmaxStrided(y, x []float32, n, str int, log bool) {
	m := float32(math.Inf(-1))
	for j := 0; j < n; j++ {
		if v := x[j*str]; v > m {
			m = v
		}
	}
	mm := float64(m)
	var sum float64
	if log {
		for j := 0; j < n; j++ {
			sum += float64(vmath.Exp(x[j*str] - m))
		}
		ls := math.Log(sum)
		for j := 0; j < n; j++ {
			y[j*str] = float32(float64(x[j*str]) - mm - ls)
		}
		return
	}
	for j := 0; j < n; j++ {
		e := vmath.Exp(x[j*str] - m)
		sum += float64(e)
		y[j*str] = e
	}
	inv := 1 / sum
	for j := 0; j < n; j++ {
		y[j*str] = float32(float64(y[j*str]) * inv)
	}
}
