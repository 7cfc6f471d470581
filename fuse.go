package berth

import (
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
)

// fusion is a producer step (MatMul, Gemm, Conv) that runs the elementwise
// steps right after it in the plan's order as an epilogue on each tile of
// its output. The absorbed steps do not run; their intermediate tensors
// are never written.
type fusion struct {
	kernel cpu.Kernel
	ext    []ir.TensorID // activations the epilogue reads
	result ir.TensorID   // the chain's last output, which the epilogue writes
	ops    []string      // the absorbed nodes' operators
	regs   int           // bytes of working memory each session gives it
}

// fuseTiles lets epilogues run tile by tile where memory allows; tests
// clear it to run every epilogue once its producer is done.
var fuseTiles = true

// maxChain bounds how many steps one epilogue absorbs.
const maxChain = 16

// fuse finds the chains to absorb once the plan is known. A chain of steps
// s+1 … s+k joins the producer at step s of the order when every step of it
// is an elementwise float32 operator of the output's shape, its other
// operands are constants or activations computed before step s, every
// value of the chain but the last is read only inside the chain and is not
// a graph output, and the memory is safe: the chain's result must be the
// same bytes as, or apart from, the producer's output and the activations
// the epilogue reads (each element is read before it is written, never
// after). It runs tile by tile when it is also apart from what step s
// reads and from its scratch, else in one pass once the producer is done.
func (e *Executable) fuse() {
	g, order := e.g, e.plan.Order
	pos := make([]int, len(g.Nodes))
	for i := range pos {
		pos[i] = -1
	}
	for s, i := range order {
		pos[i] = s
	}
	readers := g.Consumers()
	isOut := make([]bool, len(g.Tensors))
	for _, id := range g.Outputs {
		isOut[id] = true
	}
	producedAt := func(id ir.TensorID) int { // step that writes id; -1 for inputs and constants
		if w := g.Tensors[id].Producer; w >= 0 {
			return pos[w]
		}
		return -1
	}
	e.fusions = make(map[int]*fusion)
	e.absorbed = make([]bool, len(g.Nodes))
	for s := 0; s < len(order); s++ {
		i := order[s]
		n := &g.Nodes[i]
		rowLen, ok := cpu.FusedRowLen(e.kernels[i])
		if !ok || len(n.Outputs) != 1 || n.Outputs[0] == ir.NoTensor || isOut[n.Outputs[0]] {
			continue
		}
		y := n.Outputs[0]
		var chain []*ir.Node
		inChain := map[int]bool{}
		vals := map[ir.TensorID]bool{y: true}
		var closed []int // lengths at which the chain is closed
		for t := s + 1; t < len(order) && len(chain) < maxChain; t++ {
			j := order[t]
			m := &g.Nodes[j]
			if !chainable(g, m, y, vals, producedAt, s) {
				break
			}
			chain = append(chain, m)
			inChain[j] = true
			vals[m.Outputs[0]] = true
			if closedChain(chain, y, readers, isOut, inChain) {
				closed = append(closed, len(chain))
			}
		}
		// The longest closed chain that compiles and is safe; a prefix
		// that is not closed would leave a value someone reads unwritten.
		for c := len(closed) - 1; c >= 0; c-- {
			best := closed[c]
			if f := e.tryFusion(i, y, rowLen, chain[:best]); f != nil {
				e.fusions[i] = f
				for _, j := range order[s+1 : s+1+best] {
					e.absorbed[j] = true
				}
				s += best
				break
			}
		}
	}
}

// chainable reports whether m can extend the chain after the producer of
// y whose values are vals: one output of y's type and shape, reading a
// chain value, every other input constant or computed before step s.
func chainable(g *ir.Graph, m *ir.Node, y ir.TensorID, vals map[ir.TensorID]bool, producedAt func(ir.TensorID) int, s int) bool {
	if m.Domain != "" && m.Domain != "ai.onnx" || !cpu.EpilogueOp(m.Op) || len(m.Outputs) != 1 || m.Outputs[0] == ir.NoTensor {
		return false
	}
	if z, yt := g.Tensor(m.Outputs[0]), g.Tensor(y); z.DType != yt.DType || !z.Shape.Equal(yt.Shape) {
		return false
	}
	reads := false
	for _, id := range m.Inputs {
		switch {
		case id == ir.NoTensor:
		case vals[id]:
			reads = true
		case g.Tensor(id).IsConst():
		case producedAt(id) >= s:
			return false
		}
	}
	return reads
}

// closedChain reports whether every value of the chain but its last is
// read only by the chain and is not a graph output.
func closedChain(chain []*ir.Node, y ir.TensorID, readers [][]int, isOut []bool, inChain map[int]bool) bool {
	vals := []ir.TensorID{y}
	for _, m := range chain[:len(chain)-1] {
		vals = append(vals, m.Outputs[0])
	}
	for _, v := range vals {
		if isOut[v] {
			return false
		}
		for _, r := range readers[v] {
			if !inChain[r] {
				return false
			}
		}
	}
	return true
}

// tryFusion compiles the epilogue of chain after node i and checks that
// its memory is safe; nil when it is not.
func (e *Executable) tryFusion(i int, y ir.TensorID, rowLen int, chain []*ir.Node) *fusion {
	g := e.g
	ep, ext, err := cpu.NewEpilogue(g, y, rowLen, chain)
	if err != nil {
		return nil
	}
	z := chain[len(chain)-1].Outputs[0]
	zs := e.layout.Slots[z]
	type span struct{ off, size int64 }
	disjoint := func(a, b span) bool { return a.off+a.size <= b.off || b.off+b.size <= a.off }
	zr := span{zs.Offset, zs.Size}
	slot := func(id ir.TensorID) (span, bool) {
		if id == ir.NoTensor || g.Tensor(id).IsConst() {
			return span{}, false
		}
		s := e.layout.Slots[id]
		return span{s.Offset, s.Size}, s.Offset >= 0
	}
	// The producer's output and the activations read: same or apart.
	for _, id := range append([]ir.TensorID{y}, ext...) {
		if r, ok := slot(id); ok && r != zr && !disjoint(zr, r) {
			return nil
		}
	}
	// Tile by tile only if the result is apart from what the producer's
	// step reads and from its scratch; else once the producer is done.
	tiled := fuseTiles
	for _, id := range g.Nodes[i].Inputs {
		if r, ok := slot(id); ok && !disjoint(zr, r) {
			tiled = false
		}
	}
	if t := e.scratch[i]; t >= 0 && !disjoint(zr, span{e.plan.Offsets[t], e.problem.Tensors[t].Size}) {
		tiled = false
	}
	var k cpu.Kernel
	ok := false
	if tiled {
		k, ok = cpu.Fuse(e.kernels[i], ep, len(g.Nodes[i].Inputs), e.threads)
	}
	if !ok {
		k = cpu.FuseAfter(e.kernels[i], ep, len(g.Nodes[i].Inputs), e.threads)
	}
	f := &fusion{kernel: k, ext: ext, result: z, regs: ep.RegisterBytes(e.threads)}
	for _, m := range chain {
		f.ops = append(f.ops, m.Op)
	}
	return f
}
