package cuda

import (
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
