package cpu

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// proCase is a BatchNormalization (+ Relu) feeding a convolution.
type proCase struct {
	name        string
	n, c, m, gr int64
	sp          []int64 // spatial dimensions of the input
	kern        int64   // kernel size along every spatial axis (1: pointwise)
	stride, pad int64
	bias, relu  bool
	constW      bool
	varStats    bool // the BatchNormalization's mean is a graph input
}

// proGraph is the graph of a proCase and the data of its inputs.
type proGraph struct {
	g                 *ir.Graph
	bn, relu, conv    *ir.Node
	post              *ir.Node // a Relu reading the convolution's output
	x, w, b           []float32
	stats             [4][]float32 // scale, bias, mean, var
	xShape, yShape    []int64
	wShape            []int64
	bnIn, bnOut, cvIn ir.TensorID
}

// specialF32 returns n random values in [-3, 3) with zeros, negative
// zeros, infinities and a NaN or two among them.
func specialF32(n int) []float32 {
	v := randF32(n)
	for i := range v {
		v[i] *= 3
		switch rng.IntN(16) {
		case 0:
			v[i] = 0
		case 1:
			v[i] = float32(math.Copysign(0, -1))
		}
	}
	if n > 40 {
		v[rng.IntN(n)] = float32(math.NaN())
		v[rng.IntN(n)] = float32(math.Inf(-1))
		v[rng.IntN(n)] = float32(math.Inf(1))
	}
	if n > 400 {
		v[rng.IntN(n)] = math.Float32frombits(0xffc00001) // a negative NaN with a payload
	}
	return v
}

func buildProGraph(tb testing.TB, c proCase) *proGraph {
	tb.Helper()
	p := &proGraph{}
	tg := newTGraph(17)
	p.xShape = append([]int64{c.n, c.c}, c.sp...)
	p.x = specialF32(int(elems(p.xShape)))
	xi := tg.input("x", ir.Float32, p.xShape...)
	stats := make([]ir.TensorID, 4)
	for i := range p.stats {
		v := randF32(int(c.c))
		for j := range v {
			switch i {
			case 0: // scale, of both signs, never 0
				v[j] = (0.25 + float32(math.Abs(float64(v[j])))) * float32(1-2*(j%3/2))
			case 3: // variance
				v[j] = 0.05 + 2*float32(math.Abs(float64(v[j])))
			}
		}
		p.stats[i] = v
	}
	// Channel 0: b = −0 − 0·a = −0, so that x = −0 gives −0 (a > 0).
	p.stats[1][0] = float32(math.Copysign(0, -1))
	p.stats[2][0] = 0
	for i, name := range []string{"scale", "bnbias", "mean", "var"} {
		if i == 2 && c.varStats {
			stats[i] = tg.input(name, ir.Float32, c.c)
			continue
		}
		stats[i] = tg.constant(name, ir.Float32, f32Bytes(p.stats[i]), c.c)
	}
	bn := tg.node("BatchNormalization", ir.Attrs{"epsilon": {Kind: ir.AttrFloat, Float: 1e-3}},
		append([]ir.TensorID{xi}, stats...), out{ir.Float32, p.xShape})
	p.bnIn, p.bnOut = xi, bn.Outputs[0]
	nodes := []int{0}
	cvIn := bn.Outputs[0]
	if c.relu {
		r := tg.node("Relu", nil, []ir.TensorID{cvIn}, out{ir.Float32, p.xShape})
		cvIn = r.Outputs[0]
		nodes = append(nodes, 1)
	}
	p.cvIn = cvIn
	r := int64(len(c.sp))
	p.wShape = []int64{c.m, c.c / c.gr}
	for range r {
		p.wShape = append(p.wShape, c.kern)
	}
	p.w = randF32(int(elems(p.wShape)))
	var wi ir.TensorID
	if c.constW {
		wi = tg.constant("w", ir.Float32, f32Bytes(p.w), p.wShape...)
	} else {
		wi = tg.input("w", ir.Float32, p.wShape...)
	}
	ins := []ir.TensorID{cvIn, wi}
	if c.bias {
		p.b = randF32(int(c.m))
		ins = append(ins, tg.constant("b", ir.Float32, f32Bytes(p.b), c.m))
	}
	p.yShape = []int64{c.n, c.m}
	strides, pads := make([]int64, r), make([]int64, 2*r)
	for i, s := range c.sp {
		strides[i] = c.stride
		p.yShape = append(p.yShape, (s+2*c.pad-c.kern)/c.stride+1)
		pads[i], pads[int(r)+i] = c.pad, c.pad
	}
	cv := tg.node("Conv", ir.Attrs{
		"strides": {Kind: ir.AttrInts, Ints: strides},
		"pads":    {Kind: ir.AttrInts, Ints: pads},
		"group":   {Kind: ir.AttrInt, Int: c.gr},
	}, ins, out{ir.Float32, p.yShape})
	tg.node("Relu", nil, []ir.TensorID{cv.Outputs[0]}, out{ir.Float32, p.yShape})
	// Pointers only now: adding nodes moves them.
	nd := tg.g.Nodes
	p.bn = &nd[0]
	if c.relu {
		p.relu = &nd[1]
	}
	p.conv, p.post = &nd[len(nd)-2], &nd[len(nd)-1]
	p.g = tg.g
	return p
}

// chain is the prologue's chain of nodes.
func (p *proGraph) chain() []*ir.Node {
	if p.relu != nil {
		return []*ir.Node{p.bn, p.relu}
	}
	return []*ir.Node{p.bn}
}

// convIns is the convolution's inputs with x as input 0.
func (p *proGraph) convIns(x []byte) [][]byte {
	in := [][]byte{x, alignedCopy(f32Bytes(p.w))}
	if p.b != nil {
		in = append(in, alignedCopy(f32Bytes(p.b)))
	}
	return in
}

// unfused runs BatchNormalization, Relu and Conv as kernels of their own
// on a pool of the given size and returns the convolution's input and
// output.
func (p *proGraph) unfused(tb testing.TB, threads int) (cin, y []byte) {
	tb.Helper()
	pool := NewWorkers(threads)
	defer pool.Close()
	run := func(n *ir.Node, in [][]byte) []byte {
		k, scratch, err := BuildFor(p.g, n, threads)
		if err != nil {
			tb.Fatalf("BuildFor %s: %v", n.Op, err)
		}
		o := alignedBytes(p.g.Tensor(n.Outputs[0]).Bytes())
		for i := range o {
			o[i] = 0xA5
		}
		k.Run(pool, in, [][]byte{o}, poisoned(scratch))
		return o
	}
	bnIn := [][]byte{alignedCopy(f32Bytes(p.x))}
	for _, s := range p.stats {
		bnIn = append(bnIn, alignedCopy(f32Bytes(s)))
	}
	cin = run(p.bn, bnIn)
	if p.relu != nil {
		cin = run(p.relu, [][]byte{cin})
	}
	return cin, run(p.conv, p.convIns(cin))
}

// sameBits fails unless got and want hold the same bytes.
func sameBits(tb testing.TB, what string, got, want []byte) {
	tb.Helper()
	if bytes.Equal(got, want) {
		return
	}
	g, w := asF32(got), asF32(want)
	bad := 0
	for i := range g {
		if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
			if bad < 5 {
				tb.Errorf("%s[%d] = %v (%#08x), want %v (%#08x)", what, i, g[i], math.Float32bits(g[i]), w[i], math.Float32bits(w[i]))
			}
			bad++
		}
	}
	tb.Errorf("%s: %d of %d values differ", what, bad, len(g))
}

var proCases = []proCase{
	{name: "C1 5x7", n: 1, c: 1, m: 3, gr: 1, sp: []int64{5, 7}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C3 13x11 N2", n: 2, c: 3, m: 8, gr: 1, sp: []int64{13, 11}, kern: 1, stride: 1, relu: true, constW: true},
	{name: "C17 9x9", n: 1, c: 17, m: 13, gr: 1, sp: []int64{9, 9}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C64 17x3 N2 no relu", n: 2, c: 64, m: 20, gr: 1, sp: []int64{17, 3}, kern: 1, stride: 1, bias: true, constW: true},
	{name: "C128 10x10", n: 1, c: 128, m: 32, gr: 1, sp: []int64{10, 10}, kern: 1, stride: 1, relu: true, constW: true},
	{name: "C255 7x7 N2", n: 2, c: 255, m: 7, gr: 1, sp: []int64{7, 7}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C300 6x11", n: 1, c: 300, m: 24, gr: 1, sp: []int64{6, 11}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C300 6x11 N2 no relu", n: 2, c: 300, m: 9, gr: 1, sp: []int64{6, 11}, kern: 1, stride: 1, constW: true},
	{name: "C260 runtime W", n: 1, c: 260, m: 10, gr: 1, sp: []int64{23}, kern: 1, stride: 1, bias: true, relu: true},
	{name: "C40 groups 4", n: 2, c: 40, m: 12, gr: 4, sp: []int64{5, 9}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C6 3D", n: 1, c: 6, m: 5, gr: 1, sp: []int64{3, 4, 5}, kern: 1, stride: 1, relu: true, constW: true},
	{name: "C32 1x1", n: 2, c: 32, m: 4, gr: 1, sp: []int64{1, 1}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
	{name: "C20 1x1 batch 9", n: 9, c: 20, m: 33, gr: 1, sp: []int64{1, 1}, kern: 1, stride: 1, bias: true, relu: false, constW: true},
	{name: "C24 7x7", n: 2, c: 24, m: 40, gr: 1, sp: []int64{7, 7}, kern: 1, stride: 1, bias: false, relu: true, constW: true},
	{name: "C48 wide 40x33", n: 1, c: 48, m: 16, gr: 1, sp: []int64{40, 33}, kern: 1, stride: 1, bias: true, relu: true, constW: true},
}

// TestPrologue checks that a pointwise convolution with a BatchNormalization
// (+ Relu) prologue gives the same bits as the three kernels run one after
// the other, on the assembly and on the Go loops.
func TestPrologue(t *testing.T) {
	for _, asm := range []bool{true, false} {
		if asm && !prologueAsm {
			continue
		}
		for _, c := range proCases {
			p := buildProGraph(t, c)
			for _, th := range []int{1, 2, 3} {
				t.Run(fmt.Sprintf("%s/asm=%v/threads=%d", c.name, asm, th), func(t *testing.T) {
					defer func(v bool) { prologueAsm = v }(prologueAsm)
					prologueAsm = asm
					_, want := p.unfused(t, th)
					k, scratch, err := BuildFor(p.g, p.conv, th)
					if err != nil {
						t.Fatal(err)
					}
					pk, ok := withPrologue(k, p.g, p.chain())
					if !ok {
						t.Fatal("withPrologue refused")
					}
					y := alignedBytes(int64(len(want)))
					for i := range y {
						y[i] = 0xA5
					}
					pool := NewWorkers(th)
					defer pool.Close()
					in := p.convIns(alignedCopy(f32Bytes(p.x)))
					// Twice: a run must not depend on what the last one
					// left in scratch.
					sc := poisoned(scratch)
					pk.Run(pool, in, [][]byte{y}, sc)
					pk.Run(pool, in, [][]byte{y}, sc)
					sameBits(t, "Y", y, want)
				})
			}
		}
	}
}

// TestProloguePack checks the packed panels themselves (where a NaN in a
// convolution's sum would hide the rest of its column) against packB of
// the BatchNormalization and Relu kernels' output.
func TestProloguePack(t *testing.T) {
	for _, asm := range []bool{true, false} {
		if asm && !prologueAsm {
			continue
		}
		for _, c := range proCases {
			if c.gr != 1 || !c.constW {
				continue
			}
			t.Run(fmt.Sprintf("%s/asm=%v", c.name, asm), func(t *testing.T) {
				defer func(v bool) { prologueAsm = v }(prologueAsm)
				prologueAsm = asm
				p := buildProGraph(t, c)
				cin, _ := p.unfused(t, 1)
				k, _, err := BuildFor(p.g, p.conv, 1)
				if err != nil {
					t.Fatal(err)
				}
				pk, ok := withPrologue(k, p.g, p.chain())
				if !ok {
					t.Fatal("withPrologue refused")
				}
				pro := pk.(*convKernel).pro
				ck := pk.(*convKernel)
				x, want := p.x, f32s(cin)
				for n := 0; n < ck.nb; n++ {
					for _, blk := range [][2]int{{0, ck.inSp}, {1, ck.inSp - 1}, {ck.inSp / 3, ck.inSp/3 + 17}} {
						j0, ncb := blk[0], min(blk[1], ck.inSp)-blk[0]
						if ncb <= 0 {
							continue
						}
						for c0 := 0; c0 < ck.c; c0 += 150 {
							kb := min(150, ck.c-c0)
							size := ceilDiv(ncb, gemmNR) * kb * gemmNR
							got, ref := make([]float32, size), make([]float32, size)
							for i := range got {
								got[i] = float32(math.NaN())
							}
							off := (n*ck.c+c0)*ck.inSp + j0
							pro.packB(got, x[off:], c0, kb, ncb, ck.inSp)
							packB(ref, want[off:], kb, ncb, ck.inSp, 1, 0, ceilDiv(ncb, gemmNR))
							sameBits(t, fmt.Sprintf("n%d c%d j%d", n, c0, j0), f32bytes(got), f32bytes(ref))
						}
					}
				}
			})
		}
	}
}

// TestPrologueEpilogue checks that an epilogue still runs on a convolution
// with a prologue, in either order of withPrologue and fuseEpilogue.
func TestPrologueEpilogue(t *testing.T) {
	for _, c := range []proCase{proCases[2], proCases[6], proCases[9]} {
		for _, th := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, th), func(t *testing.T) {
				p := buildProGraph(t, c)
				cin, _ := p.unfused(t, th)
				k, scratch, err := BuildFor(p.g, p.conv, th)
				if err != nil {
					t.Fatal(err)
				}
				rowLen, ok := fusedRowLen(k)
				if !ok {
					t.Fatal("convolution takes no epilogue")
				}
				ep, _, err := newEpilogue(p.g, p.conv.Outputs[0], rowLen, []*ir.Node{p.post})
				if err != nil {
					t.Fatal(err)
				}
				nin := len(p.conv.Inputs)
				ref, ok := fuseEpilogue(k, ep, nin, th)
				if !ok {
					t.Fatal("fuseEpilogue refused")
				}
				pool := NewWorkers(th)
				defer pool.Close()
				ybytes := elems(p.yShape) * 4
				runFused := func(k Kernel, x []byte) (y, z []byte) {
					y, z = alignedBytes(ybytes), alignedBytes(ybytes)
					regs := alignedBytes(int64(ep.RegisterBytes(th)))
					k.Run(pool, p.convIns(x), [][]byte{y, z, regs}, poisoned(scratch))
					return y, z
				}
				wantY, wantZ := runFused(ref, cin)
				pk, ok := withPrologue(k, p.g, p.chain())
				if !ok {
					t.Fatal("withPrologue refused")
				}
				a, ok := fuseEpilogue(pk, ep, nin, th)
				if !ok {
					t.Fatal("fuseEpilogue after withPrologue refused")
				}
				b, ok := withPrologue(ref, p.g, p.chain())
				if !ok {
					t.Fatal("withPrologue after fuseEpilogue refused")
				}
				for name, fk := range map[string]Kernel{"prologue then epilogue": a, "epilogue then prologue": b} {
					y, z := runFused(fk, alignedCopy(f32Bytes(p.x)))
					sameBits(t, name+" Y", y, wantY)
					sameBits(t, name+" Z", z, wantZ)
				}
			})
		}
	}
}

// TestPrologueRefused lists chains and convolutions that take no prologue.
func TestPrologueRefused(t *testing.T) {
	base := proCase{n: 1, c: 8, m: 4, gr: 1, sp: []int64{6, 6}, kern: 1, stride: 1, relu: true, constW: true}
	with := func(f func(*proCase)) proCase { c := base; f(&c); return c }
	other := buildProGraph(t, with(func(c *proCase) { c.sp = []int64{4, 9} }))
	for _, tc := range []struct {
		name  string
		c     proCase
		chain func(p *proGraph) []*ir.Node
		k     func(tb testing.TB, p *proGraph) Kernel
	}{
		{name: "3x3 kernel", c: with(func(c *proCase) { c.kern, c.pad = 3, 1 })},
		{name: "stride 2", c: with(func(c *proCase) { c.stride = 2 })},
		{name: "padded 1x1", c: with(func(c *proCase) { c.pad = 1 })},
		{name: "depthwise 1x1", c: with(func(c *proCase) { c.gr, c.m = 8, 8 })},
		{name: "statistics not constant", c: with(func(c *proCase) { c.varStats = true })},
		{name: "no chain", c: base, chain: func(p *proGraph) []*ir.Node { return nil }},
		{name: "Relu alone", c: base, chain: func(p *proGraph) []*ir.Node { return []*ir.Node{p.relu} }},
		{name: "Relu first", c: base, chain: func(p *proGraph) []*ir.Node { return []*ir.Node{p.relu, p.bn} }},
		{name: "three nodes", c: base, chain: func(p *proGraph) []*ir.Node { return []*ir.Node{p.bn, p.relu, p.post} }},
		{name: "second node not a Relu", c: base, chain: func(p *proGraph) []*ir.Node { return []*ir.Node{p.bn, p.post} }},
		{name: "shape differs", c: base, k: func(tb testing.TB, p *proGraph) Kernel {
			k, _, err := BuildFor(other.g, other.conv, 1)
			if err != nil {
				tb.Fatal(err)
			}
			return k
		}},
		{name: "not a convolution", c: base, k: func(tb testing.TB, p *proGraph) Kernel {
			k, _, err := BuildFor(p.g, p.relu, 1)
			if err != nil {
				tb.Fatal(err)
			}
			return k
		}},
		{name: "already has one", c: base, k: func(tb testing.TB, p *proGraph) Kernel {
			k, _, err := BuildFor(p.g, p.conv, 1)
			if err != nil {
				tb.Fatal(err)
			}
			pk, ok := withPrologue(k, p.g, p.chain())
			if !ok {
				tb.Fatal("withPrologue refused the base case")
			}
			return pk
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := buildProGraph(t, tc.c)
			var k Kernel
			if tc.k != nil {
				k = tc.k(t, p)
			} else {
				var err error
				if k, _, err = BuildFor(p.g, p.conv, 1); err != nil {
					t.Fatal(err)
				}
			}
			chain := p.chain()
			if tc.chain != nil {
				chain = tc.chain(p)
			}
			if pk, ok := withPrologue(k, p.g, chain); ok || pk != nil {
				t.Errorf("withPrologue = %v, %v; want nil, false", pk, ok)
			}
		})
	}
}

// TestPrologueDoesNotAllocate checks that a run allocates nothing.
func TestPrologueDoesNotAllocate(t *testing.T) {
	p := buildProGraph(t, proCases[6])
	k, scratch, err := BuildFor(p.g, p.conv, 2)
	if err != nil {
		t.Fatal(err)
	}
	pk, ok := withPrologue(k, p.g, p.chain())
	if !ok {
		t.Fatal("withPrologue refused")
	}
	pool := NewWorkers(2)
	defer pool.Close()
	in := p.convIns(alignedCopy(f32Bytes(p.x)))
	out := [][]byte{alignedBytes(elems(p.yShape) * 4)}
	sc := alignedBytes(scratch)
	if a := testing.AllocsPerRun(20, func() { pk.Run(pool, in, out, sc) }); a != 0 {
		t.Errorf("%v allocations per run, want 0", a)
	}
}

// BenchmarkPrologue compares a DenseNet-like step, BatchNormalization +
// Relu + 1×1 Conv of 256 → 128 channels on 56×56, run as three kernels and
// as one convolution with a prologue.
func BenchmarkPrologue(b *testing.B) {
	c := proCase{n: 1, c: 256, m: 128, gr: 1, sp: []int64{56, 56}, kern: 1, stride: 1, relu: true, constW: true}
	p := buildProGraph(b, c)
	for _, th := range []int{1, 2} {
		pool := NewWorkers(th)
		build := func(n *ir.Node) (Kernel, []byte) {
			k, s, err := BuildFor(p.g, n, th)
			if err != nil {
				b.Fatal(err)
			}
			return k, alignedBytes(s)
		}
		bnK, bnS := build(p.bn)
		reluK, reluS := build(p.relu)
		convK, convS := build(p.conv)
		pk, ok := withPrologue(convK, p.g, p.chain())
		if !ok {
			b.Fatal("withPrologue refused")
		}
		x := alignedCopy(f32Bytes(p.x))
		bnIn := [][]byte{x}
		for _, s := range p.stats {
			bnIn = append(bnIn, alignedCopy(f32Bytes(s)))
		}
		t := alignedBytes(int64(len(x)))
		y := [][]byte{alignedBytes(elems(p.yShape) * 4)}
		conv := p.convIns(t)
		fused := p.convIns(x)
		b.Run(fmt.Sprintf("separate/threads=%d", th), func(b *testing.B) {
			for b.Loop() {
				bnK.Run(pool, bnIn, [][]byte{t}, bnS)
				reluK.Run(pool, [][]byte{t}, [][]byte{t}, reluS)
				convK.Run(pool, conv, y, convS)
			}
		})
		b.Run(fmt.Sprintf("conv-only/threads=%d", th), func(b *testing.B) {
			for b.Loop() {
				convK.Run(pool, conv, y, convS)
			}
		})
		b.Run(fmt.Sprintf("prologue/threads=%d", th), func(b *testing.B) {
			for b.Loop() {
				pk.Run(pool, fused, y, convS)
			}
		})
		pool.Close()
	}
}

// TestProloguePanelModes checks the assembly panel kernel in both of its
// rounding modes against float64 references, on values made to land on a
// float32 midpoint, where rounding the product first and a fused
// multiply-add give different float32 results (random data almost never
// tells them apart). The Go loop follows the compiled expression, whichever
// it is; bnFused says which, and so which mode the kernel runs in.
func TestProloguePanelModes(t *testing.T) {
	if !prologueAsm {
		t.Skip("no assembly kernel")
	}
	const rows, rs = 97, 21
	s := specialF32(rows * rs)
	a, b := make([]float64, rows), make([]float64, rows)
	split := 0
	for l := range rows {
		a[l] = 0.5 + rng.Float64()
		v := s[l*rs+l%gemmNR]
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v == 0 {
			v = 1 + float32(rng.IntN(1<<20))*0x1p-20
			s[l*rs+l%gemmNR] = v
		}
		// b = c − v·a (the product rounded) with a small c: the sum
		// cancels down to c, which the product's rounding error (lost
		// without a fused multiply-add, kept with one) is a float32 ulp of
		// or more.
		p := float64(v) * a[l]
		c := float64(1+rng.IntN(1<<20)) * 0x1p-52
		if l%2 == 1 {
			c = -c
		}
		b[l] = c - p
		if float32(math.FMA(float64(v), a[l], b[l])) != float32(float64(float64(v)*a[l])+b[l]) {
			split++
		}
	}
	t.Logf("%d of %d rows round differently with and without a fused multiply-add", split, rows)
	if split < rows/4 {
		t.Fatalf("only %d of %d rows round differently with and without a fused multiply-add", split, rows)
	}
	for mode := range 4 {
		d := make([]float32, rows*gemmNR)
		prologuePanelAVX2(d, s, a, b, rs, mode)
		want := make([]float32, len(d))
		for l := range rows {
			for j := range gemmNR {
				v := float64(s[l*rs+j])
				var x float32
				if mode&2 != 0 {
					x = float32(math.FMA(v, a[l], b[l]))
				} else {
					x = float32(float64(v*a[l]) + b[l])
				}
				if mode&1 != 0 && x < 0 {
					x = 0
				}
				want[l*gemmNR+j] = x
			}
		}
		sameBits(t, fmt.Sprintf("mode %d", mode), f32bytes(d), f32bytes(want))
	}
	// The prologue packs as the compiled Go loop does (and so as the
	// BatchNormalization kernel does), whichever way it rounds.
	for _, relu := range []bool{false, true} {
		pro := &prologue{a: a, b: b, relu: relu}
		got, want := make([]float32, rows*gemmNR), make([]float32, rows*gemmNR)
		pro.packB(got, s, 0, rows, gemmNR, rs)
		prologueAsm = false
		pro.packB(want, s, 0, rows, gemmNR, rs)
		prologueAsm = true
		sameBits(t, fmt.Sprintf("packB relu=%v", relu), f32bytes(got), f32bytes(want))
	}
	// The mode the kernels use is the compiled expression's.
	for l := range rows {
		v := s[l*rs+l%gemmNR]
		got := bnAffine(v, a[l], b[l])
		want := float32(float64(float64(v)*a[l]) + b[l])
		if bnFused {
			want = float32(math.FMA(float64(v), a[l], b[l]))
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("row %d: compiled expression gives %v, bnFused=%v says %v", l, got, bnFused, want)
		}
	}
}
