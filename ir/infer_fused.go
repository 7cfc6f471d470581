package ir

import "fmt"

// The operators of BerthDomain that a decoder's graphs use in place of a
// chain of ONNX nodes each (see package llm), so that each takes one
// kernel:
//
//   - RMSNorm(x, w) → y: x / sqrt(mean(x², last axis) + epsilon) · w, w
//     a float32 vector as long as x's last axis (attribute epsilon).
//   - Rotary(x, cos, sin) → y: the rotary embedding of x[t, heads, d]
//     by the angles whose cosines and sines cos and sin hold, t·d/2
//     values each (row i for token i): value j of a pair (x0, x1) becomes
//     x0·cos[i][j] − x1·sin[i][j], and x0·sin[i][j] + x1·cos[i][j]. The
//     pairs are adjacent (x[2j], x[2j+1]), or halves (x[j], x[j+d/2])
//     where the attribute halves is 1.

func init() {
	berthOps["RMSNorm"] = true
	berthOps["Rotary"] = true
	register(inferRMSNorm, "RMSNorm")
	register(inferRotary, "Rotary")
}

// RMSNormShape checks the operands of an RMSNorm node and returns its
// sizes: rows of d values.
func RMSNormShape(g *Graph, n *Node) (rows, d int64, err error) {
	ts, err := operands(g, n, 2, 2)
	if err != nil {
		return
	}
	x, w := ts[0], ts[1]
	if x.DType != Float32 || w.DType != Float32 || x.Shape.Rank() == 0 || w.Shape.Elements() != x.Shape[x.Shape.Rank()-1] {
		return 0, 0, fmt.Errorf("input %s%v and weights %s%v, want float32 with one weight a value of the last axis", x.DType, x.Shape, w.DType, w.Shape)
	}
	d = w.Shape.Elements()
	if d > 0 {
		rows = x.Shape.Elements() / d
	}
	return rows, d, nil
}

// RotaryShape checks the operands of a Rotary node and returns its
// sizes: t tokens of heads heads of d values.
func RotaryShape(g *Graph, n *Node) (t, heads, d int64, err error) {
	ts, err := operands(g, n, 3, 3)
	if err != nil {
		return
	}
	x := ts[0]
	if x.DType != Float32 || x.Shape.Rank() != 3 || x.Shape[2]%2 != 0 {
		return 0, 0, 0, fmt.Errorf("input %s%v, want float32 [t, heads, d] of even d", x.DType, x.Shape)
	}
	for _, c := range ts[1:] {
		if c.DType != Float32 || c.Shape.Elements() != x.Shape[0]*x.Shape[2]/2 {
			return 0, 0, 0, fmt.Errorf("angles %s%v, want float32 of %d values", c.DType, c.Shape, x.Shape[0]*x.Shape[2]/2)
		}
	}
	return x.Shape[0], x.Shape[1], x.Shape[2], nil
}

func inferRMSNorm(g *Graph, n *Node) ([]Type, error) {
	if _, _, err := RMSNormShape(g, n); err != nil {
		return nil, err
	}
	return []Type{{DType: Float32, Shape: g.Tensor(n.Inputs[0]).Shape.Clone()}}, nil
}

func inferRotary(g *Graph, n *Node) ([]Type, error) {
	t, heads, d, err := RotaryShape(g, n)
	if err != nil {
		return nil, err
	}
	return []Type{{DType: Float32, Shape: Shape{t, heads, d}}}, nil
}
