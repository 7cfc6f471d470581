//go:build !noasm

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

// wgInB4 is the F(4×4, 3×3) input transform of n tiles of sixteen
// channels (winogradb_amd64.s): tile k's 6×6 patch has its row i, column
// j at src + k·ts + i·rs + 64·j bytes (sixteen floats, a channel a lane);
// value ξ of its transform goes to v + 64·k + ξ·vxi bytes. tmp holds 36
// vectors. It needs AVX-512F (dw512).
//
//go:noescape
func wgInB4(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32)

// wgOutB4 is the F(4×4, 3×3) output transform of n tiles of sixteen
// channels: tile k's products, value ξ at m + 64·k + ξ·mxi bytes, give
// its 4×4 outputs, with the biases at bias (or none) added and clamped to
// lim (or not), stored row i, column j at y + k·ts + i·ys + 64·j bytes.
// tmp holds 24 vectors. It needs AVX-512F (dw512).
//
//go:noescape
func wgOutB4(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32)

// wgInB2 is wgInB4 for F(2×2, 3×3): 4×4 patches, 16 values ξ.
//
//go:noescape
func wgInB2(v *float32, vxi int, src *float32, rs, ts, n int, tmp *float32)

// wgOutB2 is wgOutB4 for F(2×2, 3×3): 16 values ξ, 2×2 outputs.
//
//go:noescape
func wgOutB2(y *float32, ys, ts int, m *float32, mxi, n int, bias, lim, tmp *float32)
