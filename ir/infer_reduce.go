package ir

import (
	"fmt"
	"math"
	"math/big"
	"slices"
)

func init() {
	register(inferReduce, "ReduceMean", "ReduceSum")
	register(inferPad, "Pad")
	register(inferRange, "Range")
}

// reduceAxesInput is, per reduction, the opset from which the axes are an
// input instead of an attribute.
var reduceAxesInput = map[string]int64{
	"ReduceSum":  13,
	"ReduceMean": 18,
}

// ResolveReduceAxes returns the sorted axes that a ReduceMean or ReduceSum
// node reduces: the axes attribute (ReduceMean; ReduceSum before opset 13)
// or constant input (ReduceSum from opset 13), negative axes counted from
// the end. No axes means every axis, except with noop_with_empty_axes,
// which reduces none (an empty result).
func ResolveReduceAxes(g *Graph, n *Node) ([]int, error) {
	since, ok := reduceAxesInput[n.Op]
	if !ok {
		return nil, fmt.Errorf("%s is not a reduction", n.Op)
	}
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	rank := x.Shape.Rank()
	axes, given, err := axesArg(g, n, since)
	if err != nil {
		return nil, err
	}
	if !given || len(axes) == 0 {
		if n.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			return []int{}, nil
		}
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	ax, err := normAxes(axes, rank)
	if err != nil {
		return nil, err
	}
	slices.Sort(ax)
	return ax, nil
}

func inferReduce(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 2, requireNumeric)
	if err != nil {
		return nil, err
	}
	axes, err := ResolveReduceAxes(g, n)
	if err != nil {
		return nil, err
	}
	keep := n.Attrs.Int("keepdims", 1) != 0
	reduced := make([]bool, x.Shape.Rank())
	for _, a := range axes {
		reduced[a] = true
	}
	out := Shape{}
	for i, d := range x.Shape {
		switch {
		case !reduced[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return same(x.DType, out), nil
}

// ResolvePads returns the padding of a Pad node for every axis of its
// input: begins first, then ends (ONNX's layout). The pads come from the
// pads attribute before opset 11 and from constant inputs from opset 11
// (with the optional axes input of opset 18). Negative pads crop.
func ResolvePads(g *Graph, n *Node) ([]int64, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	r := x.Shape.Rank()
	var pads []int64
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if opset(g) < 11 {
		if len(n.Inputs) > 1 {
			return nil, fmt.Errorf("takes pads as an attribute before opset 11, has %d inputs", len(n.Inputs))
		}
		if pads = n.Attrs.Ints("pads", nil); pads == nil {
			return nil, fmt.Errorf("attribute pads is missing")
		}
	} else {
		if pads, err = constInts(g, n, 1, "pads"); err != nil {
			return nil, err
		}
		if n.Input(3) != NoTensor {
			a, err := constInts(g, n, 3, "axes")
			if err != nil {
				return nil, err
			}
			if axes, err = normAxes(a, r); err != nil {
				return nil, err
			}
		}
	}
	k := len(axes)
	if len(pads) != 2*k {
		return nil, fmt.Errorf("pads %v has %d values, want %d for %d axes", pads, len(pads), 2*k, k)
	}
	full := make([]int64, 2*r)
	for i, a := range axes {
		for _, p := range []int64{pads[i], pads[k+i]} {
			if p < -MaxElements || p > MaxElements {
				return nil, fmt.Errorf("pads %v: value %d out of range", pads, p)
			}
		}
		full[a], full[r+a] = pads[i], pads[k+i]
	}
	return full, nil
}

func inferPad(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 4)
	if err != nil {
		return nil, err
	}
	pads, err := ResolvePads(g, n)
	if err != nil {
		return nil, err
	}
	if v, err := optInput(g, n, 2); err != nil {
		return nil, err
	} else if v != nil {
		if err := sameType(x, v); err != nil {
			return nil, err
		}
		if v.Shape.Elements() != 1 {
			return nil, fmt.Errorf("constant_value %q has shape %v, want a scalar", v.Name, v.Shape)
		}
	}
	mode := n.Attrs.String("mode", "constant")
	r := x.Shape.Rank()
	out := make(Shape, r)
	for i, d := range x.Shape {
		pb, pe := pads[i], pads[r+i]
		out[i] = d + pb + pe // each term within ±MaxElements
		if out[i] < 0 {
			return nil, fmt.Errorf("pads %v crop axis %d of %q %v below zero", pads, i, x.Name, x.Shape)
		}
		switch mode {
		case "constant":
		case "reflect":
			if (pb > 0 || pe > 0) && (pb >= d || pe >= d) {
				return nil, fmt.Errorf("reflect padding of axis %d (%d, %d) needs a dimension larger than the pads, %q has %d", i, pb, pe, x.Name, d)
			}
		case "edge", "wrap":
			if mode == "wrap" && opset(g) < 19 {
				return nil, fmt.Errorf("mode wrap needs opset 19, the model imports %d", opset(g))
			}
			if (pb > 0 || pe > 0) && d == 0 {
				return nil, fmt.Errorf("%s padding of empty axis %d of %q", mode, i, x.Name)
			}
		default:
			return nil, fmt.Errorf("mode %q is not supported (constant, reflect, edge, wrap)", mode)
		}
	}
	return same(x.DType, out), nil
}

// inferRange: start, limit and delta are constant scalars of one type;
// the output has max(ceil((limit-start)/delta), 0) elements.
func inferRange(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 3, 3); err != nil {
		return nil, err
	}
	var ts [3]*Tensor
	for i, what := range []string{"start", "limit", "delta"} {
		t, err := input(g, n, i)
		if err != nil {
			return nil, err
		}
		if !t.IsConst() {
			return nil, NeedValue(what, t.Name)
		}
		if t.Shape.Elements() != 1 {
			return nil, fmt.Errorf("%s %q has shape %v, want a scalar", what, t.Name, t.Shape)
		}
		ts[i] = t
	}
	if err := sameType(ts[:]...); err != nil {
		return nil, err
	}
	var count int64
	switch dt := ts[0].DType; dt {
	case Float32, Float64:
		var v [3]float64
		for i, t := range ts {
			f, err := t.Float64s()
			if err != nil {
				return nil, err
			}
			v[i] = f[0]
		}
		if v[2] == 0 {
			return nil, fmt.Errorf("delta is 0")
		}
		c := math.Ceil((v[1] - v[0]) / v[2])
		if math.IsNaN(c) || c > MaxElements {
			return nil, fmt.Errorf("range(%g, %g, %g) has too many elements", v[0], v[1], v[2])
		}
		count = int64(max(c, 0))
	case Int16, Int32, Int64:
		var v [3]*big.Int
		for i, t := range ts {
			x, err := t.Int64s()
			if err != nil {
				return nil, err
			}
			v[i] = big.NewInt(x[0])
		}
		if v[2].Sign() == 0 {
			return nil, fmt.Errorf("delta is 0")
		}
		// ceil((limit-start)/delta): QuoRem truncates toward zero, so a
		// positive quotient with a remainder rounds up by one.
		diff := new(big.Int).Sub(v[1], v[0])
		q, rem := new(big.Int).QuoRem(diff, v[2], new(big.Int))
		if rem.Sign() != 0 && diff.Sign() == v[2].Sign() {
			q.Add(q, big.NewInt(1))
		}
		if q.Sign() < 0 {
			q.SetInt64(0)
		}
		if !q.IsInt64() || q.Int64() > MaxElements {
			return nil, fmt.Errorf("range(%v, %v, %v) has too many elements", v[0], v[1], v[2])
		}
		count = q.Int64()
	default:
		return nil, fmt.Errorf("inputs are %s, want float, double, int16, int32 or int64", dt)
	}
	return same(ts[0].DType, Shape{count}), nil
}
