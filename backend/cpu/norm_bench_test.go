package cpu

import (
	"math/rand"
	"testing"
)

// Benchmarks of the Softmax and LayerNorm loops at BERT-base sizes
// (sequence 128, 12 heads, hidden 768), one thread. They use only names
// that predate the vector math, so the same file measures the scalar
// loops for comparison.

func benchRows(n int) []float32 {
	rng := rand.New(rand.NewSource(4))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 3)
	}
	return x
}

// BenchmarkSoftmaxRows: attention probabilities, 12·128 rows of 128.
func BenchmarkSoftmaxRows(b *testing.B) {
	const rows, n = 12 * 128, 128
	x := benchRows(rows * n)
	y := make([]float32, rows*n)
	b.SetBytes(4 * rows * n)
	b.ResetTimer()
	for range b.N {
		for r := 0; r < rows; r++ {
			softmaxRow(y[r*n:(r+1)*n], x[r*n:(r+1)*n], false)
		}
	}
	b.ReportMetric(float64(b.N)*rows*n/b.Elapsed().Seconds()/1e6, "Melem/s")
}

// BenchmarkLayerNormRows: 128 rows of 768 with scale and bias.
func BenchmarkLayerNormRows(b *testing.B) {
	const rows, d = 128, 768
	x, scale, bias := benchRows(rows*d), benchRows(d), benchRows(d)
	k := &layerNormKernel{rows: rows, d: d, eps: 1e-5, scaleN: d, biasN: d}
	in := [][]byte{f32Bytes(x), f32Bytes(scale), f32Bytes(bias)}
	out := [][]byte{make([]byte, 4*rows*d)}
	b.SetBytes(4 * rows * d)
	b.ResetTimer()
	for range b.N {
		k.rangeArgs(in, out, nil, args{}, 0, rows)
	}
	b.ReportMetric(float64(b.N)*rows*d/b.Elapsed().Seconds()/1e6, "Melem/s")
}
