//go:build !amd64 || noasm

package cpu

// clampAsm is false: there is no assembly kernel on this platform.
var clampAsm = false

func reluAVX2(d, s []float32)                 { panic("reluAVX2 without assembly") }
func clipAVX2(d, s []float32, lo, hi float32) { panic("clipAVX2 without assembly") }

func powAVX2(d, s []float32, cube bool) { panic("powAVX2 without assembly") }

func maxIntoAVX2(d, s []float32) { panic("maxIntoAVX2 without assembly") }
