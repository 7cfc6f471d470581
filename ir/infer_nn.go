package ir

import "fmt"

func init() {
	register(inferConv, "Conv")
	register(inferPool, "MaxPool", "AveragePool")
	register(inferGlobalPool, "GlobalAveragePool")
	register(inferBatchNorm, "BatchNormalization")
	register(inferLayerNorm, "LayerNormalization")
	register(inferSoftmax, "Softmax")
	register(inferGemm, "Gemm")
	register(inferMatMul, "MatMul")
	register(inferFlatten, "Flatten")
}

func inferConv(g *Graph, n *Node) ([]Type, error) {
	x, w, b, err := operandPair(g, n, 3, requireFloat)
	if err != nil {
		return nil, err
	}
	win, err := SpatialWindow(g, n)
	if err != nil {
		return nil, err
	}
	group := n.Attrs.Int("group", 1)
	m, cg, c := w.Shape[0], w.Shape[1], x.Shape[1]
	if group < 1 || group > MaxElements {
		return nil, fmt.Errorf("group %d out of range", group)
	}
	if cg*group != c {
		return nil, fmt.Errorf("input %q has %d channels, weights %q %v with group %d expect %d", x.Name, c, w.Name, w.Shape, group, cg*group)
	}
	if m%group != 0 {
		return nil, fmt.Errorf("weights %q %v: %d output channels do not divide into %d groups", w.Name, w.Shape, m, group)
	}
	if b != nil {
		if err := sameType(x, b); err != nil {
			return nil, err
		}
		if b.Shape.Rank() != 1 || b.Shape[0] != m {
			return nil, fmt.Errorf("bias %q has shape %v, want [%d]", b.Name, b.Shape, m)
		}
	}
	out := append(Shape{x.Shape[0], m}, win.Out...)
	return same(x.DType, out), nil
}

func inferPool(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireNumeric)
	if err != nil {
		return nil, err
	}
	if n.Op == "MaxPool" && n.Attrs.Int("storage_order", 0) != 0 && n.Attrs.Int("storage_order", 0) != 1 {
		return nil, fmt.Errorf("storage_order %d is not 0 or 1", n.Attrs.Int("storage_order", 0))
	}
	win, err := SpatialWindow(g, n)
	if err != nil {
		return nil, err
	}
	out := append(Shape{x.Shape[0], x.Shape[1]}, win.Out...)
	if n.Op == "MaxPool" && requested(n, 1) {
		// The Indices output: flat positions of the maxima in the input.
		return []Type{{DType: x.DType, Shape: out}, {DType: Int64, Shape: out.Clone()}}, nil
	}
	return same(x.DType, out), nil
}

func inferGlobalPool(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireFloat)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 3 {
		return nil, fmt.Errorf("input %q has shape %v, want rank 3 or more (N, C, spatial…)", x.Name, x.Shape)
	}
	out := append(Shape{x.Shape[0], x.Shape[1]}, ones(x.Shape.Rank()-2)...)
	return same(x.DType, out), nil
}

// inferBatchNorm covers inference mode only: one output, no running
// statistics.
func inferBatchNorm(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 5, 5); err != nil {
		return nil, err
	}
	if n.Attrs.Int("training_mode", 0) != 0 {
		return inferTrainingBatchNorm(g, n)
	}
	if n.Attrs.Int("spatial", 1) == 0 {
		return nil, fmt.Errorf("spatial=0 is not supported")
	}
	for i := 1; i < 5; i++ {
		if requested(n, i) {
			return nil, fmt.Errorf("output %d (training statistics) is not supported", i)
		}
	}
	x, err := input(g, n, 0, requireFloat)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 2 {
		return nil, fmt.Errorf("input %q has shape %v, want rank 2 or more (N, C, …)", x.Name, x.Shape)
	}
	c := x.Shape[1]
	for i, what := range []string{"scale", "bias", "mean", "variance"} {
		p, err := input(g, n, i+1, requireFloat)
		if err != nil {
			return nil, err
		}
		if p.Shape.Rank() != 1 || p.Shape[0] != c {
			return nil, fmt.Errorf("%s %q has shape %v, want [%d]", what, p.Name, p.Shape, c)
		}
	}
	return same(x.DType, x.Shape), nil
}

// inferLayerNorm: Y has X's type and shape; the optional Mean and
// InvStdDev outputs keep X's leading axes and have size 1 from axis on.
func inferLayerNorm(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 2, 3, requireFloat)
	if err != nil {
		return nil, err
	}
	r := x.Shape.Rank()
	axis, err := NormAxis(n.Attrs.Int("axis", -1), r)
	if err != nil {
		return nil, err
	}
	norm := x.Shape[axis:]
	for i, what := range []string{"scale", "bias"} {
		p, err := optInput(g, n, i+1)
		if err != nil {
			return nil, err
		}
		if p == nil {
			if i == 0 {
				return nil, fmt.Errorf("scale input is missing")
			}
			continue
		}
		if err := sameType(x, p); err != nil {
			return nil, err
		}
		if s, err := Broadcast(norm, p.Shape); err != nil || !s.Equal(norm) {
			return nil, fmt.Errorf("%s %q has shape %v, which does not broadcast to the normalized shape %v", what, p.Name, p.Shape, norm)
		}
	}
	stash, err := DTypeFromONNX(n.Attrs.Int("stash_type", 1))
	if err != nil {
		return nil, fmt.Errorf("stash_type: %w", err)
	}
	stat := append(x.Shape[:axis:axis], ones(r-axis)...)
	return []Type{
		{DType: x.DType, Shape: x.Shape.Clone()},
		{DType: stash, Shape: stat},
		{DType: stash, Shape: stat.Clone()},
	}, nil
}

// inferSoftmax: see SoftmaxRows.
func inferSoftmax(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireFloat)
	if err != nil {
		return nil, err
	}
	if _, _, _, err := SoftmaxRows(n, opset(g), x.Shape); err != nil {
		return nil, err
	}
	return same(x.DType, x.Shape), nil
}

// SoftmaxRows says how a Softmax or LogSoftmax node n of a graph at opset
// normalises an input of shape: outer·stride vectors of length values,
// stride apart. Before opset 13 the input is the matrix [prod(:axis),
// prod(axis:)] and axis defaults to 1; from 13 on the node works along one
// axis, the last by default.
func SoftmaxRows(n *Node, opset int64, shape Shape) (outer, length, stride int64, err error) {
	r := shape.Rank()
	def := int64(-1)
	if opset < 13 {
		def = 1
	}
	axis := 0
	if r > 0 {
		if axis, err = NormAxis(n.Attrs.Int("axis", def), r); err != nil {
			return 0, 0, 0, err
		}
	}
	outer, length, stride = shape[:axis].Elements(), shape[axis:].Elements(), 1
	if opset >= 13 && r > 0 {
		length, stride = shape[axis], shape[axis+1:].Elements()
	}
	return outer, length, stride, nil
}

func inferGemm(g *Graph, n *Node) ([]Type, error) {
	a, b, c, err := operandPair(g, n, 3, requireNumeric)
	if err != nil {
		return nil, err
	}
	for _, t := range []*Tensor{a, b} {
		if t.Shape.Rank() != 2 {
			return nil, fmt.Errorf("input %q has shape %v, want a matrix", t.Name, t.Shape)
		}
	}
	m, k := a.Shape[0], a.Shape[1]
	if n.Attrs.Int("transA", 0) != 0 {
		m, k = k, m
	}
	k2, nn := b.Shape[0], b.Shape[1]
	if n.Attrs.Int("transB", 0) != 0 {
		k2, nn = nn, k2
	}
	if k != k2 {
		return nil, fmt.Errorf("inner dimensions differ: A %q %v and B %q %v (transA=%d, transB=%d)", a.Name, a.Shape, b.Name, b.Shape, n.Attrs.Int("transA", 0), n.Attrs.Int("transB", 0))
	}
	out := Shape{m, nn}
	if c != nil {
		if err := sameType(a, c); err != nil {
			return nil, err
		}
		if s, err := Broadcast(out, c.Shape); err != nil || !s.Equal(out) {
			return nil, fmt.Errorf("bias C %q has shape %v, which does not broadcast to %v", c.Name, c.Shape, out)
		}
	}
	return same(a.DType, out), nil
}

// inferMatMul follows numpy.matmul: a 1-D A gains a leading 1 and a 1-D B a
// trailing 1 that are dropped from the result; batch axes broadcast.
func inferMatMul(g *Graph, n *Node) ([]Type, error) {
	a, b, _, err := operandPair(g, n, 2, requireNumeric)
	if err != nil {
		return nil, err
	}
	as, bs := a.Shape, b.Shape
	if as.Rank() == 0 || bs.Rank() == 0 {
		return nil, fmt.Errorf("inputs %q %v and %q %v: MatMul needs rank 1 or more", a.Name, as, b.Name, bs)
	}
	dropA, dropB := as.Rank() == 1, bs.Rank() == 1
	if dropA {
		as = Shape{1, as[0]}
	}
	if dropB {
		bs = Shape{bs[0], 1}
	}
	ra, rb := as.Rank(), bs.Rank()
	if as[ra-1] != bs[rb-2] {
		return nil, fmt.Errorf("inner dimensions differ: %q %v and %q %v", a.Name, a.Shape, b.Name, b.Shape)
	}
	batch, err := Broadcast(as[:ra-2], bs[:rb-2])
	if err != nil {
		return nil, fmt.Errorf("batch dimensions of %q %v and %q %v: %w", a.Name, a.Shape, b.Name, b.Shape, err)
	}
	out := batch
	if !dropA {
		out = append(out, as[ra-2])
	}
	if !dropB {
		out = append(out, bs[rb-1])
	}
	return same(a.DType, out), nil
}

// inferFlatten: the axis may equal the rank (then the result is [n, 1]).
func inferFlatten(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	r := int64(x.Shape.Rank())
	axis := n.Attrs.Int("axis", 1)
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis > r {
		return nil, fmt.Errorf("axis %d out of range for rank %d", n.Attrs.Int("axis", 1), r)
	}
	return same(x.DType, Shape{product(x.Shape[:axis]), product(x.Shape[axis:])}), nil
}
