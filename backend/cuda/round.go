package cuda

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berth-ml/berth/ir"
)

// Under 16-bit precision each cuBLAS product rounds a float32 activation
// operand into its own scratch (halfOperand). Where several products read
// one activation (a transformer's query, key and value projections of one
// normalised row), it would be rounded once for each: roundShared gives
// such an activation one Round16 node of this backend's own, before its
// first product, whose output the products read instead. analyzeFusion
// then holds that output in 16 bits (the Round16 writes it so), and the
// products take it as it is.

// roundShared returns g with a Round16 node for every float32 activation
// that two or more MatMul or Gemm nodes read as their first operand, or
// g itself where there is none.
func roundShared(g *ir.Graph) *ir.Graph {
	cons := g.Consumers()
	product := func(j int, t ir.TensorID) bool {
		n := &g.Nodes[j]
		return (n.Op == "MatMul" || n.Op == "Gemm") && n.DefaultDomain() && len(n.Inputs) >= 2 && n.Inputs[0] == t && n.Inputs[1] != t
	}
	type shared struct {
		t       ir.TensorID
		readers []int
	}
	before := map[int][]shared{} // the first reader's index → what is rounded there
	for id := range g.Tensors {
		t := ir.TensorID(id)
		tt := g.Tensor(t)
		if tt.IsConst() || tt.DType != ir.Float32 || tt.Shape.Elements() == 0 {
			continue
		}
		var readers []int
		for _, j := range cons[t] {
			if product(j, t) {
				readers = append(readers, j)
			}
		}
		if len(readers) >= 2 {
			before[readers[0]] = append(before[readers[0]], shared{t, readers})
		}
	}
	if len(before) == 0 {
		return g
	}
	out := *g
	out.Tensors = append([]ir.Tensor(nil), g.Tensors...)
	nodes := make([]ir.Node, len(g.Nodes))
	copy(nodes, g.Nodes)
	redirect := map[int]map[ir.TensorID]ir.TensorID{}
	rounds := map[int][]ir.Node{}
	for first, list := range before {
		for _, s := range list {
			src := g.Tensor(s.t)
			t16 := out.NewTensor(src.Name+"/16", ir.Float32, src.Shape.Clone(), nil)
			rounds[first] = append(rounds[first], ir.Node{Name: src.Name + "/round", Op: "Round16", Domain: cudaDomain,
				Inputs: []ir.TensorID{s.t}, Outputs: []ir.TensorID{t16}})
			for _, j := range s.readers {
				if redirect[j] == nil {
					redirect[j] = map[ir.TensorID]ir.TensorID{}
				}
				redirect[j][s.t] = t16
			}
		}
	}
	out.Nodes = make([]ir.Node, 0, len(g.Nodes)+len(rounds))
	for i, n := range nodes {
		out.Nodes = append(out.Nodes, rounds[i]...)
		if r := redirect[i]; r != nil {
			n.Inputs = append([]ir.TensorID(nil), n.Inputs...)
			if to, ok := r[n.Inputs[0]]; ok {
				n.Inputs[0] = to
			}
		}
		out.Nodes = append(out.Nodes, n)
	}
	for id := range out.Tensors {
		out.Tensors[id].Producer = -1
	}
	out.SetProducers()
	return &out
}

// buildRound writes a Round16 node's input as the 16-bit values its
// product readers take (held so: fusion.half), or copies it where it is
// not held.
func buildRound(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 || y.DType != ir.Float32 || !x.Shape.Equal(y.Shape) {
		return c.errorf("rounds %s%v into %s%v", x.DType, x.Shape, y.DType, y.Shape)
	}
	n := x.Shape.Elements()
	if !c.halfOut(0) {
		c.copyBytes(c.inArg(0), c.outArg(0), 4*n)
		return nil
	}
	if n%2 == 0 {
		c.elementwise(eltwise, "round_f32_h2", n/2, c.inArg(0), c.outArg(0), i64(n/2), i32(c.fz.mode))
	} else {
		c.elementwise(eltwise, "round_f32_h", n, c.inArg(0), c.outArg(0), i64(n), i32(c.fz.mode))
	}
	return nil
}

// A LayerNorm whose output products read and other nodes read too (a
// transformer's residual stream: the next block's products, and the Add
// after them) writes float32 for those others, and each product, or the
// Round16 before them, rounds it to 16 bits in a pass of its own.
// roundAtNorm makes such a LayerNorm a NormRound node of this backend's
// own, with two outputs: the float32 row, and its 16-bit copy, which the
// products (and the Round16's readers) read instead. The norm's kernel
// writes both from the same registers (layernorm_warp4_2h). A LayerNorm
// read by nothing but a Round16 writes the Round16's output itself,
// which analyzeFusion then holds in 16 bits as it holds any norm's that
// only products read.

// roundAtNorm returns g with its LayerNorms rewritten as above, or g
// itself where there are none.
func roundAtNorm(g *ir.Graph) *ir.Graph {
	cons := g.Consumers()
	isOut := g.OutputMask()
	fused := make([]*ir.Node, len(g.Nodes))
	gone := make([]bool, len(g.Nodes))
	out := *g
	out.Tensors = append([]ir.Tensor(nil), g.Tensors...)
	redirect := map[int]ir.TensorID{} // a product → the 16-bit copy its first input becomes
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Op != "LayerNormalization" || !layerNormWarp(g, i) || len(n.Outputs) == 0 || isOut[n.Outputs[0]] {
			continue
		}
		y := n.Outputs[0]
		var products []int
		round, others := -1, 0
		for _, c := range cons[y] {
			cn := &g.Nodes[c]
			switch {
			case cn.Op == "Round16" && cn.Domain == cudaDomain && round < 0 && !isOut[cn.Outputs[0]]:
				round = c
			case productOperand(cn, y):
				products = append(products, c)
			default:
				others++
			}
		}
		if others == 0 && len(products) == 0 && round >= 0 {
			// Read by the Round16 alone: the norm writes its output.
			ln := *n
			ln.Outputs = append([]ir.TensorID{g.Nodes[round].Outputs[0]}, n.Outputs[1:]...)
			fused[i], gone[round] = &ln, true
			continue
		}
		if others == 0 || round < 0 && len(products) == 0 {
			continue // nothing rounded, or nothing but products (analyzeFusion holds it in 16 bits)
		}
		var y16 ir.TensorID
		if round >= 0 {
			y16 = g.Nodes[round].Outputs[0]
			gone[round] = true
		} else {
			src := g.Tensor(y)
			y16 = out.NewTensor(src.Name+"/16", ir.Float32, src.Shape.Clone(), nil)
		}
		for _, c := range products {
			redirect[c] = y16
		}
		fused[i] = &ir.Node{Name: n.Name, Op: "NormRound", Domain: cudaDomain, Attrs: n.Attrs,
			Inputs: n.Inputs, Outputs: []ir.TensorID{y, y16}}
	}
	if len(redirect) == 0 && !slices.Contains(gone, true) {
		return g
	}
	for c, y16 := range redirect {
		n := g.Nodes[c]
		n.Inputs = append([]ir.TensorID(nil), n.Inputs...)
		n.Inputs[0] = y16
		fused[c] = &n
	}
	return rebuild(&out, fused, gone)
}

// productOperand reports whether node n is a product that reads t as its
// first operand only: a MatMul, or a MatMulAdd.
func productOperand(n *ir.Node, t ir.TensorID) bool {
	return (n.Op == "MatMul" && n.DefaultDomain() || isMatMulAdd(n)) && len(n.Inputs) >= 2 && firstOnly(n, t)
}

// firstOnly reports whether n reads t as its first input and as no other.
func firstOnly(n *ir.Node, t ir.TensorID) bool {
	return len(n.Inputs) > 0 && n.Inputs[0] == t && !slices.Contains(n.Inputs[1:], t)
}

// buildNormRound runs a NormRound node: the LayerNorm's kernel writing
// the float32 row and its 16-bit copy (held so: fusion.half), or, where
// the norm does not run on that kernel, the LayerNorm then a rounding
// (or a float32 copy, where the copy is not held in 16 bits).
func buildNormRound(c *buildContext) error {
	n := c.n
	if len(n.Outputs) != 2 || c.out(1) == nil || !c.out(1).Shape.Equal(c.out(0).Shape) {
		return c.errorf("a NormRound writes two outputs of one shape")
	}
	ln := *n
	ln.Op, ln.Domain, ln.Outputs = "LayerNormalization", "", n.Outputs[:1]
	c.n = &ln
	err := buildLayerNorm(c)
	c.n = n
	if err != nil {
		return err
	}
	elems := c.out(0).Shape.Elements()
	if c.halfOut(0) {
		return c.errorf("internal error: a NormRound's first output is float32")
	}
	half := c.fz != nil && c.fz.half[n.Outputs[1]]
	if !half || len(c.launches) != 1 || !strings.HasPrefix(c.launches[0].kernel, "layernorm_warp4_") {
		// The norm as it is, then its copy: as its readers take it.
		if half {
			c.elementwise(eltwise, "round_f32_h", elems, c.outArg(0), c.outArg(1), i64(elems), i32(c.fz.mode))
		} else {
			c.copyBytes(c.outArg(0), c.outArg(1), 4*elems)
		}
		return nil
	}
	l := &c.launches[0]
	var k int
	if _, err := fmt.Sscanf(l.kernel, "layernorm_warp4_%d", &k); err != nil {
		return c.errorf("internal error: %v", err)
	}
	l.kernel = fmt.Sprintf("layernorm_warp4_2h_%d", k)
	y16 := arg{kind: argTensor, id: n.Outputs[1], half: true}
	// x, scale, bias, y, then y2 in place of mean and inv.
	l.args = append(append(l.args[:4:4], y16), l.args[6:]...)
	l.args = append(l.args, i32(c.fz.mode))
	return nil
}
