package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// tgraph builds small graphs by hand for kernel tests.
type tgraph struct {
	g *ir.Graph
}

func newTGraph(opset int64) *tgraph {
	return &tgraph{g: &ir.Graph{Name: "test", Opsets: map[string]int64{"": opset}}}
}

// input adds a graph input.
func (t *tgraph) input(name string, dt ir.DType, shape ...int64) ir.TensorID {
	id := t.g.NewTensor(name, dt, ir.Shape(shape).Clone(), nil)
	t.g.Inputs = append(t.g.Inputs, id)
	return id
}

// constant adds a constant tensor.
func (t *tgraph) constant(name string, dt ir.DType, data []byte, shape ...int64) ir.TensorID {
	return t.g.NewTensor(name, dt, ir.Shape(shape).Clone(), data)
}

// out describes one node output.
type out struct {
	dt    ir.DType
	shape []int64
}

// node adds a node whose outputs have the given types; an output with an
// Undefined dtype is left out (NoTensor).
func (t *tgraph) node(op string, attrs ir.Attrs, ins []ir.TensorID, outs ...out) *ir.Node {
	n := ir.Node{Name: op + "_0", Op: op, Inputs: ins, Attrs: attrs}
	idx := len(t.g.Nodes)
	for i, o := range outs {
		if o.dt == ir.Undefined {
			n.Outputs = append(n.Outputs, ir.NoTensor)
			continue
		}
		id := t.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("%s_out%d", op, i), DType: o.dt, Shape: ir.Shape(o.shape).Clone(), Producer: idx})
		n.Outputs = append(n.Outputs, id)
	}
	t.g.Nodes = append(t.g.Nodes, n)
	return &t.g.Nodes[idx]
}

// exec builds n and runs it with the given bytes for its non-constant
// inputs (in input order), on a pool of the given size; it returns the
// output buffers.
func exec(tb testing.TB, g *ir.Graph, n *ir.Node, threads int, feeds ...[]byte) [][]byte {
	tb.Helper()
	k, scratch, err := Build(g, n)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	in := make([][]byte, len(n.Inputs))
	f := 0
	for i, id := range n.Inputs {
		if id == ir.NoTensor {
			continue
		}
		t := g.Tensor(id)
		src := t.Data
		if !t.IsConst() {
			if f >= len(feeds) {
				tb.Fatalf("no data for input %q", t.Name)
			}
			src = feeds[f]
			f++
		}
		if int64(len(src)) != t.Bytes() {
			tb.Fatalf("input %q: %d bytes, want %d", t.Name, len(src), t.Bytes())
		}
		in[i] = alignedBytes(int64(len(src)))
		copy(in[i], src)
	}
	outs := make([][]byte, len(n.Outputs))
	for i, id := range n.Outputs {
		if id != ir.NoTensor {
			outs[i] = alignedBytes(g.Tensor(id).Bytes())
			for j := range outs[i] {
				outs[i][j] = 0xA5 // garbage: kernels must write every byte
			}
		}
	}
	w := NewWorkers(threads)
	defer w.Close()
	k.Run(w, in, outs, poisoned(scratch))
	return outs
}

// poisoned returns scratch filled with NaN bit patterns.
func poisoned(n int64) []byte {
	b := alignedBytes(n)
	for i := range b {
		b[i] = 0xFF
	}
	return b
}

var rng = rand.New(rand.NewPCG(1, 2))

// randF32 returns n values uniform in [-1, 1).
func randF32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64()*2 - 1)
	}
	return v
}

func randI64(n int, lo, hi int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = lo + rng.Int64N(hi-lo)
	}
	return v
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func i64Bytes(v []int64) []byte { return ir.Int64Bytes(v) }

func i32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func asF32(b []byte) []float32 { return append([]float32(nil), raw.F32(b)...) }
func asI64(b []byte) []int64   { return append([]int64(nil), raw.I64(b)...) }

func widen(v []float32) []float64 {
	w := make([]float64, len(v))
	for i, x := range v {
		w[i] = float64(x)
	}
	return w
}

// near checks got against a float64 reference within a relative and an
// absolute tolerance.
func near(tb testing.TB, what string, got []float32, want []float64, rtol, atol float64) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if math.IsInf(w, 0) && g == w {
			continue
		}
		if !(math.Abs(g-w) <= atol+rtol*math.Abs(w)) {
			if bad < 5 {
				tb.Errorf("%s[%d] = %v, want %v", what, i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		tb.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// Index helpers for the reference implementations.

func strides(shape []int64) []int64 {
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= shape[i]
	}
	return st
}

func unravel(i int64, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// bcastIndex maps an output index to the flat index of a broadcast input.
func bcastIndex(idx []int64, shape []int64) int64 {
	off := len(idx) - len(shape)
	st := strides(shape)
	var f int64
	for d := range shape {
		if shape[d] != 1 {
			f += idx[off+d] * st[d]
		}
	}
	return f
}

func elems(shape []int64) int64 { return ir.Shape(shape).Elements() }

func bcastShape(tb testing.TB, shapes ...[]int64) []int64 {
	s := ir.Shape{}
	for _, x := range shapes {
		var err error
		s, err = ir.Broadcast(s, x)
		if err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// execAliased is exec with output 0 placed on the buffer of input alias,
// as the planner does for in-place execution.
func execAliased(tb testing.TB, g *ir.Graph, n *ir.Node, threads, alias int, feeds ...[]byte) []byte {
	tb.Helper()
	k, scratch, err := Build(g, n)
	if err != nil {
		tb.Fatalf("Build: %v", err)
	}
	in := make([][]byte, len(n.Inputs))
	for i, id := range n.Inputs {
		t := g.Tensor(id)
		src := t.Data
		if !t.IsConst() {
			src, feeds = feeds[0], feeds[1:]
		}
		in[i] = alignedBytes(int64(len(src)))
		copy(in[i], src)
	}
	if int64(len(in[alias])) != g.Tensor(n.Outputs[0]).Bytes() {
		tb.Fatalf("input %d cannot hold the output", alias)
	}
	outs := [][]byte{in[alias]}
	w := NewWorkers(threads)
	defer w.Close()
	k.Run(w, in, outs, poisoned(scratch))
	return outs[0]
}
