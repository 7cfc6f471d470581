//go:build !amd64 || noasm

package cpu

// arithAsm is false: there is no assembly kernel on this platform.
var arithAsm = false

// arith512 is false likewise.
var arith512 = false

func arithAVX2(op int, o, a, b *float32, n, sa, sb int) { panic("arithAVX2 without assembly") }

func arithAVX512(op int, o, a, b *float32, n, sa, sb int) { panic("arithAVX512 without assembly") }
