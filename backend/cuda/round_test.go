package cuda

import (
	"strings"
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

// normGraph is a LayerNorm whose output one product (with its bias) and
// the residual Add after it read.
func normGraph() *tg {
	g := newTG(17)
	x := g.input(ir.Float32, 2, 8, 64)
	g.node("LayerNormalization", ir.Attrs{"axis": intv(-1)}, 1, x, g.constant(ir.Float32, 64), g.constant(ir.Float32, 64))
	ln := g.g.Outputs[0]
	g.node("MatMul", nil, 1, ln, g.constant(ir.Float32, 64, 64))
	g.node("Add", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, 64))
	g.node("Add", nil, 1, g.g.Outputs[0], ln)
	return g
}

// TestRoundAtNorm: a LayerNorm that products and other nodes read becomes
// a NormRound writing the float32 row and the products' 16-bit copy (the
// Round16 before three products folded into it; a copy of its own for
// one product), one kernel under BF16 and F16 with no rounding left
// anywhere; a LayerNorm that a Round16 alone reads writes that Round16's
// output; the graphs plan.
func TestRoundAtNorm(t *testing.T) {
	alone := newTG(17)
	x := alone.input(ir.Float32, 2, 8, 64)
	alone.node("LayerNormalization", ir.Attrs{"axis": intv(-1)}, 1, x, alone.constant(ir.Float32, 64), alone.constant(ir.Float32, 64))
	ln := alone.g.Outputs[0]
	alone.g.Outputs = nil
	for range 2 {
		alone.node("MatMul", nil, 1, ln, alone.constant(ir.Float32, 64, 32))
	}
	cases := []struct {
		name      string
		g         *ir.Graph
		norms     int // NormRound nodes wanted
		readers16 int // products reading the norm's 16-bit output
	}{
		{"three products and an Add", roundShared(sharedOperandGraph().g), 1, 3},
		{"one product and an Add", fuseEpilogues(normGraph().g), 1, 1},
		{"a Round16 alone", roundShared(alone.g), 0, 2},
	}
	for _, tc := range cases {
		f := roundAtNorm(tc.g)
		if f == tc.g {
			t.Errorf("%s: not rewritten", tc.name)
			continue
		}
		ops := countOps(f)
		if ops["NormRound"] != tc.norms || ops["Round16"] != 0 || ops["NormRound"]+ops["LayerNormalization"] != 1 {
			t.Errorf("%s: %v, want %d NormRound, one norm and no Round16", tc.name, ops, tc.norms)
		}
		if err := planOf(f); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, prec := range []Precision{BF16, F16} {
			hs := &halves{prec: prec, shadow: map[ir.TensorID]int{}, dry: true, lt: true}
			fz := analyzeFusion(f, true, hs, acceptsHalf(f, 132, hs))
			hs.stored = fz.half
			readers := 0
			for i, n := range f.Nodes {
				c, err := buildNodeWith(f, i, 132, true, new([][]byte), hs, fz)
				if err != nil {
					t.Fatalf("%s %s: %v", tc.name, prec, err)
				}
				for _, l := range c.launches {
					if strings.HasPrefix(l.kernel, "round_f32_h") {
						t.Errorf("%s %s: node %s launches %s", tc.name, prec, n.Op, l.kernel)
					}
				}
				switch n.Op {
				case "NormRound":
					if len(c.launches) != 1 || !strings.HasPrefix(c.launches[0].kernel, "layernorm_warp4_2h_") || !c.launches[0].args[4].half {
						t.Errorf("%s %s: the NormRound launches %+v", tc.name, prec, c.launches)
					}
				case "LayerNormalization":
					if len(c.launches) != 1 || !strings.HasPrefix(c.launches[0].kernel, "layernorm_warp4_h_") {
						t.Errorf("%s %s: the norm launches %+v", tc.name, prec, c.launches)
					}
				case "MatMul", "MatMulAdd":
					for _, m := range f.Nodes {
						if (m.Op == "NormRound" && m.Outputs[1] == n.Inputs[0] || m.Op == "LayerNormalization" && m.Outputs[0] == n.Inputs[0]) && fz.half[n.Inputs[0]] {
							readers++
						}
					}
				}
			}
			if readers != tc.readers16 {
				t.Errorf("%s %s: %d products read the norm's 16-bit output, want %d", tc.name, prec, readers, tc.readers16)
			}
		}
	}
}
