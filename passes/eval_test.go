package passes

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
)

// testEval is a small reference evaluator for tests: int64 Gather, Concat,
// Add, Sub, Mul, Div and Cast to int64, and float32 Neg and Relu. It
// declines everything else with ErrNoFold.
func testEval(g *ir.Graph, n *ir.Node) error {
	out := g.Tensor(n.Outputs[0])
	in := func(i int) *ir.Tensor { return g.Tensor(n.Inputs[i]) }
	switch n.Op {
	case "Gather":
		if n.Attrs.Int("axis", 0) != 0 || in(0).Shape.Rank() != 1 {
			return ErrNoFold
		}
		data, err := in(0).Int64s()
		if err != nil {
			return err
		}
		idx, err := in(1).Int64s()
		if err != nil {
			return err
		}
		vals := make([]int64, len(idx))
		for i, j := range idx {
			if j < 0 {
				j += int64(len(data))
			}
			vals[i] = data[j]
		}
		out.Data = ir.Int64Bytes(vals)
	case "Concat":
		var vals []int64
		for i := range n.Inputs {
			v, err := in(i).Int64s()
			if err != nil {
				return err
			}
			vals = append(vals, v...)
		}
		out.Data = ir.Int64Bytes(vals)
	case "Add", "Sub", "Mul", "Div":
		a, err := in(0).Int64s()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrNoFold, err)
		}
		b, err := in(1).Int64s()
		if err != nil {
			return err
		}
		vals := make([]int64, out.Shape.Elements())
		for i := range vals {
			x, y := a[i%len(a)], b[i%len(b)]
			switch n.Op {
			case "Add":
				vals[i] = x + y
			case "Sub":
				vals[i] = x - y
			case "Mul":
				vals[i] = x * y
			case "Div":
				vals[i] = x / y
			}
		}
		out.Data = ir.Int64Bytes(vals)
	case "Cast":
		if out.DType != ir.Int64 {
			return ErrNoFold
		}
		v, err := in(0).Int64s()
		if err != nil {
			return err
		}
		out.Data = ir.Int64Bytes(v)
	case "Neg", "Relu":
		if out.DType != ir.Float32 {
			return ErrNoFold
		}
		src := in(0).Data
		dst := make([]byte, len(src))
		for i := 0; i+4 <= len(src); i += 4 {
			x := math.Float32frombits(binary.LittleEndian.Uint32(src[i:]))
			if n.Op == "Neg" {
				x = -x
			} else {
				x = max(x, 0)
			}
			binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(x))
		}
		out.Data = dst
	default:
		return ErrNoFold
	}
	return nil
}
