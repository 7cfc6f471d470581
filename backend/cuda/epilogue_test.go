package cuda

import (
	"testing"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// linearGraph is two linear layers, x·W1 + b1 then ·W2 + b2 + x, the
// first bias on the left of its Add as exporters often write it.
func linearGraph() *tg {
	g := newTG(17)
	x := g.input(ir.Float32, 2, 8, 64)
	g.node("MatMul", nil, 1, x, g.constant(ir.Float32, 64, 96))
	g.node("Add", nil, 1, g.constant(ir.Float32, 96), g.g.Outputs[0])
	g.node("MatMul", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, 96, 64))
	g.node("Add", nil, 1, g.g.Outputs[0], g.constant(ir.Float32, 1, 64))
	g.node("Add", nil, 1, x, g.g.Outputs[0])
	return g
}

// TestFuseEpilogues checks the rewrite (no GPU needed): each product with
// its bias Add, and the residual Add after it where there is one, becomes
// one MatMulAdd; under BF16 and F16 each builds into one cuBLASLt product
// with a bias epilogue (the first writing 16 bits for the second, which
// reads them as they are; the second adding the residual as C), and the
// graph plans. Chains MatMulAdd cannot take are left as they are.
func TestFuseEpilogues(t *testing.T) {
	g := linearGraph().g
	f := fuseEpilogues(g)
	if ops := countOps(f); ops["MatMulAdd"] != 2 || ops["Add"] != 0 || ops["MatMul"] != 0 {
		t.Fatalf("fused graph has %v, want two MatMulAdd nodes and nothing else", ops)
	}
	first, second := &f.Nodes[0], &f.Nodes[1]
	if first.Inputs[3] != ir.NoTensor || second.Inputs[3] != g.Inputs[0] || second.Outputs[0] != g.Outputs[0] {
		t.Errorf("residuals %v and %v, outputs %v, want none, x and the graph's output", first.Inputs[3], second.Inputs[3], second.Outputs[0])
	}
	if err := planOf(f); err != nil {
		t.Fatal(err)
	}
	for _, prec := range []Precision{BF16, F16} {
		hs := &halves{prec: prec, shadow: map[ir.TensorID]int{}, dry: true, lt: true}
		fz := analyzeFusion(f, true, hs, acceptsHalf(f, 132, hs))
		hs.stored = fz.half
		if !fz.half[first.Outputs[0]] {
			t.Errorf("%s: the first layer's output is not held in 16 bits", prec)
		}
		ab := driver.R16BF
		if prec == F16 {
			ab = driver.R16F
		}
		for i, want := range []struct {
			c    driver.DataType
			args int
			beta float32
		}{{ab, 4, 0}, {driver.R32F, 5, 1}} {
			c, err := buildNodeWith(f, i, 132, true, new([][]byte), hs, fz)
			if err != nil {
				t.Fatalf("%s node %d: %v", prec, i, err)
			}
			var lts []*blasGemm
			for _, l := range c.launches {
				if l.blas != nil && l.blas.epilogue == driver.EpilogueBias {
					lts = append(lts, l.blas)
				}
			}
			if len(c.launches) != 2-i || len(lts) != 1 {
				// The first rounds its float32 x into scratch first.
				t.Errorf("%s node %d: %d launches, %d cuBLASLt products; want %d and 1", prec, i, len(c.launches), len(lts), 2-i)
				continue
			}
			l := c.launches[len(c.launches)-1]
			if b := l.blas; b.c != want.c || len(l.args) != want.args || b.beta != want.beta || b.ab != ab {
				t.Errorf("%s node %d: D %v, %d arguments, beta %g, operands %v; want %v, %d, %g, %v", prec, i, b.c, len(l.args), b.beta, b.ab, want.c, want.args, want.beta, ab)
			}
			if i == 1 && !l.args[1].half {
				t.Errorf("%s: the second product rounds its 16-bit operand again", prec)
			}
		}
	}

	// Chains left as they are: x·W + addend, then what then adds.
	bias := func(g *tg) ir.TensorID { return g.constant(ir.Float32, 32) }
	refuse := []struct {
		name     string
		computed bool // W an input, not a constant
		addend   func(*tg) ir.TensorID
		then     func(g *tg, product ir.TensorID)
	}{
		{"bias of two rows", false, func(g *tg) ir.TensorID { return g.constant(ir.Float32, 2, 32) }, nil},
		{"product read twice", false, bias, func(g *tg, p ir.TensorID) { g.node("Mul", nil, 1, p, g.g.Outputs[0]) }},
		{"weights computed", true, bias, nil},
		{"addend not a constant", false, func(g *tg) ir.TensorID { return g.input(ir.Float32, 32) }, nil},
		{"product is an output", false, bias, func(g *tg, p ir.TensorID) { g.g.Outputs = append(g.g.Outputs, p) }},
	}
	for _, r := range refuse {
		tg := newTG(17)
		w := tg.constant(ir.Float32, 64, 32)
		if r.computed {
			w = tg.input(ir.Float32, 64, 32)
		}
		tg.node("MatMul", nil, 1, tg.input(ir.Float32, 2, 64), w)
		p := tg.g.Outputs[0]
		tg.node("Add", nil, 1, p, r.addend(tg))
		if r.then != nil {
			r.then(tg, p)
		}
		g := tg.g
		if f := fuseEpilogues(g); f != g {
			t.Errorf("%s: fused into %v", r.name, countOps(f))
		}
	}
}
