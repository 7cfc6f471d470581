package cpu

import "math"

// Elementwise loops of one input. d and s have equal length and may be the
// same memory: every element is read before its slot is written.

func reluLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		if x < 0 {
			x = 0
		}
		d[i] = x
	}
}

func leakyReluLoop[T float](d, s []T, a args) {
	alpha := T(farg(a, 0))
	s = s[:len(d)]
	for i, x := range s {
		if x < 0 {
			x *= alpha
		}
		d[i] = x
	}
}

func sigmoidLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(1 / (1 + math.Exp(-float64(x))))
	}
}

func hardSigmoidLoop[T float](d, s []T, a args) {
	alpha, beta := T(farg(a, 0)), T(farg(a, 1))
	s = s[:len(d)]
	for i, x := range s {
		d[i] = clamp01(alpha*x + beta)
	}
}

func hardSwishLoop[T float](d, s []T, a args) {
	alpha, beta := T(farg(a, 0)), T(farg(a, 1))
	s = s[:len(d)]
	for i, x := range s {
		d[i] = x * clamp01(alpha*x+beta)
	}
}

func clamp01[T float](v T) T {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

func tanhLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Tanh(float64(x)))
	}
}

func erfLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Erf(float64(x)))
	}
}

func expLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Exp(float64(x)))
	}
}

func logLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Log(float64(x)))
	}
}

func sqrtLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Sqrt(float64(x)))
	}
}

func negLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = -x
	}
}

func absLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		if x < 0 {
			x = -x
		}
		d[i] = x
	}
}

func signLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		switch {
		case x > 0:
			x = 1
		case x < 0:
			x = 0
			x--
		}
		d[i] = x // zero and NaN stay as they are
	}
}

func reciprocalLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = 1 / x
	}
}

func floorLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Floor(float64(x)))
	}
}

func ceilLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Ceil(float64(x)))
	}
}

func roundLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.RoundToEven(float64(x)))
	}
}

func sinLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Sin(float64(x)))
	}
}

func cosLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Cos(float64(x)))
	}
}

func softplusLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		v := float64(x)
		if v > 0 {
			v += math.Log1p(math.Exp(-v))
		} else {
			v = math.Log1p(math.Exp(v))
		}
		d[i] = T(v)
	}
}

func eluLoop[T float](d, s []T, a args) {
	alpha := farg(a, 0)
	s = s[:len(d)]
	for i, x := range s {
		if x < 0 {
			x = T(alpha * math.Expm1(float64(x)))
		}
		d[i] = x
	}
}

func seluLoop[T float](d, s []T, a args) {
	alpha, gamma := farg(a, 0), farg(a, 1)
	s = s[:len(d)]
	for i, x := range s {
		v := float64(x)
		if v <= 0 {
			v = alpha * math.Expm1(v)
		}
		d[i] = T(gamma * v)
	}
}

// clipLoop clamps to [a[0], a[1]] (float64 bits for floats, int64 for
// integers). With min > max every element becomes max, as ONNX specifies.
func clipLoop[T number](d, s []T, a args) {
	lo, hi := boundsOf[T](a)
	clampLoop(d, s, lo, hi)
}

// clampLoop sets d[i] to s[i] clamped to [lo, hi] (a NaN passes through).
func clampLoop[T number](d, s []T, lo, hi T) {
	s = s[:len(d)]
	for i, x := range s {
		if x < lo {
			x = lo
		}
		if x > hi {
			x = hi
		}
		d[i] = x
	}
}

// boundsOf decodes Clip's bounds for T.
func boundsOf[T number](a args) (lo, hi T) {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return T(farg(a, 0)), T(farg(a, 1))
	case uint64:
		return T(uint64(a[0])), T(uint64(a[1]))
	}
	return T(a[0]), T(a[1])
}

func squareLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = x * x
	}
}

func cubeLoop[T number](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = x * x * x
	}
}

func copyLoop[T any](d, s []T, _ args) { copy(d, s) }

// notLoop negates booleans (stored one byte each).
func notLoop(d, s []byte, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		if x == 0 {
			d[i] = 1
		} else {
			d[i] = 0
		}
	}
}

func tanLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Tan(float64(x)))
	}
}

func asinLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Asin(float64(x)))
	}
}

func acosLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Acos(float64(x)))
	}
}

func atanLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Atan(float64(x)))
	}
}

func sinhLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Sinh(float64(x)))
	}
}

func coshLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Cosh(float64(x)))
	}
}

func asinhLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Asinh(float64(x)))
	}
}

func acoshLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Acosh(float64(x)))
	}
}

func atanhLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = T(math.Atanh(float64(x)))
	}
}

func softsignLoop[T float](d, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		a := x
		if a < 0 {
			a = -a
		}
		d[i] = x / (1 + a)
	}
}

func thresholdedReluLoop[T float](d, s []T, a args) {
	alpha := T(farg(a, 0))
	s = s[:len(d)]
	for i, x := range s {
		if !(x > alpha) {
			x = 0
		}
		d[i] = x
	}
}

func shrinkLoop[T float](d, s []T, a args) {
	bias, lambd := T(farg(a, 0)), T(farg(a, 1))
	s = s[:len(d)]
	for i, x := range s {
		switch {
		case x < -lambd:
			x += bias
		case x > lambd:
			x -= bias
		default:
			x = 0
		}
		d[i] = x
	}
}

// isNaNLoop and isInfLoop test floats into booleans; a[0] and a[1] say
// whether IsInf detects negative and positive infinities.
func isNaNLoop[T float](d []uint8, s []T, _ args) {
	s = s[:len(d)]
	for i, x := range s {
		d[i] = b2u(x != x)
	}
}

func isInfLoop[T float](d []uint8, s []T, a args) {
	neg, pos := a[0] != 0, a[1] != 0
	s = s[:len(d)]
	for i, x := range s {
		v := float64(x)
		d[i] = b2u((pos && math.IsInf(v, 1)) || (neg && math.IsInf(v, -1)))
	}
}
