package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// runBoth compiles g with and without fusion (in place on and off), on 2
// and 3 threads (the kernels split their work differently), runs each on
// the same inputs and wants the same bytes; it returns the number of nodes
// absorbed into epilogues with fusion on.
func runBoth(t *testing.T, g *ir.Graph, inputs [][]byte) int {
	t.Helper()
	var ref [][]byte
	absorbed := -1
	for _, threads := range []int{3, 2} {
		for _, noInPlace := range []bool{false, true} {
			for _, noFusion := range []bool{true, false} {
				if threads == 2 && noFusion {
					continue
				}
				// Blocked layouts follow fusion and round otherwise.
				n := runOne(t, g, inputs, &ref, Options{Threads: threads, NoInPlace: noInPlace, Tuning: Tuning{NoFusion: noFusion, NoBlocking: true}})
				if !noFusion && !noInPlace && threads == 3 {
					absorbed = n
				}
			}
		}
	}
	return absorbed
}

// runOne compiles g with opts, runs it on inputs and compares the outputs
// with ref (which it sets when nil); it returns the number of nodes
// absorbed into epilogues.
func runOne(t *testing.T, g *ir.Graph, inputs [][]byte, ref *[][]byte, opts Options) int {
	t.Helper()
	noInPlace, noFusion := opts.NoInPlace, opts.NoFusion
	exe, err := Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, a := range exe.absorbed {
		if a {
			n++
		}
	}
	if noFusion && n != 0 {
		t.Fatalf("NoFusion, yet %d nodes absorbed", n)
	}
	res := runOnce(t, exe, inputs)
	if *ref == nil {
		*ref = res
	} else {
		for i, r := range res {
			if !bytes.Equal(r, (*ref)[i]) {
				t.Fatalf("%d threads, in place %v, fusion %v: output %d differs from the unfused run", opts.Threads, !noInPlace, !noFusion, i)
			}
		}
	}
	return n
}

// TestFusedChains fuses elementwise chains into MatMul, Gemm and Conv
// epilogues and wants the bytes of the unfused run.
func TestFusedChains(t *testing.T) {
	const f32 = ir.Float32
	rng := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	bools := func(n int) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = byte(rng.IntN(2))
		}
		return v
	}
	mm := []int64{2, 37, 45} // MatMul output: [2, 37, 20] × [20, 45]
	cv := []int64{2, 6, 9, 11}
	type producer func(k *kgraph) (y ir.TensorID, shape []int64)
	matmul := func(k *kgraph) (ir.TensorID, []int64) {
		x := k.input("x", f32, 2, 37, 20)
		a := k.node("Neg", nil, []ir.TensorID{x}, f32, 2, 37, 20)
		w := k.constant("w", vals(20*45), 20, 45)
		return k.node("MatMul", nil, []ir.TensorID{a, w}, f32, mm...), mm
	}
	conv := func(k *kgraph) (ir.TensorID, []int64) {
		x := k.input("x", f32, 2, 4, 9, 11)
		w := k.constant("w", vals(6*4*9), 6, 4, 3, 3)
		b := k.constant("b", vals(6), 6)
		at := ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}}}
		return k.node("Conv", at, []ir.TensorID{x, w, b}, f32, cv...), cv
	}
	// A deep 3×3 convolution (several k slices) and a 1×1 one whose
	// input the kernels read in place.
	cvDeep := []int64{1, 14, 10, 12}
	convDeep := func(k *kgraph) (ir.TensorID, []int64) {
		x := k.input("x", f32, 1, 40, 10, 12)
		w := k.constant("w", vals(14*40*9), 14, 40, 3, 3)
		at := ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}}}
		return k.node("Conv", at, []ir.TensorID{x, w}, f32, cvDeep...), cvDeep
	}
	// pointwise is a biased 1×1 convolution of 300 channels into m on
	// n images of h×w.
	pointwise := func(n, m, h, w int64) ([]int64, producer) {
		shape := []int64{n, m, h, w}
		return shape, func(k *kgraph) (ir.TensorID, []int64) {
			x := k.input("x", f32, n, 300, h, w)
			wt := k.constant("w", vals(int(m)*300), m, 300, 1, 1)
			b := k.constant("b", vals(int(m)), m)
			return k.node("Conv", nil, []ir.TensorID{x, wt, b}, f32, shape...), shape
		}
	}
	cvPoint, convPoint := pointwise(1, 20, 12, 13)
	// 1×1 planes (squeeze-and-excitation): one product with the images
	// as rows; 7×7 planes: the positions as rows.
	_, convSE := pointwise(3, 40, 1, 1)
	cvSmall, convSmall := pointwise(2, 64, 7, 7)
	// depthwise is a biased depthwise kk×kk convolution with stride st
	// and pads kk/2 of c channels of h×w: planes of more than 400
	// outputs run in bands (3×3 on the row-blocked kernels), smaller
	// ones sixteen channels at a time.
	depthwise := func(c, h, w, kk, st int64) ([]int64, producer) {
		p := kk / 2
		shape := []int64{1, c, (h+2*p-kk)/st + 1, (w+2*p-kk)/st + 1}
		return shape, func(k *kgraph) (ir.TensorID, []int64) {
			x := k.input("x", f32, 1, c, h, w)
			wt := k.constant("w", vals(int(c*kk*kk)), c, 1, kk, kk)
			b := k.constant("b", vals(int(c)), c)
			at := ir.Attrs{
				"group":   {Kind: ir.AttrInt, Int: c},
				"pads":    {Kind: ir.AttrInts, Ints: []int64{p, p, p, p}},
				"strides": {Kind: ir.AttrInts, Ints: []int64{st, st}},
			}
			return k.node("Conv", at, []ir.TensorID{x, wt, b}, f32, shape...), shape
		}
	}
	// A 3×3 convolution on the Winograd path, its tile blocks ending
	// inside a tile row.
	cvWino := []int64{1, 40, 30, 25}
	convWino := func(k *kgraph) (ir.TensorID, []int64) {
		x := k.input("x", f32, 1, 48, 30, 25)
		w := k.constant("w", vals(40*48*9), 40, 48, 3, 3)
		b := k.constant("b", vals(40), 40)
		at := ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{1, 1, 1, 1}}}
		return k.node("Conv", at, []ir.TensorID{x, w, b}, f32, cvWino...), cvWino
	}
	// 1×1 convolutions of stride 2 (a residual block's shortcut) run on
	// their input's subsampled copy, into 7×7 planes or blocks.
	downsample := func(c, h, w, m int64) ([]int64, producer) {
		shape := []int64{1, m, (h + 1) / 2, (w + 1) / 2}
		return shape, func(k *kgraph) (ir.TensorID, []int64) {
			x := k.input("x", f32, 1, c, h, w)
			wt := k.constant("w", vals(int(m*c)), m, c, 1, 1)
			b := k.constant("b", vals(int(m)), m)
			at := ir.Attrs{"strides": {Kind: ir.AttrInts, Ints: []int64{2, 2}}}
			return k.node("Conv", at, []ir.TensorID{x, wt, b}, f32, shape...), shape
		}
	}
	cvDown7, convDown7 := downsample(48, 14, 13, 40)
	cvDown, convDown := downsample(36, 30, 29, 44)
	_, convDW := depthwise(20, 27, 30, 3, 1)
	_, convDW2 := depthwise(18, 45, 38, 3, 2)
	_, convDW5 := depthwise(5, 25, 26, 5, 1)
	_, convDWSmall := depthwise(20, 9, 9, 3, 1)
	clip := func(k *kgraph, y ir.TensorID, s []int64) ir.TensorID {
		lo, hi := k.constant("lo", []float32{-0.5}), k.constant("hi", []float32{0.75})
		return k.node("Clip", nil, []ir.TensorID{y, lo, hi}, f32, s...)
	}
	// A chain gets the producer's output y and adds nodes after it; r
	// makes a residual input of y's shape.
	type chain func(k *kgraph, y ir.TensorID, r func() ir.TensorID, shape []int64) ir.TensorID
	un := func(op string, attrs ir.Attrs) chain {
		return func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node(op, attrs, []ir.TensorID{y}, f32, s...)
		}
	}
	cases := []struct {
		name  string
		prod  producer
		chain chain
		want  int     // nodes absorbed
		res   []int64 // shape of the residual input the chain reads, or nil
	}{
		{"matmul relu", matmul, un("Relu", nil), 1, nil},
		{"matmul bias gelu", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			b := k.node("Add", nil, []ir.TensorID{y, k.constant("bias", vals(45), 45)}, f32, s...)
			d := k.node("Div", nil, []ir.TensorID{b, k.constant("sqrt2", []float32{1.4142135})}, f32, s...)
			e := k.node("Erf", nil, []ir.TensorID{d}, f32, s...)
			a := k.node("Add", nil, []ir.TensorID{e, k.constant("one", []float32{1})}, f32, s...)
			m := k.node("Mul", nil, []ir.TensorID{b, a}, f32, s...)
			return k.node("Mul", nil, []ir.TensorID{m, k.constant("half", []float32{0.5})}, f32, s...)
		}, 6, nil},
		{"matmul tanh gelu", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			p := k.node("Pow", nil, []ir.TensorID{y, k.constant("three", []float32{3})}, f32, s...)
			m := k.node("Mul", nil, []ir.TensorID{p, k.constant("c", []float32{0.044715})}, f32, s...)
			a := k.node("Add", nil, []ir.TensorID{y, m}, f32, s...)
			th := k.node("Tanh", nil, []ir.TensorID{a}, f32, s...)
			return k.node("Mul", nil, []ir.TensorID{y, th}, f32, s...)
		}, 5, nil},
		{"matmul bias residual", matmul, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			b := k.node("Add", nil, []ir.TensorID{k.constant("bias", vals(45), 1, 1, 45), y}, f32, s...)
			return k.node("Add", nil, []ir.TensorID{r(), b}, f32, s...)
		}, 2, mm},
		{"matmul row scale", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Mul", nil, []ir.TensorID{y, k.constant("rows", vals(37), 37, 1)}, f32, s...)
		}, 1, nil},
		// A constant of whole rows over the batch (an attention mask):
		// with the batch dimension or without, after a scale.
		{"matmul plane mask", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{y, k.constant("mask", vals(37*45), 37, 45)}, f32, s...)
		}, 1, nil},
		{"matmul scale plane mask", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			d := k.node("Div", nil, []ir.TensorID{y, k.constant("eight", []float32{8})}, f32, s...)
			return k.node("Add", nil, []ir.TensorID{k.constant("mask", vals(37*45), 1, 37, 45), d}, f32, s...)
		}, 2, nil},
		// A causal mask through Where, its constant condition true
		// (keep) or false (mask) by rows, either order of the values.
		{"matmul where mask", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			d := k.node("Mul", nil, []ir.TensorID{y, k.constant("scale", []float32{0.125})}, f32, s...)
			return k.node("Where", nil, []ir.TensorID{k.boolConst("keep", bools(37*45), 1, 37, 45), d, k.constant("neg", []float32{-1e9})}, f32, s...)
		}, 2, nil},
		{"matmul where fill", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Where", nil, []ir.TensorID{k.boolConst("masked", bools(45), 45), k.constant("neg", []float32{-1e9}), y}, f32, s...)
		}, 1, nil},
		// A condition computed at run time does not fuse.
		{"matmul where input condition", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Where", nil, []ir.TensorID{k.input("c", ir.Bool, s...), y, k.constant("zero", []float32{0})}, f32, s...)
		}, -1, nil},
		// Per batch and column but not per row: no flat index fits.
		{"matmul batch column constant", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{y, k.constant("bc", vals(2*45), 2, 1, 45)}, f32, s...)
		}, -1, nil},
		{"matmul clip", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			lo, hi := k.constant("lo", []float32{0}), k.constant("hi", []float32{0.5})
			return k.node("Clip", nil, []ir.TensorID{y, lo, hi}, f32, s...)
		}, 1, nil},
		{"conv relu", conv, un("Relu", nil), 1, nil},
		{"conv deep relu", convDeep, un("Relu", nil), 1, nil},
		{"conv 1x1 clip", convPoint, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return clip(k, y, s)
		}, 1, nil},
		// The clamp runs in the kernels, the rest of the chain after.
		{"conv deep clip residual", convDeep, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{clip(k, y, s), r()}, f32, s...)
		}, 2, cvDeep},
		{"conv deep residual relu", convDeep, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{r(), y}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cvDeep},
		{"conv 1x1 of 1x1 planes silu", convSE, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			sg := k.node("Sigmoid", nil, []ir.TensorID{y}, f32, s...)
			return k.node("Mul", nil, []ir.TensorID{y, sg}, f32, s...)
		}, 2, nil},
		{"conv 1x1 of 1x1 planes residual clip", convSE, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{y, k.input("r", f32, s...)}, f32, s...)
			return clip(k, a, s)
		}, 2, nil},
		{"conv 1x1 of 7x7 planes clip", convSmall, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return clip(k, y, s)
		}, 1, nil},
		{"conv 1x1 of 7x7 planes residual relu", convSmall, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{y, r()}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cvSmall},
		{"downsample residual relu", convDown, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{r(), y}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cvDown},
		{"downsample 7x7 residual relu", convDown7, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{r(), y}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cvDown7},
		{"winograd relu", convWino, un("Relu", nil), 1, nil},
		{"winograd clip residual", convWino, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{clip(k, y, s), r()}, f32, s...)
		}, 2, cvWino},
		{"winograd residual relu", convWino, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{r(), y}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cvWino},
		// Depthwise planes are clamped by the kernels that store them,
		// or after them.
		{"depthwise clip", convDW, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return clip(k, y, s)
		}, 1, nil},
		{"depthwise s2 relu", convDW2, un("Relu", nil), 1, nil},
		{"depthwise 5x5 clip", convDW5, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return clip(k, y, s)
		}, 1, nil},
		{"depthwise small planes clip", convDWSmall, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return clip(k, y, s)
		}, 1, nil},
		{"depthwise clip scale", convDW2, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Mul", nil, []ir.TensorID{clip(k, y, s), k.constant("half", []float32{0.5})}, f32, s...)
		}, 2, nil},
		{"conv 1x1 residual", convPoint, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{y, r()}, f32, s...)
		}, 1, cvPoint},
		// A residual that is a graph input is never overwritten: the
		// kernels add it as they store.
		{"conv deep input residual relu", convDeep, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{k.input("r", f32, s...), y}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, nil},
		{"conv 1x1 input residual", convPoint, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Add", nil, []ir.TensorID{y, k.input("r", f32, s...)}, f32, s...)
		}, 1, nil},
		{"matmul relu scale", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Relu", nil, []ir.TensorID{y}, f32, s...)
			return k.node("Mul", nil, []ir.TensorID{a, k.constant("half", []float32{0.5})}, f32, s...)
		}, 2, nil},
		// The chain reads y again after the Relu: the Relu stays in it.
		{"conv relu rereads y", conv, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Relu", nil, []ir.TensorID{y}, f32, s...)
			return k.node("Sub", nil, []ir.TensorID{a, y}, f32, s...)
		}, 2, nil},
		{"conv residual relu", conv, func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID {
			a := k.node("Add", nil, []ir.TensorID{y, r()}, f32, s...)
			return k.node("Relu", nil, []ir.TensorID{a}, f32, s...)
		}, 2, cv},
		{"conv silu", conv, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			sg := k.node("Sigmoid", nil, []ir.TensorID{y}, f32, s...)
			return k.node("Mul", nil, []ir.TensorID{y, sg}, f32, s...)
		}, 2, nil},
		{"conv channel scale", conv, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			return k.node("Mul", nil, []ir.TensorID{y, k.constant("ch", vals(6), 6, 1, 1)}, f32, s...)
		}, 1, nil},
		// The whole chain is closed but PRelu does not fuse, and no
		// shorter prefix is closed (h is read by PRelu): nothing fuses.
		{"matmul unclosed prefix", matmul, func(k *kgraph, y ir.TensorID, _ func() ir.TensorID, s []int64) ir.TensorID {
			h := k.node("Mul", nil, []ir.TensorID{y, k.constant("half", []float32{0.5})}, f32, s...)
			th := k.node("Tanh", nil, []ir.TensorID{y}, f32, s...)
			u := k.node("Add", nil, []ir.TensorID{th, k.constant("one", []float32{1})}, f32, s...)
			return k.node("PRelu", nil, []ir.TensorID{h, u}, f32, s...)
		}, -1, nil},
		// y is also a graph output: nothing fuses.
		{"matmul output kept", matmul, un("Relu", nil), 0, nil},
	}
	for _, tiles := range []bool{true, false} {
		fuseTiles = tiles
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/tiles=%v", c.name, tiles), func(t *testing.T) {
				testChain(t, rng, c.prod, c.chain, c.want, c.res)
			})
		}
	}
	fuseTiles = true
}

// testChain builds a graph of prod followed by chain (reading a residual
// of shape res when res is not nil), runs it with and without fusion and
// wants the same bytes, and want nodes absorbed (0: y is also made a graph
// output, so none may be; -1: none, with y read only by the chain).
func testChain(t *testing.T, rng *rand.Rand, prod func(k *kgraph) (ir.TensorID, []int64),
	chain func(k *kgraph, y ir.TensorID, r func() ir.TensorID, s []int64) ir.TensorID, want int, res []int64) {
	const f32 = ir.Float32
	k := &kgraph{g: &ir.Graph{Name: "fuse", Opsets: map[string]int64{"": 17}}}
	// The residual is computed before the producer, as in a residual
	// block.
	r := ir.NoTensor
	if res != nil {
		r = k.node("Neg", nil, []ir.TensorID{k.input("r", f32, res...)}, f32, res...)
	}
	y, s := prod(k)
	k.g.Outputs = []ir.TensorID{chain(k, y, func() ir.TensorID { return r }, s)}
	if want == 0 {
		k.g.Outputs = append(k.g.Outputs, y)
	}
	if got := runBoth(t, k.g, randomInputs(rng, k.g)); got != max(want, 0) {
		t.Errorf("%d nodes absorbed, want %d", got, max(want, 0))
	}
}

// TestFusedFixtures runs every fixture with and without fusion and wants
// the same bytes.
func TestFusedFixtures(t *testing.T) {
	models, _ := filepath.Glob(fixtures + "*/model.onnx")
	if len(models) == 0 {
		t.Fatal("no fixtures")
	}
	for _, path := range models {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			n := runBoth(t, loadFixture(t, path), fixtureInputs(t, dir))
			t.Logf("%d nodes absorbed into epilogues", n)
		})
	}
}

// TestOverwriteResidual fuses a residual Add into convolutions whose
// result then takes over the residual's bytes (overwrite mode), and wants
// the bytes of the unfused run.
func TestOverwriteResidual(t *testing.T) {
	const f32 = ir.Float32
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name          string
		cin, cout, hw int64
		kern, pad     int64
		residualFirst bool // Add(r, y) instead of Add(y, r)
	}{
		{"1x1", 8, 16, 64, 1, 0, false},
		{"1x1 two k slices", 300, 16, 64, 1, 0, true},
		{"1x1 two k slices whole panels", 300, 18, 64, 1, 0, false},
		{"3x3", 8, 16, 64, 3, 1, false},
		{"1x1 rows not whole panels", 5, 7, 80, 1, 0, true},
		{"1x1 rows in chunks", 8, 130, 64, 1, 0, false},
		{"3x3 rows in chunks", 8, 131, 64, 3, 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &kgraph{g: &ir.Graph{Name: "overwrite", Opsets: map[string]int64{"": 17}}}
			out := []int64{1, c.cout, c.hw, c.hw}
			r := k.node("Neg", nil, []ir.TensorID{k.input("r", f32, out...)}, f32, out...)
			x := k.input("x", f32, 1, c.cin, c.hw, c.hw)
			w := make([]float32, c.cout*c.cin*c.kern*c.kern)
			for i := range w {
				w[i] = float32(rng.NormFloat64())
			}
			b := make([]float32, c.cout)
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			at := ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{c.pad, c.pad, c.pad, c.pad}}}
			y := k.node("Conv", at, []ir.TensorID{x, k.constant("w", w, c.cout, c.cin, c.kern, c.kern), k.constant("b", b, c.cout)}, f32, out...)
			ins := []ir.TensorID{y, r}
			if c.residualFirst {
				ins = []ir.TensorID{r, y}
			}
			a := k.node("Add", nil, ins, f32, out...)
			z := k.node("Relu", nil, []ir.TensorID{a}, f32, out...)
			k.g.Outputs = []ir.TensorID{z}

			exe, err := Compile(k.g, Options{Threads: 3})
			if err != nil {
				t.Fatal(err)
			}
			conv := k.g.Tensor(y).Producer
			f := exe.fusions[conv]
			if f == nil || len(f.overwrite) != 1 || f.overwrite[0] != r {
				t.Fatalf("the residual is not overwritten: %+v", f)
			}
			if zs, rs := exe.layout.Slots[z], exe.layout.Slots[r]; zs.Offset != rs.Offset {
				t.Errorf("result at %d, residual at %d: not in place", zs.Offset, rs.Offset)
			}
			if got := runBoth(t, k.g, randomInputs(rng, k.g)); got != 2 {
				t.Errorf("%d nodes absorbed, want 2", got)
			}
		})
	}
}

// TestFusedPrologue runs BatchNormalization (and Relu) in the packing of
// the pointwise Conv that reads it, planned as one step, and wants the
// bytes of the unfused run.
func TestFusedPrologue(t *testing.T) {
	const f32 = ir.Float32
	rng := rand.New(rand.NewPCG(5, 6))
	vals := func(n int64, lo float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + math.Abs(rng.NormFloat64()))
		}
		return v
	}
	cases := []struct {
		name      string
		relu      bool
		kern      int64
		extraRead bool // the BN output is also a graph output: no prologue
		absorbed  int
	}{
		{"bn relu conv", true, 1, false, 2},
		{"bn conv", false, 1, false, 1},
		{"bn relu 3x3 conv", true, 3, false, 0},
		{"bn output kept", true, 1, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const ch, oc, hw = 40, 24, 17
			k := &kgraph{g: &ir.Graph{Name: "prologue", Opsets: map[string]int64{"": 17}}}
			x := k.input("x", f32, 2, ch, hw, hw)
			sh := []int64{2, ch, hw, hw}
			bn := k.node("BatchNormalization", nil, []ir.TensorID{x,
				k.constant("scale", vals(ch, -1), ch), k.constant("bias", vals(ch, -1), ch),
				k.constant("mean", vals(ch, -1), ch), k.constant("var", vals(ch, 0.1), ch)}, f32, sh...)
			in := bn
			if c.relu {
				in = k.node("Relu", nil, []ir.TensorID{bn}, f32, sh...)
			}
			w := vals(oc*ch*c.kern*c.kern, -1)
			pad := (c.kern - 1) / 2
			at := ir.Attrs{"pads": {Kind: ir.AttrInts, Ints: []int64{pad, pad, pad, pad}}}
			y := k.node("Conv", at, []ir.TensorID{in, k.constant("w", w, oc, ch, c.kern, c.kern), k.constant("b", vals(oc, -1), oc)}, f32, 2, oc, hw, hw)
			k.g.Outputs = []ir.TensorID{y}
			if c.extraRead {
				k.g.Outputs = append(k.g.Outputs, bn)
			}
			if got := runBoth(t, k.g, randomInputs(rng, k.g)); got != c.absorbed {
				t.Errorf("%d nodes absorbed, want %d", got, c.absorbed)
			}
		})
	}
}

// TestOverwritePruned checks that overwrite mode, which costs time, is
// taken back where it does not lower the arena: here the peak is an
// earlier, larger step.
func TestOverwritePruned(t *testing.T) {
	const f32 = ir.Float32
	rng := rand.New(rand.NewPCG(7, 8))
	k := &kgraph{g: &ir.Graph{Name: "pruned", Opsets: map[string]int64{"": 17}}}
	// The peak: two 8 MiB tensors live at once.
	big := k.node("Exp", nil, []ir.TensorID{k.input("big", f32, 1, 32, 256, 256)}, f32, 1, 32, 256, 256)
	sum := k.node("ReduceSum", nil, []ir.TensorID{big, k.ints64("axes", 1, 2, 3)}, f32, 1, 1, 1, 1)
	out := []int64{1, 16, 64, 64}
	r := k.node("Neg", nil, []ir.TensorID{k.input("r", f32, out...)}, f32, out...)
	w := make([]float32, 16*8)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	y := k.node("Conv", nil, []ir.TensorID{k.input("x", f32, 1, 8, 64, 64), k.constant("w", w, 16, 8, 1, 1)}, f32, out...)
	z := k.node("Relu", nil, []ir.TensorID{k.node("Add", nil, []ir.TensorID{y, r}, f32, out...)}, f32, out...)
	k.g.Outputs = []ir.TensorID{sum, z}
	exe, err := Compile(k.g, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	f := exe.fusions[k.g.Tensor(y).Producer]
	if f == nil {
		t.Fatal("the residual chain is not fused")
	}
	if len(f.overwrite) != 0 || f.temp != 0 || f.kernel != f.plain {
		t.Errorf("overwrite mode kept (%v, %d bytes of tile buffers) where the peak is elsewhere", f.overwrite, f.temp)
	}
	if got := runBoth(t, k.g, randomInputs(rng, k.g)); got != 2 {
		t.Errorf("%d nodes absorbed, want 2", got)
	}
}
