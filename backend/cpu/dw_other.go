//go:build !amd64

package cpu

// dwAsm is false: there is no assembly kernel on this platform.
var dwAsm = false

func dwS1AVX2(o *float32, rp *[dwMaxK]*float32, w *float32, kh, kw, n int, bias float32) {
	panic("dwS1AVX2 without assembly")
}
