package cpu

import "math"

// Softmax loops over one vector.

// softmaxRow is the contiguous case; y may be x.
func softmaxRow(y, x []float32, log bool) {
	x = x[:len(y)]
	m := float32(math.Inf(-1))
	for _, v := range x {
		if v > m {
			m = v
		}
	}
	mm := float64(m)
	var sum float64
	if log {
		for _, v := range x {
			sum += math.Exp(float64(v) - mm)
		}
		ls := math.Log(sum)
		for i, v := range x {
			y[i] = float32(float64(v) - mm - ls)
		}
		return
	}
	for i, v := range x {
		e := math.Exp(float64(v) - mm)
		sum += e
		y[i] = float32(e)
	}
	inv := 1 / sum
	for i, v := range y {
		y[i] = float32(float64(v) * inv)
	}
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
			sum += math.Exp(float64(x[j*str]) - mm)
		}
		ls := math.Log(sum)
		for j := 0; j < n; j++ {
			y[j*str] = float32(float64(x[j*str]) - mm - ls)
		}
		return
	}
	for j := 0; j < n; j++ {
		e := math.Exp(float64(x[j*str]) - mm)
		sum += e
		y[j*str] = float32(e)
	}
	inv := 1 / sum
	for j := 0; j < n; j++ {
		y[j*str] = float32(float64(y[j*str]) * inv)
	}
}
