package ir

import (
	"fmt"
	"math"
)

// Shape rules of the elementwise, reduction and layout operators beyond the
// core set.

func init() {
	register(inferUnary(requireFloat), "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
		"Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus", "Softsign", "Elu",
		"Selu", "ThresholdedRelu")
	register(inferUnary(requireNumeric), "Floor", "Ceil", "Round", "Reciprocal", "Sign", "Shrink")
	register(inferIsX, "IsNaN", "IsInf")
	register(inferBinary(true, requireNumeric), "LessOrEqual", "GreaterOrEqual")
	register(inferBinary(true, requireBool), "Xor")
	register(inferBinary(false, requireNumeric), "Mod")
	register(inferPRelu, "PRelu")
	register(inferSoftmax, "LogSoftmax")
	register(inferGlobalPool, "GlobalMaxPool")
	register(inferFirst(1, 3), "InstanceNormalization")
	register(inferFirst(2, 2), "CumSum")
	register(inferFirst(1, 2), "Trilu")
	for op, since := range map[string]int64{
		"ReduceMax": 18, "ReduceMin": 18, "ReduceProd": 18, "ReduceL1": 18,
		"ReduceL2": 18, "ReduceSumSquare": 18, "ReduceLogSum": 18, "ReduceLogSumExp": 18,
	} {
		reduceAxesInput[op] = since
		register(inferReduce, op)
	}
	register(inferArg, "ArgMax", "ArgMin")
	register(inferSize, "Size")
	register(inferTile, "Tile")
	register(inferBlocks, "DepthToSpace", "SpaceToDepth")
	register(inferDropout, "Dropout")
	register(inferConvTranspose, "ConvTranspose")
	register(inferResize, "Resize", "Upsample")
}

func inferIsX(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireFloat)
	if err != nil {
		return nil, err
	}
	return same(Bool, x.Shape), nil
}

func inferPRelu(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, s := ts[0], ts[1]
	if err := sameType(x, s); err != nil {
		return nil, err
	}
	out, err := Broadcast(x.Shape, LegacyPReluSlope(g, x.Shape, s.Shape))
	if err != nil {
		return nil, err
	}
	return same(x.DType, out), nil
}

func inferArg(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireNumeric)
	if err != nil {
		return nil, err
	}
	axis, err := NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank())
	if err != nil {
		return nil, err
	}
	out := Shape{}
	for i, d := range x.Shape {
		switch {
		case i != axis:
			out = append(out, d)
		case n.Attrs.Int("keepdims", 1) != 0:
			out = append(out, 1)
		}
	}
	return same(Int64, out), nil
}

func inferSize(g *Graph, n *Node) ([]Type, error) {
	if _, err := operand(g, n, 1, 1); err != nil {
		return nil, err
	}
	return same(Int64, Shape{}), nil
}

func inferTile(g *Graph, n *Node) ([]Type, error) {
	x, reps, err := operandAndInts(g, n, "repeats")
	if err != nil {
		return nil, err
	}
	if len(reps) != x.Shape.Rank() {
		return nil, fmt.Errorf("%d repeats for rank %d", len(reps), x.Shape.Rank())
	}
	out := make(Shape, len(reps))
	for i, r := range reps {
		if r < 0 {
			return nil, fmt.Errorf("repeats %v must not be negative", reps)
		}
		if out[i], err = checkedMul(x.Shape[i], r); err != nil {
			return nil, err
		}
	}
	return []Type{{DType: x.DType, Shape: out}}, nil
}

func inferBlocks(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	b := n.Attrs.Int("blocksize", 0)
	if x.Shape.Rank() != 4 || b <= 0 {
		return nil, fmt.Errorf("needs a 4-D input and a positive blocksize, has %v and %d", x.Shape, b)
	}
	s := x.Shape
	if n.Op == "DepthToSpace" {
		if s[1]%(b*b) != 0 {
			return nil, fmt.Errorf("channels %d are not a multiple of blocksize² %d", s[1], b*b)
		}
		return same(x.DType, Shape{s[0], s[1] / (b * b), s[2] * b, s[3] * b}), nil
	}
	if s[2]%b != 0 || s[3]%b != 0 {
		return nil, fmt.Errorf("spatial size %v is not a multiple of blocksize %d", s[2:], b)
	}
	return same(x.DType, Shape{s[0], s[1] * b * b, s[2] / b, s[3] / b}), nil
}

func inferDropout(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 3)
	if err != nil {
		return nil, err
	}
	out := same(x.DType, x.Shape)
	if requested(n, 1) {
		out = append(out, Type{DType: Bool, Shape: x.Shape.Clone()})
	}
	return out, nil
}

func inferConvTranspose(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 3)
	if err != nil {
		return nil, err
	}
	x, w := ts[0], ts[1]
	if err := requireFloat(x); err != nil {
		return nil, err
	}
	r := x.Shape.Rank() - 2
	if r < 1 || w.Shape.Rank() != r+2 {
		return nil, fmt.Errorf("input %v and weight %v must have the same rank, at least 3", x.Shape, w.Shape)
	}
	at := n.Attrs
	get := func(name string, def int64) ([]int64, error) { return spatialInts(at, name, r, def) }
	strides, err := get("strides", 1)
	if err != nil {
		return nil, err
	}
	dil, err := get("dilations", 1)
	if err != nil {
		return nil, err
	}
	outPad, err := get("output_padding", 0)
	if err != nil {
		return nil, err
	}
	kern := w.Shape[2:]
	if k := at.Ints("kernel_shape", nil); k != nil {
		if len(k) != r {
			return nil, fmt.Errorf("kernel_shape %v for %d spatial axes", k, r)
		}
		kern = Shape(k)
	}
	out := Shape{x.Shape[0], w.Shape[1] * at.Int("group", 1)}
	autoPad := at.String("auto_pad", "NOTSET")
	pads := at.Ints("pads", make([]int64, 2*r))
	if len(pads) != 2*r {
		return nil, fmt.Errorf("pads %v must have %d values", pads, 2*r)
	}
	if os := at.Ints("output_shape", nil); os != nil {
		if len(os) == r+2 {
			os = os[2:]
		}
		if len(os) != r {
			return nil, fmt.Errorf("output_shape %v for %d spatial axes", os, r)
		}
		out = append(out, os...)
	} else {
		for i := 0; i < r; i++ {
			in := x.Shape[2+i]
			var o int64
			if autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
				o = in * strides[i]
			} else {
				o = strides[i]*(in-1) + outPad[i] + (kern[i]-1)*dil[i] + 1 - pads[i] - pads[r+i]
			}
			if o < 0 {
				return nil, fmt.Errorf("the geometry gives a negative output size %d", o)
			}
			out = append(out, o)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return same(x.DType, out), nil
}

// ResizeGeometry is a Resize (or Upsample) node resolved against its
// input's shape.
type ResizeGeometry struct {
	Out Shape // the output's shape
	// Scales holds, for every axis of the input, the scale its coordinate
	// transformation divides by: the scale given, out/in for a size given
	// (keep_aspect_ratio_policy's common scale for those it keeps), 1 for
	// an axis not resized.
	Scales []float64
	// Axes are the axes the scales, sizes and roi name, in their order
	// (every axis unless opset 18's axes attribute lists some).
	Axes []int
}

// ResolveResize resolves a Resize node (scales or sizes as constant
// inputs, from opset 11 after a roi input; opset 18's axes and
// keep_aspect_ratio_policy) or an Upsample node (scales as attribute in
// opset 7, as input from opset 9).
func ResolveResize(g *Graph, n *Node) (*ResizeGeometry, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	r := x.Shape.Rank()
	var scales []float64
	var sizes []int64
	scaleIn := 2
	if n.Op == "Upsample" || opset(g) < 11 {
		scaleIn = 1
		if v := n.Attrs.Floats("scales", nil); v != nil {
			for _, f := range v {
				scales = append(scales, float64(f))
			}
		}
	}
	if t, err := optInput(g, n, scaleIn); err != nil {
		return nil, err
	} else if t != nil && t.Shape.Elements() > 0 {
		if !t.IsConst() {
			return nil, NeedValue("scales", t.Name)
		}
		if scales, err = t.Float64s(); err != nil {
			return nil, err
		}
	}
	if scaleIn == 2 {
		if t, err := optInput(g, n, 3); err != nil {
			return nil, err
		} else if t != nil && t.Shape.Elements() > 0 {
			if sizes, err = intsOf(t, "sizes"); err != nil {
				return nil, err
			}
		}
	}
	axes := make([]int, r)
	for i := range axes {
		axes[i] = i
	}
	if a := n.Attrs.Ints("axes", nil); a != nil {
		if axes, err = normAxes(a, r); err != nil {
			return nil, err
		}
	}
	geo := &ResizeGeometry{Out: x.Shape.Clone(), Scales: make([]float64, r), Axes: axes}
	for i := range geo.Scales {
		geo.Scales[i] = 1
	}
	out := geo.Out
	switch {
	case sizes != nil:
		if len(sizes) != len(axes) {
			return nil, fmt.Errorf("%d sizes for %d axes", len(sizes), len(axes))
		}
		for i, a := range axes {
			if sizes[i] < 0 {
				return nil, fmt.Errorf("sizes %v: size %d is negative", sizes, sizes[i])
			}
			out[a] = sizes[i]
			geo.Scales[a] = float64(sizes[i]) / float64(x.Shape[a])
		}
		switch policy := n.Attrs.String("keep_aspect_ratio_policy", "stretch"); policy {
		case "stretch":
		case "not_larger", "not_smaller":
			scale := math.Inf(1)
			if policy == "not_smaller" {
				scale = math.Inf(-1)
			}
			for i, a := range axes {
				s := float64(sizes[i]) / float64(x.Shape[a])
				if policy == "not_larger" {
					scale = math.Min(scale, s)
				} else {
					scale = math.Max(scale, s)
				}
			}
			for _, a := range axes {
				out[a] = int64(math.Round(scale * float64(x.Shape[a])))
				geo.Scales[a] = scale
			}
		default:
			return nil, fmt.Errorf("keep_aspect_ratio_policy %q is not supported (stretch, not_larger, not_smaller)", policy)
		}
	case scales != nil:
		if len(scales) != len(axes) {
			return nil, fmt.Errorf("%d scales for %d axes", len(scales), len(axes))
		}
		for i, a := range axes {
			if !(scales[i] > 0) {
				return nil, fmt.Errorf("scale %v must be positive", scales[i])
			}
			out[a] = int64(math.Floor(float64(x.Shape[a]) * scales[i]))
			geo.Scales[a] = scales[i]
		}
	default:
		return nil, fmt.Errorf("needs scales or sizes")
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return geo, nil
}

func inferResize(g *Graph, n *Node) ([]Type, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	geo, err := ResolveResize(g, n)
	if err != nil {
		return nil, err
	}
	return same(x.DType, geo.Out), nil
}

// spatialInts is the attribute name of a node over r spatial axes (strides,
// dilations): r values, each def where the attribute is absent.
func spatialInts(at Attrs, name string, r int, def int64) ([]int64, error) {
	v := at.Ints(name, nil)
	if v == nil {
		v = make([]int64, r)
		for i := range v {
			v[i] = def
		}
	}
	if len(v) != r {
		return nil, fmt.Errorf("attribute %s has %d values, want %d", name, len(v), r)
	}
	return v, nil
}
