package cpu

// Broadcasting binary loops. Each handles a run in which a and b advance by
// sa and sb elements (0 or 1, not both 0; see binFn). o may be the same
// memory as a full-length operand.

func addLoop[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] + b[i]
		}
	case sb == 0:
		addScalar(o, a, b[0])
	default:
		addScalar(o, b, a[0])
	}
}

func addScalar[T number](o, a []T, s T) {
	a = a[:len(o)]
	for i := range o {
		o[i] = a[i] + s
	}
}

func subLoop[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] - b[i]
		}
	case sb == 0:
		s := b[0]
		a = a[:len(o)]
		for i := range o {
			o[i] = a[i] - s
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			o[i] = s - b[i]
		}
	}
}

func mulLoop[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] * b[i]
		}
	case sb == 0:
		mulScalar(o, a, b[0])
	default:
		mulScalar(o, b, a[0])
	}
}

func mulScalar[T number](o, a []T, s T) {
	a = a[:len(o)]
	for i := range o {
		o[i] = a[i] * s
	}
}

// divLoop divides; integer division truncates toward zero like C, and an
// integer division by zero gives 0 instead of trapping.
func divLoop[T number](o, a, b []T, sa, sb int) {
	var z T
	switch any(z).(type) {
	case float32, float64:
		divFloat(o, a, b, sa, sb)
	default:
		divInt(o, a, b, sa, sb)
	}
}

func divFloat[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = a[i] / b[i]
		}
	case sb == 0:
		s := b[0]
		a = a[:len(o)]
		for i := range o {
			o[i] = a[i] / s
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			o[i] = s / b[i]
		}
	}
}

func divInt[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			if d := b[i]; d != 0 {
				o[i] = a[i] / d
			} else {
				o[i] = 0
			}
		}
	case sb == 0:
		s := b[0]
		if s == 0 {
			fill(o, 0)
			return
		}
		a = a[:len(o)]
		for i := range o {
			o[i] = a[i] / s
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			if d := b[i]; d != 0 {
				o[i] = s / d
			} else {
				o[i] = 0
			}
		}
	}
}

// maxLoop takes the larger operand; a NaN in either wins, as in numpy.
func maxLoop[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			x, y := a[i], b[i]
			if y > x || y != y {
				x = y
			}
			o[i] = x
		}
	case sb == 0:
		maxScalar(o, a, b[0])
	default:
		maxScalar(o, b, a[0])
	}
}

func maxScalar[T number](o, a []T, s T) {
	a = a[:len(o)]
	if s != s {
		fill(o, s)
		return
	}
	for i := range o {
		x := a[i]
		if s > x {
			x = s
		}
		o[i] = x
	}
}

// minLoop takes the smaller operand; a NaN in either wins.
func minLoop[T number](o, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			x, y := a[i], b[i]
			if y < x || y != y {
				x = y
			}
			o[i] = x
		}
	case sb == 0:
		minScalar(o, a, b[0])
	default:
		minScalar(o, b, a[0])
	}
}

func minScalar[T number](o, a []T, s T) {
	a = a[:len(o)]
	if s != s {
		fill(o, s)
		return
	}
	for i := range o {
		x := a[i]
		if s < x {
			x = s
		}
		o[i] = x
	}
}

// divByCountLoop divides every element by a[0] (Mean's final step).
func divByCountLoop[T number](d, s []T, a args) {
	n := T(a[0])
	s = s[:len(d)]
	for i := range d {
		d[i] = s[i] / n
	}
}

func b2u(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}

func eqLoop[T comparable](o []uint8, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] == b[i])
		}
	case sb == 0:
		s := b[0]
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] == s)
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			o[i] = b2u(s == b[i])
		}
	}
}

func ltLoop[T number](o []uint8, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] < b[i])
		}
	case sb == 0:
		s := b[0]
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] < s)
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			o[i] = b2u(s < b[i])
		}
	}
}

func gtLoop[T number](o []uint8, a, b []T, sa, sb int) { ltLoop(o, b, a, sb, sa) }

func leLoop[T number](o []uint8, a, b []T, sa, sb int) {
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:len(o)], b[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] <= b[i])
		}
	case sb == 0:
		s := b[0]
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] <= s)
		}
	default:
		s := a[0]
		b = b[:len(o)]
		for i := range o {
			o[i] = b2u(s <= b[i])
		}
	}
}

func geLoop[T number](o []uint8, a, b []T, sa, sb int) { leLoop(o, b, a, sb, sa) }

// Logic on booleans; any non-zero byte counts as true.

func andLoop(o []uint8, a, b []uint8, sa, sb int) {
	if sa == 0 {
		a, b, sa, sb = b, a, sb, sa
	}
	if sb == 0 {
		if b[0] == 0 {
			fill(o, 0)
			return
		}
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] != 0)
		}
		return
	}
	a, b = a[:len(o)], b[:len(o)]
	for i := range o {
		o[i] = b2u(a[i] != 0 && b[i] != 0)
	}
}

func orLoop(o []uint8, a, b []uint8, sa, sb int) {
	if sa == 0 {
		a, b, sa, sb = b, a, sb, sa
	}
	if sb == 0 {
		if b[0] != 0 {
			fill(o, 1)
			return
		}
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u(a[i] != 0)
		}
		return
	}
	a, b = a[:len(o)], b[:len(o)]
	for i := range o {
		o[i] = b2u(a[i] != 0 || b[i] != 0)
	}
}

func xorLoop(o []uint8, a, b []uint8, sa, sb int) {
	if sa == 0 {
		a, b, sa, sb = b, a, sb, sa
	}
	if sb == 0 {
		s := b[0] != 0
		a = a[:len(o)]
		for i := range o {
			o[i] = b2u((a[i] != 0) != s)
		}
		return
	}
	a, b = a[:len(o)], b[:len(o)]
	for i := range o {
		o[i] = b2u((a[i] != 0) != (b[i] != 0))
	}
}
