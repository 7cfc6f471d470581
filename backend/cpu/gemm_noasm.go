//go:build !amd64

package cpu

import "unsafe"

// useAsmKernel is false: this platform has no assembly micro-kernel.
var useAsmKernel = false

// sgemm6x16 is the portable form of the amd64 micro-kernel (see
// gemm_amd64.go for the contract). gemm.run does not call it on this
// platform; it exists so that both builds share one call site.
func sgemm6x16(kb int, a, b, c *float32, ldc int, rb, cb *float32, mode int) {
	var acc [gemmMR][gemmNR]float32
	if kb > 0 {
		microGo(unsafe.Slice(a, kb*gemmMR), unsafe.Slice(b, kb*gemmNR), &acc)
	}
	cs := unsafe.Slice(c, (gemmMR-1)*ldc+gemmNR)
	for i := range gemmMR {
		row := cs[i*ldc:][:gemmNR]
		if mode != 0 {
			for j, v := range acc[i] {
				row[j] += v
			}
			continue
		}
		var r float32
		if rb != nil {
			r = *(*float32)(unsafe.Add(unsafe.Pointer(rb), 4*i))
		}
		for j, v := range acc[i] {
			if cb != nil {
				v += *(*float32)(unsafe.Add(unsafe.Pointer(cb), 4*j))
			}
			row[j] = v + r
		}
	}
}
