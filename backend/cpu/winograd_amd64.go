package cpu

// wgIn is the Winograd input transform of n tiles of one tile row of one
// channel (see winograd_amd64.s). It needs AVX-512F (dw512).
//
//go:noescape
func wgIn(v *float32, vstep int, e *float32, p, n int)

// wgOut is the Winograd output transform of n tiles of one tile row of
// one output channel, with the bias and the clamp (see winograd_amd64.s).
// It needs AVX-512F (dw512).
//
//go:noescape
func wgOut(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32)

// wgIn4 is the F(4×4, 3×3) input transform of n tiles of one tile row of
// one channel (see winograd_amd64.s). It needs AVX-512F (dw512).
//
//go:noescape
func wgIn4(v *float32, vstep int, e *float32, p, n int)

// wgOut4 is the F(4×4, 3×3) output transform of n tiles of one tile row
// of one output channel, with the bias and the clamp (see
// winograd_amd64.s). It needs AVX-512F (dw512).
//
//go:noescape
func wgOut4(y *float32, ldy int, m *float32, mstep, n, cols, rows int, lim *float32, bias float32)
