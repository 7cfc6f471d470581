//go:build !amd64 || noasm

package quant

// There are no AMX kernels on this platform or build.

const amxCPU = false

func amxPermit() bool { return false }

func amxPackQ4_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int) {
	panic("quant: no AMX kernels")
}

func amxPackQ8_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int) {
	panic("quant: no AMX kernels")
}

func amxHalves(ws *float32, halves *uint16, n int) { panic("quant: no AMX kernels") }

func amxTiles(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte) {
	panic("quant: no AMX kernels")
}

func amxPackQ4_K(panel *byte, w *byte, wRow int, rows int, nsb int) { panic("quant: no AMX kernels") }

func amxTilesMin(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte) {
	panic("quant: no AMX kernels")
}

func amxPackQ6_K(panel *byte, w *byte, wRow int, rows int, nsb int) { panic("quant: no AMX kernels") }
