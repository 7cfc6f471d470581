package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/berth-ml/berth/backend/cpu/quant"
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// packedFormats are the formats the GPU decodes: every one ggml.Dequantize
// converts.
var packedFormats = []ggml.Type{ggml.F32, ggml.F16, ggml.BF16, ggml.Q4_0, ggml.Q4_1, ggml.Q5_0, ggml.Q5_1, ggml.Q8_0, ggml.Q4_K, ggml.Q5_K, ggml.Q6_K, ggml.Q8_K}

func TestPackedFormatsCoverDequantize(t *testing.T) {
	for f := range ggml.TypeCount {
		if _, _, ok := packedUnit(f, 256); ok != f.CanDequantize() {
			t.Errorf("%s: the GPU decodes it: %v, ggml.Dequantize: %v", f, ok, f.CanDequantize())
		}
	}
}

// packedBytes draws n rows of k values packed as f: random bytes, with
// every block's scales set to sane values (halves of 0.002 to 0.05; for
// the float formats, values of a normal distribution).
func packedBytes(r *rand.Rand, f ggml.Type, n, k int64) []byte {
	rb, err := f.RowSize(k)
	if err != nil {
		panic(err)
	}
	b := make([]byte, n*rb)
	half := func(p []byte) {
		binary.LittleEndian.PutUint16(p, dtype.F16FromF32(float32(0.002+0.048*r.Float64())))
	}
	switch f {
	case ggml.F32:
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(r.NormFloat64())))
		}
		return b
	case ggml.F16:
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], dtype.F16FromF32(float32(r.NormFloat64())))
		}
		return b
	case ggml.BF16:
		for i := 0; i < len(b); i += 2 {
			binary.LittleEndian.PutUint16(b[i:], dtype.BF16FromF32(float32(r.NormFloat64())))
		}
		return b
	}
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	size := f.TypeSize()
	for blk := int64(0); blk < int64(len(b)); blk += size {
		p := b[blk : blk+size]
		switch f {
		case ggml.Q4_0, ggml.Q5_0, ggml.Q8_0:
			half(p)
		case ggml.Q4_1, ggml.Q5_1, ggml.Q4_K, ggml.Q5_K:
			half(p)
			half(p[2:])
		case ggml.Q6_K:
			half(p[208:])
		case ggml.Q8_K:
			binary.LittleEndian.PutUint32(p, math.Float32bits(float32(0.002+0.048*r.Float64())))
		}
	}
	return b
}

// packedGraph is one PackedMatMul (or PackedGather) of packed weights.
func packedGraph(tb testing.TB, op string, f ggml.Type, w []byte, n, k int64, in ir.Shape, dt ir.DType) *ir.Graph {
	g := &ir.Graph{Name: "packed", Opsets: map[string]int64{"": 17}}
	wid := g.NewTensor("w", ir.Uint8, ir.Shape{int64(len(w))}, w)
	x := g.NewTensor("x", dt, in, nil)
	g.Inputs = []ir.TensorID{x}
	attrs := ir.Attrs{"format": strv(f.String()), "rows": intv(n)}
	ins := []ir.TensorID{x, wid}
	if op == "PackedGather" {
		attrs["cols"] = intv(k)
		ins = []ir.TensorID{wid, x}
	}
	g.Nodes = []ir.Node{{Name: "p", Op: op, Domain: ir.BerthDomain, Inputs: ins, Attrs: attrs}}
	y := g.AddTensor(ir.Tensor{Name: "y", Producer: 0})
	g.Nodes[0].Outputs = []ir.TensorID{y}
	types, err := ir.Infer(g, &g.Nodes[0])
	if err != nil {
		tb.Fatal(err)
	}
	g.Tensor(y).DType, g.Tensor(y).Shape = types[0].DType, types[0].Shape
	g.Outputs = []ir.TensorID{y}
	return g
}

// runOnce compiles g and runs it on inputs twice (launched, then a
// captured graph), returning the second run's output.
func runOnce(tb testing.TB, g *ir.Graph, inputs [][]byte) []float32 {
	tb.Helper()
	_, s := openSession(tb, g, Options{})
	out := make([]byte, g.Tensor(g.Outputs[0]).Bytes())
	for range 2 {
		for i := range out {
			out[i] = 0xAB // poison: NaN
		}
		if err := s.Run(inputs, [][]byte{out}); err != nil {
			tb.Fatal(err)
		}
	}
	return raw.F32(out)
}

// relL2 is ‖got − want‖ / ‖want‖; NaN where got holds a NaN.
func relL2(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	return math.Sqrt(num / math.Max(den, 1e-300))
}

// TestPackedMatMul checks the product with weights of every format
// against float64 sums of the weights ggml.Dequantize gives (the CPU's
// values, bit for bit) and against the CPU's own product (8-bit
// activations where the weights are quantised; the GPU's too for one row
// of q8_0 and q4_0, see gemv.go): one activation row (the decoding GEMV)
// and several (the tiled product), at sizes with partial
// tiles and, for the float formats, rows that are not whole units of 8.
func TestPackedMatMul(t *testing.T) {
	requireGPU(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, f := range packedFormats {
		ks := []int64{256, 1024 + 256}
		if f.BlockSize() == 1 {
			ks = append(ks, 100)
		} else if f.BlockSize() == 32 {
			ks = append(ks, 96)
		}
		for _, k := range ks {
			for _, m := range []int64{1, 3, 70} {
				n := int64(131)
				t.Run(fmt.Sprintf("%s/k%d/m%d", f, k, m), func(t *testing.T) {
					w := packedBytes(r, f, n, k)
					deq := make([]float32, n*k)
					if err := ggml.Dequantize(f, deq, w); err != nil {
						t.Fatal(err)
					}
					x := make([]float32, m*k)
					for i := range x {
						x[i] = float32(r.NormFloat64())
					}
					want := make([]float64, m*n)
					for i := range m {
						for j := range n {
							var s float64
							for c := range k {
								s += float64(x[i*k+c]) * float64(deq[j*k+c])
							}
							want[i*n+j] = s
						}
					}
					g := packedGraph(t, "PackedMatMul", f, w, n, k, ir.Shape{m, k}, ir.Float32)
					got := runOnce(t, g, [][]byte{raw.Bytes(x)})
					// One row of q8_0 or q4_0 weights runs gemv, on
					// 8-bit activations as the CPU's product does: it
					// has the CPU's integer sums, so the CPU's product
					// is its reference, float64 the bound of the format.
					eight := m == 1 && (f == ggml.Q8_0 || f == ggml.Q4_0)
					tol64 := 2e-6
					if eight {
						tol64 = 3e-2
					}
					if rel := relL2(got, want); !(rel <= tol64) {
						t.Errorf("rel L2 %.3g against float64", rel)
					}
					if !quant.Supports(f) {
						return
					}
					// The CPU's product, of the same graph.
					tg := &tg{g: g, in: [][]byte{raw.Bytes(x)}}
					cpu := raw.F32(tg.reference(t)[0])
					cw := make([]float64, len(cpu))
					for i, v := range cpu {
						cw[i] = float64(v)
					}
					tol := 1e-5
					if !eight && f != ggml.F32 && f != ggml.F16 && f != ggml.BF16 {
						tol = 3e-2 // the CPU's 8-bit activations
					}
					if rel := relL2(got, cw); !(rel <= tol) {
						t.Errorf("rel L2 %.3g against the CPU's product", rel)
					}
				})
			}
		}
	}
}

// TestPackedGather checks the gather of packed rows of every format
// against ggml.Dequantize, ids out of the table giving zeros.
func TestPackedGather(t *testing.T) {
	requireGPU(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, f := range packedFormats {
		for _, dt := range []ir.DType{ir.Int64, ir.Int32} {
			t.Run(fmt.Sprintf("%s/%s", f, dt), func(t *testing.T) {
				n, k := int64(50), int64(512)
				w := packedBytes(r, f, n, k)
				deq := make([]float32, n*k)
				if err := ggml.Dequantize(f, deq, w); err != nil {
					t.Fatal(err)
				}
				ids := []int64{3, 0, 49, -1, 50, 17, -51, 8}
				var in []byte
				if dt == ir.Int64 {
					in = raw.Bytes(ids)
				} else {
					v := make([]int32, len(ids))
					for i, id := range ids {
						v[i] = int32(id)
					}
					in = raw.Bytes(v)
				}
				g := packedGraph(t, "PackedGather", f, w, n, k, ir.Shape{int64(len(ids))}, dt)
				got := runOnce(t, g, [][]byte{in})
				for i, id := range ids {
					if id < 0 {
						id += n
					}
					for c := range k {
						want := float32(0)
						if id >= 0 && id < n {
							want = deq[id*k+c]
						}
						if d := math.Abs(float64(got[int64(i)*k+c] - want)); d > 1e-6*math.Max(1, math.Abs(float64(want))) {
							t.Fatalf("id %d, value %d: %v, want %v", ids[i], c, got[int64(i)*k+c], want)
						}
					}
				}
			})
		}
	}
}

// BenchmarkPackedMatMul times the decoding GEMV (one activation row) of an
// n×k matrix of each format, the kernels alone (Session.KernelTime), and
// reports the bandwidth on the weight bytes and its share of an H200's
// 4.8 TB/s. BERTH_CUDA_GEMV_SHAPE sets n and k ("8192x8192" by default).
func BenchmarkPackedMatMul(b *testing.B) {
	requireGPU(b)
	n, k := int64(8192), int64(8192)
	if s := os.Getenv("BERTH_CUDA_GEMV_SHAPE"); s != "" {
		if _, err := fmt.Sscanf(s, "%dx%d", &n, &k); err != nil {
			b.Fatalf("BERTH_CUDA_GEMV_SHAPE=%q: %v", s, err)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	for _, f := range packedFormats {
		b.Run(f.String(), func(b *testing.B) { benchGemv(b, r, f, n, k) })
	}
}

// BenchmarkGemvShapes times the gemv kernels compiled at other shapes
// than gemv's (every valid one of a small grid): F16 rows at warps a
// block, rows a warp and words in flight a lane; Q8_0 and Q4_0 rows at
// warps a block and rows a warp. The products are those of a 1.1B
// LLaMA's decoding step (2048 columns and 5632, 256 rows to 32000); each
// reports its share of the H200's 4.8 TB/s ("%bandwidth"). A shape that
// does better here is then measured end to end (BERTH_CUDA_GEMV and
// BenchmarkCUDADecode) before it becomes defaultGemv.
func BenchmarkGemvShapes(b *testing.B) {
	requireGPU(b)
	defer func(s gemvShape, m *source) { gemv, gemvModule = s, m }(gemv, gemvModule)
	shapes := [][2]int64{{2048, 2048}, {256, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}}
	r := rand.New(rand.NewPCG(13, 14))
	run := func(s gemvShape, name string, formats ...ggml.Type) {
		if !s.valid() {
			return
		}
		gemv, gemvModule = s, s.module()
		for _, f := range formats {
			for _, nk := range shapes {
				n, k := nk[0], nk[1]
				b.Run(fmt.Sprintf("%s/%s/%dx%d", f, name, n, k), func(b *testing.B) { benchGemv(b, r, f, n, k) })
			}
		}
	}
	// Float rows: warps, rows and loads; quantised rows: warps and rows
	// (they take no loads).
	for _, warps := range []int64{2, 4, 8} {
		for _, rows := range []int64{2, 4} {
			for _, loads := range []int64{2, 4, 8} {
				run(gemvShape{warps: warps, rows: rows, loads: loads, qrows: defaultGemv.qrows}, fmt.Sprintf("w%d-r%d-l%d", warps, rows, loads), ggml.F16)
			}
		}
		for _, qrows := range []int64{2, 4, 8} {
			run(gemvShape{warps: warps, rows: defaultGemv.rows, loads: defaultGemv.loads, qrows: qrows}, fmt.Sprintf("w%d-q%d", warps, qrows), ggml.Q8_0, ggml.Q4_0)
		}
	}
}

// benchGemv times one PackedMatMul of n rows of k values in format f by
// a row of random values, the kernels alone, and reports its share of
// the H200's 4.8 TB/s.
func benchGemv(b *testing.B, r *rand.Rand, f ggml.Type, n, k int64) {
	w := packedBytes(r, f, n, k)
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	_, s := openSession(b, packedGraph(b, "PackedMatMul", f, w, n, k, ir.Shape{1, k}, ir.Float32), Options{})
	out := make([]byte, 4*n)
	for range 2 {
		if err := s.Run([][]byte{raw.Bytes(x)}, [][]byte{out}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	d, err := s.KernelTime(b.N)
	if err != nil {
		b.Fatal(err)
	}
	gbs := float64(len(w)) / d.Seconds() / 1e9
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(gbs/48, "%bandwidth")
}

func TestGemvShapeFrom(t *testing.T) {
	// with is defaultGemv changed by set.
	with := func(set func(s *gemvShape)) gemvShape {
		s := defaultGemv
		set(&s)
		return s
	}
	for _, c := range []struct {
		spec string
		want gemvShape
	}{
		{"", defaultGemv},
		{"warps=8,rows=4,loads=2,qrows=2", with(func(s *gemvShape) { s.warps, s.rows, s.loads, s.qrows = 8, 4, 2, 2 })},
		{"warps=4,qrows=4", with(func(s *gemvShape) { s.warps, s.qrows = 4, 4 })},
		{"rows=1", defaultGemv},          // a gated unit needs pairs of rows
		{"warps=8,qrows=8", defaultGemv}, // the q8_0 kernel's shared memory passes 48 KB
		{"warps=four", defaultGemv},      // not a number
		{"lanes=4", defaultGemv},         // no such term
		{"loads=0", defaultGemv},         // nothing in flight
		{"prep=0", with(func(s *gemvShape) { s.prep = 0 })},
		{"prep=1", with(func(s *gemvShape) { s.prep = 1 })},
		{"prep=2", defaultGemv}, // on or off
		{"warps=2,qrows=8", with(func(s *gemvShape) { s.warps, s.qrows = 2, 8 })},
		{"depth=3", with(func(s *gemvShape) { s.depth = 3 })},
		{"depth=0", defaultGemv}, // nothing in flight
		{"depth=7", defaultGemv}, // more than the registers hold
		{"async=1,depth=4", with(func(s *gemvShape) { s.async, s.depth = 1, 4 })},
		{"async=2", defaultGemv}, // on or off
		{"ploads=4", with(func(s *gemvShape) { s.ploads = 4 })},
		{"ploads=9", defaultGemv}, // more than the kernels take
	} {
		if got := gemvShapeFrom(c.spec); got != c.want {
			t.Errorf("gemvShapeFrom(%q) = %+v, want %+v", c.spec, got, c.want)
		}
	}
}
