package quant

import "github.com/berth-ml/berth/weights/ggml"

// impl is how products with one weight type run.
type impl struct {
	kind kind
	dot  dotFunc
	path string // "go", "avx2", "avx512bw", "avx512vnni", "avx512"
	tile tiling // for several activation rows at once, where there is one
}

// tiling is a kernel of a tile of y: the products of mr activation rows
// by nr weight rows, each output's the bits dot returns.
type tiling struct {
	f      tileFunc
	mr, nr int
}

// withTile is im with the tile kernel t.
func withTile(im impl, t tiling) impl {
	im.tile = t
	return im
}

// goImpls are the reference kernels.
var goImpls = [ggml.TypeCount]impl{
	ggml.Q8_0: {kindQ8_0, dotQ8_0Go, "go", tiling{tileQ8_0Go, goTileRows, 1}},
	ggml.Q4_0: {kindQ8_0, dotQ4_0Go, "go", tiling{tileQ4_0Go, goTileRows, 1}},
	ggml.Q4_1: {kindQ8_0, dotQ4_1Go, "go", tiling{}},
	ggml.Q5_0: {kindQ8_0, dotQ5_0Go, "go", tiling{}},
	ggml.Q5_1: {kindQ8_0, dotQ5_1Go, "go", tiling{}},
	ggml.Q4_K: {kindQ8_K, dotQ4_KGo, "go", tiling{}},
	ggml.Q5_K: {kindQ8_K, dotQ5_KGo, "go", tiling{}},
	ggml.Q6_K: {kindQ8_K, dotQ6_KGo, "go", tiling{}},
	ggml.F32:  {kindFloat, dotF32Go, "go", tiling{}},
	ggml.F16:  {kindFloat, dotF16Go, "go", tiling{tileF16Go, goTileRows, 1}},
	ggml.BF16: {kindFloat, dotBF16Go, "go", tiling{}},
}

// impls are the kernels products use: the fastest this CPU runs.
var impls = func() [ggml.TypeCount]impl {
	im := goImpls
	for t := range im {
		if v := asmImpls(ggml.Type(t)); len(v) > 0 {
			im[t] = v[0]
		}
	}
	return im
}()

// Paths lists the kernels for weights of type t that this build and CPU
// can run, the one MatMul uses first: "avx512vnni" (AVX-512 with
// VPDPBUSD), "avx512bw" (AVX-512 without VNNI), "avx512" (F16 and BF16),
// "avx2" and "go". Every one gives the same bits.
func Paths(t ggml.Type) []string {
	if !Supports(t) {
		return nil
	}
	var p []string
	for _, im := range asmImpls(t) {
		p = append(p, im.path)
	}
	return append(p, "go")
}
