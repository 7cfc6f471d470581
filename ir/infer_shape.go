package ir

import "fmt"

func init() {
	register(inferReshape, "Reshape")
	register(inferTranspose, "Transpose")
	register(inferConcat, "Concat")
	register(inferSplit, "Split")
	register(inferSlice, "Slice")
	register(inferGather, "Gather")
	register(inferSqueeze, "Squeeze")
	register(inferUnsqueeze, "Unsqueeze")
	register(inferShape, "Shape")
	register(inferConstantOfShape, "ConstantOfShape")
	register(inferExpand, "Expand")
}

// inferReshape: 0 copies the input's dimension at that index (unless
// allowzero is set), one -1 takes whatever size is left.
func inferReshape(g *Graph, n *Node) ([]Type, error) {
	x, spec, err := operandAndInts(g, n, "shape")
	if err != nil {
		return nil, err
	}
	fail := func(why string) error {
		return fmt.Errorf("cannot reshape %v into %v: %s", x.Shape, Shape(spec), why)
	}
	allowZero := n.Attrs.Int("allowzero", 0) != 0
	out := make(Shape, len(spec))
	infer, zero := -1, false
	for i, v := range spec {
		switch {
		case v == -1:
			if infer >= 0 {
				return nil, fail("more than one -1")
			}
			infer = i
			out[i] = 1
		case v == 0 && !allowZero:
			if i >= x.Shape.Rank() {
				return nil, fail(fmt.Sprintf("0 at index %d copies a dimension the input does not have", i))
			}
			out[i] = x.Shape[i]
		case v < 0:
			return nil, fail(fmt.Sprintf("invalid dimension %d", v))
		default:
			zero = zero || v == 0
			out[i] = v
		}
	}
	if allowZero && zero && infer >= 0 {
		return nil, fail("with allowzero, 0 and -1 cannot be used together")
	}
	if err := out.Validate(); err != nil {
		return nil, fail(err.Error())
	}
	total, known := x.Shape.Elements(), out.Elements()
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return nil, fail(fmt.Sprintf("%d elements do not divide into the known dimensions", total))
		}
		out[infer] = total / known
	} else if known != total {
		return nil, fail(fmt.Sprintf("%d elements into %d", total, known))
	}
	return same(x.DType, out), nil
}

// ResolvePerm returns the permutation of a Transpose node for an input of
// the given rank: its perm attribute, or the reversed axes by default.
func ResolvePerm(n *Node, rank int) ([]int, error) {
	p := n.Attrs.Ints("perm", nil)
	if p == nil {
		perm := make([]int, rank)
		for i := range perm {
			perm[i] = rank - 1 - i
		}
		return perm, nil
	}
	if len(p) != rank {
		return nil, fmt.Errorf("perm %v has %d entries for an input of rank %d", p, len(p), rank)
	}
	perm := make([]int, rank)
	seen := make([]bool, rank)
	for i, v := range p {
		if v < 0 || v >= int64(rank) || seen[v] {
			return nil, fmt.Errorf("perm %v is not a permutation of 0..%d", p, rank-1)
		}
		seen[v] = true
		perm[i] = int(v)
	}
	return perm, nil
}

func inferTranspose(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	perm, err := ResolvePerm(n, x.Shape.Rank())
	if err != nil {
		return nil, err
	}
	out := make(Shape, len(perm))
	for i, p := range perm {
		out[i] = x.Shape[p]
	}
	return same(x.DType, out), nil
}

func inferConcat(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 1, -1); err != nil {
		return nil, err
	}
	if !n.Attrs.Has("axis") {
		return nil, fmt.Errorf("attribute axis is missing")
	}
	first, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	r := first.Shape.Rank()
	axis, err := NormAxis(n.Attrs.Int("axis", 0), r)
	if err != nil {
		return nil, err
	}
	out := first.Shape.Clone()
	for i := 1; i < len(n.Inputs); i++ {
		t, err := input(g, n, i)
		if err != nil {
			return nil, err
		}
		if err := sameType(first, t); err != nil {
			return nil, err
		}
		if t.Shape.Rank() != r {
			return nil, fmt.Errorf("inputs %q %v and %q %v differ in rank", first.Name, first.Shape, t.Name, t.Shape)
		}
		for d := range r {
			if d != axis && t.Shape[d] != first.Shape[d] {
				return nil, fmt.Errorf("inputs %q %v and %q %v differ outside axis %d", first.Name, first.Shape, t.Name, t.Shape, axis)
			}
		}
		if out[axis], err = checkedAdd(out[axis], t.Shape[axis]); err != nil {
			return nil, err
		}
	}
	return same(first.DType, out), nil
}

// ResolveSplit returns the axis of a Split node and the size of each
// output along it: the split attribute (before opset 13) or input (from
// opset 13), or equal parts by default. From opset 18 the num_outputs
// attribute asks for that many parts of ceil(size/num_outputs), the last
// one smaller when the size does not divide.
func ResolveSplit(g *Graph, n *Node) (int, []int64, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return 0, nil, err
	}
	axis, err := NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank())
	if err != nil {
		return 0, nil, err
	}
	k := len(n.Outputs)
	if k == 0 {
		return 0, nil, fmt.Errorf("the node has no outputs")
	}
	dim := x.Shape[axis]
	var split []int64
	if n.Input(1) != NoTensor {
		if split, err = constInts(g, n, 1, "split"); err != nil {
			return 0, nil, err
		}
	} else if n.Attrs.Has("split") {
		split = n.Attrs.Ints("split", nil)
	}
	if num := n.Attrs.Int("num_outputs", 0); n.Attrs.Has("num_outputs") {
		switch {
		case opset(g) < 18:
			return 0, nil, fmt.Errorf("attribute num_outputs needs opset 18, the model imports %d", opset(g))
		case split != nil:
			return 0, nil, fmt.Errorf("has both a split input and num_outputs")
		case num != int64(k):
			return 0, nil, fmt.Errorf("num_outputs is %d, the node has %d outputs", num, k)
		}
		part := (dim + num - 1) / num
		last := dim - part*(num-1)
		if last < 0 {
			return 0, nil, fmt.Errorf("cannot split dimension %d of size %d into %d parts of %d", axis, dim, num, part)
		}
		split = make([]int64, k)
		for i := range split {
			split[i] = part
		}
		split[k-1] = last
		return axis, split, nil
	}
	if split == nil {
		if dim%int64(k) != 0 {
			return 0, nil, fmt.Errorf("cannot split dimension %d of size %d into %d equal parts", axis, dim, k)
		}
		split = make([]int64, k)
		for i := range split {
			split[i] = dim / int64(k)
		}
		return axis, split, nil
	}
	if len(split) != k {
		return 0, nil, fmt.Errorf("split %v has %d parts, the node has %d outputs", split, len(split), k)
	}
	var sum int64
	for _, s := range split {
		if s < 0 || s > dim {
			return 0, nil, fmt.Errorf("split %v: invalid size %d", split, s)
		}
		sum += s // each ≤ dim ≤ MaxElements: no overflow for any realistic k
	}
	if sum != dim {
		return 0, nil, fmt.Errorf("split %v sums to %d, dimension %d has size %d", split, sum, axis, dim)
	}
	return axis, split, nil
}

func inferSplit(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 2)
	if err != nil {
		return nil, err
	}
	axis, split, err := ResolveSplit(g, n)
	if err != nil {
		return nil, err
	}
	types := make([]Type, len(split))
	for i, s := range split {
		out := x.Shape.Clone()
		out[axis] = s
		types[i] = Type{DType: x.DType, Shape: out}
	}
	return types, nil
}

// SliceParams is a Slice node resolved against its input's shape: for each
// axis of the input, the first index read, the step between indices and
// the number of indices read (the output's dimension). Axes that the node
// does not slice read everything with step 1.
type SliceParams struct {
	Start, Step []int64
	Len         Shape
}

// ResolveSlice resolves the starts, ends, axes and steps of a Slice node
// (attributes before opset 10, constant inputs from opset 10) following
// ONNX's rules: negative indices count from the end, starts and ends are
// clamped to the dimension, negative steps walk backwards.
func ResolveSlice(g *Graph, n *Node) (*SliceParams, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	var starts, ends, axes, steps []int64
	if opset(g) < 10 {
		if len(n.Inputs) > 1 {
			return nil, fmt.Errorf("takes starts and ends as attributes before opset 10, has %d inputs", len(n.Inputs))
		}
		starts, ends = n.Attrs.Ints("starts", nil), n.Attrs.Ints("ends", nil)
		if starts == nil || ends == nil {
			return nil, fmt.Errorf("attributes starts and ends are required")
		}
		axes = n.Attrs.Ints("axes", nil)
	} else {
		if starts, err = constInts(g, n, 1, "starts"); err != nil {
			return nil, err
		}
		if ends, err = constInts(g, n, 2, "ends"); err != nil {
			return nil, err
		}
		if n.Input(3) != NoTensor {
			if axes, err = constInts(g, n, 3, "axes"); err != nil {
				return nil, err
			}
		}
		if n.Input(4) != NoTensor {
			if steps, err = constInts(g, n, 4, "steps"); err != nil {
				return nil, err
			}
		}
	}
	if len(ends) != len(starts) {
		return nil, fmt.Errorf("starts %v and ends %v differ in length", starts, ends)
	}
	if axes == nil {
		axes = make([]int64, len(starts))
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if steps == nil {
		steps = make([]int64, len(starts))
		for i := range steps {
			steps[i] = 1
		}
	}
	if len(axes) != len(starts) || len(steps) != len(starts) {
		return nil, fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	r := x.Shape.Rank()
	ax, err := normAxes(axes, r)
	if err != nil {
		return nil, err
	}
	p := &SliceParams{Start: make([]int64, r), Step: make([]int64, r), Len: x.Shape.Clone()}
	for i := range p.Step {
		p.Step[i] = 1
	}
	for i, a := range ax {
		d, start, end, step := x.Shape[a], starts[i], ends[i], steps[i]
		if step == 0 {
			return nil, fmt.Errorf("step of axis %d is 0", a)
		}
		if start < 0 {
			start += d
		}
		if end < 0 {
			end += d
		}
		var length int64
		if step > 0 {
			start, end = clamp(start, 0, d), clamp(end, 0, d)
			if end > start {
				length = (end-start-1)/step + 1
			}
		} else {
			start, end = clamp(start, 0, d-1), clamp(end, -1, d-1)
			if start > end && d > 0 {
				neg := uint64(0) - uint64(step) // -step, also for math.MinInt64
				length = int64(uint64(start-end-1)/neg) + 1
			}
		}
		if length == 0 {
			start = 0
		}
		p.Start[a], p.Step[a], p.Len[a] = start, step, length
	}
	return p, nil
}

func clamp(v, lo, hi int64) int64 {
	return max(lo, min(v, hi))
}

func inferSlice(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 5)
	if err != nil {
		return nil, err
	}
	p, err := ResolveSlice(g, n)
	if err != nil {
		return nil, err
	}
	return same(x.DType, p.Len), nil
}

func inferGather(g *Graph, n *Node) ([]Type, error) {
	ts, err := indexed(g, n, 2)
	if err != nil {
		return nil, err
	}
	x, idx := ts[0], ts[1]
	axis, err := NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank())
	if err != nil {
		return nil, err
	}
	d := x.Shape[axis]
	if idx.IsConst() {
		vals, err := idx.Int64s()
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			if v < -d || v >= d {
				return nil, fmt.Errorf("index %d out of range for axis %d of %q %v", v, axis, x.Name, x.Shape)
			}
		}
	}
	out := make(Shape, 0, x.Shape.Rank()-1+idx.Shape.Rank())
	out = append(out, x.Shape[:axis]...)
	out = append(out, idx.Shape...)
	out = append(out, x.Shape[axis+1:]...)
	return same(x.DType, out), nil
}

// axesArg returns the axes of Squeeze, Unsqueeze or a reduction: the axes
// attribute before opset sinceInput, input 1 from it on. ok is false when
// the node gives no axes.
func axesArg(g *Graph, n *Node, sinceInput int64) (axes []int64, ok bool, err error) {
	if opset(g) < sinceInput {
		if len(n.Inputs) > 1 {
			return nil, false, fmt.Errorf("takes axes as an attribute before opset %d, has %d inputs", sinceInput, len(n.Inputs))
		}
		if !n.Attrs.Has("axes") {
			return nil, false, nil
		}
		return n.Attrs.Ints("axes", nil), true, nil
	}
	if n.Input(1) == NoTensor {
		return nil, false, nil
	}
	axes, err = constInts(g, n, 1, "axes")
	return axes, err == nil, err
}

// squeezeOperands returns the input of a Squeeze or Unsqueeze node and
// its axes (ok false where the node gives none).
func squeezeOperands(g *Graph, n *Node) (x *Tensor, axes []int64, ok bool, err error) {
	if x, err = operand(g, n, 1, 2); err != nil {
		return nil, nil, false, err
	}
	if axes, ok, err = axesArg(g, n, 13); err != nil {
		return nil, nil, false, err
	}
	return x, axes, ok, nil
}

func inferSqueeze(g *Graph, n *Node) ([]Type, error) {
	x, axes, ok, err := squeezeOperands(g, n)
	if err != nil {
		return nil, err
	}
	r := x.Shape.Rank()
	drop := make([]bool, r)
	if !ok {
		for i, d := range x.Shape {
			drop[i] = d == 1
		}
	} else {
		ax, err := normAxes(axes, r)
		if err != nil {
			return nil, err
		}
		for _, a := range ax {
			if x.Shape[a] != 1 {
				return nil, fmt.Errorf("cannot squeeze axis %d of %q %v: its size is %d, not 1", a, x.Name, x.Shape, x.Shape[a])
			}
			drop[a] = true
		}
	}
	out := Shape{}
	for i, d := range x.Shape {
		if !drop[i] {
			out = append(out, d)
		}
	}
	return same(x.DType, out), nil
}

func inferUnsqueeze(g *Graph, n *Node) ([]Type, error) {
	x, axes, ok, err := squeezeOperands(g, n)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("axes are required")
	}
	r := x.Shape.Rank() + len(axes)
	ax, err := normAxes(axes, r)
	if err != nil {
		return nil, err
	}
	ins := make([]bool, r)
	for _, a := range ax {
		ins[a] = true
	}
	out := make(Shape, r)
	j := 0
	for i := range out {
		if ins[i] {
			out[i] = 1
		} else {
			out[i] = x.Shape[j]
			j++
		}
	}
	return same(x.DType, out), nil
}

// ShapeSlice returns the range [start, end) of dimensions that a Shape node
// outputs for an input of the given rank (its start and end attributes,
// opset 15, clamped; the whole shape by default).
func ShapeSlice(n *Node, rank int) (start, end int) {
	r := int64(rank)
	s, e := n.Attrs.Int("start", 0), n.Attrs.Int("end", r)
	if s < 0 {
		s += r
	}
	if e < 0 {
		e += r
	}
	s, e = clamp(s, 0, r), clamp(e, 0, r)
	if e < s {
		e = s
	}
	return int(s), int(e)
}

func inferShape(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	s, e := ShapeSlice(n, x.Shape.Rank())
	return same(Int64, Shape{int64(e - s)}), nil
}

func inferConstantOfShape(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 1, 1); err != nil {
		return nil, err
	}
	dims, err := constInts(g, n, 0, "shape")
	if err != nil {
		return nil, err
	}
	out := Shape(dims)
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("shape %v: %w", out, err)
	}
	dt := Float32
	if v := n.Attrs.Tensor("value"); v != nil {
		if v.Shape.Elements() != 1 {
			return nil, fmt.Errorf("attribute value has shape %v, want one element", v.Shape)
		}
		dt = v.DType
	}
	return same(dt, out.Clone()), nil
}

func inferExpand(g *Graph, n *Node) ([]Type, error) {
	x, dims, err := operandAndInts(g, n, "shape")
	if err != nil {
		return nil, err
	}
	for _, d := range dims {
		if d < 0 {
			return nil, fmt.Errorf("shape %v has a negative dimension", dims)
		}
	}
	out, err := Broadcast(x.Shape, Shape(dims))
	if err != nil {
		return nil, fmt.Errorf("cannot expand %q %v to %v: %w", x.Name, x.Shape, Shape(dims), err)
	}
	return same(x.DType, out), nil
}
