//go:build !noasm

package cpu

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

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
	for _, w := range []struct {
		name, lacks string
		has         bool
		loop        func(iters int)
		flops       float64 // per iteration
	}{
		{"ymm", "AVX2 or FMA", hasAsmKernel, fmaPeakLoop, 384},
		{"zmm", "AVX-512F", hasAVX512Kernel, fmaPeakLoop512, 768},
	} {
		b.Run(w.name, func(b *testing.B) {
			if !w.has {
				b.Skip("CPU lacks " + w.lacks)
			}
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				w.loop(iters)
			}
			reportFlops(b, w.flops*iters*float64(b.N), cpu0)
		})
	}
}

// BenchmarkSGEMMOfPeak measures a 1024³ product against the FMA peak of
// the same minutes. Every iteration runs the product once, then the FMA
// loop of BenchmarkFMAPeak of the kernel's width (ymm for the AVX2
// kernel, zmm for the AVX-512 one; one copy on each of the product's
// threads at once, about 200 MFLOP each, timed inside its goroutine so
// that a thread's wake-up is not counted) twice: at once, and again after
// 10 ms of scalar work. of-peak is the product's rate over the second
// loop's, each summed over all iterations: the loop as it runs on its
// own, which is the FMA peak of that width. On a machine whose speed
// moves by several percent from one minute to the next this ratio is
// steadier than the two benchmarks run apart. hot-peak-GFLOP/s is the
// first loop's rate: where it is below the peak, the core still runs at
// the clock the product left it at (wide products lower it on many
// Intel cores, for some milliseconds).
//
// The machine's FMA peak is that of the widest FMA it has, so the
// AVX-512 kernel's of-peak is the machine's where it runs; the AVX2
// kernel's is what a machine without AVX-512 would give.
//
// The products: packed (both operands prepacked, BenchmarkSGEMMPacked's
// tiles), weights (a MatMul by a constant B, packed when the kernel is
// built: A is packed on every run) and run (a MatMul of two run-time
// matrices, both packed on every run).
func BenchmarkSGEMMOfPeak(b *testing.B) {
	if !hasAsmKernel {
		b.Skip("CPU lacks AVX2 or FMA")
	}
	const size = 1024
	for _, kind := range []string{"packed", "weights", "run"} {
		for _, kern := range gemmKernels()[1:] {
			for _, th := range threadCounts() {
				b.Run(fmt.Sprintf("%s/%s/%d/threads=%d", kind, kern, size, th), func(b *testing.B) {
					withKernel(kern, func() {
						w := NewWorkers(th)
						defer w.Close()
						var product func()
						if kind == "packed" {
							product = packedProduct(size, th, w)
						} else {
							g, n := matmulNode(size, size, size, kind == "weights")
							p := prepareFor(b, g, n, th)
							product = func() { p.k.Run(w, p.in, p.out, p.scratch) }
						}
						benchOfPeak(b, product, 2*size*size*size, th)
					})
				})
			}
		}
	}
}

// benchOfPeak runs product (flops operations on th threads) and the FMA
// loop as BenchmarkSGEMMOfPeak says, b.N times, and reports the rates.
func benchOfPeak(b *testing.B, product func(), flops float64, th int) {
	loop, perIter := fmaPeakLoop, 384.0
	if useAVX512Kernel {
		loop, perIter = fmaPeakLoop512, 768
	}
	const iters = 1 << 18
	// onThreads runs f on th goroutines at once and waits for them.
	onThreads := func(f func()) {
		var wg sync.WaitGroup
		for range th {
			wg.Go(f)
		}
		wg.Wait()
	}
	// peakLoop times the loop inside each goroutine, so that the time a
	// sleeping thread takes to wake is not counted, and returns the
	// longest.
	peakLoop := func() time.Duration {
		var mu sync.Mutex
		var longest time.Duration
		onThreads(func() {
			t0 := time.Now()
			loop(iters)
			d := time.Since(t0)
			mu.Lock()
			longest = max(longest, d)
			mu.Unlock()
		})
		return longest
	}
	scalar := func(d time.Duration) {
		onThreads(func() {
			for t0 := time.Now(); time.Since(t0) < d; {
			}
		})
	}
	product()
	var tProduct, tHot, tOwn time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		product()
		tProduct += time.Since(t0)
		tHot += peakLoop()
		scalar(10 * time.Millisecond)
		tOwn += peakLoop()
	}
	gflops := func(f float64, d time.Duration) float64 { return f / d.Seconds() / 1e9 }
	loopFlops := perIter * iters * float64(th*b.N)
	rate, peak := gflops(flops*float64(b.N), tProduct), gflops(loopFlops, tOwn)
	b.ReportMetric(rate, "GFLOP/s")
	b.ReportMetric(peak, "peak-GFLOP/s")
	b.ReportMetric(gflops(loopFlops, tHot), "hot-peak-GFLOP/s")
	b.ReportMetric(rate/peak, "of-peak")
}
