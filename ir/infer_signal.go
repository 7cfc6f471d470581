package ir

import "fmt"

// Shape rules of the recurrent layers, the signal operators (windows, DFT,
// STFT, MelWeightMatrix), GridSample, RoiAlign, TfIdfVectorizer and the
// operators whose output size depends on input values (Compress,
// NonZero).

func init() {
	register(inferRecurrent, "RNN", "GRU", "LSTM")
}

// inferRecurrent: X is [seq, batch, input] ([batch, seq, input] with
// layout=1); Y is [seq, dirs, batch, hidden] ([batch, seq, dirs, hidden]),
// Y_h and Y_c are [dirs, batch, hidden] ([batch, dirs, hidden]).
func inferRecurrent(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 3, 8); err != nil {
		return nil, err
	}
	ts, err := inputs(g, n, 2)
	if err != nil {
		return nil, err
	}
	x, w := ts[0], ts[1]
	if err := requireFloat(x); err != nil {
		return nil, err
	}
	if x.Shape.Rank() != 3 || w.Shape.Rank() != 3 {
		return nil, fmt.Errorf("input %v and weights %v must be 3-D", x.Shape, w.Shape)
	}
	dirs := int64(1)
	if n.Attrs.String("direction", "forward") == "bidirectional" {
		dirs = 2
	}
	hidden := n.Attrs.Int("hidden_size", 0)
	if hidden <= 0 {
		return nil, fmt.Errorf("hidden_size must be positive")
	}
	seq, batch := x.Shape[0], x.Shape[1]
	y, yh := Shape{seq, dirs, batch, hidden}, Shape{dirs, batch, hidden}
	if n.Attrs.Int("layout", 0) != 0 {
		batch, seq = x.Shape[0], x.Shape[1]
		y, yh = Shape{batch, seq, dirs, hidden}, Shape{batch, dirs, hidden}
	}
	out := []Type{{DType: x.DType, Shape: y}, {DType: x.DType, Shape: yh}}
	if n.Op == "LSTM" {
		out = append(out, Type{DType: x.DType, Shape: yh.Clone()})
	}
	return out, nil
}

func init() {
	register(inferWindow, "HannWindow", "HammingWindow", "BlackmanWindow")
	register(inferCompress, "Compress")
	register(inferDet, "Det")
	register(inferDynamicQuantize, "DynamicQuantizeLinear")
}

func inferWindow(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 1, 1); err != nil {
		return nil, err
	}
	v, err := constInts(g, n, 0, "size")
	if err != nil {
		return nil, err
	}
	if len(v) != 1 || v[0] < 0 {
		return nil, fmt.Errorf("size must be one non-negative value, is %v", v)
	}
	dt, err := DTypeFromONNX(n.Attrs.Int("output_datatype", 1))
	if err != nil {
		return nil, err
	}
	return same(dt, Shape{v[0]}), nil
}

// inferCompress needs the condition as a constant: it decides the output
// size.
func inferCompress(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, cond := ts[0], ts[1]
	if !cond.IsConst() || cond.Shape.Rank() != 1 {
		return nil, NeedValue("condition", cond.Name)
	}
	v, err := cond.Int64s()
	if err != nil {
		return nil, err
	}
	size := x.Shape.Elements()
	var axis int
	if n.Attrs.Has("axis") {
		if axis, err = NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank()); err != nil {
			return nil, err
		}
		size = x.Shape[axis]
	}
	if int64(len(v)) > size {
		return nil, fmt.Errorf("condition has %d values for %d slices", len(v), size)
	}
	kept := int64(0)
	for _, c := range v {
		if c != 0 {
			kept++
		}
	}
	if !n.Attrs.Has("axis") {
		return same(x.DType, Shape{kept}), nil
	}
	out := x.Shape.Clone()
	out[axis] = kept
	return same(x.DType, out), nil
}

func inferDet(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1, requireFloat)
	if err != nil {
		return nil, err
	}
	r := x.Shape.Rank()
	if r < 2 || x.Shape[r-1] != x.Shape[r-2] {
		return nil, fmt.Errorf("input %v must end in a square matrix", x.Shape)
	}
	return same(x.DType, x.Shape[:r-2]), nil
}

func inferDynamicQuantize(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	if x.DType != Float32 {
		return nil, fmt.Errorf("input %q is %s, want float32", x.Name, x.DType)
	}
	return []Type{{DType: Uint8, Shape: x.Shape.Clone()}, {DType: Float32, Shape: Shape{}}, {DType: Uint8, Shape: Shape{}}}, nil
}

func init() { register(inferGridSample, "GridSample") }

// inferGridSample: X [N,C,H,W] sampled at grid [N,Ho,Wo,2] gives
// [N,C,Ho,Wo].
func inferGridSample(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, grid := ts[0], ts[1]
	if err := requireFloat(x); err != nil {
		return nil, err
	}
	if x.Shape.Rank() != 4 && opset(g) >= 20 {
		return nil, fmt.Errorf("input %v: the volumes of opset 20 are not supported (berth samples 2-D images [N,C,H,W])", x.Shape)
	}
	if x.Shape.Rank() != 4 || grid.Shape.Rank() != 4 || grid.Shape[3] != 2 || grid.Shape[0] != x.Shape[0] {
		return nil, fmt.Errorf("input %v and grid %v must be [N,C,H,W] and [N,Ho,Wo,2]", x.Shape, grid.Shape)
	}
	return same(x.DType, Shape{x.Shape[0], x.Shape[1], grid.Shape[1], grid.Shape[2]}), nil
}

func init() { register(inferTfIdf, "TfIdfVectorizer") }

func inferTfIdf(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	if x.DType != Int32 && x.DType != Int64 {
		return nil, fmt.Errorf("input %q is %s, want int32 or int64", x.Name, x.DType)
	}
	width := int64(0)
	for _, i := range n.Attrs.Ints("ngram_indexes", nil) {
		width = max(width, i+1)
	}
	switch x.Shape.Rank() {
	case 1:
		return same(Float32, Shape{width}), nil
	case 2:
		return same(Float32, Shape{x.Shape[0], width}), nil
	}
	return nil, fmt.Errorf("input %v must be 1-D or 2-D", x.Shape)
}

func init() {
	register(inferDFT, "DFT")
	register(inferSTFT, "STFT")
}

// optScalarInt reads an optional constant integer scalar input.
func optScalarInt(g *Graph, n *Node, i int, what string) (int64, bool, error) {
	t, err := optInput(g, n, i)
	if err != nil || t == nil {
		return 0, false, err
	}
	v, err := intsOf(t, what)
	if err != nil {
		return 0, false, err
	}
	if len(v) != 1 {
		return 0, false, fmt.Errorf("%s must hold one value, has %d", what, len(v))
	}
	return v[0], true, nil
}

// DFTGeometry resolves a DFT node: the transformed axis, the transform
// length and the output's length along the axis.
func DFTGeometry(g *Graph, n *Node) (axis int, length, outLen int64, err error) {
	x, err := input(g, n, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	r := x.Shape.Rank()
	if r < 3 || (x.Shape[r-1] != 1 && x.Shape[r-1] != 2) {
		return 0, 0, 0, fmt.Errorf("input %v must be [batch, ..., 1 or 2]", x.Shape)
	}
	// The axis is an attribute (default 1, never the batch axis) before
	// opset 20 and an input from opset 20 (default -2, any axis but the
	// last).
	a, first := n.Attrs.Int("axis", 1), int64(1)
	if opset(g) >= 20 {
		if n.Attrs.Has("axis") {
			return 0, 0, 0, fmt.Errorf("takes axis as an input from opset 20, not as an attribute")
		}
		v, ok, err := optScalarInt(g, n, 2, "axis")
		if err != nil {
			return 0, 0, 0, err
		}
		a, first = -2, 0
		if ok {
			a = v
		}
	}
	given := a
	if a < 0 {
		a += int64(r)
	}
	if a < first || a >= int64(r-1) {
		return 0, 0, 0, fmt.Errorf("axis %d is out of range for %v", given, x.Shape)
	}
	axis = int(a)
	length = x.Shape[axis]
	if v, ok, err := optScalarInt(g, n, 1, "dft_length"); err != nil {
		return 0, 0, 0, err
	} else if ok {
		length = v
	}
	if length < 1 {
		return 0, 0, 0, fmt.Errorf("dft_length %d must be positive", length)
	}
	outLen = length
	if n.Attrs.Int("onesided", 0) != 0 {
		outLen = length/2 + 1
	}
	return axis, length, outLen, nil
}

func inferDFT(g *Graph, n *Node) ([]Type, error) {
	most := 2
	if opset(g) >= 20 {
		most = 3 // axis
	}
	x, err := operand(g, n, 1, most, requireFloat)
	if err != nil {
		return nil, err
	}
	axis, _, outLen, err := DFTGeometry(g, n)
	if err != nil {
		return nil, err
	}
	s := x.Shape.Clone()
	s[axis] = outLen
	s[len(s)-1] = 2
	return same(x.DType, s), nil
}

// STFTGeometry resolves an STFT node: frame step, frame length, frames and
// frequency bins.
func STFTGeometry(g *Graph, n *Node) (step, length, frames, bins int64, err error) {
	x, err := input(g, n, 0)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if x.Shape.Rank() != 3 || (x.Shape[2] != 1 && x.Shape[2] != 2) {
		return 0, 0, 0, 0, fmt.Errorf("signal %v must be [batch, length, 1 or 2]", x.Shape)
	}
	step, ok, err := optScalarInt(g, n, 1, "frame_step")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if !ok || step < 1 {
		return 0, 0, 0, 0, fmt.Errorf("frame_step must be a positive constant")
	}
	length, ok, err = optScalarInt(g, n, 3, "frame_length")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if !ok {
		w, err := optInput(g, n, 2)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if w == nil {
			return 0, 0, 0, 0, fmt.Errorf("needs a window or a frame_length")
		}
		length = w.Shape.Elements()
	}
	if length < 1 || length > x.Shape[1] {
		return 0, 0, 0, 0, fmt.Errorf("frame length %d does not fit signal %v", length, x.Shape)
	}
	frames = (x.Shape[1]-length)/step + 1
	bins = length
	if n.Attrs.Int("onesided", 1) != 0 {
		bins = length/2 + 1
	}
	return step, length, frames, bins, nil
}

func inferSTFT(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 2, 4, requireFloat)
	if err != nil {
		return nil, err
	}
	_, _, frames, bins, err := STFTGeometry(g, n)
	if err != nil {
		return nil, err
	}
	return same(x.DType, Shape{x.Shape[0], frames, bins, 2}), nil
}

func init() { register(inferNonZero, "NonZero") }

// inferNonZero needs a constant input: the count of non-zero elements is
// the output's size.
func inferNonZero(g *Graph, n *Node) ([]Type, error) {
	x, err := operand(g, n, 1, 1)
	if err != nil {
		return nil, err
	}
	if !x.IsConst() {
		return nil, NeedValue("input", x.Name)
	}
	return same(Int64, Shape{int64(x.Shape.Rank()), NonZeroCount(x)}), nil
}

// NonZeroCount counts the elements of the constant x that are not zero
// (for a float, -0 is zero too).
func NonZeroCount(x *Tensor) int64 {
	count := int64(0)
	size := x.DType.Size()
	if size == 1 { // bool and the 8-bit types: a byte an element
		for _, v := range x.Data {
			if v != 0 {
				count++
			}
		}
		return count
	}
	for i := 0; i+size <= len(x.Data); i += size {
		if NonZeroBytes(x.Data[i:i+size], x.DType.IsFloat()) {
			count++
		}
	}
	return count
}

// NonZeroBytes reports whether the little-endian element b is not zero
// (for a float, -0 is zero too).
func NonZeroBytes(b []byte, float bool) bool {
	for i, v := range b {
		if float && i == len(b)-1 {
			v &= 0x7f
		}
		if v != 0 {
			return true
		}
	}
	return false
}

func init() {
	register(inferRoiAlign, "RoiAlign")
	register(inferMelWeightMatrix, "MelWeightMatrix")
}

func inferRoiAlign(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 3, 3); err != nil {
		return nil, err
	}
	ts, err := inputs(g, n, 2)
	if err != nil {
		return nil, err
	}
	x, rois := ts[0], ts[1]
	if err := requireFloat(x); err != nil {
		return nil, err
	}
	if x.Shape.Rank() != 4 || rois.Shape.Rank() != 2 || rois.Shape[1] != 4 {
		return nil, fmt.Errorf("input %v and rois %v must be [N,C,H,W] and [R,4]", x.Shape, rois.Shape)
	}
	return same(x.DType, Shape{rois.Shape[0], x.Shape[1], n.Attrs.Int("output_height", 1), n.Attrs.Int("output_width", 1)}), nil
}

// MelWeightMatrixArgs reads the constant scalar inputs of a
// MelWeightMatrix node: mel bins, DFT length, sample rate, lower and
// upper edge in hertz.
func MelWeightMatrixArgs(g *Graph, n *Node) (bins, dft, rate int64, lo, hi float64, err error) {
	var v [5]float64
	for i := range v {
		t, err := input(g, n, i)
		if err != nil {
			return 0, 0, 0, 0, 0, err
		}
		if !t.IsConst() || t.Shape.Elements() != 1 {
			return 0, 0, 0, 0, 0, NeedValue("input", t.Name)
		}
		if t.DType.IsFloat() {
			f, err := t.Float64s()
			if err != nil {
				return 0, 0, 0, 0, 0, err
			}
			v[i] = f[0]
		} else {
			iv, err := t.Int64s()
			if err != nil {
				return 0, 0, 0, 0, 0, err
			}
			v[i] = float64(iv[0])
		}
	}
	if v[0] < 1 || v[1] < 1 || v[2] <= 0 {
		return 0, 0, 0, 0, 0, fmt.Errorf("mel bins %v, DFT length %v and sample rate %v must be positive", v[0], v[1], v[2])
	}
	return int64(v[0]), int64(v[1]), int64(v[2]), v[3], v[4], nil
}

func inferMelWeightMatrix(g *Graph, n *Node) ([]Type, error) {
	if err := inputCount(n, 5, 5); err != nil {
		return nil, err
	}
	bins, dft, _, _, _, err := MelWeightMatrixArgs(g, n)
	if err != nil {
		return nil, err
	}
	dt, err := DTypeFromONNX(n.Attrs.Int("output_datatype", 1))
	if err != nil {
		return nil, err
	}
	return same(dt, Shape{dft/2 + 1, bins}), nil
}
