package ir

import (
	"fmt"

	"github.com/berth-ml/berth/weights/ggml"
)

// BerthDomain is the operator set of berth's own operators: those that a
// model built from weight files other than ONNX needs and ONNX lacks.
// They read weights packed in ggml's block formats as the file holds
// them, so that a quantised language model's weights are never expanded.
//
//   - PackedMatMul(x, w) → y: y[…, n] = x[…, k]·Wᵀ, where W is n rows
//     (attribute rows) of k values packed in the format named by the
//     attribute format (a ggml type name: "f16", "q8_0", "q4_K", …) in
//     the bytes of w, a uint8 constant of exactly n·RowSize(k) bytes. x is
//     float32.
//   - PackedGather(w, ids) → y: y[…, k] = the rows ids of a table of rows
//     rows of k values (attribute cols) packed in format in w (a uint8
//     constant); ids are int64 or int32.
//
// CacheWrite and CachedAttention keep a decoder's keys and values between
// runs (see infer_cache.go).
const BerthDomain = "berth"

// berthOps are the operators of BerthDomain.
var berthOps = map[string]bool{"PackedMatMul": true, "PackedGather": true, "CacheWrite": true, "CachedAttention": true}

// BerthOp reports whether op is an operator of BerthDomain.
func BerthOp(op string) bool { return berthOps[op] }

func init() {
	register(inferPackedMatMul, "PackedMatMul")
	register(inferPackedGather, "PackedGather")
}

// Packed is what the attributes and weight input of a packed operator
// (BerthDomain) say: the format, the rows and the values per row, and the
// bytes of one row.
type Packed struct {
	Format   ggml.Type
	Rows     int64
	Cols     int64
	RowBytes int64
}

// PackedWeights checks the weight input w of a packed node, whose rows
// hold cols values each, against its attributes.
func PackedWeights(n *Node, w *Tensor, cols int64) (Packed, error) {
	var p Packed
	t, err := ggml.ParseType(n.Attrs.String("format", ""))
	if err != nil {
		return p, fmt.Errorf("attribute format: %v", err)
	}
	if !t.CanDequantize() {
		return p, fmt.Errorf("format %s is not supported", t)
	}
	rows := n.Attrs.Int("rows", -1)
	if rows < 0 || rows > MaxElements || cols <= 0 || cols > MaxElements {
		return p, fmt.Errorf("%d rows of %d values is not a matrix", rows, cols)
	}
	rb, err := t.RowSize(cols)
	if err != nil {
		return p, err
	}
	if w.DType != Uint8 || w.Shape.Rank() != 1 {
		return p, fmt.Errorf("the weights are %s%v, want the packed bytes as uint8[n]", w.DType, w.Shape)
	}
	if rows != 0 && rb > w.Shape[0]/rows || rows*rb != w.Shape[0] {
		return p, fmt.Errorf("%d bytes of weights, %d rows of %d %s values take %d", w.Shape[0], rows, cols, t, rows*rb)
	}
	return Packed{Format: t, Rows: rows, Cols: cols, RowBytes: rb}, nil
}

func inferPackedMatMul(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	x, w := ts[0], ts[1]
	if x.DType != Float32 || x.Shape.Rank() == 0 {
		return nil, fmt.Errorf("input %q is %s%v, want float32 of rank 1 or more", x.Name, x.DType, x.Shape)
	}
	k := x.Shape[x.Shape.Rank()-1]
	p, err := PackedWeights(n, w, k)
	if err != nil {
		return nil, err
	}
	out := x.Shape.Clone()
	out[len(out)-1] = p.Rows
	return []Type{{DType: Float32, Shape: out}}, nil
}

func inferPackedGather(g *Graph, n *Node) ([]Type, error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return nil, err
	}
	w, ids := ts[0], ts[1]
	if ids.DType != Int64 && ids.DType != Int32 {
		return nil, fmt.Errorf("ids %q are %s, want int64 or int32", ids.Name, ids.DType)
	}
	p, err := PackedWeights(n, w, n.Attrs.Int("cols", -1))
	if err != nil {
		return nil, err
	}
	out := append(ids.Shape.Clone(), p.Cols)
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return []Type{{DType: Float32, Shape: out}}, nil
}
