package ir

// IsView reports whether n's output holds its first input's bytes
// unchanged, read with another shape: Reshape, Flatten, Squeeze,
// Unsqueeze and Identity of the default domain. Such an output can share
// its input's memory (a view) or, for a constant input, its data.
func IsView(n *Node) bool {
	switch n.Op {
	case "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity":
		return n.DefaultDomain() && len(n.Outputs) == 1
	}
	return false
}

// UpdatesState reports whether n writes its output over its first
// input, in place: CacheWrite, which updates a graph's state (see
// Graph.State). The output is the input's new value, in the input's
// bytes.
func UpdatesState(n *Node) bool {
	return n.Op == "CacheWrite" && n.Domain == BerthDomain && len(n.Outputs) == 1 && len(n.Inputs) > 0
}

// A Piece is a run of bytes that a Concat, Split or Slice node copies whole
// between one of its inputs and one of its outputs: a Concat writes its
// input Input into its output at byte Offset, a Split or Slice writes its
// output Output from its input at byte Offset. Input and Output index
// n.Inputs and n.Outputs.
type Piece struct {
	Input, Output int
	Offset        int64
}

// Pieces returns the pieces of a Concat, Split or Slice node of the default
// domain whose parts are each one contiguous run of bytes of the whole: a
// Concat input or a Split output along an axis with every dimension before
// it of extent 1 (or with the whole tensor spanned), a Slice of unit steps
// whose result is one run of its input. A part of no bytes, or of a type
// or shape that does not fit the whole, has no piece; any other node has
// none. The runtime may then place a part inside the whole, so that the
// node's copy of it is one onto itself.
func Pieces(g *Graph, n *Node) []Piece {
	if !n.DefaultDomain() {
		return nil
	}
	switch n.Op {
	case "Concat":
		if len(n.Outputs) != 1 || n.Outputs[0] == NoTensor {
			return nil
		}
		y := tensorAt(g, n.Outputs[0])
		if y == nil {
			return nil
		}
		axis, err := NormAxis(n.Attrs.Int("axis", 0), y.Shape.Rank())
		if err != nil {
			return nil
		}
		return runs(g, y, n.Inputs, axis, func(k int, off int64) Piece { return Piece{Input: k, Output: 0, Offset: off} })
	case "Split":
		x := tensorAt(g, n.Input(0))
		if x == nil {
			return nil
		}
		axis, err := NormAxis(n.Attrs.Int("axis", 0), x.Shape.Rank())
		if err != nil {
			return nil
		}
		return runs(g, x, n.Outputs, axis, func(k int, off int64) Piece { return Piece{Input: 0, Output: k, Offset: off} })
	case "Slice":
		if len(n.Outputs) != 1 {
			return nil
		}
		x, y := tensorAt(g, n.Input(0)), tensorAt(g, n.Outputs[0])
		if x == nil || y == nil {
			return nil
		}
		sp, err := ResolveSlice(g, n)
		if err != nil || len(sp.Len) != x.Shape.Rank() || !sp.Len.Equal(y.Shape) {
			return nil
		}
		var base int64
		for ax := range sp.Len {
			if sp.Len[ax] > 0 {
				base += sp.Start[ax] * stride(x.Shape, ax)
			}
		}
		// The slice is one run exactly when each step along an axis it
		// takes more than one element of moves as far in the input as in
		// the output.
		for ax, l := range sp.Len {
			if l > 1 && sp.Step[ax]*stride(x.Shape, ax) != stride(y.Shape, ax) {
				return nil
			}
		}
		if off, ok := pieceBytes(x, y, base); ok {
			return []Piece{{Input: 0, Output: 0, Offset: off}}
		}
	}
	return nil
}

// runs finds the pieces of a Concat or a Split: whole is the output of a
// Concat or the input of a Split, parts its tensors on the other side
// (all must be known: a missing one would hide where the next begins),
// and piece makes the piece of parts[k] at a byte offset.
func runs(g *Graph, whole *Tensor, parts []TensorID, axis int, piece func(k int, off int64) Piece) []Piece {
	var out []Piece
	var pos int64 // along the axis
	for k, id := range parts {
		t := tensorAt(g, id)
		if t == nil {
			return nil
		}
		if t.Shape.Rank() != whole.Shape.Rank() {
			return nil
		}
		contiguous := true
		for ax, d := range t.Shape {
			if ax != axis && d != whole.Shape[ax] {
				return nil
			}
			if d > 1 && stride(t.Shape, ax) != stride(whole.Shape, ax) {
				contiguous = false
			}
		}
		if off, ok := pieceBytes(whole, t, pos*stride(whole.Shape, axis)); contiguous && ok {
			out = append(out, piece(k, off))
		}
		pos += t.Shape[axis]
	}
	if pos != whole.Shape[axis] {
		return nil
	}
	return out
}

// pieceBytes turns the element offset at of part inside whole into bytes,
// and reports whether part is a non-empty run of whole's type that fits
// there.
func pieceBytes(whole, part *Tensor, at int64) (int64, bool) {
	es := int64(whole.DType.Size())
	if es <= 0 || part.DType != whole.DType || at < 0 {
		return 0, false
	}
	for _, d := range whole.Shape {
		if d < 0 {
			return 0, false
		}
	}
	for _, d := range part.Shape {
		if d < 0 {
			return 0, false
		}
	}
	n := part.Shape.Elements()
	if n <= 0 || at+n > whole.Shape.Elements() {
		return 0, false
	}
	return at * es, true
}

// stride is the row-major element stride of axis ax of shape s.
func stride(s Shape, ax int) int64 {
	st := int64(1)
	for _, d := range s[ax+1:] {
		st *= d
	}
	return st
}

// tensorAt is g's tensor id, or nil for NoTensor or an id out of range.
func tensorAt(g *Graph, id TensorID) *Tensor {
	if id < 0 || int(id) >= len(g.Tensors) {
		return nil
	}
	return &g.Tensors[id]
}

// WritesNothing reports whether every output n has is empty (holds no
// element): its kernel has nothing to compute, and a backend builds none
// (the tables some kernels build per output position along an axis could
// be as long as a dimension of an empty tensor, [0, 2³³]).
func WritesNothing(g *Graph, n *Node) bool {
	for _, id := range n.Outputs {
		if id != NoTensor && g.Tensor(id).Shape.Elements() != 0 {
			return false
		}
	}
	return true
}
