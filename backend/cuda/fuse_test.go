package cuda

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
	"github.com/berth-ml/berth/plan"
)

// TestIndexTerms checks the generated kernels' offsets of broadcast
// inputs against a naive walk of the multi-index.
func TestIndexTerms(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		rank := 1 + r.IntN(5)
		out := make([]int64, rank)
		for d := range out {
			out[d] = int64(1 + r.IntN(5))
		}
		inRank := 1 + r.IntN(rank)
		in := make([]int64, inRank)
		for d := range in {
			if r.IntN(3) == 0 {
				in[d] = 1
			} else {
				in[d] = out[rank-inRank+d]
			}
		}
		terms, flat := indexTerms(out, broadcastStrides(in, out))
		ics := ir.Shape(in).Strides()
		n := prod(out)
		allFlat := true
		for i := range n {
			// Naive: decompose i, drop the broadcast axes.
			var want int64
			rem := i
			for d := rank - 1; d >= 0; d-- {
				q := rem % out[d]
				rem /= out[d]
				if k := d - (rank - inRank); k >= 0 && in[k] != 1 {
					want += q * ics[k]
				}
			}
			got := evalTerms(terms, i)
			if flat {
				got = i
			}
			if got != want {
				t.Fatalf("trial %d: out %v in %v index %d: offset %d, want %d (terms %+v, flat %v)", trial, out, in, i, got, want, terms, flat)
			}
			allFlat = allFlat && want == i
		}
		if flat && !allFlat {
			t.Fatalf("out %v in %v: flat, but the offsets are not the index", out, in)
		}
	}
}

// geluGraph is MatMul → bias Add → GELU (erf form, as exported from
// PyTorch) → MatMul → bias Add → residual Add, the FFN of a transformer
// layer, with batch b of s tokens of width d and inner width f.
func geluGraph(b, s, d, f int64) *tg {
	g := newTG(17)
	x := g.input(ir.Float32, b, s, d)
	g.node("MatMul", nil, 1, x, g.constant(ir.Float32, d, f))
	mm := g.g.Outputs[0]
	g.node("Add", nil, 1, g.constant(ir.Float32, f), mm)
	a := g.g.Outputs[0]
	g.node("Div", nil, 1, a, g.scalar(float32(math.Sqrt2)))
	g.node("Erf", nil, 1, g.g.Outputs[0])
	g.node("Add", nil, 1, g.g.Outputs[0], g.scalar(1))
	g.node("Mul", nil, 1, a, g.g.Outputs[0])
	g.node("Mul", nil, 1, g.g.Outputs[0], g.scalar(0.5))
	g.node("MatMul", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, f, d))
	g.node("Add", nil, 1, g.constant(ir.Float32, d), g.g.Outputs[0])
	g.node("Add", nil, 1, x, g.g.Outputs[0])
	return g
}

// attentionGraph is softmax(Q·Kᵀ / 8)·V with K transposed by a node.
func attentionGraph(b, h, s, d int64) *tg {
	g := newTG(17)
	q, k, v := g.input(ir.Float32, b, h, s, d), g.input(ir.Float32, b, h, s, d), g.input(ir.Float32, b, h, s, d)
	g.node("Transpose", ir.Attrs{"perm": ints(0, 1, 3, 2)}, 1, k)
	g.node("MatMul", nil, 1, q, g.g.Outputs[0])
	g.node("Div", nil, 1, g.g.Outputs[0], g.scalar(8))
	g.node("Softmax", ir.Attrs{"axis": intv(-1)}, 1, g.g.Outputs[0])
	g.node("MatMul", nil, 1, g.g.Outputs[0], v)
	g.node("Transpose", ir.Attrs{"perm": ints(0, 2, 1, 3)}, 1, g.g.Outputs[0])
	g.node("Reshape", nil, 1, g.g.Outputs[0], g.ints(b, s, h*d))
	g.node("MatMul", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, h*d, 24))
	return g
}

// convGraph is a bottleneck block: 1×1 Conv → Relu → 3×3 Conv → Relu →
// 1×1 Conv, plus a 1×1 Conv of the input, → Add → Relu, every Conv with
// a bias.
func convGraph(n, c, hw int64) *tg {
	g := newTG(17)
	x := g.input(ir.Float32, n, c, hw, hw)
	conv := func(in ir.TensorID, oc, ic, k int64) ir.TensorID {
		var at ir.Attrs
		if k == 3 {
			at = ir.Attrs{"pads": ints(1, 1, 1, 1)}
		}
		g.node("Conv", at, 1, in, g.constant(ir.Float32, oc, ic, k, k), g.constant(ir.Float32, oc))
		return g.g.Outputs[0]
	}
	g.node("Relu", nil, 1, conv(x, 8, c, 1))
	g.node("Relu", nil, 1, conv(g.g.Outputs[0], 8, 8, 3))
	y := conv(g.g.Outputs[0], 2*c, 8, 1)
	down := conv(x, 2*c, c, 1)
	g.node("Add", nil, 1, y, down)
	g.node("Relu", nil, 1, g.g.Outputs[0])
	return g
}

// twoBlocks is convGraph followed by a second block whose 1×1 Conv and
// residual Add both read the first block's output.
func twoBlocks(n, c, hw int64) *tg {
	g := convGraph(n, c, hw)
	y1 := g.g.Outputs[0]
	g.node("Conv", nil, 1, y1, g.constant(ir.Float32, 2*c, 2*c, 1, 1), g.constant(ir.Float32, 2*c))
	g.node("Add", nil, 1, g.g.Outputs[0], y1)
	g.node("Relu", nil, 1, g.g.Outputs[0])
	return g
}

func opsOf(g *ir.Graph, nodes []int) []string {
	var s []string
	for _, i := range nodes {
		s = append(s, g.Nodes[i].Op)
	}
	return s
}

// TestAnalyzeFusion checks the fusion decisions on the patterns they are
// for (host only: no GPU needed).
func TestAnalyzeFusion(t *testing.T) {
	bf := func() *halves { return &halves{prec: BF16, shadow: map[ir.TensorID]int{}} }
	t.Run("gelu", func(t *testing.T) {
		g := geluGraph(2, 8, 16, 32)
		hs := bf()
		fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
		var multi [][]string
		for _, e := range fz.groups {
			if len(e.nodes) > 1 {
				multi = append(multi, opsOf(g.g, e.nodes))
			}
		}
		want := [][]string{{"Add", "Add"}, {"Add", "Div", "Erf", "Add", "Mul", "Mul"}}
		slices.SortFunc(multi, func(a, b []string) int { return len(a) - len(b) })
		if len(multi) != 2 || !slices.Equal(multi[0], want[0]) || !slices.Equal(multi[1], want[1]) {
			t.Fatalf("groups %v, want %v", multi, want)
		}
		gelu := g.g.Nodes[6].Outputs[0] // the second Mul: read only by the MatMul
		if !fz.half[gelu] || len(fz.half) != 1 {
			t.Errorf("16-bit tensors %v, want only %d", fz.half, gelu)
		}
		// Both MatMuls feed only generated kernels: bfloat16 outputs.
		if !fz.out16[g.g.Nodes[0].Outputs[0]] || !fz.out16[g.g.Nodes[7].Outputs[0]] || len(fz.out16) != 2 {
			t.Errorf("bfloat16 GEMM outputs %v, want the two MatMuls'", fz.out16)
		}
		// Under F16 no GEMM output is rounded (the range could overflow).
		hf := &halves{prec: F16, shadow: map[ir.TensorID]int{}}
		if fz := analyzeFusion(g.g, true, hf, acceptsHalf(g.g, 1, hf)); len(fz.out16) != 0 || len(fz.half) != 1 {
			t.Errorf("f16: GEMM outputs %v in 16 bits, 16-bit operands %v", fz.out16, fz.half)
		}
		// Without 16-bit operands nothing is held in 16 bits.
		if fz := analyzeFusion(g.g, true, nil, nil); len(fz.half) != 0 {
			t.Errorf("fp32: 16-bit tensors %v", fz.half)
		}
	})
	t.Run("attention", func(t *testing.T) {
		g := attentionGraph(2, 3, 16, 8)
		hs := bf()
		fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
		var got []string
		for id := range fz.half {
			got = append(got, g.g.Nodes[g.g.Tensor(id).Producer].Op)
		}
		slices.Sort(got)
		// Kᵀ, the probabilities, the heads transposed back and their view.
		want := []string{"Reshape", "Softmax", "Transpose", "Transpose"}
		if !slices.Equal(got, want) {
			t.Errorf("16-bit tensors produced by %v, want %v", got, want)
		}
	})
	t.Run("conv", func(t *testing.T) {
		g := convGraph(2, 8, 6)
		hs := bf()
		fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
		if len(fz.bias) != 4 {
			t.Errorf("%d Conv biases left to the readers, want 4", len(fz.bias))
		}
		var relus int
		for id := range fz.half {
			if g.g.Nodes[g.g.Tensor(id).Producer].Op == "Relu" {
				relus++
			}
		}
		if relus != 2 || len(fz.half) != 2 {
			t.Errorf("16-bit tensors %v, want the two inner Relus", fz.half)
		}
		if len(fz.out16) != 4 {
			t.Errorf("bfloat16 Conv outputs %v, want all 4", fz.out16)
		}
		// Under BF16 a block output that a Conv and a residual Add read
		// is held in 16 bits (the Add widens it); under F16 it is not.
		g2 := twoBlocks(2, 8, 6)
		y1 := g2.g.Nodes[len(g.g.Nodes)-1].Outputs[0]
		for _, prec := range []Precision{BF16, F16} {
			h := &halves{prec: prec, shadow: map[ir.TensorID]int{}}
			fz := analyzeFusion(g2.g, true, h, acceptsHalf(g2.g, 1, h))
			if fz.half[y1] != (prec == BF16) {
				t.Errorf("%s: block output held in 16 bits: %v", prec, fz.half[y1])
			}
		}
		// Without cuBLAS the readers add the bias too, and the parts of
		// a product split in K (fusion.sums), in float32; under 16-bit
		// products berth's GEMM adds its own bias.
		if fz := analyzeFusion(g.g, false, nil, nil); len(fz.bias) != 4 || len(fz.sums) != 4 {
			t.Errorf("without cuBLAS: %d biases left to readers, %d outputs summed by them; want 4 and 4", len(fz.bias), len(fz.sums))
		}
		h := &halves{prec: BF16, shadow: map[ir.TensorID]int{}}
		if fz := analyzeFusion(g.g, false, h, acceptsHalf(g.g, 1, h)); len(fz.bias) != 0 || len(fz.sums) != 0 {
			t.Errorf("without cuBLAS, BF16: %d biases left to readers, %d outputs summed by them; want none", len(fz.bias), len(fz.sums))
		}
	})
	t.Run("layer norm before products", func(t *testing.T) {
		// A LayerNorm that only GEMMs read writes their 16-bit operand;
		// one that a generated kernel reads too stays float32.
		g := newTG(17)
		x := g.input(ir.Float32, 2, 8, 64)
		g.node("LayerNormalization", ir.Attrs{"axis": intv(-1)}, 1, x, g.constant(ir.Float32, 64), g.constant(ir.Float32, 64))
		ln := g.g.Outputs[0]
		g.node("MatMul", nil, 1, ln, g.constant(ir.Float32, 64, 32))
		q := g.g.Outputs[0]
		g.node("MatMul", nil, 1, ln, g.constant(ir.Float32, 64, 32))
		g.node("Add", nil, 1, q, g.g.Outputs[0])
		hs := bf()
		fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
		if !fz.half[ln] {
			t.Errorf("the LayerNorm's output is not held in 16 bits (16-bit tensors %v)", fz.half)
		}
		c, err := buildNodeWith(g.g, 0, 1, true, new([][]byte), hs, fz)
		if err != nil || len(c.launches) != 1 || !strings.HasPrefix(c.launches[0].kernel, "layernorm_warp4_h_") {
			t.Errorf("LayerNorm held in 16 bits builds %v, %v; want one layernorm_warp4_h launch", c, err)
		}
		g.node("Add", nil, 1, ln, x) // a residual: the norm's output stays float32
		for _, prec := range []Precision{BF16, F16} {
			h := &halves{prec: prec, shadow: map[ir.TensorID]int{}}
			if fz := analyzeFusion(g.g, true, h, acceptsHalf(g.g, 1, h)); fz.half[ln] {
				t.Errorf("%s: the LayerNorm's output, which an Add reads too, is held in 16 bits", prec)
			}
		}
	})
}

// TestFusedKernelText checks the shape of a generated kernel: the
// external inputs loaded once, scalars inlined, the store in 16 bits for
// a tensor held so.
func TestFusedKernelText(t *testing.T) {
	g := geluGraph(2, 8, 16, 32)
	hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}}
	fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
	e := fz.groups[fz.group[6]]
	k, err := fz.kernel(g.g, e.nodes)
	if err != nil {
		t.Fatal(err)
	}
	// The MatMul output (in bfloat16) and the bias: two pointers; √2, 1
	// and 0.5 inline.
	mm := g.g.Nodes[0].Outputs[0]
	if len(k.ext) != 2 || k.ext[1] != mm || !fz.out16[mm] || k.flat[0] || k.flat[1] {
		t.Errorf("external inputs %v (flat %v), want the bias then the MatMul output, read in 16 bits", k.ext, k.flat)
	}
	for _, s := range []string{"erff(", "return v5;", "round_h(NAME_f(", "u16* y", "fdiv_r(i, s0_m0)", "i < n;", "__int_as_float(0x3f000000)", "((const uint2*)p1)[q]", "widen_h(p1[i], 0)"} {
		if !strings.Contains(k.text, s) {
			t.Errorf("kernel lacks %q:\n%s", s, k.text)
		}
	}
	// The bias, its divisor (32 columns), the MatMul output, n.
	if len(k.args) != 4 || k.args[1].words[0] != uint64(32)|uint64(fastDivisorMagic(32))<<32 || k.args[3].words[0] != uint64(k.n) {
		t.Errorf("arguments %+v, want the bias, a divisor by 32, the MatMul output and n", k.args)
	}
	// Other sizes, the same structure: the same kernel, other arguments.
	for _, dims := range [][4]int64{{3, 5, 16, 40}, {2, 8, 17, 31}} {
		g2 := geluGraph(dims[0], dims[1], dims[2], dims[3])
		fz2 := analyzeFusion(g2.g, true, hs, acceptsHalf(g2.g, 1, hs))
		k2, err := fz2.kernel(g2.g, fz2.groups[fz2.group[6]].nodes)
		if err != nil {
			t.Fatal(err)
		}
		if k2.kernelText != k.kernelText {
			t.Errorf("%v: another kernel text, not the one kept:\n%s", dims, k2.text)
		}
		if n := g2.g.Tensor(g2.g.Nodes[6].Outputs[0]).Shape.Elements(); k2.args[3].words[0] != uint64(n) {
			t.Errorf("%v: n = %d, want %d", dims, k2.args[3].words[0], n)
		}
	}
}

// TestFusedDescKeys: descriptions that differ in anything their text is
// made from have different keys.
func TestFusedDescKeys(t *testing.T) {
	base := func() *fusedDesc {
		return &fusedDesc{mode: 1, body: []string{"(x0 + x1)", "fmaxf(v0, 0.f)"}, exts: []extDesc{
			{flat: true},
			{h16: true, index: []termCode{{div: true}, {mod: true, mul: true}}, bias: true, ch: termCode{div: true, mod: true}},
		}}
	}
	changes := []struct {
		name string
		edit func(d *fusedDesc)
	}{
		{"wide", func(d *fusedDesc) { d.wide = true }},
		{"half", func(d *fusedDesc) { d.half = true }},
		{"mode", func(d *fusedDesc) { d.mode = 2 }},
		{"an input's width", func(d *fusedDesc) { d.exts[0].h16 = true }},
		{"an input's parts", func(d *fusedDesc) { d.exts[0].sums = true }},
		{"flat", func(d *fusedDesc) { d.exts[1].flat = true }},
		{"a term's division", func(d *fusedDesc) { d.exts[1].index[1].div = true }},
		{"a term's remainder", func(d *fusedDesc) { d.exts[1].index[0].mod = true }},
		{"a term's product", func(d *fusedDesc) { d.exts[1].index[0].mul = true }},
		{"a term more", func(d *fusedDesc) { d.exts[1].index = append(d.exts[1].index, termCode{}) }},
		{"the bias", func(d *fusedDesc) { d.exts[1].bias = false }},
		{"the channel's division", func(d *fusedDesc) { d.exts[1].ch.div = false }},
		{"an input more", func(d *fusedDesc) { d.exts = append(d.exts, extDesc{flat: true}) }},
		{"an expression", func(d *fusedDesc) { d.body[1] = "fmaxf(v0, 1.f)" }},
		{"expressions split otherwise", func(d *fusedDesc) { d.body = []string{"(x0 + x1)fmaxf(v0, 0.f)"} }},
	}
	seen := map[string]string{base().key(): "none"}
	for _, c := range changes {
		d := base()
		c.edit(d)
		k := d.key()
		if other, ok := seen[k]; ok {
			t.Errorf("%s: the key of %q's change", c.name, other)
		}
		seen[k] = c.name
		if d.render() == base().render() {
			t.Errorf("%s: the same text", c.name)
		}
	}
}

// TestFusedTextsOverModels: over the test models' fusion groups, plain
// and under 16-bit products, each kernel's text is its description's,
// written once and kept.
func TestFusedTextsOverModels(t *testing.T) {
	paths, err := filepath.Glob("../../testdata/models/*/model.onnx")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test models: %v", err)
	}
	kernels := 0
	for _, path := range paths {
		m, err := onnx.Import(path)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if err := passes.Prepare(m.Graph, cpu.Evaluate); err != nil {
			t.Fatal(err)
		}
		for _, prec := range []Precision{FP32, BF16} {
			g := fuseProducts(m.Graph)
			var hs *halves
			if prec.Half() {
				hs = &halves{prec: prec, shadow: map[ir.TensorID]int{}, from: map[int][]byte{}, mma: true, lt: true}
				g = roundShared(g)
				g = fuseEpilogues(g)
				g = roundAtNorm(g)
			}
			fz := analyzeFusion(g, prec.Half(), hs, acceptsHalf(g, 132, hs))
			for _, e := range fz.groups {
				k, err := fz.kernel(g, e.nodes)
				if err != nil {
					continue
				}
				_, d, _ := fz.describe(g, e.nodes)
				if k.text != d.render() {
					t.Errorf("%s: a kernel's text is not its description's", path)
				}
				if again, _ := fz.kernel(g, e.nodes); again.kernelText != k.kernelText {
					t.Errorf("%s: a kernel's text written again", path)
				}
				kernels++
			}
		}
	}
	if kernels == 0 {
		t.Fatal("no fused kernels")
	}
}

// BenchmarkFusedKernels generates the fused kernels of the test ResNet's
// groups, as a compile at a new shape does: described, their texts kept.
func BenchmarkFusedKernels(b *testing.B) {
	m, err := onnx.Import("../../testdata/models/resnet/model.onnx")
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := passes.Prepare(m.Graph, cpu.Evaluate); err != nil {
		b.Fatal(err)
	}
	g := fuseProducts(m.Graph)
	fz := analyzeFusion(g, false, nil, acceptsHalf(g, 132, nil))
	for b.Loop() {
		for _, e := range fz.groups {
			if _, err := fz.kernel(g, e.nodes); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(fz.groups)), "groups")
}

func fastDivisorMagic(d uint32) uint32 { m, _ := divisorMagic(d); return m }

// fastDivide is fdiv_q (fdivCommon) on the host.
func fastDivide(n, d uint32) uint32 {
	m, s := divisorMagic(d)
	t := uint32(uint64(n) * uint64(m) >> 32)
	return uint32((uint64(t) + uint64(n)) >> s)
}

// TestFusedKernelEmpty: a group over a tensor with no elements generates
// a kernel (never launched) rather than dividing by its zero strides.
func TestFusedKernelEmpty(t *testing.T) {
	g := newTG(17)
	// [2,1,1] broadcast over [2,0,3]: the outer axis's stride is 0.
	g.node("Add", nil, 1, g.input(ir.Float32, 2, 0, 3), g.constant(ir.Float32, 2, 1, 1))
	g.node("Relu", nil, 1, g.g.Outputs[0])
	fz := analyzeFusion(g.g, true, nil, nil)
	if _, err := fz.kernel(g.g, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
}

// TestFastDivide checks the divisors of generated kernels against Go's
// division, at the edges of the range they serve (n, d < 2³¹).
func TestFastDivide(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const top = 1<<31 - 1
	ds := []uint32{1, 2, 3, 5, 7, 31, 32, 33, 49, 64, 100, 197, 224, 3136, 12544, 50176, 1 << 20, 1<<20 + 1, 1<<30 - 1, 1 << 30, 1<<30 + 1, top - 1, top}
	for range 2000 {
		ds = append(ds, 1+r.Uint32N(top))
	}
	for _, d := range ds {
		ns := []uint32{0, 1, d - 1, d, d + 1, 2*d - 1, top - 1, top, top - d, top / d * d, top/d*d - 1}
		for range 200 {
			ns = append(ns, r.Uint32N(top+1))
		}
		for _, n := range ns {
			if n > top {
				continue
			}
			if got, want := fastDivide(n, d), n/d; got != want {
				t.Fatalf("%d / %d: %d, want %d", n, d, got, want)
			}
		}
	}
}

// TestCheckGroups builds the plan of each pattern and checks, step by
// step, that every group left whole reads only bytes no step between its
// first node and its sink writes.
func TestCheckGroups(t *testing.T) {
	for gi, g := range []*tg{geluGraph(2, 8, 16, 32), attentionGraph(2, 3, 16, 8), convGraph(2, 8, 6), twoBlocks(2, 8, 6)} {
		hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}}
		fz := analyzeFusion(g.g, true, hs, acceptsHalf(g.g, 1, hs))
		hs.stored = fz.half
		scratch := make([]int64, len(g.g.Nodes))
		var extras [][]byte
		for i := range g.g.Nodes {
			c, err := buildNodeWith(g.g, i, 1, true, &extras, hs, fz)
			if err != nil {
				t.Fatal(err)
			}
			scratch[i] = c.scratch
		}
		p, index, err := plan.FromGraph(g.g, scratch)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := plan.Build(p, plan.Options{Alignment: Alignment, NoInPlace: true})
		if err != nil {
			t.Fatal(err)
		}
		fz.checkGroups(g.g, p, pl, index, plan.ScratchTensors(p, index, scratch))
		if gi == 0 && fz.splits != 0 {
			// The GELU's kernel reads the first product's bfloat16
			// output flat from the very slot where it writes its own
			// bfloat16 result: element by element, which is safe.
			t.Errorf("GELU group split %d times, want none", fz.splits)
		}
		pos := make([]int, len(pl.Order))
		for q, s := range pl.Order {
			pos[s] = q
		}
		for gi, e := range fz.groups {
			if len(e.nodes) < 2 {
				continue
			}
			k, _ := fz.kernel(g.g, e.nodes)
			for _, x := range k.ext {
				if g.g.Tensor(x).IsConst() {
					continue
				}
				xs, xe := pl.Offsets[index[x]], pl.Offsets[index[x]]+p.Tensors[index[x]].Size
				for q := pos[e.nodes[0]] + 1; q < pos[e.sink()]; q++ {
					s := pl.Order[q]
					if fz.group[s] == gi {
						continue
					}
					for _, o := range p.Steps[s].Outputs {
						os, oe := pl.Offsets[o], pl.Offsets[o]+p.Tensors[o].Size
						if os < xe && xs < oe {
							t.Errorf("group %v: step %d writes over input %q", opsOf(g.g, e.nodes), s, g.g.Tensor(x).Name)
						}
					}
				}
			}
		}
	}
}

// evalGraph runs every node of g on the CPU backend and returns the graph
// outputs.
func evalGraph(tb testing.TB, g *tg) [][]byte {
	tb.Helper()
	for i, id := range g.g.Inputs {
		g.g.Tensor(id).Data = g.in[i]
	}
	var made []ir.TensorID
	for i := range g.g.Nodes {
		n := &g.g.Nodes[i]
		if err := cpu.Evaluate(g.g, n); err != nil {
			tb.Fatalf("CPU: %v", err)
		}
		made = append(made, n.Outputs...)
	}
	var out [][]byte
	for _, id := range g.g.Outputs {
		out = append(out, g.g.Tensor(id).Data)
	}
	for _, id := range made {
		g.g.Tensor(id).Data = nil
	}
	for _, id := range g.g.Inputs {
		g.g.Tensor(id).Data = nil
	}
	return out
}

// TestFusedMatchesCPU runs the fusion patterns on the GPU, fused and not,
// in every precision, against the CPU backend: fp32 within 1e-5, 16-bit
// GEMM operands within 1e-2 (rel L2).
func TestFusedMatchesCPU(t *testing.T) {
	requireGPU(t)
	cases := []struct {
		name string
		g    func() *tg
	}{
		{"gelu ffn", func() *tg { return geluGraph(2, 64, 64, 256) }},
		{"attention", func() *tg { return attentionGraph(2, 4, 64, 32) }},
		{"bottleneck", func() *tg { return convGraph(2, 16, 14) }},
		{"two blocks", func() *tg { return twoBlocks(2, 16, 14) }},
		{"shared operand", sharedOperandGraph},
		{"linear layers", linearGraph},
		{"norm, product and residual", normGraph},
		// Channels-last between the convolutions where cuDNN runs them.
		{"resnet", func() *tg { return resnetGraph(2, 32) }},
	}
	for _, tc := range cases {
		for _, prec := range []Precision{FP32, BF16, F16} {
			for _, nofuse := range []bool{false, true} {
				g := tc.g()
				want := evalGraph(t, g)
				exe, s := openSession(t, g.g, Options{Precision: prec, NoFusion: nofuse})
				got := [][]byte{make([]byte, len(want[0]))}
				for i := range got[0] {
					got[0][i] = 0xFF
				}
				if err := s.Run(g.in, got); err != nil {
					t.Fatalf("%s %s: %v", tc.name, prec, err)
				}
				var num, den float64
				for i := 0; i < len(want[0]); i += 4 {
					gv := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[0][i:])))
					wv := float64(math.Float32frombits(binary.LittleEndian.Uint32(want[0][i:])))
					num += (gv - wv) * (gv - wv)
					den += wv * wv
				}
				rel := math.Sqrt(num / den)
				tol := 1e-5
				if prec.Half() {
					tol = 1e-2
				}
				t.Logf("%s %s nofusion=%v: rel L2 %.3g, %d launches, fusion %+v", tc.name, prec, nofuse, rel, exe.Launches(), exe.Fusion())
				if !(rel <= tol) {
					t.Errorf("%s %s nofusion=%v: rel L2 %.3g > %g", tc.name, prec, nofuse, rel, tol)
				}
				s.Close()
				exe.Close()
			}
		}
	}
}

// TestIndexTermsPermuted checks the offsets of a Transpose's generated
// kernel (a permuted read) against a naive walk.
func TestIndexTermsPermuted(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		rank := 1 + r.IntN(5)
		xs := make([]int64, rank)
		for d := range xs {
			xs[d] = int64(1 + r.IntN(5))
		}
		perm := r.Perm(rank)
		cs := ir.Shape(xs).Strides()
		out, st := make([]int64, rank), make([]int64, rank)
		for d, p := range perm {
			out[d], st[d] = xs[p], cs[p]
		}
		terms, flat := indexTerms(out, st)
		for i := range prod(out) {
			var want int64
			rem := i
			for d := rank - 1; d >= 0; d-- {
				want += (rem % out[d]) * st[d]
				rem /= out[d]
			}
			got := evalTerms(terms, i)
			if flat {
				got = i
			}
			if got != want {
				t.Fatalf("trial %d: x %v perm %v index %d: offset %d, want %d", trial, xs, perm, i, got, want)
			}
		}
	}
}
