package cpu

import "testing"

// BenchmarkFMAPeak measures one core's single-precision FMA peak: a loop
// of 24 VFMADD231PS on ymm registers per iteration, spread over 12
// independent accumulators (more chains than FMA latency × FMA units on
// current x86 cores, so the loop is bound by FMA throughput alone) with no
// memory operands. Each FMA is 2 flops × 8 lanes, so GFLOP/s =
// 384 × iterations / seconds. The peak of T threads is T times this on
// cores that do not share FMA units.
func BenchmarkFMAPeak(b *testing.B) {
	if !useAsmKernel {
		b.Skip("CPU lacks AVX2 or FMA")
	}
	const iters = 1 << 16
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		fmaPeakLoop(iters)
	}
	reportFlops(b, 384*iters*float64(b.N), cpu0)
}
