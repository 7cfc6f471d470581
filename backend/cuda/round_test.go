package cuda

import (
	"testing"

	"github.com/berth-ml/berth/ir"
)

// sharedOperandGraph is a LayerNorm whose output three products read
// (and a residual Add), their sum, and a product of that.
func sharedOperandGraph() *tg {
	g := newTG(17)
	x := g.input(ir.Float32, 2, 8, 64)
	g.node("LayerNormalization", ir.Attrs{"axis": intv(-1)}, 1, x, g.constant(ir.Float32, 64), g.constant(ir.Float32, 64))
	ln := g.g.Outputs[0]
	var outs []ir.TensorID
	for range 3 {
		g.node("MatMul", nil, 1, ln, g.constant(ir.Float32, 64, 64))
		outs = append(outs, g.g.Outputs[0])
	}
	g.node("Add", nil, 1, outs[0], outs[1])
	g.node("Add", nil, 1, g.g.Outputs[0], outs[2])
	g.node("Add", nil, 1, g.g.Outputs[0], ln)
	g.node("MatMul", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, 64, 32)) // one reader: not rounded apart
	return g
}

// TestRoundShared: three products of one normalised activation (and an
// Add that reads it too) read one Round16 node's output, which the fusion
// holds in 16 bits under BF16 and F16, so that the products launch no
// rounding of their own and the Round16 one; the graph plans. An
// activation that one product reads is left as it is.
func TestRoundShared(t *testing.T) {
	g := sharedOperandGraph()
	f := roundShared(g.g)
	if n := countOps(f)["Round16"]; n != 1 {
		t.Fatalf("%d Round16 nodes, want 1 (ops %v)", n, countOps(f))
	}
	var t16 ir.TensorID = ir.NoTensor
	for _, n := range f.Nodes {
		if n.Op == "Round16" {
			t16 = n.Outputs[0]
		}
	}
	readers := 0
	for _, n := range f.Nodes {
		if n.Op == "MatMul" && n.Inputs[0] == t16 {
			readers++
		}
	}
	if readers != 3 {
		t.Errorf("%d products read the rounded activation, want 3", readers)
	}
	for _, prec := range []Precision{BF16, F16} {
		hs := &halves{prec: prec, shadow: map[ir.TensorID]int{}, stored: map[ir.TensorID]bool{}, dry: true}
		fz := analyzeFusion(f, true, hs, acceptsHalf(f, 1, hs))
		if !fz.half[t16] {
			t.Errorf("%s: the rounded activation is not held in 16 bits", prec)
			continue
		}
		hs.stored = fz.half
		for i, n := range f.Nodes {
			c, err := buildNodeWith(f, i, 132, true, new([][]byte), hs, fz)
			if err != nil {
				t.Fatalf("%s: %v", prec, err)
			}
			rounds := 0
			for _, l := range c.launches {
				if l.kernel == "round_f32_h" || l.kernel == "round_f32_h2" {
					rounds++
				}
			}
			switch {
			case n.Op == "Round16" && rounds != 1:
				t.Errorf("%s: the Round16 launches %d roundings, want 1", prec, rounds)
			case n.Op == "MatMul" && n.Inputs[0] == t16 && rounds != 0:
				t.Errorf("%s: a product of the rounded activation launches %d roundings of its own", prec, rounds)
			}
		}
	}
	if err := planOf(f); err != nil {
		t.Error(err)
	}
	one := newTG(17)
	one.node("MatMul", nil, 1, one.input(ir.Float32, 4, 16), one.constant(ir.Float32, 16, 8))
	if f := roundShared(one.g); f != one.g {
		t.Errorf("a lone product's operand was given a Round16")
	}
}
