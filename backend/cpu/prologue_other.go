//go:build !amd64 || noasm

package cpu

// prologueAsm is false: there is no assembly kernel on this platform.
var prologueAsm = false

func prologuePanelAVX2(d, s []float32, a, b []float64, rs, mode int) {
	panic("prologuePanelAVX2 without assembly")
}
