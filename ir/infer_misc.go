package ir

import "fmt"

// Shape rules of CastLike, BitShift, the bitwise operators, Hardmax,
// OneHot, EyeLike, TopK, the quantisation operators, Celu, Mish, Gelu and
// LRN.

func init() {
	register(inferCastLike, "CastLike")
	register(inferBinary(false, requireUnsigned), "BitShift")
	register(inferBinary(false, requireInteger), "BitwiseAnd", "BitwiseOr", "BitwiseXor")
	register(inferUnary(requireInteger), "BitwiseNot")
	register(inferSoftmax, "Hardmax")
	register(inferOneHot, "OneHot")
	register(inferEyeLike, "EyeLike")
	register(inferTopK, "TopK")
	register(inferQuantize, "QuantizeLinear", "DequantizeLinear")
	register(inferUnary(requireFloat), "Celu", "Mish", "Gelu")
	register(inferFirst(1, 1), "LRN")
}

func requireUnsigned(t *Tensor) error {
	switch t.DType {
	case Uint8, Uint16, Uint32, Uint64:
		return nil
	}
	return fmt.Errorf("input %q is %s, want an unsigned integer type", t.Name, t.DType)
}

func requireInteger(t *Tensor) error {
	if !t.DType.IsInt() {
		return fmt.Errorf("input %q is %s, want an integer type", t.Name, t.DType)
	}
	return nil
}

func inferCastLike(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, like := ts[0], ts[1]
	return same(like.DType, x.Shape), nil
}

func inferOneHot(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 3, 3)
	if err != nil {
		return nil, err
	}
	ind, depth, vals := ts[0], ts[1], ts[2]
	if !depth.IsConst() || depth.Shape.Elements() != 1 {
		return nil, NeedValue("depth", depth.Name)
	}
	dv, err := depth.Float64s()
	if err != nil {
		return nil, err
	}
	d := int64(dv[0])
	if d < 1 {
		return nil, fmt.Errorf("depth %d must be positive", d)
	}
	r := ind.Shape.Rank() + 1
	axis, err := NormAxis(n.Attrs.Int("axis", -1), r)
	if err != nil {
		return nil, err
	}
	out := append(Shape{}, ind.Shape[:axis]...)
	out = append(out, d)
	out = append(out, ind.Shape[axis:]...)
	return same(vals.DType, out), nil
}

func inferEyeLike(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() != 2 {
		return nil, fmt.Errorf("input %v must be 2-D", x.Shape)
	}
	dt := x.DType
	if n.Attrs.Has("dtype") {
		if dt, err = DTypeFromONNX(n.Attrs.Int("dtype", 0)); err != nil {
			return nil, err
		}
	}
	return same(dt, x.Shape), nil
}

func inferTopK(g *Graph, n *Node) ([]Type, error) {
	x, err := input(g, n, 0, requireNumeric)
	if err != nil {
		return nil, err
	}
	k := n.Attrs.Int("k", -1)
	if opset(g) >= 10 {
		v, err := constInts(g, n, 1, "k")
		if err != nil {
			return nil, err
		}
		if len(v) != 1 {
			return nil, fmt.Errorf("k must hold one value, has %d", len(v))
		}
		k = v[0]
	}
	axis, err := NormAxis(n.Attrs.Int("axis", -1), x.Shape.Rank())
	if err != nil {
		return nil, err
	}
	if k < 0 || k > x.Shape[axis] {
		return nil, fmt.Errorf("k %d is out of range for axis of size %d", k, x.Shape[axis])
	}
	s := x.Shape.Clone()
	s[axis] = k
	return []Type{{DType: x.DType, Shape: s}, {DType: Int64, Shape: s.Clone()}}, nil
}

// quantAxis checks that a scale or zero point is a scalar or a 1-D tensor
// along the axis of x.
func quantAxis(n *Node, x, s *Tensor) error {
	if s.Shape.Elements() == 1 && s.Shape.Rank() <= 1 {
		return nil
	}
	axis, err := NormAxis(n.Attrs.Int("axis", 1), x.Shape.Rank())
	if err != nil {
		return err
	}
	if s.Shape.Rank() != 1 || s.Shape[0] != x.Shape[axis] {
		return fmt.Errorf("%q %v must be a scalar or have the %d elements of axis %d", s.Name, s.Shape, x.Shape[axis], axis)
	}
	return nil
}

// inferQuantize: QuantizeLinear outputs the zero point's type (uint8
// without one), DequantizeLinear the scale's.
func inferQuantize(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 3)
	if err != nil {
		return nil, err
	}
	x, scale := ts[0], ts[1]
	if err := quantAxis(n, x, scale); err != nil {
		return nil, err
	}
	if n.Op == "DequantizeLinear" {
		return same(scale.DType, x.Shape), nil
	}
	dt := Uint8
	if zp, err := optInput(g, n, 2); err != nil {
		return nil, err
	} else if zp != nil {
		dt = zp.DType
	}
	return same(dt, x.Shape), nil
}
