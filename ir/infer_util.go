package ir

import (
	"fmt"
	"math"
)

// input returns input i of n, which must be present and typed and pass
// every check.
func input(g *Graph, n *Node, i int, checks ...func(*Tensor) error) (*Tensor, error) {
	id := n.Input(i)
	if id == NoTensor {
		return nil, fmt.Errorf("input %d is missing", i)
	}
	t, err := tensorOf(g, id)
	if err != nil {
		return nil, err
	}
	for _, check := range checks {
		if err := check(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// inputs returns the first k inputs of n, each present and typed, as
// input does.
func inputs(g *Graph, n *Node, k int) ([]*Tensor, error) {
	ts := make([]*Tensor, k)
	for i := range ts {
		var err error
		if ts[i], err = input(g, n, i); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// optInput returns input i of n, or nil when the model omitted it.
func optInput(g *Graph, n *Node, i int) (*Tensor, error) {
	id := n.Input(i)
	if id == NoTensor {
		return nil, nil
	}
	return tensorOf(g, id)
}

func tensorOf(g *Graph, id TensorID) (*Tensor, error) {
	if id < 0 || int(id) >= len(g.Tensors) {
		return nil, fmt.Errorf("tensor id %d out of range", id)
	}
	t := &g.Tensors[id]
	if !t.DType.Valid() {
		return nil, fmt.Errorf("input %q has no known type yet", t.Name)
	}
	return t, nil
}

// inputCount checks that n has between lo and hi inputs (hi < 0: no limit).
func inputCount(n *Node, lo, hi int) error {
	k := len(n.Inputs)
	switch {
	case k < lo && lo == hi:
		return fmt.Errorf("needs %d inputs, has %d", lo, k)
	case k < lo:
		return fmt.Errorf("needs at least %d inputs, has %d", lo, k)
	case hi >= 0 && k > hi:
		return fmt.Errorf("takes at most %d inputs, has %d", hi, k)
	}
	return nil
}

// constInts returns the values of input i, which must be a constant
// integer tensor of rank 0 or 1. what names the input in errors.
func constInts(g *Graph, n *Node, i int, what string) ([]int64, error) {
	t, err := input(g, n, i)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return intsOf(t, what)
}

// operandPair returns the inputs a and b of a node of 2 to hi inputs and
// its optional third input c (nil where absent), once a passes check and
// b has a's type.
func operandPair(g *Graph, n *Node, hi int, check func(*Tensor) error) (a, b, c *Tensor, err error) {
	ts, err := operands(g, n, 2, hi)
	if err != nil {
		return nil, nil, nil, err
	}
	a, b = ts[0], ts[1]
	if c, err = optInput(g, n, 2); err != nil {
		return nil, nil, nil, err
	}
	if err := check(a); err != nil {
		return nil, nil, nil, err
	}
	if err := sameType(a, b); err != nil {
		return nil, nil, nil, err
	}
	return a, b, c, nil
}

// operandAndInts returns the first of n's two inputs and the values of
// the second, a constant integer tensor that what names in errors.
func operandAndInts(g *Graph, n *Node, what string) (*Tensor, []int64, error) {
	x, err := operand(g, n, 2, 2)
	if err != nil {
		return nil, nil, err
	}
	v, err := constInts(g, n, 1, what)
	if err != nil {
		return nil, nil, err
	}
	return x, v, nil
}

func intsOf(t *Tensor, what string) ([]int64, error) {
	if !t.IsConst() {
		return nil, NeedValue(what, t.Name)
	}
	if t.DType != Int64 && t.DType != Int32 {
		return nil, fmt.Errorf("%s %q is %s, want int64", what, t.Name, t.DType)
	}
	if t.Shape.Rank() > 1 {
		return nil, fmt.Errorf("%s %q has shape %v, want a 1-D tensor", what, t.Name, t.Shape)
	}
	return t.Int64s()
}

// requireFloat checks that t has a floating-point type.
func requireFloat(t *Tensor) error {
	if !t.DType.IsFloat() {
		return fmt.Errorf("input %q is %s, want a floating-point type", t.Name, t.DType)
	}
	return nil
}

// requireNumeric checks that t has a numeric (not bool) type.
func requireNumeric(t *Tensor) error {
	if !t.DType.IsFloat() && !t.DType.IsInt() {
		return fmt.Errorf("input %q is %s, want a numeric type", t.Name, t.DType)
	}
	return nil
}

// sameType checks that every tensor has the type of the first.
func sameType(ts ...*Tensor) error {
	for _, t := range ts[1:] {
		if t.DType != ts[0].DType {
			return fmt.Errorf("inputs %q (%s) and %q (%s) differ in type", ts[0].Name, ts[0].DType, t.Name, t.DType)
		}
	}
	return nil
}

// normAxes normalizes possibly negative axes against rank and rejects
// duplicates. The result keeps the given order.
func normAxes(axes []int64, rank int) ([]int, error) {
	out := make([]int, len(axes))
	seen := make([]bool, rank)
	for i, a := range axes {
		ax, err := NormAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if seen[ax] {
			return nil, fmt.Errorf("axis %d is given twice in %v", a, axes)
		}
		seen[ax] = true
		out[i] = ax
	}
	return out, nil
}

// checkedAdd returns a+b or an error on int64 overflow.
func checkedAdd(a, b int64) (int64, error) {
	s := a + b
	if (b > 0 && s < a) || (b < 0 && s > a) {
		return 0, fmt.Errorf("size overflow: %d + %d", a, b)
	}
	return s, nil
}

// checkedMul returns a*b or an error on int64 overflow.
func checkedMul(a, b int64) (int64, error) {
	if a == 0 || b == 0 {
		return 0, nil
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, fmt.Errorf("size overflow: %d × %d", a, b)
	}
	return p, nil
}

// product multiplies dims, which are valid (non-negative, bounded) dims of
// a validated shape, so the product cannot overflow.
func product(dims []int64) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= d
	}
	return p
}

// same returns one output of the given type and shape.
func same(dt DType, s Shape) []Type { return []Type{{DType: dt, Shape: s.Clone()}} }

// ones returns a shape of k ones.
func ones(k int) Shape {
	s := make(Shape, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

// requested reports whether the node asks for output i.
func requested(n *Node, i int) bool {
	return i < len(n.Outputs) && n.Outputs[i] != NoTensor
}

// operands checks that n has lo to hi inputs (as inputCount does) and
// returns the first lo of them, each present and typed.
func operands(g *Graph, n *Node, lo, hi int) ([]*Tensor, error) {
	if err := inputCount(n, lo, hi); err != nil {
		return nil, err
	}
	return inputs(g, n, lo)
}

// operand checks that n has lo to hi inputs (as inputCount does) and
// returns the first, present and typed, once it passes every check.
func operand(g *Graph, n *Node, lo, hi int, checks ...func(*Tensor) error) (*Tensor, error) {
	if err := inputCount(n, lo, hi); err != nil {
		return nil, err
	}
	return input(g, n, 0, checks...)
}
