package cpu

import (
	"fmt"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// wholeOf is block-packed kernel k as whole packing runs it, with its
// scratch: the reference the block packing must match bit for bit.
func wholeOf(k *matmulKernel) (*matmulKernel, int64) {
	w := *k
	w.block, w.blockA, w.aOff, w.bOff = 0, 0, 0, w.nA*w.aSize
	w.per, w.kc, w.bandBase = 0, 0, 0
	return &w, int64(w.nA*w.aSize+w.nB*w.bSize) * 4
}

// TestMatMulColumnBlocks checks that a product of two activations that
// packs by blocks of columns (the GotoBLAS loop), or a large one that
// packs B whole and A by bands (bandsRun), gives bit for bit what
// packing both operands whole gives, on 1 to 3 threads, built for as many
// or others; that its scratch is one block and band slice per worker;
// and which products take it. The shapes have ragged panels, k slices
// (513 deep: three of 171; 1100 deep in a large product: two of 550), bands of A panels (600 rows: three), blocks
// of columns narrower than gemmNT panels, Gemm's transposes, alpha, row
// and column biases and a run-time C.
func TestMatMulColumnBlocks(t *testing.T) {
	type gemmOpts struct {
		transA, transB bool
		alpha, beta    float32
		c              []int64 // shape of C, nil for none
	}
	cases := []struct {
		a, b   []int64
		gemm   *gemmOpts
		blocks bool // built for 2 or 3 threads: block packing expected
		bands  bool // bands over a B packed by the run instead, on AVX-512
	}{
		{a: []int64{300, 70}, b: []int64{70, 100}, blocks: true},
		{a: []int64{600, 513}, b: []int64{513, 300}, blocks: true},
		{a: []int64{289, 64}, b: []int64{64, 1030}, blocks: true},
		// Large enough for deep slices (productDepth: two of 550).
		{a: []int64{1030, 1100}, b: []int64{1100, 1040}, blocks: true, bands: true},
		{a: []int64{1030, 300}, b: []int64{300, 1020}, blocks: true, bands: true}, // A read unpacked
		{a: []int64{513, 300}, b: []int64{200, 513}, gemm: &gemmOpts{transA: true, transB: true, alpha: 0.7, beta: 1, c: []int64{200}}, blocks: true},
		{a: []int64{300, 513}, b: []int64{513, 90}, gemm: &gemmOpts{alpha: -1.5, beta: 0.5, c: []int64{300, 1}}, blocks: true},
		{a: []int64{300, 130}, b: []int64{130, 100}, gemm: &gemmOpts{alpha: 1, beta: 2, c: []int64{300, 100}}, blocks: true},
		{a: []int64{287, 300}, b: []int64{300, 100}, blocks: false}, // too few rows
		{a: []int64{300, 63}, b: []int64{63, 100}, blocks: false},   // too shallow
		{a: []int64{300, 100}, b: []int64{100, 48}, blocks: false},  // three B panels: fewer than two a worker
		{a: []int64{2, 300, 100}, b: []int64{2, 100, 100}, blocks: false},
	}
	// Built for one thread: whole packing.
	g1, n1 := matmulNode(600, 513, 300, false)
	if k, _, err := BuildFor(g1, n1, 1); err != nil || k.(*matmulKernel).block > 0 {
		t.Errorf("built for one thread: block packing (%v)", err)
	}
	for _, c := range cases {
		name := fmt.Sprintf("%v×%v", c.a, c.b)
		if o := c.gemm; o != nil {
			name = fmt.Sprintf("Gemm/%v×%v/tA=%v/tB=%v/alpha=%v/beta=%v/C=%v", c.a, c.b, o.transA, o.transB, o.alpha, o.beta, o.c)
		}
		t.Run(name, func(t *testing.T) {
			tg := newTGraph(17)
			a, b := randF32(int(elems(c.a))), randF32(int(elems(c.b)))
			ins := []ir.TensorID{tg.input("a", ir.Float32, c.a...), tg.input("b", ir.Float32, c.b...)}
			feeds := [][]byte{f32Bytes(a), f32Bytes(b)}
			var n *ir.Node
			if o := c.gemm; o != nil {
				if o.c != nil {
					ins = append(ins, tg.input("c", ir.Float32, o.c...))
					feeds = append(feeds, f32Bytes(randF32(int(elems(o.c)))))
				}
				n = gemmNodeOf(tg, ins, c.a, c.b, o.transA, o.transB, o.alpha, o.beta)
			} else {
				_, shape := refMatMul(t, a, c.a, b, c.b)
				n = tg.node("MatMul", nil, ins, out{ir.Float32, shape})
			}
			outBytes := []int64{tg.g.Tensor(n.Outputs[0]).Bytes()}
			eachBuild(t, tg.g, n, func(t *testing.T, built int, k Kernel, scratch int64) {
				mk := k.(*matmulKernel)
				bands := c.bands && useAVX512Kernel
				if built >= 2 && (mk.block > 0) != (c.blocks && !bands) {
					t.Fatalf("built for %d threads: block packing %v, want %v", built, mk.block > 0, c.blocks && !bands)
				}
				if (mk.bandBase > 0) != bands {
					t.Fatalf("built for %d threads: bands over B packed by the run %v, want %v", built, mk.bandBase > 0, bands)
				}
				if mk.block == 0 && mk.bandBase == 0 {
					return
				}
				if want := int64(built*mk.block) * 4; mk.block > 0 && scratch != want {
					t.Errorf("scratch %d bytes, want %d (one block and band slice per worker)", scratch, want)
				}
				ref, refScratch := wholeOf(mk)
				want := raw32(runKernel(ref, 1, refScratch, feeds, outBytes)[0])
				for _, threads := range []int{1, 2, 3} {
					got := raw32(runKernel(k, threads, scratch, feeds, outBytes)[0])
					for i, w := range want {
						if got[i] != w {
							t.Fatalf("built for %d, run on %d threads: element %d is %08x, whole packing gives %08x", built, threads, i, got[i], w)
						}
					}
				}
			})
		})
	}
}

// TestMatMulColumnBlocksFused checks a block-packed product with an
// epilogue (a Relu clamping the product as the kernels store its last k
// slice, then a residual added block by block) against the same epilogue
// on whole packing, bit for bit; the product is three k slices deep.
func TestMatMulColumnBlocksFused(t *testing.T) {
	// The second shape is large enough for B in quads whole: its columns
	// are owned by workers that pack their part of B (ownColumns).
	for _, shape := range [][3]int64{{300, 513, 130}, {1030, 70, 1020}} {
		m, kk, nn := shape[0], shape[1], shape[2]
		t.Run(fmt.Sprint(shape), func(t *testing.T) { checkFusedProduct(t, m, kk, nn) })
	}
}

// checkFusedProduct is TestMatMulColumnBlocksFused for one m×kk by kk×nn
// product.
func checkFusedProduct(t *testing.T, m, kk, nn int64) {
	tg := newTGraph(17)
	x := tg.input("x", ir.Float32, m, kk)
	w := tg.input("w", ir.Float32, kk, nn)
	r := tg.input("r", ir.Float32, m, nn)
	mm := tg.node("MatMul", nil, []ir.TensorID{x, w}, out{ir.Float32, []int64{m, nn}})
	relu := tg.node("Relu", nil, []ir.TensorID{mm.Outputs[0]}, out{ir.Float32, []int64{m, nn}})
	add := tg.node("Add", nil, []ir.TensorID{relu.Outputs[0], r}, out{ir.Float32, []int64{m, nn}})
	ep, _, err := newEpilogue(tg.g, mm.Outputs[0], int(nn), []*ir.Node{relu, add})
	if err != nil {
		t.Fatal(err)
	}
	feeds := [][]byte{f32Bytes(randF32(int(m * kk))), f32Bytes(randF32(int(kk * nn))), f32Bytes(randF32(int(m * nn)))}
	for _, built := range []int{2, 3} {
		k, scratch, err := BuildFor(tg.g, mm, built)
		if err != nil {
			t.Fatal(err)
		}
		mk := k.(*matmulKernel)
		if mk.block == 0 && !(mk.bandBase > 0 && mk.rawA()) {
			t.Fatalf("built for %d threads: neither block-packed nor by owned columns", built)
		}
		ref, refScratch := wholeOf(mk)
		fk, ok1 := fuseEpilogue(k, ep, 2, built)
		fr, ok2 := fuseEpilogue(ref, ep, 2, built)
		if !ok1 || !ok2 {
			t.Fatal("fuseEpilogue refused")
		}
		outBytes := []int64{m * nn * 4, m * nn * 4, int64(ep.RegisterBytes(built))}
		for _, threads := range []int{1, 2, 3} {
			got := runKernel(fk, threads, scratch, feeds, outBytes)
			want := runKernel(fr, threads, refScratch, feeds, outBytes)
			for o := range 2 {
				g, w := raw32(got[o]), raw32(want[o])
				for i := range w {
					if g[i] != w[i] {
						t.Fatalf("built for %d, run on %d threads: output %d element %d is %08x, whole packing gives %08x", built, threads, o, i, g[i], w[i])
					}
				}
			}
		}
	}
}
