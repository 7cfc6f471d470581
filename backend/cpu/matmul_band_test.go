package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// wholePacked returns a copy of the band-packed product k, of constant
// B, that runs the whole-packing path instead (B packed whole, A packed
// whole into scratch by a first phase, then the tiles), and the scratch
// bytes that path needs.
func wholePacked(tb testing.TB, k Kernel, b *ir.Tensor) (Kernel, int64) {
	tb.Helper()
	mk, ok := k.(*matmulKernel)
	if !ok || mk.per == 0 {
		tb.Fatalf("kernel %T is not band-packed", k)
	}
	w := *mk
	w.per, w.kc, w.aOff = 0, 0, 0
	w.bPre = make([]float32, len(mk.bPre))
	for mat := 0; mat < w.nB; mat++ {
		constSrc(b).packB(w.bPre[mat*w.bSize:], mat*w.k*w.n, w.k, w.n, w.bRS, w.bCS)
		if w.wide {
			interleaveQuads(w.bPre[mat*w.bSize:], w.k, w.n)
		}
	}
	return &w, int64(w.nA*w.aSize) * 4
}

// runKernel runs k once on a pool of threads workers over copies of in,
// with poisoned scratch and garbage in the outputs.
func runKernel(k Kernel, threads int, scratch int64, in [][]byte, outBytes []int64) [][]byte {
	ins := make([][]byte, len(in))
	for i, b := range in {
		if b != nil {
			ins[i] = alignedBytes(int64(len(b)))
			copy(ins[i], b)
		}
	}
	outs := make([][]byte, len(outBytes))
	for i, n := range outBytes {
		outs[i] = alignedBytes(n)
		for j := range outs[i] {
			outs[i][j] = 0xA5
		}
	}
	w := NewWorkers(threads)
	defer w.Close()
	k.Run(w, ins, outs, poisoned(scratch))
	return outs
}

// TestMatMulBands checks that a product of an activation A by a constant
// B, which packs A band by band and k slice by k slice into per-worker
// scratch, gives bit for bit what packing A whole gives, for every
// thread count it is built for and run on, and that its scratch does not
// grow with K.
func TestMatMulBands(t *testing.T) {
	bandsAlways = true
	defer func() { bandsAlways = false }()
	type gemmOpts struct {
		transA, transB bool
		alpha, beta    float32
		c              []int64 // shape of C, nil for none
		constC         bool
	}
	cases := []struct {
		a, b []int64 // MatMul operand shapes (A, B); Gemm: A and B as stored
		gemm *gemmOpts
	}{
		{a: []int64{128, 768}, b: []int64{768, 768}},
		{a: []int64{128, 3072}, b: []int64{3072, 768}},
		{a: []int64{1030, 1100}, b: []int64{1100, 1040}}, // two deep slices of 550
		{a: []int64{1030, 300}, b: []int64{300, 1020}},   // B all in quads: A read unpacked
		{a: []int64{70, 300}, b: []int64{300, 45}},
		{a: []int64{200, 700}, b: []int64{700, 100}},
		{a: []int64{301, 513}, b: []int64{513, 33}},
		{a: []int64{5, 300}, b: []int64{300, 40}},
		{a: []int64{1, 1000}, b: []int64{1000, 300}},
		{a: []int64{37, 260}, b: []int64{260, 7}},
		{a: []int64{3, 5}, b: []int64{5, 3}},
		{a: []int64{2, 3, 20, 300}, b: []int64{300, 50}},
		{a: []int64{2, 20, 300}, b: []int64{2, 300, 50}},
		{a: []int64{3, 1, 9, 270}, b: []int64{2, 270, 17}},
		{a: []int64{300}, b: []int64{300, 20}},
		{a: []int64{64, 300}, b: []int64{300, 64}, gemm: &gemmOpts{alpha: 0.7, beta: 1}},
		{a: []int64{300, 64}, b: []int64{70, 300}, gemm: &gemmOpts{transA: true, transB: true, alpha: -1.3, beta: 1, c: []int64{70}, constC: true}},
		{a: []int64{300, 40}, b: []int64{300, 90}, gemm: &gemmOpts{transA: true, alpha: 0.5, beta: 2, c: []int64{40, 1}, constC: true}},
		{a: []int64{40, 600}, b: []int64{33, 600}, gemm: &gemmOpts{transB: true, alpha: 1, beta: 1, c: []int64{33}}},
		{a: []int64{160, 290}, b: []int64{290, 20}, gemm: &gemmOpts{alpha: 2, beta: 1, c: []int64{160, 1}}},
		{a: []int64{4, 290}, b: []int64{290, 15}, gemm: &gemmOpts{alpha: 1, beta: -0.5, c: []int64{4, 15}}},
		{a: []int64{50, 300}, b: []int64{300, 20}, gemm: &gemmOpts{alpha: 0.9, beta: 1.5, c: []int64{1}, constC: true}},
	}
	// Which schemes (shared or owned bands, see bandSplit) ran.
	schemes := map[bool]bool{}
	defer func() {
		if !t.Failed() && (!schemes[true] || !schemes[false]) {
			t.Errorf("schemes run: %v, want both shared and owned bands", schemes)
		}
	}()
	for _, c := range cases {
		name := fmt.Sprintf("%v×%v", c.a, c.b)
		if o := c.gemm; o != nil {
			name = fmt.Sprintf("Gemm/%v×%v/tA=%v/tB=%v/alpha=%v/beta=%v/C=%v/constC=%v", c.a, c.b, o.transA, o.transB, o.alpha, o.beta, o.c, o.constC)
		}
		t.Run(name, func(t *testing.T) {
			tg := newTGraph(17)
			a, b := randF32(int(elems(c.a))), randF32(int(elems(c.b)))
			ai := tg.input("a", ir.Float32, c.a...)
			bi := tg.constant("b", ir.Float32, f32Bytes(b), c.b...)
			ins := []ir.TensorID{ai, bi}
			feeds := [][]byte{f32Bytes(a), nil}
			var n *ir.Node
			if o := c.gemm; o != nil {
				if o.c != nil {
					cv := f32Bytes(randF32(int(elems(o.c))))
					if o.constC {
						ins = append(ins, tg.constant("c", ir.Float32, cv, o.c...))
						feeds = append(feeds, nil)
					} else {
						ins = append(ins, tg.input("c", ir.Float32, o.c...))
						feeds = append(feeds, cv)
					}
				}
				n = gemmNodeOf(tg, ins, c.a, c.b, o.transA, o.transB, o.alpha, o.beta)
			} else {
				_, shape := refMatMul(t, a, c.a, b, c.b)
				n = tg.node("MatMul", nil, ins, out{ir.Float32, shape})
			}
			// Constant inputs are passed as their bytes.
			for i, id := range n.Inputs {
				if tn := tg.g.Tensor(id); tn.IsConst() {
					feeds[i] = tn.Data
				}
			}
			outBytes := []int64{tg.g.Tensor(n.Outputs[0]).Bytes()}
			// Every micro-kernel: the slice walks differ between them.
			eachBuild(t, tg.g, n, func(t *testing.T, built int, k Kernel, scratch int64) {
				ref, refScratch := wholePacked(t, k, tg.g.Tensor(bi))
				mk := k.(*matmulKernel)
				if max := int64(built) * int64(roundUp(gemmMT*gemmMR*mk.kc, alignment/4)) * 4; scratch > max {
					t.Errorf("built for %d threads: scratch %d bytes, want at most %d", built, scratch, max)
				}
				want := runKernel(ref, 1, refScratch, feeds, outBytes)[0]
				for _, threads := range []int{1, 2, 3} {
					got := runKernel(k, threads, scratch, feeds, outBytes)[0]
					w := NewWorkers(threads)
					p := mk.workers(w, alignedBytes(scratch))
					w.Close()
					schemes[mk.split(p).shared] = true
					// Whole packing with the same threads too: tiles
					// change with them, results must not.
					whole := runKernel(ref, threads, refScratch, feeds, outBytes)[0]
					gf, wf, hf := raw32(got), raw32(want), raw32(whole)
					for i := range wf {
						if gf[i] != wf[i] || hf[i] != wf[i] {
							t.Fatalf("built for %d, run on %d threads (%d workers, split %+v): element %d is %v (bits %08x), whole packing gives %v (%08x) on 1 thread and %v on %d",
								built, threads, p, mk.split(p), i, math.Float32frombits(gf[i]), gf[i], math.Float32frombits(wf[i]), wf[i], math.Float32frombits(hf[i]), threads)
						}
					}
				}
			})
		})
	}
}

// gemmNodeOf adds to tg a Gemm node of inputs ins (A and B, of shapes a
// and b as stored, and C if any).
func gemmNodeOf(tg *tgraph, ins []ir.TensorID, a, b []int64, transA, transB bool, alpha, beta float32) *ir.Node {
	m, n := a[0], b[1]
	if transA {
		m = a[1]
	}
	if transB {
		n = b[0]
	}
	flag := func(b bool) int64 {
		if b {
			return 1
		}
		return 0
	}
	return tg.node("Gemm", ir.Attrs{
		"transA": {Kind: ir.AttrInt, Int: flag(transA)},
		"transB": {Kind: ir.AttrInt, Int: flag(transB)},
		"alpha":  {Kind: ir.AttrFloat, Float: alpha},
		"beta":   {Kind: ir.AttrFloat, Float: beta},
	}, ins, out{ir.Float32, []int64{m, n}})
}

// eachBuild runs check on n's kernel built for 1, 2 and 3 threads, with
// each micro-kernel this machine has.
func eachBuild(t *testing.T, g *ir.Graph, n *ir.Node, check func(t *testing.T, built int, k Kernel, scratch int64)) {
	forKernels(t, func(t *testing.T) {
		for _, built := range []int{1, 2, 3} {
			k, scratch, err := BuildFor(g, n, built)
			if err != nil {
				t.Fatalf("BuildFor: %v", err)
			}
			check(t, built, k, scratch)
		}
	})
}

// raw32 views float32 bytes as their bit patterns.
func raw32(b []byte) []uint32 {
	f := f32s(b)
	u := make([]uint32, len(f))
	for i, v := range f {
		u[i] = math.Float32bits(v)
	}
	return u
}

// TestMatMulBandsScratch checks the scratch of a Linear layer with a
// large K: one band slice per worker instead of the whole packed A.
func TestMatMulBandsScratch(t *testing.T) {
	bandsAlways = true
	defer func() { bandsAlways = false }()
	for _, s := range []struct{ m, k, n int64 }{{128, 3072, 768}, {128, 768, 3072}, {1000, 4096, 64}, {1, 8192, 64}} {
		g, n := matmulNode(s.m, s.k, s.n, true)
		for _, threads := range []int{1, 2, 4} {
			_, scratch, err := BuildFor(g, n, threads)
			if err != nil {
				t.Fatal(err)
			}
			rows := min(roundUp(int(s.m), gemmMR), gemmMT*gemmMR)
			kc := sliceDepth(int(s.k))
			want := int64(threads*roundUp(rows*kc, alignment/4)) * 4
			if scratch != want {
				t.Errorf("%v threads=%d: scratch %d bytes, want %d", s, threads, scratch, want)
			}
		}
	}
}

// BenchmarkLinearCold runs the products of a BERT-base layer at sequence
// 128 the way a model does: round robin over enough distinct constant
// weights (64 MiB or more) that B comes from memory, not the cache.
func BenchmarkLinearCold(b *testing.B) {
	for _, s := range []struct{ m, k, n int64 }{{128, 768, 768}, {128, 768, 3072}, {128, 3072, 768}, {1, 768, 3072}, {512, 768, 768}} {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", s.m, s.k, s.n, th), func(b *testing.B) {
				copies := max(2, int(64<<20/(4*s.k*s.n)))
				ps := make([]*prepared, copies)
				for i := range ps {
					g, n := matmulNode(s.m, s.k, s.n, true)
					ps[i] = prepare(b, g, n)
				}
				benchRoundRobin(b, th, ps, 2*float64(s.m*s.k*s.n))
			})
		}
	}
}

// benchRoundRobin times runs taken in turn on th workers, after one
// untimed run of each, and reports flops per run as GFLOP/s.
func benchRoundRobin(b *testing.B, th int, runs []*prepared, flops float64) {
	w := NewWorkers(th)
	defer w.Close()
	for _, r := range runs {
		r.k.Run(w, r.in, r.out, r.scratch)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := runs[i%len(runs)]
		r.k.Run(w, r.in, r.out, r.scratch)
	}
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkLinearFusedCold is BenchmarkLinearCold for the fused products
// of a transformer layer: Y = X·W + bias + R (a residual), the epilogue
// applied tile by tile.
func BenchmarkLinearFusedCold(b *testing.B) {
	for _, s := range []struct{ m, k, n int64 }{{128, 768, 768}, {128, 3072, 768}, {128, 768, 3072}} {
		for _, th := range threadCounts() {
			b.Run(fmt.Sprintf("%dx%dx%d/threads=%d", s.m, s.k, s.n, th), func(b *testing.B) {
				copies := max(2, int(64<<20/(4*s.k*s.n)))
				runs := make([]*prepared, copies)
				for i := range runs {
					tg := newTGraph(17)
					x := tg.input("x", ir.Float32, s.m, s.k)
					w := tg.constant("w", ir.Float32, f32Bytes(randF32(int(s.k*s.n))), s.k, s.n)
					bias := tg.constant("bias", ir.Float32, f32Bytes(randF32(int(s.n))), s.n)
					r := tg.input("r", ir.Float32, s.m, s.n)
					mm := tg.node("MatMul", nil, []ir.TensorID{x, w}, out{ir.Float32, []int64{s.m, s.n}})
					add := tg.node("Add", nil, []ir.TensorID{mm.Outputs[0], bias}, out{ir.Float32, []int64{s.m, s.n}})
					add2 := tg.node("Add", nil, []ir.TensorID{add.Outputs[0], r}, out{ir.Float32, []int64{s.m, s.n}})
					k, scratch, err := BuildFor(tg.g, mm, th)
					if err != nil {
						b.Fatal(err)
					}
					ep, _, err := newEpilogue(tg.g, mm.Outputs[0], int(s.n), []*ir.Node{add, add2})
					if err != nil {
						b.Fatal(err)
					}
					fk, ok := fuseEpilogue(k, ep, 2, th)
					if !ok {
						b.Fatal("fuseEpilogue refused")
					}
					y := int64(s.m * s.n * 4)
					runs[i] = &prepared{
						k:       fk,
						in:      [][]byte{f32Bytes(randF32(int(s.m * s.k))), tg.g.Tensor(w).Data, f32Bytes(randF32(int(s.m * s.n)))},
						out:     [][]byte{alignedBytes(y), alignedBytes(y), alignedBytes(int64(ep.RegisterBytes(th)))},
						scratch: alignedBytes(scratch),
					}
				}
				benchRoundRobin(b, th, runs, 2*float64(s.m*s.k*s.n))
			})
		}
	}
}

// TestMatMulPairs checks that a batch of products of two activations, each
// with its own A and B, which every worker packs and computes one pair at
// a time, gives bit for bit what packing the whole batch first gives, and
// that its scratch is one pair per worker.
func TestMatMulPairs(t *testing.T) {
	cases := []struct {
		a, b  []int64
		pairs bool // built for 2 threads: pair packing expected
	}{
		{a: []int64{12, 128, 64}, b: []int64{12, 64, 128}, pairs: true}, // attention scores
		{a: []int64{12, 128, 128}, b: []int64{12, 128, 64}, pairs: true},
		{a: []int64{2, 3, 37, 300}, b: []int64{2, 3, 300, 45}, pairs: true},
		{a: []int64{5, 7, 9}, b: []int64{5, 9, 20}, pairs: true},
		{a: []int64{3, 40, 20}, b: []int64{3, 20, 30}, pairs: false}, // fewer than two products a worker
		{a: []int64{4, 40, 20}, b: []int64{1, 20, 30}, pairs: false}, // B broadcast
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v×%v", c.a, c.b), func(t *testing.T) {
			tg := newTGraph(17)
			a, b := randF32(int(elems(c.a))), randF32(int(elems(c.b)))
			ai, bi := tg.input("a", ir.Float32, c.a...), tg.input("b", ir.Float32, c.b...)
			_, shape := refMatMul(t, a, c.a, b, c.b)
			n := tg.node("MatMul", nil, []ir.TensorID{ai, bi}, out{ir.Float32, shape})
			feeds := [][]byte{f32Bytes(a), f32Bytes(b)}
			outBytes := []int64{tg.g.Tensor(n.Outputs[0]).Bytes()}
			eachBuild(t, tg.g, n, func(t *testing.T, built int, k Kernel, scratch int64) {
				mk := k.(*matmulKernel)
				if built == 2 && (mk.pair > 0) != c.pairs {
					t.Fatalf("built for 2 threads: pair packing %v, want %v", mk.pair > 0, c.pairs)
				}
				ref := *mk
				ref.pair, ref.pairB, ref.aOff, ref.bOff = 0, 0, 0, ref.nA*ref.aSize
				refScratch := int64(ref.nA*ref.aSize+ref.nB*ref.bSize) * 4
				if mk.pair > 0 {
					if want := int64(built*mk.pair) * 4; scratch != want {
						t.Errorf("scratch %d bytes, want %d (one pair per worker)", scratch, want)
					}
				}
				want := runKernel(&ref, 1, refScratch, feeds, outBytes)[0]
				for _, threads := range []int{1, 2, 3} {
					got := raw32(runKernel(k, threads, scratch, feeds, outBytes)[0])
					for i, w := range raw32(want) {
						if got[i] != w {
							t.Fatalf("built for %d, run on %d threads: element %d is %08x, whole packing gives %08x", built, threads, i, got[i], w)
						}
					}
				}
			})
		})
	}
}

// TestBandsPay checks which Linear layers pack A in bands: those whose
// whole packed A would be large and whose C stays small.
func TestBandsPay(t *testing.T) {
	cases := []struct {
		m, k, n int
		want    bool
	}{
		{128, 3072, 768, true},   // a transformer's second FFN layer
		{128, 768, 3072, false},  // its first: A packs small whole
		{128, 768, 768, false},   // attention projections
		{128, 768, 50257, false}, // a language-model head: C too large
		{1024, 4096, 512, false}, // C too large
		{1024, 1024, 1024, true}, // deep slices: C swept once
		{1024, 3072, 1024, true}, // three deep slices
		{1024, 3072, 768, false}, // C too large, slices not deep
		{512, 1024, 1024, false}, // C too large, slices not deep
		{64, 4096, 256, true},
	}
	for _, c := range cases {
		tg := newTGraph(17)
		a := tg.input("a", ir.Float32, int64(c.m), int64(c.k))
		b := tg.constant("b", ir.Float32, make([]byte, 4*c.k*c.n), int64(c.k), int64(c.n))
		n := tg.node("MatMul", nil, []ir.TensorID{a, b}, out{ir.Float32, []int64{int64(c.m), int64(c.n)}})
		k, _, err := BuildFor(tg.g, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.(*matmulKernel).per > 0; got != c.want {
			t.Errorf("%d×%d×%d: bands %v, want %v", c.m, c.k, c.n, got, c.want)
		}
	}
}
