//go:build !amd64 || noasm

package quant

import "github.com/berth-ml/berth/weights/ggml"

// asmImpls is empty: there is no assembly on this platform or build.
func asmImpls(t ggml.Type) []impl { return nil }

// quantizeQ8_0Asm: there is no assembly here.
func quantizeQ8_0Asm(a []byte, x []float32, bias bool, xv []byte, xs []float32) bool {
	return false
}
