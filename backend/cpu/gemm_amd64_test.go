package cpu

import "testing"

// BenchmarkFMAPeak measures one core's single-precision FMA peak: a loop
// of 24 VFMADD231PS per iteration, spread over 12 independent accumulators
// (more chains than FMA latency × FMA units on current x86 cores, so the
// loop is bound by FMA throughput alone) with no memory operands.
//
// The sub-benchmark ymm uses 8-lane ymm registers (AVX2+FMA): 384 flops
// per iteration. zmm uses 16-lane zmm registers (AVX-512F): 768 flops per
// iteration, and runs only where the CPU has AVX-512F. The machine's FMA
// peak is that of the widest FMA the CPU has: zmm where it runs, ymm
// otherwise (the assembly SGEMM kernels use the same widths). The peak of
// T threads is T times this on cores that do not share FMA units.
func BenchmarkFMAPeak(b *testing.B) {
	const iters = 1 << 16
	b.Run("ymm", func(b *testing.B) {
		if !hasAsmKernel {
			b.Skip("CPU lacks AVX2 or FMA")
		}
		cpu0 := cpuSeconds()
		for i := 0; i < b.N; i++ {
			fmaPeakLoop(iters)
		}
		reportFlops(b, 384*iters*float64(b.N), cpu0)
	})
	b.Run("zmm", func(b *testing.B) {
		if !hasAVX512Kernel {
			b.Skip("CPU lacks AVX-512F")
		}
		cpu0 := cpuSeconds()
		for i := 0; i < b.N; i++ {
			fmaPeakLoop512(iters)
		}
		reportFlops(b, 768*iters*float64(b.N), cpu0)
	})
}
