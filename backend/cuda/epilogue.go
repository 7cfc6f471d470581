package cuda

import (
	"math"
	"slices"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// A transformer's linear layers are a MatMul by a weight matrix and an Add
// of a bias vector, and two of each layer's four go on into an Add of the
// residual stream. Under BF16 or F16, where cuBLASLt is installed,
// fuseEpilogues rewrites each such chain into one MatMulAdd node of this
// backend's own, which runs as one cuBLASLt product whose epilogue adds
// the bias, and whose C, added with beta = 1, is the residual:
//
//	MatMulAdd(A, B, bias[, residual]) = A·B + bias [+ residual]
//
// so that the Adds' passes over the activations are gone. The node sits
// where the last Add sat (its addend is ready there), so the plan, which
// every check of the arena rests on, sees what runs; the tensors the
// MatMul and the first Add wrote are left without a producer. A
// MatMulAdd without a residual may write its output in 16 bits for the
// products and attentions that read it (fusion.half).
//
// The sums are float32 as before; the bias and the residual are added to
// them in float32 before the one rounding of the output, where the Adds
// added them to the product already rounded to float32 (or, under
// fusion.out16, to bfloat16). Where the output is 16 bits, cuBLASLt takes
// the bias in 16 bits too (its shadow copy, as the weights').

// fuseEpilogues returns g with its MatMul, bias Add and residual Add chains
// fused as above, or g itself where there are none.
func fuseEpilogues(g *ir.Graph) *ir.Graph {
	cons, isOut, fused, gone := rewriteOf(g)
	for i := range g.Nodes {
		n := &g.Nodes[i]
		k, cols, ok := epilogueProduct(g, n)
		if !ok || isOut[n.Outputs[0]] || len(cons[n.Outputs[0]]) != 1 {
			continue
		}
		y := n.Outputs[0]
		if g.Tensor(n.Inputs[0]).Shape.Elements()/k > math.MaxInt32 {
			continue
		}
		ai := cons[y][0]
		bias, u, ok := addOf(g, ai, y, func(t *ir.Tensor) bool {
			return t.IsConst() && t.Shape.Elements() == cols && int64(len(t.Data)) == t.Bytes() && t.Shape.Rank() <= g.Tensor(y).Shape.Rank() &&
				slices.IndexFunc(t.Shape[:max(t.Shape.Rank()-1, 0)], func(d int64) bool { return d != 1 }) < 0
		})
		if !ok || fused[ai] != nil || gone[ai] {
			continue
		}
		at := ai
		inputs := []ir.TensorID{n.Inputs[0], n.Inputs[1], bias, ir.NoTensor}
		out := u
		if !isOut[u] && len(cons[u]) == 1 {
			ri := cons[u][0]
			r, v, ok := addOf(g, ri, u, func(t *ir.Tensor) bool { return !t.IsConst() && t.Shape.Equal(g.Tensor(u).Shape) })
			if ok && r != n.Inputs[0] && fused[ri] == nil && !gone[ri] {
				inputs[3], out, at = r, v, ri
				gone[ai] = true
			}
		}
		fused[at] = &ir.Node{Name: n.Name, Op: "MatMulAdd", Domain: cudaDomain, Inputs: inputs, Outputs: []ir.TensorID{out}}
		gone[i] = true
	}
	return rebuilt(g, fused, gone)
}

// epilogueProduct reports whether n is a MatMul that MatMulAdd can take: a
// float32 activation of rank 2 or more times a float32 constant matrix,
// sizes within cuBLASLt's 32-bit ones; k and cols are the matrix's rows
// and columns.
func epilogueProduct(g *ir.Graph, n *ir.Node) (k, cols int64, ok bool) {
	if n.Op != "MatMul" || !n.DefaultDomain() || len(n.Inputs) != 2 || len(n.Outputs) != 1 || n.Outputs[0] == ir.NoTensor {
		return 0, 0, false
	}
	a, b, y := g.InputOf(n, 0), g.InputOf(n, 1), g.Tensor(n.Outputs[0])
	if a == nil || b == nil || a.IsConst() || !b.IsConst() || a.DType != ir.Float32 || b.DType != ir.Float32 || y.DType != ir.Float32 {
		return 0, 0, false
	}
	if a.Shape.Rank() < 2 || b.Shape.Rank() != 2 || a.Shape.Validate() != nil || b.Shape.Validate() != nil || int64(len(b.Data)) != b.Bytes() {
		return 0, 0, false
	}
	k, cols = b.Shape[0], b.Shape[1]
	if a.Shape[a.Shape.Rank()-1] != k || k <= 0 || cols <= 0 || k > math.MaxInt32 || cols > math.MaxInt32 {
		return 0, 0, false
	}
	want := append(slices.Clone([]int64(a.Shape[:a.Shape.Rank()-1])), cols)
	if !slices.Equal([]int64(y.Shape), want) {
		return 0, 0, false
	}
	return k, cols, true
}

// addOf reports whether node i is an Add of t and another tensor that
// other accepts, of t's shape and type, and returns that tensor and the
// sum.
func addOf(g *ir.Graph, i int, t ir.TensorID, other func(*ir.Tensor) bool) (x, sum ir.TensorID, ok bool) {
	a := &g.Nodes[i]
	if a.Op != "Add" || !a.DefaultDomain() || len(a.Inputs) != 2 || len(a.Outputs) != 1 || a.Outputs[0] == ir.NoTensor || a.Inputs[0] == a.Inputs[1] {
		return 0, 0, false
	}
	x = a.Inputs[0]
	if x == t {
		x = a.Inputs[1]
	} else if a.Inputs[1] != t {
		return 0, 0, false
	}
	if x == ir.NoTensor {
		return 0, 0, false
	}
	xt, st := g.Tensor(x), g.Tensor(a.Outputs[0])
	if xt.DType != ir.Float32 || st.DType != ir.Float32 || !st.Shape.Equal(g.Tensor(t).Shape) || !other(xt) {
		return 0, 0, false
	}
	return x, a.Outputs[0], true
}

// isMatMulAdd reports whether n is a MatMulAdd node (fuseEpilogues).
func isMatMulAdd(n *ir.Node) bool { return n.Op == "MatMulAdd" && n.Domain == cudaDomain }

// hasResidual reports whether MatMulAdd node n adds a residual (as C):
// one without writes 16 bits where its readers take them.
func hasResidual(n *ir.Node) bool { return len(n.Inputs) > 3 && n.Inputs[3] != ir.NoTensor }

// buildMatMulAdd runs a MatMulAdd node as one cuBLASLt product (see
// fuseEpilogues): our row-major Y (m×n) = A·B is cuBLAS's column-major
// Yᵀ = Bᵀ·Aᵀ, whose rows, one per column of Y, take the bias.
func buildMatMulAdd(c *buildContext) error {
	if err := c.need(3); err != nil {
		return err
	}
	n := c.n
	k, cols, ok := epilogueProduct(c.g, &ir.Node{Op: "MatMul", Inputs: n.Inputs[:2], Outputs: n.Outputs[:1]})
	if !ok {
		return c.errorf("operands %v and %v do not make a product cuBLASLt takes", c.in(0).Shape, c.in(1).Shape)
	}
	rows := c.in(0).Shape.Elements() / k
	if bias := c.in(2); bias == nil || bias.Shape.Elements() != cols || bias.DType != ir.Float32 {
		return c.errorf("the bias must be %d float32 values", cols)
	}
	residual := hasResidual(n)
	if residual && (!c.in(3).Shape.Equal(c.out(0).Shape) || c.in(3).DType != ir.Float32 || c.fz != nil && c.fz.half[n.Inputs[3]]) {
		return c.errorf("the residual %v must be float32 values of the output's shape %v", c.in(3).Shape, c.out(0).Shape)
	}
	if c.half == nil || !c.half.lt || !c.blas {
		return c.errorf("internal error: MatMulAdd needs cuBLASLt and 16-bit products")
	}
	ab := driver.R16BF
	if c.half.prec == F16 {
		ab = driver.R16F
	}
	bg := &blasGemm{transA: driver.OpN, transB: driver.OpN, m: cols, n: rows, k: k, lda: cols, ldb: k, ldc: cols, batch: 1,
		alpha: 1, ab: ab, c: driver.R32F, epilogue: driver.EpilogueBias}
	y := c.outArg(0)
	if c.halfOut(0) || c.fz != nil && c.fz.out16[y.id] {
		if residual {
			return c.errorf("internal error: a MatMulAdd with a residual writes float32")
		}
		y = arg{kind: argTensor, id: y.id, half: true}
		bg.c, bg.bias16 = ab, true
	}
	a := c.halfOperand(c.inArg(0), false)
	b := c.halfOperand(c.inArg(1), false)
	bias := c.inArg(2)
	if bg.bias16 {
		bias = c.halfOperand(bias, false) // its 16-bit copy, as cuBLASLt takes it
	}
	args := []arg{b, a, y, bias}
	if residual {
		bg.beta = 1
		args = append(args, c.inArg(3))
	}
	c.launches = append(c.launches, launch{node: c.node, blas: bg, args: args})
	return nil
}
