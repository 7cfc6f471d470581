package ir

import "fmt"

func init() {
	register(inferUnary(requireFloat), "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "Log", "Sqrt", "LeakyRelu")
	register(inferUnary(requireNumeric), "Relu", "Erf", "Abs")
	register(inferUnary(requireSigned), "Neg")
	register(inferUnary(anyType), "Identity")
	register(inferUnary(requireBool), "Not")
	register(inferBinary(false, requireNumeric), "Add", "Sub", "Mul", "Div")
	register(inferBinary(true, requireNumeric), "Less", "Greater")
	register(inferBinary(true, anyType), "Equal")
	register(inferBinary(true, requireBool), "And", "Or")
	register(inferPow, "Pow")
	register(inferVariadic, "Max", "Min", "Sum", "Mean")
	register(inferWhere, "Where")
	register(inferClip, "Clip")
	register(inferCast, "Cast")
}

func anyType(*Tensor) error { return nil }

func requireSigned(t *Tensor) error {
	if !t.DType.IsSigned() {
		return fmt.Errorf("input %q is %s, want a signed type", t.Name, t.DType)
	}
	return nil
}

func requireBool(t *Tensor) error {
	if t.DType != Bool {
		return fmt.Errorf("input %q is %s, want bool", t.Name, t.DType)
	}
	return nil
}

// inferUnary is the rule of an elementwise operator of one input whose
// output has the input's type and shape.
func inferUnary(check func(*Tensor) error) inferFunc { return inferFirst(1, 1, check) }

// inferFirst is the rule of an operator of lo to hi inputs whose one
// output has the type and shape of its first input, once that input
// passes the checks.
func inferFirst(lo, hi int, checks ...func(*Tensor) error) inferFunc {
	return func(g *Graph, n *Node) ([]Type, error) {
		x, err := operand(g, n, lo, hi, checks...)
		if err != nil {
			return nil, err
		}
		return same(x.DType, x.Shape), nil
	}
}

// inferBinary is the rule of an elementwise operator of two inputs of the
// same type, broadcast numpy-style; logical ops output bool.
func inferBinary(logical bool, check func(*Tensor) error) inferFunc {
	return func(g *Graph, n *Node) ([]Type, error) {
		a, b, _, err := operandPair(g, n, 2, check)
		if err != nil {
			return nil, err
		}
		if err := checkLegacyBroadcast(g, n, a, b); err != nil {
			return nil, err
		}
		s, err := Broadcast(a.Shape, b.Shape)
		if err != nil {
			return nil, err
		}
		dt := a.DType
		if logical {
			dt = Bool
		}
		return same(dt, s), nil
	}
}

// inferPow: the exponent may have another numeric type than the base; the
// output has the base's type.
func inferPow(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, y := ts[0], ts[1]
	if err := requireNumeric(x); err != nil {
		return nil, err
	}
	if err := requireNumeric(y); err != nil {
		return nil, err
	}
	if err := checkLegacyBroadcast(g, n, x, y); err != nil {
		return nil, err
	}
	s, err := Broadcast(x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	return same(x.DType, s), nil
}

// inferVariadic is the rule of Max, Min, Sum and Mean: one or more inputs
// of one type, broadcast together.
func inferVariadic(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 1, -1); err != nil {
		return nil, err
	}
	ts := make([]*Tensor, len(n.Inputs))
	var s Shape
	for i := range n.Inputs {
		t, err := input(g, n, i, requireNumeric)
		if err != nil {
			return nil, err
		}
		ts[i] = t
		if i == 0 {
			s = t.Shape
		} else if s, err = Broadcast(s, t.Shape); err != nil {
			return nil, err
		}
	}
	if err := sameType(ts...); err != nil {
		return nil, err
	}
	return same(ts[0].DType, s), nil
}

func inferWhere(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 3, 3)
	if err != nil {
		return nil, err
	}
	c, x, y := ts[0], ts[1], ts[2]
	if err := requireBool(c); err != nil {
		return nil, err
	}
	if err := sameType(x, y); err != nil {
		return nil, err
	}
	s, err := Broadcast(c.Shape, x.Shape)
	if err != nil {
		return nil, err
	}
	if s, err = Broadcast(s, y.Shape); err != nil {
		return nil, err
	}
	return same(x.DType, s), nil
}

// inferClip: min and max are attributes before opset 11 and optional
// one-element inputs of the input's type from opset 11 on.
func inferClip(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 3, requireNumeric)
	if err != nil {
		return nil, err
	}
	if opset(g) < 11 && len(n.Inputs) > 1 {
		return nil, fmt.Errorf("takes min and max as attributes before opset 11, has %d inputs", len(n.Inputs))
	}
	for i := 1; i < 3; i++ {
		b, err := optInput(g, n, i)
		if err != nil {
			return nil, err
		}
		if b == nil {
			continue
		}
		if err := sameType(x, b); err != nil {
			return nil, err
		}
		if b.Shape.Elements() != 1 {
			return nil, fmt.Errorf("bound %q has shape %v, want a scalar", b.Name, b.Shape)
		}
	}
	return same(x.DType, x.Shape), nil
}

func inferCast(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	if !n.Attrs.Has("to") {
		return nil, fmt.Errorf("attribute \"to\" is missing")
	}
	to, err := DTypeFromONNX(n.Attrs.Int("to", 0))
	if err != nil {
		return nil, fmt.Errorf("attribute \"to\": %w", err)
	}
	return same(to, x.Shape), nil
}
