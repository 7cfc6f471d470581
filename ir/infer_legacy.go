package ir

import "fmt"

// Rules of opsets before 7 and of operators that extend a core rule:
// legacy broadcasting, PRelu's channel slope, MaxPool's Indices,
// MaxUnpool, MeanVarianceNormalization and BatchNormalization in training
// mode.

// checkLegacyBroadcast refuses what berth cannot broadcast before opset 7:
// the binary operators then broadcast only with broadcast=1, optionally
// along a given axis; numpy-style broadcasting agrees with that rule
// exactly when B lines up with A's trailing axes.
func checkLegacyBroadcast(g *Graph, n *Node, a, b *Tensor) error {
	if opset(g) >= 7 || !n.Attrs.Has("axis") || n.Attrs.Int("broadcast", 0) == 0 {
		return nil
	}
	if ax := n.Attrs.Int("axis", 0); ax != int64(a.Shape.Rank()-b.Shape.Rank()) {
		return fmt.Errorf("legacy broadcasting of %v along axis %d of %v is not supported", b.Shape, ax, a.Shape)
	}
	return nil
}

// LegacyPReluSlope reports the shape a PRelu slope broadcasts as: before
// opset 7 a 1-D slope of one value per channel applies along axis 1
// (PyTorch's exports rely on it); from opset 7 the slope broadcasts
// numpy-style.
func LegacyPReluSlope(g *Graph, x, slope Shape) Shape {
	if opset(g) < 7 && slope.Rank() == 1 && x.Rank() > 2 && slope[0] == x[1] && slope[0] != x[x.Rank()-1] {
		s := ones(x.Rank() - 1)
		s[0] = slope[0]
		return s
	}
	return slope
}

func init() {
	register(inferMVN, "MeanVarianceNormalization")
	register(inferMaxUnpool, "MaxUnpool")
}

func inferMVN(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireFloat)
	if err != nil {
		return nil, err
	}
	if _, err := normAxes(n.Attrs.Ints("axes", []int64{0, 2, 3}), x.Shape.Rank()); err != nil {
		return nil, err
	}
	return same(x.DType, x.Shape), nil
}

// MaxUnpoolShape is the output shape of a MaxUnpool node: with given, its
// constant output_shape input if it has one; else the size the pooling
// window undoes (where the values are scattered before being padded to
// output_shape).
func MaxUnpoolShape(g *Graph, n *Node, given bool) (Shape, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	if t, err := optInput(g, n, 2); err != nil {
		return nil, err
	} else if t != nil && given {
		v, err := intsOf(t, "output_shape")
		if err != nil {
			return nil, err
		}
		return Shape(v), nil
	}
	r := x.Shape.Rank() - 2
	k := n.Attrs.Ints("kernel_shape", nil)
	if r < 1 || len(k) != r {
		return nil, fmt.Errorf("kernel_shape %v does not fit input %v", k, x.Shape)
	}
	strides := n.Attrs.Ints("strides", nil)
	pads := n.Attrs.Ints("pads", make([]int64, 2*r))
	if strides != nil && len(strides) != r {
		return nil, fmt.Errorf("strides %v: want %d values for input %v", strides, r, x.Shape)
	}
	if len(pads) != 2*r {
		return nil, fmt.Errorf("pads %v: want %d values for input %v", pads, 2*r, x.Shape)
	}
	out := Shape{x.Shape[0], x.Shape[1]}
	for i := 0; i < r; i++ {
		s := int64(1)
		if strides != nil {
			s = strides[i]
		}
		out = append(out, (x.Shape[2+i]-1)*s+k[i]-pads[i]-pads[r+i])
	}
	return out, nil
}

func inferMaxUnpool(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 2, 3)
	if err != nil {
		return nil, err
	}
	s, err := MaxUnpoolShape(g, n, true)
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return same(x.DType, s), nil
}

// inferTrainingBatchNorm: in training mode BatchNormalization normalises by
// the batch's statistics and also outputs the updated running mean and
// variance.
func inferTrainingBatchNorm(g *Graph, n *Node) ([]Type, error) {
	x, err := input(g, n, 0, requireFloat)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 2 {
		return nil, fmt.Errorf("input %v must have a channel axis", x.Shape)
	}
	c := Shape{x.Shape[1]}
	return []Type{{DType: x.DType, Shape: x.Shape.Clone()}, {DType: x.DType, Shape: c}, {DType: x.DType, Shape: c.Clone()}}, nil
}
