//go:build !amd64 || noasm

package cpu

func wgIn(v *float32, vstep int, e *float32, p, n int) {
	panic("wgIn: no assembly on this platform")
}

func wgOut(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32) {
	panic("wgOut: no assembly on this platform")
}

func wgIn4(v *float32, vstep int, e *float32, p, n int) {
	panic("wgIn4: no assembly on this platform")
}

func wgOut4(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32) {
	panic("wgOut4: no assembly on this platform")
}

func wgInB4(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32) {
	panic("wgInB4: no assembly on this platform")
}

func wgOutB4(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32) {
	panic("wgOutB4: no assembly on this platform")
}

func wgInB2(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32) {
	panic("wgInB2: no assembly on this platform")
}

func wgOutB2(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32) {
	panic("wgOutB2: no assembly on this platform")
}
