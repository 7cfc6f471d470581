package ir

import "fmt"

// Shape rules of the indexed reads and writes (GatherElements, Scatter*,
// GatherND), the losses and the integer products.

func init() {
	register(inferGatherElements, "GatherElements")
	register(inferScatter, "ScatterElements", "Scatter", "ScatterND")
	register(inferGatherND, "GatherND")
	register(inferNLLLoss, "NegativeLogLikelihoodLoss")
	register(inferSCELoss, "SoftmaxCrossEntropyLoss")
}

func requireIndices(t *Tensor) error {
	if t.DType != Int64 && t.DType != Int32 {
		return fmt.Errorf("indices %q are %s, want int32 or int64", t.Name, t.DType)
	}
	return nil
}

// indexed returns the k inputs of an indexed read or write (data,
// indices, …), the indices checked.
func indexed(g *Graph, n *Node, k int) ([]*Tensor, error) {
	ts, err := operands(g, n, k, k)
	if err != nil {
		return nil, err
	}
	if err := requireIndices(ts[1]); err != nil {
		return nil, err
	}
	return ts, nil
}

func inferGatherElements(g *Graph, n *Node) ([]Type, error) {
	ts, err := indexed(g, n, 2)
	if err != nil {
		return nil, err
	}
	x, ind := ts[0], ts[1]
	if ind.Shape.Rank() != x.Shape.Rank() {
		return nil, fmt.Errorf("indices %v must have the rank of data %v", ind.Shape, x.Shape)
	}
	if _, err := NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank()); err != nil {
		return nil, err
	}
	return same(x.DType, ind.Shape), nil
}

func inferScatter(g *Graph, n *Node) ([]Type, error) {
	ts, err := indexed(g, n, 3)
	if err != nil {
		return nil, err
	}
	x, upd := ts[0], ts[2]
	if err := sameType(x, upd); err != nil {
		return nil, err
	}
	return same(x.DType, x.Shape), nil
}

func inferGatherND(g *Graph, n *Node) ([]Type, error) {
	ts, err := indexed(g, n, 2)
	if err != nil {
		return nil, err
	}
	x, ind := ts[0], ts[1]
	b := int(n.Attrs.Int("batch_dims", 0))
	q, r := ind.Shape.Rank(), x.Shape.Rank()
	if q < 1 || b < 0 || b >= q || b > r {
		return nil, fmt.Errorf("indices %v do not fit data %v with batch_dims %d", ind.Shape, x.Shape, b)
	}
	k := int(ind.Shape[q-1])
	if b+k > r {
		return nil, fmt.Errorf("indices %v address more axes than data %v has", ind.Shape, x.Shape)
	}
	out := append(Shape{}, ind.Shape[:q-1]...)
	out = append(out, x.Shape[b+k:]...)
	return same(x.DType, out), nil
}

// lossShape is the shape of a loss: the target's with reduction none, a
// scalar otherwise.
func lossShape(n *Node, target *Tensor) (Shape, error) {
	switch r := n.Attrs.String("reduction", "mean"); r {
	case "none":
		return target.Shape.Clone(), nil
	case "mean", "sum":
		return Shape{}, nil
	default:
		return nil, fmt.Errorf("reduction %q is not supported", r)
	}
}

func lossInputs(g *Graph, n *Node) (x, target *Tensor, err error) {
	in, err := operands(g, n, 2, 3)
	if err != nil {
		return nil, nil, err
	}
	x, target = in[0], in[1]
	if err := requireFloat(x); err != nil {
		return nil, nil, err
	}
	if err := requireIndices(target); err != nil {
		return nil, nil, err
	}
	xs, ts := x.Shape, target.Shape
	ok := xs.Rank() >= 2 && ts.Rank() == xs.Rank()-1 && ts[0] == xs[0]
	for i := 1; ok && i < ts.Rank(); i++ {
		ok = ts[i] == xs[i+1]
	}
	if !ok {
		return nil, nil, fmt.Errorf("target %v does not fit input %v ([N,C,d...] and [N,d...])", ts, xs)
	}
	return x, target, nil
}

func inferNLLLoss(g *Graph, n *Node) ([]Type, error) {
	x, target, err := lossInputs(g, n)
	if err != nil {
		return nil, err
	}
	s, err := lossShape(n, target)
	if err != nil {
		return nil, err
	}
	return same(x.DType, s), nil
}

func inferSCELoss(g *Graph, n *Node) ([]Type, error) {
	x, target, err := lossInputs(g, n)
	if err != nil {
		return nil, err
	}
	s, err := lossShape(n, target)
	if err != nil {
		return nil, err
	}
	out := same(x.DType, s)
	if requested(n, 1) {
		out = append(out, Type{DType: x.DType, Shape: x.Shape.Clone()})
	}
	return out, nil
}

func init() {
	register(inferReverseSequence, "ReverseSequence")
	register(inferMatMulInteger, "MatMulInteger", "QLinearMatMul")
}

func inferReverseSequence(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 2 {
		return nil, fmt.Errorf("input %v must have rank 2 or more", x.Shape)
	}
	return same(x.DType, x.Shape), nil
}

// MatMulShape is the numpy matmul shape of a [..., m, k] times b
// [..., k, n] (a 1-D operand gets its dimension dropped from the result).
func MatMulShape(as, bs Shape) (Shape, error) {
	if as.Rank() == 0 || bs.Rank() == 0 {
		return nil, fmt.Errorf("matmul needs rank 1 or more, has %v and %v", as, bs)
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
		return nil, fmt.Errorf("inner dimensions of %v and %v differ", as, bs)
	}
	out, err := Broadcast(as[:ra-2], bs[:rb-2])
	if err != nil {
		return nil, err
	}
	out = out.Clone()
	if !dropA {
		out = append(out, as[ra-2])
	}
	if !dropB {
		out = append(out, bs[rb-1])
	}
	return out, nil
}

// inferMatMulInteger: MatMulInteger (a, b, a_zero_point, b_zero_point →
// int32) and QLinearMatMul (a, a_scale, a_zp, b, b_scale, b_zp, y_scale,
// y_zp → the type of y_zp).
func inferMatMulInteger(g *Graph, n *Node) ([]Type, error) {
	bi, dt := 1, Int32
	if n.Op == "QLinearMatMul" {
		if err := inputCount(n, 8, 8); err != nil {
			return nil, err
		}
		zp, err := input(g, n, 7)
		if err != nil {
			return nil, err
		}
		bi, dt = 3, zp.DType
	} else if err := inputCount(n, 2, 4); err != nil {
		return nil, err
	}
	a, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	b, err := input(g, n, bi)
	if err != nil {
		return nil, err
	}
	for _, t := range []*Tensor{a, b} {
		if t.DType != Uint8 && t.DType != Int8 {
			return nil, fmt.Errorf("input %q is %s, want int8 or uint8", t.Name, t.DType)
		}
	}
	out, err := MatMulShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	return same(dt, out), nil
}

func init() { register(inferIntConv, "ConvInteger", "QLinearConv") }

// IntConvInputs are the input positions of ConvInteger and QLinearConv.
func IntConvInputs(op string) (x, w, xzp, wzp int) {
	if op == "QLinearConv" {
		return 0, 3, 2, 5
	}
	return 0, 1, 2, 3
}

// IntConvWindow resolves the window of a ConvInteger or QLinearConv node.
func IntConvWindow(g *Graph, n *Node) (*Window, error) {
	xi, wi, _, _ := IntConvInputs(n.Op)
	x, err := input(g, n, xi)
	if err != nil {
		return nil, err
	}
	w, err := input(g, n, wi)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 3 || w.Shape.Rank() != x.Shape.Rank() {
		return nil, fmt.Errorf("input %v and weights %v must have the same rank, at least 3", x.Shape, w.Shape)
	}
	return windowOf(n.Attrs, x.Shape[2:], w.Shape[2:], x.Shape.Rank()-2, false)
}

func inferIntConv(g *Graph, n *Node) ([]Type, error) {
	xi, wi, _, _ := IntConvInputs(n.Op)
	x, err := input(g, n, xi)
	if err != nil {
		return nil, err
	}
	w, err := input(g, n, wi)
	if err != nil {
		return nil, err
	}
	win, err := IntConvWindow(g, n)
	if err != nil {
		return nil, err
	}
	if group := n.Attrs.Int("group", 1); group < 1 || w.Shape[1]*group != x.Shape[1] {
		return nil, fmt.Errorf("weights %v do not fit input %v in %d groups", w.Shape, x.Shape, group)
	}
	dt := Int32
	if n.Op == "QLinearConv" {
		zp, err := input(g, n, 7)
		if err != nil {
			return nil, err
		}
		dt = zp.DType
	}
	return same(dt, append(Shape{x.Shape[0], w.Shape[0]}, win.Out...)), nil
}
