package cpu

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// countRanger counts how often each item is visited.
type countRanger struct{ hits []atomic.Int32 }

func (r *countRanger) Range(in, out [][]byte, scratch []byte, lo, hi int) {
	for i := lo; i < hi; i++ {
		r.hits[i].Add(1)
	}
}

func TestForVisitsEveryItemOnce(t *testing.T) {
	for _, threads := range []int{1, 2, 3, 8} {
		w := NewWorkers(threads)
		if w.Threads() != threads {
			t.Errorf("Threads() = %d, want %d", w.Threads(), threads)
		}
		for _, n := range []int{0, 1, 2, 5, 7, 100, 1001} {
			r := &countRanger{hits: make([]atomic.Int32, n)}
			for rep := 0; rep < 3; rep++ {
				w.For(n, r, nil, nil, nil)
			}
			for i := range r.hits {
				if got := r.hits[i].Load(); got != 3 {
					t.Fatalf("threads=%d n=%d: item %d visited %d times in 3 loops", threads, n, i, got)
				}
			}
		}
		w.Close()
		w.Close() // idempotent
		// After Close loops still run, inline.
		r := &countRanger{hits: make([]atomic.Int32, 10)}
		w.For(10, r, nil, nil, nil)
		if r.hits[9].Load() != 1 {
			t.Fatalf("For after Close did not run")
		}
	}
}

func TestNilWorkersRunInline(t *testing.T) {
	var w *Workers
	r := &countRanger{hits: make([]atomic.Int32, 5)}
	w.For(5, r, nil, nil, nil)
	if w.Threads() != 1 || r.hits[4].Load() != 1 {
		t.Fatalf("nil Workers: %d threads, item 4 visited %d times", w.Threads(), r.hits[4].Load())
	}
	w.Close()
}

func TestNewWorkersDefault(t *testing.T) {
	w := NewWorkers(0)
	defer w.Close()
	if w.Threads() < 1 {
		t.Fatalf("Threads() = %d", w.Threads())
	}
}

type panicRanger struct{}

func (panicRanger) Range(in, out [][]byte, scratch []byte, lo, hi int) {
	if hi == 100 {
		panic("boom in the last share")
	}
}

func TestForRaisesPanicOnCaller(t *testing.T) {
	w := NewWorkers(4)
	defer w.Close()
	for rep := 0; rep < 2; rep++ {
		func() {
			defer func() {
				p := recover()
				if s, _ := p.(string); !strings.Contains(s, "boom") {
					t.Fatalf("recovered %v, want the helper's panic", p)
				}
			}()
			w.For(100, panicRanger{}, nil, nil, nil)
		}()
	}
	// The pool still works afterwards.
	r := &countRanger{hits: make([]atomic.Int32, 50)}
	w.For(50, r, nil, nil, nil)
	for i := range r.hits {
		if r.hits[i].Load() != 1 {
			t.Fatalf("item %d not visited after a panic", i)
		}
	}
}

type nopRanger struct{}

func (nopRanger) Range(in, out [][]byte, scratch []byte, lo, hi int) {}

// prepared is a compiled node with its buffers, ready to run repeatedly.
type prepared struct {
	k       Kernel
	in, out [][]byte
	scratch []byte
}

func prepare(tb testing.TB, g *ir.Graph, n *ir.Node) *prepared {
	tb.Helper()
	return prepareFor(tb, g, n, 0)
}

// prepareFor is prepare with the kernel built for threads workers, as a
// session of that many builds it (0: GOMAXPROCS).
func prepareFor(tb testing.TB, g *ir.Graph, n *ir.Node, threads int) *prepared {
	tb.Helper()
	k, scratch, err := BuildFor(g, n, threads)
	if err != nil {
		tb.Fatal(err)
	}
	p := &prepared{k: k, scratch: alignedBytes(scratch)}
	for _, id := range n.Inputs {
		var b []byte
		if id != ir.NoTensor {
			t := g.Tensor(id)
			b = alignedBytes(t.Bytes())
			if t.IsConst() {
				copy(b, t.Data)
			} else {
				copy(b, f32Bytes(randF32(int(t.Shape.Elements()))))
			}
		}
		p.in = append(p.in, b)
	}
	for _, id := range n.Outputs {
		p.out = append(p.out, alignedBytes(g.Tensor(id).Bytes()))
	}
	return p
}

func convNode(n, c, h, w, m, k, stride, pad, group int64, constW bool) (*ir.Graph, *ir.Node) {
	tg := newTGraph(17)
	x := tg.input("x", ir.Float32, n, c, h, w)
	var wt ir.TensorID
	if constW {
		wt = tg.constant("w", ir.Float32, f32Bytes(randF32(int(m*c/group*k*k))), m, c/group, k, k)
	} else {
		wt = tg.input("w", ir.Float32, m, c/group, k, k)
	}
	b := tg.constant("b", ir.Float32, f32Bytes(randF32(int(m))), m)
	oh := (h+2*pad-k)/stride + 1
	ow := (w+2*pad-k)/stride + 1
	node := tg.node("Conv", ir.Attrs{
		"strides": {Kind: ir.AttrInts, Ints: []int64{stride, stride}},
		"pads":    {Kind: ir.AttrInts, Ints: []int64{pad, pad, pad, pad}},
		"group":   {Kind: ir.AttrInt, Int: group},
	}, []ir.TensorID{x, wt, b}, out{ir.Float32, []int64{n, m, oh, ow}})
	return tg.g, node
}

func matmulNode(m, k, n int64, constB bool) (*ir.Graph, *ir.Node) {
	tg := newTGraph(17)
	a := tg.input("a", ir.Float32, m, k)
	var b ir.TensorID
	if constB {
		b = tg.constant("b", ir.Float32, f32Bytes(randF32(int(k*n))), k, n)
	} else {
		b = tg.input("b", ir.Float32, k, n)
	}
	node := tg.node("MatMul", nil, []ir.TensorID{a, b}, out{ir.Float32, []int64{m, n}})
	return tg.g, node
}

func TestNoAllocationsPerRun(t *testing.T) {
	w := NewWorkers(4)
	defer w.Close()
	if a := testing.AllocsPerRun(100, func() { w.For(1000, nopRanger{}, nil, nil, nil) }); a != 0 {
		t.Errorf("For allocates %v times per call", a)
	}
	cases := []struct {
		name string
		g    *ir.Graph
		n    *ir.Node
	}{}
	add := func(name string, g *ir.Graph, n *ir.Node) {
		cases = append(cases, struct {
			name string
			g    *ir.Graph
			n    *ir.Node
		}{name, g, n})
	}
	g, n := convNode(1, 16, 20, 20, 32, 3, 1, 1, 1, true)
	add("conv3x3", g, n)
	g, n = convNode(2, 16, 20, 20, 16, 3, 2, 1, 16, true)
	add("depthwise", g, n)
	g, n = convNode(1, 8, 10, 10, 8, 3, 1, 1, 2, false)
	add("grouped conv with run-time weights", g, n)
	g, n = matmulNode(64, 96, 80, true)
	add("matmul const B", g, n)
	g, n = matmulNode(64, 96, 80, false)
	add("matmul", g, n)
	// Large enough for B in quads: bands over a B packed by the run,
	// and bands over a constant B.
	g, n = matmulNode(520, 20, 2020, false)
	add("large matmul", g, n)
	g, n = matmulNode(520, 20, 2020, true)
	add("large matmul const B", g, n)
	// B in quads whole: A read unpacked, workers owning columns.
	g, n = matmulNode(520, 20, 2040, false)
	add("large matmul, A unpacked", g, n)
	g, n = matmulNode(520, 20, 2040, true)
	add("large matmul const B, A unpacked", g, n)
	tg := newTGraph(17)
	a := tg.input("a", ir.Float32, 4, 64, 32)
	b := tg.input("b", ir.Float32, 32)
	add("add broadcast", tg.g, tg.node("Add", nil, []ir.TensorID{a, b}, out{ir.Float32, []int64{4, 64, 32}}))
	tg = newTGraph(17)
	a = tg.input("a", ir.Float32, 8, 300)
	add("softmax", tg.g, tg.node("Softmax", nil, []ir.TensorID{a}, out{ir.Float32, []int64{8, 300}}))
	for _, c := range cases {
		p := prepare(t, c.g, c.n)
		run := func() { p.k.Run(w, p.in, p.out, p.scratch) }
		run()
		if a := testing.AllocsPerRun(20, run); a != 0 {
			t.Errorf("%s: Run allocates %v times", c.name, a)
		}
	}
}

// TestKernelsDoNotAllocate runs a broad selection of kernels, on several
// workers, and checks that no Run allocates.
func TestKernelsDoNotAllocate(t *testing.T) {
	w := NewWorkers(3)
	defer w.Close()
	type mk func(tg *tgraph) *ir.Node
	f32 := func(s ...int64) out { return out{ir.Float32, s} }
	cases := map[string]mk{
		"Relu": func(tg *tgraph) *ir.Node {
			return tg.node("Relu", nil, []ir.TensorID{tg.input("x", ir.Float32, 300, 300)}, f32(300, 300))
		},
		"Clip inputs": func(tg *tgraph) *ir.Node {
			return tg.node("Clip", nil, []ir.TensorID{tg.input("x", ir.Float32, 1000), tg.input("lo", ir.Float32), tg.input("hi", ir.Float32)}, f32(1000))
		},
		"Sum of 3": func(tg *tgraph) *ir.Node {
			return tg.node("Sum", nil, []ir.TensorID{tg.input("a", ir.Float32, 8, 100), tg.input("b", ir.Float32, 100), tg.input("c", ir.Float32, 8, 1)}, f32(8, 100))
		},
		"Equal": func(tg *tgraph) *ir.Node {
			return tg.node("Equal", nil, []ir.TensorID{tg.input("a", ir.Int64, 8, 100), tg.input("b", ir.Int64, 100)}, out{ir.Bool, []int64{8, 100}})
		},
		"Pow": func(tg *tgraph) *ir.Node {
			return tg.node("Pow", nil, []ir.TensorID{tg.input("a", ir.Float32, 8, 100), tg.input("b", ir.Float32, 100)}, f32(8, 100))
		},
		"Where": func(tg *tgraph) *ir.Node {
			return tg.node("Where", nil, []ir.TensorID{tg.input("c", ir.Bool, 1, 100), tg.input("a", ir.Float32, 8, 100), tg.input("b", ir.Float32)}, f32(8, 100))
		},
		"Gemm": func(tg *tgraph) *ir.Node {
			return tg.node("Gemm", ir.Attrs{"transB": {Kind: ir.AttrInt, Int: 1}}, []ir.TensorID{tg.input("a", ir.Float32, 30, 40), tg.input("b", ir.Float32, 50, 40), tg.input("c", ir.Float32, 30, 50)}, f32(30, 50))
		},
		"MatMul batched": func(tg *tgraph) *ir.Node {
			return tg.node("MatMul", nil, []ir.TensorID{tg.input("a", ir.Float32, 2, 12, 16, 64), tg.input("b", ir.Float32, 2, 12, 64, 16)}, f32(2, 12, 16, 16))
		},
		"MaxPool": func(tg *tgraph) *ir.Node {
			return tg.node("MaxPool", ir.Attrs{"kernel_shape": {Kind: ir.AttrInts, Ints: []int64{3, 3}}, "strides": {Kind: ir.AttrInts, Ints: []int64{2, 2}}}, []ir.TensorID{tg.input("x", ir.Float32, 1, 8, 33, 33)}, f32(1, 8, 16, 16), out{ir.Int64, []int64{1, 8, 16, 16}})
		},
		"AveragePool": func(tg *tgraph) *ir.Node {
			return tg.node("AveragePool", ir.Attrs{"kernel_shape": {Kind: ir.AttrInts, Ints: []int64{2, 2}}, "strides": {Kind: ir.AttrInts, Ints: []int64{2, 2}}}, []ir.TensorID{tg.input("x", ir.Float32, 1, 8, 32, 32)}, f32(1, 8, 16, 16))
		},
		"GlobalAveragePool": func(tg *tgraph) *ir.Node {
			return tg.node("GlobalAveragePool", nil, []ir.TensorID{tg.input("x", ir.Float32, 2, 64, 7, 7)}, f32(2, 64, 1, 1))
		},
		"BatchNormalization runtime": func(tg *tgraph) *ir.Node {
			return tg.node("BatchNormalization", nil, []ir.TensorID{tg.input("x", ir.Float32, 2, 4, 9), tg.input("s", ir.Float32, 4), tg.input("b", ir.Float32, 4), tg.input("m", ir.Float32, 4), tg.input("v", ir.Float32, 4)}, f32(2, 4, 9))
		},
		"LayerNormalization": func(tg *tgraph) *ir.Node {
			return tg.node("LayerNormalization", nil, []ir.TensorID{tg.input("x", ir.Float32, 16, 64), tg.input("s", ir.Float32, 64), tg.input("b", ir.Float32, 64)}, f32(16, 64), f32(16, 1), f32(16, 1))
		},
		"ReduceMean rows": func(tg *tgraph) *ir.Node {
			return tg.node("ReduceMean", ir.Attrs{"axes": {Kind: ir.AttrInts, Ints: []int64{0}}}, []ir.TensorID{tg.input("x", ir.Float32, 30, 40)}, f32(1, 40))
		},
		"ReduceSum runs": func(tg *tgraph) *ir.Node {
			return tg.node("ReduceSum", ir.Attrs{"axes": {Kind: ir.AttrInts, Ints: []int64{1}}}, []ir.TensorID{tg.input("x", ir.Float32, 30, 40)}, f32(30, 1))
		},
		"Transpose": func(tg *tgraph) *ir.Node {
			return tg.node("Transpose", ir.Attrs{"perm": {Kind: ir.AttrInts, Ints: []int64{0, 2, 1, 3}}}, []ir.TensorID{tg.input("x", ir.Float32, 2, 16, 12, 64)}, f32(2, 12, 16, 64))
		},
		"Slice": func(tg *tgraph) *ir.Node {
			return tg.node("Slice", nil, []ir.TensorID{tg.input("x", ir.Float32, 10, 10), tg.constant("s", ir.Int64, i64Bytes([]int64{8}), 1), tg.constant("e", ir.Int64, i64Bytes([]int64{0}), 1), tg.constant("a", ir.Int64, i64Bytes([]int64{1}), 1), tg.constant("st", ir.Int64, i64Bytes([]int64{-2}), 1)}, f32(10, 4))
		},
		"Gather": func(tg *tgraph) *ir.Node {
			return tg.node("Gather", nil, []ir.TensorID{tg.input("x", ir.Float32, 100, 16), tg.input("i", ir.Int64, 2, 8)}, f32(2, 8, 16))
		},
		"Concat": func(tg *tgraph) *ir.Node {
			return tg.node("Concat", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 1}}, []ir.TensorID{tg.input("a", ir.Float32, 2, 3), tg.input("b", ir.Float32, 2, 5)}, f32(2, 8))
		},
		"Pad reflect": func(tg *tgraph) *ir.Node {
			return tg.node("Pad", ir.Attrs{"mode": {Kind: ir.AttrString, String: "reflect"}}, []ir.TensorID{tg.input("x", ir.Float32, 4, 5), tg.constant("p", ir.Int64, i64Bytes([]int64{1, 2, 1, 2}), 4)}, f32(6, 9))
		},
		"Cast": func(tg *tgraph) *ir.Node {
			return tg.node("Cast", nil, []ir.TensorID{tg.input("x", ir.Float32, 1000)}, out{ir.Float16, []int64{1000}})
		},
		"Expand": func(tg *tgraph) *ir.Node {
			return tg.node("Expand", nil, []ir.TensorID{tg.input("x", ir.Float32, 3, 1), tg.constant("s", ir.Int64, i64Bytes([]int64{2, 3, 4}), 3)}, f32(2, 3, 4))
		},
		"ConvTranspose": func(tg *tgraph) *ir.Node {
			return tg.node("ConvTranspose", ir.Attrs{"strides": {Kind: ir.AttrInts, Ints: []int64{2, 2}}}, []ir.TensorID{tg.input("x", ir.Float32, 1, 8, 10, 10), tg.input("w", ir.Float32, 8, 4, 3, 3)}, f32(1, 4, 21, 21))
		},
		"Softmax strided": func(tg *tgraph) *ir.Node {
			return tg.node("Softmax", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 1}}, []ir.TensorID{tg.input("x", ir.Float32, 4, 30, 7)}, f32(4, 30, 7))
		},
	}
	for name, f := range cases {
		tg := newTGraph(17)
		n := f(tg)
		p := prepare(t, tg.g, n)
		run := func() { p.k.Run(w, p.in, p.out, p.scratch) }
		run()
		if a := testing.AllocsPerRun(10, run); a != 0 {
			t.Errorf("%s: Run allocates %v times", name, a)
		}
	}
}
