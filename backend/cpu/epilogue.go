package cpu

import (
	"fmt"
	"github.com/berth-ml/berth/backend/cpu/vmath"
	"math"
	"unsafe"

	"github.com/berth-ml/berth/ir"
)

// An epilogue is a chain of elementwise operators that a GEMM-based kernel
// (MatMul, Gemm, Conv) applies to each tile of its output while the tile is
// still in cache, instead of running them as steps of their own that each
// read and write the whole tensor again.
//
// The producer's output is viewed as rows of RowLen elements (a MatMul's
// output rows, a Conv's output channels); the epilogue runs on pieces of
// rows. Each operator of the chain reads values of the chain (the
// producer's output or an earlier operator's result), constants (a scalar,
// a vector along the row, a vector indexed by row, or whole rows that
// repeat over the outer dimensions, as an attention mask does over the
// heads) and other activations of the output's full shape (a residual),
// and its result feeds the next. A Where whose condition is a constant
// (a causal mask) picks between two such values.
// Every operator computes exactly what its own kernel would, element by
// element, so fusing changes no bit of the result.
type epilogue struct {
	instrs []epInstr
	regs   int // value registers: 0 is the producer's output
	ext    int // activations read, bound after the producer's inputs
	rowLen int
	// flat is set when no operand depends on the row or the column (no
	// constant vector along or across rows), so that a run of whole rows
	// is one piece: the program then runs on long pieces instead of one
	// call per row.
	flat bool
}

// epChunk is how many elements of a row piece one pass of the program
// handles; the registers of one worker take regs·epChunk floats.
const epChunk = 256

type operandKind uint8

const (
	operandReg    operandKind = iota // a chain value
	operandExt                       // an activation of the output's shape
	operandScalar                    // a constant scalar
	operandCol                       // a constant vector along the row
	operandRow                       // a constant vector indexed by row mod len
	operandPlane                     // a constant indexed by flat index mod len (whole rows)
)

type epOperand struct {
	kind operandKind
	idx  int // register or ext index
	vec  []float32
}

type epInstr struct {
	op    string  // the operator (SiLU for a fused Sigmoid and Mul)
	unary unaryFn // one-input operator, or nil
	ua    args
	bin   binFn[float32, float32] // two-input operator
	pow   bool                    // bin is unused: Pow through powLoop
	a, b  epOperand
	dst   int
	// clamp, for a Relu or a Clip with constant bounds, is the interval
	// it clamps to (the GEMM kernels can apply it as they store).
	clamp *[2]float32
	// where is a Where of constant condition cond (non-zero: true) that
	// picks a or b.
	where bool
	cond  epOperand
}

// epilogueOps are the operators an epilogue may run: elementwise, one
// output, the same value for the same inputs.
var epilogueOps = map[string]bool{
	"Relu": true, "LeakyRelu": true, "Sigmoid": true, "HardSigmoid": true, "HardSwish": true,
	"Tanh": true, "Erf": true, "Exp": true, "Log": true, "Sqrt": true, "Neg": true, "Abs": true,
	"Reciprocal": true, "Clip": true, "Softplus": true, "Elu": true, "Selu": true, "Sin": true,
	"Cos": true, "Floor": true, "Ceil": true, "Round": true, "Sign": true,
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Max": true, "Min": true, "Pow": true,
	"Where": true, // with a constant condition
}

// epilogueOp reports whether an epilogue may run op (of the default
// domain); newEpilogue still checks each node's types and shapes.
func epilogueOp(op string) bool { return epilogueOps[op] }

// Ext is the number of activations the epilogue reads besides the
// producer's output; the fused kernel finds them after its own inputs.
func (e *epilogue) Ext() int { return e.ext }

// newEpilogue compiles the chain of nodes that follows a producer whose
// output is the tensor out, viewed as rows of rowLen elements. The chain's
// first node reads out; every later node reads the result of an earlier
// one (or out). It returns the epilogue and the activations it reads, in
// the order the fused kernel expects them after its own inputs, or an
// error saying why the chain cannot be fused.
func newEpilogue(g *ir.Graph, out ir.TensorID, rowLen int, chain []*ir.Node) (*epilogue, []ir.TensorID, error) {
	yt := g.Tensor(out)
	if yt.DType != ir.Float32 || rowLen <= 0 || yt.Shape.Elements()%int64(rowLen) != 0 {
		return nil, nil, fmt.Errorf("output %q is not float32 rows of %d", yt.Name, rowLen)
	}
	e := &epilogue{regs: 1, rowLen: rowLen}
	reg := map[ir.TensorID]int{out: 0}
	var exts []ir.TensorID
	extIdx := map[ir.TensorID]int{}
	operand := func(id ir.TensorID) (epOperand, error) {
		if r, ok := reg[id]; ok {
			return epOperand{kind: operandReg, idx: r}, nil
		}
		t := g.Tensor(id)
		if t.DType != ir.Float32 {
			return epOperand{}, fmt.Errorf("operand %q is %v", t.Name, t.DType)
		}
		if !t.IsConst() {
			if !t.Shape.Equal(yt.Shape) {
				return epOperand{}, fmt.Errorf("operand %q %v is not of the output's shape %v", t.Name, t.Shape, yt.Shape)
			}
			j, ok := extIdx[id]
			if !ok {
				j = len(exts)
				extIdx[id] = j
				exts = append(exts, id)
			}
			return epOperand{kind: operandExt, idx: j}, nil
		}
		v := constF32(t)
		return constOperand(v, t.Shape, yt.Shape, rowLen)
	}
	for _, n := range chain {
		if !n.DefaultDomain() || len(n.Outputs) != 1 || !epilogueOps[n.Op] {
			return nil, nil, fmt.Errorf("node %q (%s) is not a plain elementwise operator", n.Name, n.Op)
		}
		zt := g.Tensor(n.Outputs[0])
		if zt.DType != ir.Float32 || !zt.Shape.Equal(yt.Shape) {
			return nil, nil, fmt.Errorf("node %q (%s) changes the shape or type", n.Name, n.Op)
		}
		ins := make([]epOperand, 0, 2)
		inst := epInstr{op: n.Op}
		inputs := n.Inputs
		if n.Op == "Where" {
			// A constant condition (a causal mask), read as floats
			// that are 0 where it is false.
			if len(inputs) != 3 || inputs[0] == ir.NoTensor {
				return nil, nil, fmt.Errorf("node %q (Where) does not have three inputs", n.Name)
			}
			ct := g.Tensor(inputs[0])
			if !ct.IsConst() || ct.DType != ir.Bool {
				return nil, nil, fmt.Errorf("node %q (Where) has a condition that is not a constant", n.Name)
			}
			v := make([]float32, len(ct.Data))
			for i, b := range ct.Data {
				if b != 0 {
					v[i] = 1
				}
			}
			c, err := constOperand(v, ct.Shape, yt.Shape, rowLen)
			if err != nil {
				return nil, nil, err
			}
			inst.cond, inst.where = c, true
			inputs = inputs[1:]
		}
		for _, id := range inputs {
			if id == ir.NoTensor {
				continue
			}
			op, err := operand(id)
			if err != nil {
				return nil, nil, err
			}
			ins = append(ins, op)
		}
		var uk *unaryKernel
		unary := false
		if !inst.where {
			var err error
			if uk, unary, err = unaryOf(g, n, ins); err != nil {
				return nil, nil, err
			}
		}
		switch {
		case unary:
			// The kernel's own loop; other inputs are constants it has
			// already read.
			inst.unary, inst.ua = uk.fn, uk.a
			inst.a = ins[0]
			switch n.Op {
			case "Relu":
				inst.clamp = &[2]float32{0, float32(math.Inf(1))}
			case "Clip":
				lo, hi := boundsOf[float32](uk.a)
				inst.clamp = &[2]float32{lo, hi}
			}
		case len(ins) != 2:
			return nil, nil, fmt.Errorf("node %q (%s) does not fuse", n.Name, n.Op)
		case inst.where:
			inst.a, inst.b = ins[0], ins[1]
		case n.Op == "Add" || n.Op == "Sub" || n.Op == "Mul" || n.Op == "Div" || n.Op == "Max" || n.Op == "Min":
			inst.bin = arithF32(n.Op)
			inst.a, inst.b = ins[0], ins[1]
		case n.Op == "Pow" && ins[1].kind == operandScalar:
			inst.pow = true
			inst.a, inst.b = ins[0], ins[1]
		default:
			return nil, nil, fmt.Errorf("node %q (%s) does not fuse", n.Name, n.Op)
		}
		inst.dst = e.regs
		e.regs++
		reg[n.Outputs[0]] = inst.dst
		e.instrs = append(e.instrs, inst)
	}
	if len(e.instrs) == 0 {
		return nil, nil, fmt.Errorf("empty chain")
	}
	e.fuseSilu()
	e.ext = len(exts)
	e.flat = true
	for _, in := range e.instrs {
		for _, o := range []epOperand{in.a, in.b, in.cond} {
			if o.kind == operandCol || o.kind == operandRow || o.kind == operandPlane {
				e.flat = false
			}
		}
	}
	return e, exts, nil
}

// unaryOf is the loop of node n's own kernel where n is a one-input
// operator of float32 (Clip with constant bounds read now) applied to
// the chain value ins[0], its other inputs ins[1:] constants; unary is
// false otherwise.
func unaryOf(g *ir.Graph, n *ir.Node, ins []epOperand) (uk *unaryKernel, unary bool, err error) {
	k, _, err := Build(g, n)
	if err != nil {
		return nil, false, err
	}
	uk, unary = k.(*unaryKernel)
	if ck, ok := k.(*clipKernel); ok {
		// Clip with constant bounds: its loop with the bounds read now.
		uk, unary = &unaryKernel{fn: ck.fn, isize: ck.isize, osize: ck.osize, a: ck.a}, true
		for i := 1; i <= 2; i++ {
			if id := n.Input(i); id != ir.NoTensor {
				t := g.Tensor(id)
				if !t.IsConst() || t.DType != ir.Float32 {
					unary = false
					break
				}
				setFarg(&uk.a, i-1, float64(f32At(t.Data, 0)))
			}
		}
	}
	unary = unary && uk.isize == 4 && uk.osize == 4 && ins[0].kind == operandReg
	for _, o := range ins[1:] {
		unary = unary && o.kind != operandReg && o.kind != operandExt
	}
	return uk, unary, nil
}

// fuseSilu turns each Sigmoid(x) followed by Mul(x, it) (either order),
// where nothing after reads the sigmoid, into one SiLU instruction: one
// pass instead of two, with the same bits (vmath.Silus is x times vmath.Sigmoids's
// result).
func (e *epilogue) fuseSilu() {
	for i := 0; i+1 < len(e.instrs); i++ {
		sg, m := &e.instrs[i], &e.instrs[i+1]
		if sg.op != "Sigmoid" || m.op != "Mul" || sg.a.kind != operandReg || m.a.kind != operandReg || m.b.kind != operandReg {
			continue
		}
		x, y := m.a.idx, m.b.idx
		if y == sg.a.idx {
			x, y = y, x
		}
		if x != sg.a.idx || y != sg.dst || e.reads(i+2, sg.dst) {
			continue
		}
		e.instrs[i] = epInstr{op: "SiLU", unary: siluF32, a: sg.a, dst: m.dst}
		e.instrs = append(e.instrs[:i+1], e.instrs[i+2:]...)
	}
}

// reads reports whether an instruction from the i-th on reads register r.
func (e *epilogue) reads(i, r int) bool {
	for j := range e.instrs[i:] {
		for _, o := range e.instrs[i+j].operands() {
			if o.isReg(r) {
				return true
			}
		}
	}
	return false
}

// operands are the operands the instruction reads: a, and b unless it is
// a one-input operator.
func (in *epInstr) operands() []*epOperand {
	if in.unary != nil {
		return []*epOperand{&in.a}
	}
	return []*epOperand{&in.a, &in.b}
}

// siluF32 is the float32 loop of the fused SiLU.
func siluF32(d, s []byte, _ args) { vmath.Silus(f32s(d), f32s(s)) }

// splitClamp separates a leading Relu or Clip that only the producer's
// output feeds: it returns the interval to clamp the producer's output to
// as the kernels store it, and the epilogue of the rest of the chain (with
// no instructions when nothing is left). Otherwise it returns nil and e.
func (e *epilogue) splitClamp() (*[2]float32, *epilogue) {
	if len(e.instrs) == 0 || e.instrs[0].clamp == nil || !e.instrs[0].a.isReg(0) {
		return nil, e
	}
	if rest, ok := e.dropFirst(); ok {
		return e.instrs[0].clamp, rest
	}
	return nil, e
}

// splitResidual separates a leading Add of the producer's output and an
// activation of its shape (a residual) that nothing after reads the
// producer's output beside: it returns the residual's index among the
// epilogue's activations, for the kernels to add as they store, and the
// epilogue of the rest of the chain. Otherwise it returns -1 and e.
func (e *epilogue) splitResidual() (int, *epilogue) {
	if len(e.instrs) == 0 {
		return -1, e
	}
	in := &e.instrs[0]
	if in.op != "Add" || in.unary != nil || in.pow {
		return -1, e
	}
	r := in.b
	if in.b.isReg(0) {
		r = in.a
	} else if !in.a.isReg(0) {
		return -1, e
	}
	if r.kind != operandExt {
		return -1, e
	}
	if rest, ok := e.dropFirst(); ok {
		return r.idx, rest
	}
	return -1, e
}

// isReg reports whether o is chain register r.
func (o epOperand) isReg(r int) bool { return o.kind == operandReg && o.idx == r }

// dropFirst is e without its first instruction, whose result takes the
// place of register 0, when no later instruction reads register 0.
func (e *epilogue) dropFirst() (*epilogue, bool) {
	rest := &epilogue{regs: e.regs - 1, ext: e.ext, rowLen: e.rowLen, flat: e.flat}
	for _, in := range e.instrs[1:] {
		for _, o := range in.operands() {
			if o.kind != operandReg {
				continue
			}
			if o.idx == 0 {
				// The rest reads the value before the first
				// instruction.
				return nil, false
			}
			o.idx--
		}
		in.dst--
		rest.instrs = append(rest.instrs, in)
	}
	return rest, true
}

// constOperand classifies how a constant broadcasts over the output.
func constOperand(v []float32, s, y ir.Shape, rowLen int) (epOperand, error) {
	if len(v) == 1 {
		return epOperand{kind: operandScalar, vec: v}, nil
	}
	if s.Rank() > y.Rank() {
		return epOperand{}, fmt.Errorf("constant %v has a higher rank than the output %v", s, y)
	}
	// Right-align s against y; the row dimensions are y's trailing ones
	// whose product is rowLen.
	rowDims, p := 0, 1
	for i := y.Rank() - 1; i >= 0 && p < rowLen; i-- {
		p *= int(y[i])
		rowDims++
	}
	if p != rowLen {
		return epOperand{}, fmt.Errorf("output %v has no trailing dimensions of %d elements", y, rowLen)
	}
	off := y.Rank() - s.Rank()
	inRow, inOuter := false, false
	for i, d := range s {
		if d == 1 {
			continue
		}
		if d != y[off+i] {
			return epOperand{}, fmt.Errorf("constant %v does not broadcast to %v", s, y)
		}
		if off+i >= y.Rank()-rowDims {
			inRow = true
		} else {
			inOuter = true
		}
	}
	switch {
	case inRow && !inOuter && len(v) == rowLen:
		// Exactly the row dimensions: a vector along the row.
		return epOperand{kind: operandCol, vec: v}, nil
	case inOuter && !inRow:
		// Non-unit dimensions must be the innermost outer ones, so the
		// constant's flat index is the row index mod its length.
		first := -1
		for i, d := range s {
			if d != 1 {
				first = i
				break
			}
		}
		for i := first; i < s.Rank(); i++ {
			if off+i < y.Rank()-rowDims && s[i] != y[off+i] {
				return epOperand{}, fmt.Errorf("constant %v does not index whole rows of %v", s, y)
			}
		}
		return epOperand{kind: operandRow, vec: v}, nil
	case inRow && inOuter:
		// Whole rows of the innermost outer dimensions (an attention
		// mask over every head): from its first non-unit dimension on,
		// the constant must match the output, so that its flat index is
		// the output's mod its length.
		first := 0
		for s[first] == 1 {
			first++
		}
		for i := first; i < s.Rank(); i++ {
			if s[i] != y[off+i] {
				return epOperand{}, fmt.Errorf("constant %v does not index whole rows of %v", s, y)
			}
		}
		return epOperand{kind: operandPlane, vec: v}, nil
	}
	return epOperand{}, fmt.Errorf("constant %v broadcasts over %v in a way that does not fuse", s, y)
}

// arithF32 is the float32 loop of a binary arithmetic operator, the same
// one its own kernel runs.
func arithF32(op string) binFn[float32, float32] {
	switch op {
	case "Add":
		return addF32
	case "Sub":
		return subF32
	case "Mul":
		return mulF32
	case "Div":
		return divF32
	case "Max":
		return maxLoop[float32]
	}
	return minLoop[float32]
}

// epRegs is the register space one worker needs: register 0 is read in
// place and the last one is the result, so only those in between take
// room.
func (e *epilogue) epRegs() int { return max(e.regs-2, 0) * epChunk }

// reg is register i (0 < i < regs-1) of a piece of l elements in regs.
func reg(regs []float32, i, l int) []float32 { return regs[(i-1)*epChunk:][:l] }

// apply runs the epilogue on the piece [j0, j1) of row r: y holds the
// producer's values of that piece, z receives the results (it may be y),
// ext are the whole extra activations, regs is one worker's register space.
// Register 0 is read from y and the last result is written to z directly;
// the registers in between live in regs. Every operator is elementwise, so
// z may be y or an activation that the chain reads.
func (e *epilogue) apply(z, y []float32, ext [][]byte, r, j0 int, regs []float32) {
	n := len(y)
	if len(e.instrs) == 0 {
		// Nothing left after the kernel's clamp: the result is the
		// producer's output.
		if n > 0 && &z[0] != &y[0] {
			copy(z, y)
		}
		return
	}
	base := r*e.rowLen + j0
	last := len(e.instrs) - 1
	chunk := epChunk
	if last == 0 {
		// One operator reads y and writes z: no registers, so the
		// whole piece at once.
		chunk = max(n, 1)
	}
	for c0 := 0; c0 < n; c0 += chunk {
		c1 := min(n, c0+chunk)
		l := c1 - c0
		y0 := y[c0:c1]
		for i := range e.instrs {
			in := &e.instrs[i]
			d := z[c0:c1]
			if i != last {
				d = reg(regs, in.dst, l)
			}
			av, as := e.fetch(&in.a, y0, regs, ext, r, j0+c0, base+c0, l)
			switch {
			case in.where:
				cv, cs := e.fetch(&in.cond, y0, regs, ext, r, j0+c0, base+c0, l)
				bv, bs := e.fetch(&in.b, y0, regs, ext, r, j0+c0, base+c0, l)
				whereF32(d, cv, av, bv, cs, as, bs)
			case in.unary != nil:
				in.unary(f32bytes(d), f32bytes(av), in.ua)
			case in.pow:
				powLoop(d, av, in.b.vec, as, 0)
			default:
				bv, bs := e.fetch(&in.b, y0, regs, ext, r, j0+c0, base+c0, l)
				if as == 0 && bs == 0 {
					in.bin(d[:1], av, bv, 1, 1)
					fill(d[1:], d[0])
				} else {
					in.bin(d, av, bv, as, bs)
				}
			}
		}
	}
}

// fetch returns an operand's values for a piece of l elements starting at
// column j of row r (flat index flat), and its stride (0: one value); y0
// is the producer's piece, register 0.
func (e *epilogue) fetch(o *epOperand, y0, regs []float32, ext [][]byte, r, j, flat, l int) ([]float32, int) {
	switch o.kind {
	case operandReg:
		if o.idx == 0 {
			return y0, 1
		}
		return reg(regs, o.idx, l), 1
	case operandExt:
		return f32s(ext[o.idx])[flat : flat+l], 1
	case operandScalar:
		return o.vec, 0
	case operandCol:
		return o.vec[j : j+l], 1
	case operandPlane:
		return o.vec[flat%len(o.vec):][:l], 1
	}
	return o.vec[r%len(o.vec):], 0
}

// whereF32 is d[i] = a[i·sa] where c[i·sc] is not 0, else b[i·sb] (each
// stride 0 or 1): Where's choice, which changes no bit of the values.
func whereF32(d, c, a, b []float32, sc, sa, sb int) {
	for i := range d {
		if c[i*sc] != 0 {
			d[i] = a[i*sa]
		} else {
			d[i] = b[i*sb]
		}
	}
}

// f32bytes views a float32 slice as bytes.
func f32bytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// fused is what a kernel that takes an epilogue keeps of it.
type fused struct {
	ep     *epilogue
	nin    int // the producer's own inputs; ext activations follow
	shares int // workers the registers serve
	// temp is, in overwrite mode, the floats of each worker's tile buffer:
	// the producer computes a tile there instead of in its output, so that
	// the result may be the memory of an activation the epilogue reads.
	// 0 otherwise.
	temp int
}

// tile runs the epilogue over rows [r0, r1) × columns [j0, j1) of the
// producer's output y, writing z, with the registers of worker share
// (work holds every worker's).
func (f *fused) tile(z, y []float32, in [][]byte, work []float32, share, r0, r1, j0, j1 int) {
	rl := f.ep.rowLen
	f.tileFrom(z, y[r0*rl+j0:], rl, in, work, share, r0, r1, j0, j1)
}

// tileFrom is tile with the producer's values of the tile in buf, row r at
// buf[(r-r0)·ld:], from column j0 on.
func (f *fused) tileFrom(z, buf []float32, ld int, in [][]byte, work []float32, share, r0, r1, j0, j1 int) {
	rl := f.ep.rowLen
	f.rows(z[r0*rl+j0:], rl, buf, ld, in, work, share, r0, r1, j0, j1)
}

// inPlace runs the epilogue in place over rows [r0, r1) × columns [j0,
// j1) of the producer's output held in buf, row r from buf[(r-r0)·ld] on:
// for a product computed into a buffer of its own whose result stays
// there (the rows still name the output's, for operands indexed by row).
func (f *fused) inPlace(buf []float32, ld int, in [][]byte, work []float32, share, r0, r1, j0, j1 int) {
	f.rows(buf, ld, buf, ld, in, work, share, r0, r1, j0, j1)
}

// rows runs the epilogue over rows [r0, r1) × columns [j0, j1) of the
// producer's output, row r's values at buf[(r-r0)·ld:] and its result to
// z[(r-r0)·zld:], with the registers of worker share (work holds every
// worker's).
func (f *fused) rows(z []float32, zld int, buf []float32, ld int, in [][]byte, work []float32, share, r0, r1, j0, j1 int) {
	regs := work[share*f.ep.epRegs():][:f.ep.epRegs()]
	rl, w := f.ep.rowLen, j1-j0
	if f.ep.flat && w == rl && ld == rl && zld == rl {
		// Whole rows, stored one after the other: one piece.
		f.ep.apply(z[:(r1-r0)*rl], buf[:(r1-r0)*rl], in[f.nin:], r0, 0, regs)
		return
	}
	for r := r0; r < r1; r++ {
		f.ep.apply(z[(r-r0)*zld:][:w], buf[(r-r0)*ld:][:w], in[f.nin:], r, j0, regs)
	}
}

// tempBuf is worker share's tile buffer in overwrite mode, in temps, the
// fused kernel's fourth output.
func (f *fused) tempBuf(temps []float32, share int) []float32 {
	return temps[share*f.temp : (share+1)*f.temp : (share+1)*f.temp]
}

// workFloats is the working memory the fused kernel takes as its third
// output: every worker's registers.
func (f *fused) workFloats() int { return f.shares * f.ep.epRegs() }

func newFused(ep *epilogue, nin, threads int) *fused {
	return &fused{ep: ep, nin: nin, shares: max(threads, 1)}
}

// RegisterBytes is the working memory a kernel fused with ep needs when it
// runs on a pool of the given number of threads, outside overwrite mode
// (see workBytes).
func (e *epilogue) RegisterBytes(threads int) int { return 4 * max(threads, 1) * e.epRegs() }

// workBytes is the working memory a kernel that fuseEpilogue, fuseAfter or
// fuseOverwrite returned takes as its third output: each session gives
// its own, 64-byte aligned; 0 for any other kernel.
func workBytes(k Kernel) int {
	switch k := k.(type) {
	case *matmulKernel:
		if k.fuse != nil {
			return 4 * k.fuse.workFloats()
		}
	case *convKernel:
		if k.fuse != nil {
			return 4 * k.fuse.workFloats()
		}
	case *afterKernel:
		return 4 * k.f.workFloats()
	}
	return 0
}

// overwriteTemp is the most floats of one worker's tile buffer in
// overwrite mode that the blocking aims for (128 KiB).
const overwriteTemp = 32 << 10

// fuseOverwrite is fuseEpilogue for a chain whose result may be the memory of an
// activation the epilogue reads (a residual that dies there): the fused
// kernel computes each tile of k's output in a tile buffer of its worker
// and never writes its own output (the first of its outputs is unused),
// so that every element of the activation is read before the epilogue
// writes the result over it. The tile buffers are a fourth output of
// temp bytes, 64-byte aligned, that no other run uses at the same time
// (none where the kernels add the residual themselves in a single k
// slice: they then write the result directly). ok is false when k cannot
// run so.
func fuseOverwrite(k Kernel, ep *epilogue, nin, threads int) (fk Kernel, temp int, ok bool) {
	switch k := k.(type) {
	case *convKernel:
		if k.fuse != nil || ep.rowLen != k.outSp || k.depthwise || k.outSp == 0 || k.nb == 0 || k.wT != nil || k.wg != nil {
			return nil, 0, false
		}
		f := *k
		if k.kdim <= k.kc && ep.ext == 1 {
			// One k slice and one activation read: if the chain is
			// that residual's Add (and a clamp), the kernels read each
			// element of the residual in the store that writes the
			// same element of the result, which may therefore be the
			// residual's memory, with no tile buffer and no pass.
			if r, rest := ep.splitResidual(); r >= 0 {
				if lim, rest := rest.splitClamp(); len(rest.instrs) == 0 {
					f.res, f.lim = r+1, lim
					f.fuse = newFused(rest, nin, threads)
					return &f, 0, true
				}
			}
		}
		f.lim, ep = ep.splitClamp()
		f.fuse = newFused(ep, nin, threads)
		rows := roundUp(k.mg, gemmMR)
		if k.kdim <= k.kc {
			// One k slice: a block's packed input serves its rows chunk
			// by chunk, each chunk's product going through the buffer.
			// Whole GEMM row tiles (convMT panels) where they fit.
			tile := convMT * gemmMR
			if overwriteTemp/k.nc < tile {
				tile = 2 * gemmMR
			}
			f.owRows = min(rows, max(tile, overwriteTemp/k.nc/tile*tile))
			f.fuse.temp = roundUp(f.owRows*(k.nc+gemmNR), alignment/4)
		} else {
			// Several k slices accumulate: the buffer holds all of a
			// block's rows (one group's output channels), so blocks are
			// made narrow enough to keep it within overwriteTemp floats
			// where they can.
			f.nc = min(k.nc, max(4*gemmNR, overwriteTemp/rows/gemmNR*gemmNR))
			f.fuse.temp = roundUp(rows*(f.nc+gemmNR), alignment/4)
		}
		return &f, 4 * f.fuse.shares * f.fuse.temp, true
	}
	return nil, 0, false
}

// fusedRowLen reports whether k can take an epilogue and, if so, the row
// length its output is viewed as.
func fusedRowLen(k Kernel) (int, bool) {
	switch k := k.(type) {
	case *matmulKernel:
		if k.fuse == nil {
			return k.n, true
		}
	case *convKernel:
		if k.fuse == nil && k.outSp > 0 {
			return k.outSp, true
		}
	}
	return 0, false
}

// fuseEpilogue returns a kernel that runs k and then ep on each tile of k's output.
// The fused kernel takes k's inputs followed by ep's activations (nin is
// the number of k's inputs, absent ones included), and three outputs: k's
// own output, which it writes as k would, the epilogue's result, which may
// be the same memory, and ep.RegisterBytes(threads) bytes of working
// memory, 64-byte aligned, that no other run uses at the same time.
// threads is the size of the Workers it will run on. ok is false when k
// cannot take an epilogue.
func fuseEpilogue(k Kernel, ep *epilogue, nin, threads int) (Kernel, bool) {
	switch k := k.(type) {
	case *matmulKernel:
		if k.fuse != nil || ep.rowLen != k.n {
			return nil, false
		}
		f := *k
		f.lim, ep = ep.splitClamp()
		f.fuse = newFused(ep, nin, threads)
		return &f, true
	case *convKernel:
		if k.fuse != nil || ep.rowLen != k.outSp {
			return nil, false
		}
		f := *k
		switch {
		case k.tPath, k.wg != nil:
			// The kernels store a transposed output, or the Winograd
			// products: a clamp may run as the output is stored, a
			// residual of its layout may not.
			f.lim, ep = ep.splitClamp()
		case !k.depthwise:
			if r, rest := ep.splitResidual(); r >= 0 {
				f.res, ep = r+1, rest
			}
			f.lim, ep = ep.splitClamp()
		default:
			// Depthwise planes are clamped as the row-blocked kernels
			// store them, or right after each plane or group.
			f.lim, ep = ep.splitClamp()
		}
		f.fuse = newFused(ep, nin, threads)
		return &f, true
	}
	return nil, false
}

// tileRect is the part of C that tile t covers: rows [i0, i1), columns
// [j0, j1).
func (g *gemm) tileRect(t int) (i0, i1, j0, j1 int) {
	p0, p1, q0, q1 := g.tilePanels(t)
	return p0 * gemmMR, min(p1*gemmMR, g.m), q0 * gemmNR, min(q1*gemmNR, g.n)
}

// fuseAfter returns a kernel that runs k and then ep over k's whole
// output, in one more parallel pass instead of tile by tile: for a chain
// whose result may not be written while k still reads its inputs. Inputs
// and outputs are as for fuseEpilogue; rowLen (ep's) must divide k's output.
func fuseAfter(k Kernel, ep *epilogue, nin, threads int) Kernel {
	return &afterKernel{k: k, f: newFused(ep, nin, threads)}
}

// afterKernel runs an epilogue once its producer has finished.
type afterKernel struct {
	k Kernel
	f *fused
}

func (a *afterKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	a.k.Run(w, in[:a.f.nin], out[:1], scratch)
	rows := len(out[1]) / 4 / a.f.ep.rowLen
	parts := max(1, min(w.parts(rows*a.f.ep.rowLen*len(a.f.ep.instrs)), rows, a.f.shares))
	// One item per share, so that each share knows its registers.
	w.forArgs(parts, parts, a, args{int64(parts)}, in, out, scratch)
}

func (a *afterKernel) rangeArgs(in, out [][]byte, _ []byte, x args, lo, hi int) {
	rows, parts := len(out[1])/4/a.f.ep.rowLen, int(x[0])
	for share := lo; share < hi; share++ {
		r0, r1 := share*rows/parts, (share+1)*rows/parts
		a.f.tile(f32s(out[1]), f32s(out[0]), in, f32s(out[2]), share, r0, r1, 0, a.f.ep.rowLen)
	}
}
