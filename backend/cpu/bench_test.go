package cpu

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// benchKernel runs a prepared node b.N times and reports GFLOP/s.
func benchKernel(b *testing.B, g *ir.Graph, n *ir.Node, threads int, flops float64) {
	p := prepareFor(b, g, n, threads)
	w := NewWorkers(threads)
	defer w.Close()
	p.k.Run(w, p.in, p.out, p.scratch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.k.Run(w, p.in, p.out, p.scratch)
	}
	if flops > 0 {
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	}
}

func threadCounts() []int {
	if n := runtime.GOMAXPROCS(0); n > 1 {
		return []int{1, n}
	}
	return []int{1}
}

// BenchmarkSGEMM multiplies two square run-time matrices (both packed on
// every run) and one by a constant, prepacked B.
func BenchmarkSGEMM(b *testing.B) {
	for _, size := range []int64{256, 1024} {
		for _, constB := range []bool{false, true} {
			for _, th := range threadCounts() {
				b.Run(fmt.Sprintf("%d/constB=%v/threads=%d", size, constB, th), func(b *testing.B) {
					g, n := matmulNode(size, size, size, constB)
					benchKernel(b, g, n, th, 2*float64(size*size*size))
				})
			}
		}
	}
}

// BenchmarkConv covers the three convolution paths on ResNet/MobileNet
// sized layers.
func BenchmarkConv(b *testing.B) {
	cases := []struct {
		name                         string
		c, h, m, k, stride, pad, grp int64
	}{
		{"3x3 64→64 56²", 64, 56, 64, 3, 1, 1, 1},
		{"3x3s2 128→128 56²", 128, 56, 128, 3, 2, 1, 1},
		{"3x3s2 256→256 28²", 256, 28, 256, 3, 2, 1, 1},
		{"3x3 256→256 14²", 256, 14, 256, 3, 1, 1, 1},
		{"1x1 256→64 56²", 256, 56, 64, 1, 1, 0, 1},
		{"1x1 64→256 56²", 64, 56, 256, 1, 1, 0, 1},
		{"1x1 24→144 56²", 24, 56, 144, 1, 1, 0, 1},
		{"1x1 16→96 112²", 16, 112, 96, 1, 1, 0, 1},
		{"1x1 32→16 112²", 32, 112, 16, 1, 1, 0, 1},
		{"7x7s2 3→64 224²", 3, 224, 64, 7, 2, 3, 1},
		{"3x3s2 3→32 224²", 3, 224, 32, 3, 2, 1, 1},
		{"depthwise 3x3 144 56²", 144, 56, 144, 3, 1, 1, 144},
		{"depthwise 3x3 960 7²", 960, 7, 960, 3, 1, 1, 960},
		{"depthwise 3x3 384 14²", 384, 14, 384, 3, 1, 1, 384},
		{"depthwise 3x3 192 28²", 192, 28, 192, 3, 1, 1, 192},
		{"depthwise 3x3 32 112²", 32, 112, 32, 3, 1, 1, 32},
		{"depthwise 3x3s2 96 112²", 96, 112, 96, 3, 2, 1, 96},
		{"depthwise 3x3s2 144 56²", 144, 56, 144, 3, 2, 1, 144},
		{"depthwise 5x5 1152 7²", 1152, 7, 1152, 5, 1, 2, 1152},
		{"depthwise 5x5 240 28²", 240, 28, 240, 5, 1, 2, 240},
		{"depthwise 5x5 672 14²", 672, 14, 672, 5, 1, 2, 672},
		{"1x1 512→2048 7²", 512, 7, 2048, 1, 1, 0, 1},
		{"1x1 2048→512 7²", 2048, 7, 512, 1, 1, 0, 1},
		{"1x1 960→160 7²", 960, 7, 160, 1, 1, 0, 1},
		{"1x1 160→960 7²", 160, 7, 960, 1, 1, 0, 1},
		{"3x3 512→512 7²", 512, 7, 512, 3, 1, 1, 1},
		{"1x1s2 1024→2048 14²", 1024, 14, 2048, 1, 2, 0, 1},
		{"1x1 576→96 14²", 576, 14, 96, 1, 1, 0, 1},
		{"1x1 256→1024 14²", 256, 14, 1024, 1, 1, 0, 1},
		{"1x1 1024→256 14²", 1024, 14, 256, 1, 1, 0, 1},
		{"1x1 128→512 28²", 128, 28, 512, 1, 1, 0, 1},
		{"1x1 256→128 56²", 256, 56, 128, 1, 1, 0, 1},
		{"1x1 80→480 14²", 80, 14, 480, 1, 1, 0, 1},
		{"1x1 96→576 14²", 96, 14, 576, 1, 1, 0, 1},
		{"1x1 32→192 28²", 32, 28, 192, 1, 1, 0, 1},
		{"1x1 192→32 28²", 192, 28, 32, 1, 1, 0, 1},
		{"1x1s2 256→512 56²", 256, 56, 512, 1, 2, 0, 1},
	}
	for _, c := range cases {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("%s/threads=%d", c.name, th), func(b *testing.B) {
				g, n := convNode(1, c.c, c.h, c.h, c.m, c.k, c.stride, c.pad, c.grp, true)
				y := g.Tensor(n.Outputs[0]).Shape
				flops := 2 * float64(y.Elements()) * float64(c.c/c.grp*c.k*c.k)
				benchKernel(b, g, n, th, flops)
			})
		}
	}
}

// BenchmarkAdd measures the same-shape and broadcast elementwise paths
// (GB/s counts the bytes read and written).
func BenchmarkAdd(b *testing.B) {
	cases := []struct {
		name string
		a, c []int64
	}{
		{"same 1M", []int64{1 << 20}, []int64{1 << 20}},
		{"scalar 1M", []int64{1 << 20}, []int64{}},
		{"row bias 1024x1024", []int64{1024, 1024}, []int64{1024}},
		{"channel bias 64x128²", []int64{64, 128, 128}, []int64{64, 1, 1}},
	}
	for _, c := range cases {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("%s/threads=%d", c.name, th), func(b *testing.B) {
				tg := newTGraph(17)
				ys := bcastShape(b, c.a, c.c)
				n := tg.node("Add", nil, []ir.TensorID{tg.input("a", ir.Float32, c.a...), tg.input("c", ir.Float32, c.c...)}, out{ir.Float32, ys})
				b.SetBytes(3 * 4 * elems(ys))
				benchKernel(b, tg.g, n, th, 0)
			})
		}
	}
}

// BenchmarkFor is the fixed cost of one parallel loop.
func BenchmarkFor(b *testing.B) {
	for _, th := range threadCounts() {
		b.Run(fmt.Sprintf("threads=%d", th), func(b *testing.B) {
			w := NewWorkers(th)
			defer w.Close()
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w.For(64, nopRanger{}, nil, nil, nil)
			}
		})
	}
}

// BenchmarkTransformerGEMM covers the products of a BERT-base/GPT-2-small
// layer at sequence 128 (A 128×k activations, B constant weights).
func BenchmarkTransformerGEMM(b *testing.B) {
	for _, s := range []struct{ m, k, n int64 }{{128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}} {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", s.m, s.k, s.n, th), func(b *testing.B) {
				g, n := matmulNode(s.m, s.k, s.n, true)
				benchKernel(b, g, n, th, 2*float64(s.m*s.k*s.n))
			})
		}
	}
}

// BenchmarkClassifierGEMV is a classifier head of batch 1: one row of
// activations by a constant weight matrix. In a model the weights come
// from memory, so the runs go round robin over copies of the product
// whose weights together are larger than the last-level cache (GB/s
// counts the weights' bytes).
func BenchmarkClassifierGEMV(b *testing.B) {
	for _, s := range []struct{ k, n int64 }{{1280, 1000}, {2048, 1000}} {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("1x%dx%d/threads=%d", s.k, s.n, th), func(b *testing.B) {
				bytes := 4 * s.k * s.n
				copies := int((64<<20)/bytes) + 1
				var ps []*prepared
				for range copies {
					g, n := matmulNode(1, s.k, s.n, true)
					ps = append(ps, prepare(b, g, n))
				}
				benchRoundRobin(b, th, ps, 2*float64(s.k*s.n))
				b.ReportMetric(float64(bytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	}
}
