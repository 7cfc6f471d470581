package cpu

import (
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// fusion is a producer step (MatMul, Gemm, Conv) that runs the elementwise
// steps right after it in the file's order as an epilogue on each tile of
// its output. The absorbed steps do not run; their intermediate values are
// never written.
//
// Fusions are decided before planning and each becomes one step of the
// plan (see merge): the producer's step reads what the epilogue reads and
// writes the chain's result, so the planner never keeps the producer's
// output and the chain's values live beside each other.
type fusion struct {
	kernel Kernel
	ext    []ir.TensorID // activations the epilogue reads
	result ir.TensorID   // the chain's last output, which the epilogue writes
	ops    []string      // the absorbed nodes' operators
	// regs is the bytes of the epilogue's registers, which each session
	// gives the kernel from a small buffer of its own.
	regs int
	// The fused step's scratch holds the kernel's own scratch (kernelBytes,
	// from offset 0) and then, in overwrite mode, its tile buffers (temp
	// bytes, from tempAt).
	kernelBytes, tempAt, temp int64
	// overwrite lists the activations the epilogue reads whose bytes the
	// result may take over (the kernel runs in overwrite mode).
	overwrite []ir.TensorID
	// plain is the kernel without overwrite mode, step and scratch the
	// fused step and its scratch tensor in the plan's problem (-1: none):
	// what pruneOverwrites needs to take overwrite mode back.
	plain         Kernel
	step, scratch int
}

// fuseTiles lets epilogues run tile by tile; tests clear it to run every
// epilogue once its producer is done.
var fuseTiles = true

// maxChain bounds how many steps one epilogue absorbs.
const maxChain = 16

// fuse finds the chains to absorb, in the file's order, and merges each
// into its producer's step of p (index maps the graph's tensors to p's,
// scratch holds each node's scratch bytes and is updated). A chain of the
// nodes s+1 … s+k joins the producer, node s, when every node of it is an
// elementwise float32 operator of the output's shape, its other operands
// are constants or activations written before node s (so the merged step
// makes no cycle), and every value of the chain but the last is read only
// inside the chain and is not a graph output.
func (e *Executable) fuse(p *plan.Problem, index []int, scratch []int64) {
	g := e.g
	readers := g.Consumers()
	isOut := g.OutputMask()
	producedAt := func(id ir.TensorID) int { return g.Tensors[id].Producer } // -1 for inputs and constants
	e.fusions = make(map[int]*fusion)
	e.prologues = make(map[int]*convPrologue)
	e.absorbed = make([]bool, len(g.Nodes))
	for s := 0; s < len(g.Nodes); s++ {
		n := &g.Nodes[s]
		e.fusePrologue(p, index, s, readers, isOut)
		rowLen, ok := fusedRowLen(e.kernels[s])
		if !ok || len(n.Outputs) != 1 || n.Outputs[0] == ir.NoTensor || isOut[n.Outputs[0]] {
			continue
		}
		y := n.Outputs[0]
		var chain []*ir.Node
		inChain := map[int]bool{}
		vals := map[ir.TensorID]bool{y: true}
		var closed []int // lengths at which the chain is closed
		for t := s + 1; t < len(g.Nodes) && len(chain) < maxChain; t++ {
			m := &g.Nodes[t]
			if !chainable(g, m, y, vals, producedAt, s) {
				break
			}
			chain = append(chain, m)
			inChain[t] = true
			vals[m.Outputs[0]] = true
			if closedChain(chain, y, readers, isOut, inChain) {
				closed = append(closed, len(chain))
			}
		}
		// The longest closed chain that compiles; a prefix that is not
		// closed would leave a value someone reads unwritten.
		for c := len(closed) - 1; c >= 0; c-- {
			best := closed[c]
			if f := e.tryFusion(s, y, rowLen, chain[:best], scratch[s], readers, isOut); f != nil {
				e.fusions[s] = f
				merge(p, index, s, y, chain[:best], f)
				scratch[s] = f.scratchBytes()
				for t := s + 1; t <= s+best; t++ {
					e.absorbed[t] = true
				}
				s += best
				break
			}
		}
	}
}

// convPrologue is a BatchNormalization, and maybe a Relu after it, that a
// pointwise Conv applies to its input while packing it: the Conv reads
// the normalisation's input instead, and the chain's values are never
// written.
type convPrologue struct {
	input ir.TensorID // what the Conv reads in place of its input 0
	ops   []string    // the absorbed nodes' operators
}

// fusePrologue gives node s, a Conv, the BatchNormalization (+ Relu)
// chain that computes its input as a prologue (withPrologue) when the
// chain's values are read by nothing else and are not graph outputs, and
// merges the chain into step s of p: the step reads the chain's input and
// writes the chain's values, which take no bytes, and the chain's steps
// read and write nothing.
func (e *Executable) fusePrologue(p *plan.Problem, index []int, s int, readers [][]int, isOut []bool) {
	g := e.g
	n := &g.Nodes[s]
	if n.Op != "Conv" || !n.DefaultDomain() || len(n.Inputs) == 0 {
		return
	}
	// Walk back from the Conv's input: a Relu, then a BatchNormalization.
	var chain []*ir.Node
	var nodes []int
	id := n.Inputs[0]
	for len(chain) < 2 && id != ir.NoTensor {
		w := g.Tensors[id].Producer
		if w < 0 || e.absorbed[w] || isOut[id] || len(readers[id]) != 1 || !g.Nodes[w].DefaultDomain() {
			break
		}
		m := &g.Nodes[w]
		if m.Op == "Relu" && len(chain) == 0 || m.Op == "BatchNormalization" {
			chain = append([]*ir.Node{m}, chain...)
			nodes = append([]int{w}, nodes...)
			if m.Op == "BatchNormalization" {
				break
			}
			id = m.Inputs[0]
			continue
		}
		break
	}
	if len(chain) == 0 || chain[0].Op != "BatchNormalization" {
		return
	}
	k, ok := withPrologue(e.kernels[s], g, chain)
	if !ok {
		return
	}
	x := chain[0].Inputs[0]
	pr := &convPrologue{input: x}
	for _, m := range chain {
		pr.ops = append(pr.ops, m.Op)
	}
	e.kernels[s], e.prologues[s] = k, pr
	st := &p.Steps[s]
	last := index[n.Inputs[0]]
	ins := st.Inputs[:0]
	for _, in := range st.Inputs {
		if in == last {
			in = index[x]
		}
		if !slices.Contains(ins, in) {
			ins = append(ins, in)
		}
	}
	st.Inputs = ins
	// The chain's values go after the Conv's output and before its
	// scratch, which FromGraph puts last.
	var vals []int
	for _, w := range nodes {
		e.absorbed[w] = true
		for _, o := range p.Steps[w].Outputs {
			p.Tensors[o].Size = 0
			vals = append(vals, o)
		}
		p.Steps[w].Inputs, p.Steps[w].Outputs, p.Steps[w].Pieces = nil, nil, nil
	}
	st.Outputs = slices.Insert(st.Outputs, 1, vals...)
}

// nodeInputs is what node i reads at run time: its inputs, with a
// prologue's input in place of input 0.
func (e *Executable) nodeInputs(i int) []ir.TensorID {
	ins := e.g.Nodes[i].Inputs
	if pr := e.prologues[i]; pr != nil {
		ins = slices.Clone(ins)
		ins[0] = pr.input
	}
	return ins
}

// merge makes step s of p (node s's; FromGraph gives each node its step)
// the fused step of f: it reads the epilogue's activations too, writes the
// chain's result first, then the producer's output y as a view of the
// result (the epilogue turns each tile of y into the result in place),
// the chain's other values, which are never written and take no bytes,
// and the scratch, which grows by the tile buffers of overwrite mode. The
// absorbed steps read and write nothing.
func merge(p *plan.Problem, index []int, s int, y ir.TensorID, chain []*ir.Node, f *fusion) {
	st := &p.Steps[s]
	z := index[f.result]
	for _, id := range f.ext {
		if j := index[id]; !slices.Contains(st.Inputs, j) {
			st.Inputs = append(st.Inputs, j)
		}
	}
	// The step writes y, a prologue's values, if any, and its scratch when
	// the kernel has some (FromGraph puts it last).
	sc := -1
	rest := st.Outputs[1:]
	if f.kernelBytes > 0 {
		sc, rest = rest[len(rest)-1], rest[:len(rest)-1]
	}
	outs := []int{z, index[y]}
	p.Tensors[index[y]].SetAlias(z)
	p.Tensors[index[y]].AliasOffset = 0
	for _, m := range chain[:len(chain)-1] {
		j := index[m.Outputs[0]]
		p.Tensors[j].Size = 0
		outs = append(outs, j)
	}
	outs = append(outs, rest...)
	for _, id := range f.overwrite {
		st.Overwrite = append(st.Overwrite, index[id])
	}
	if sc = stepScratch(p, st.Name, sc, f.scratchBytes()); sc >= 0 {
		outs = append(outs, sc)
	}
	st.Outputs = outs
	f.step, f.scratch = s, sc
	for t := s + 1; t <= s+len(chain); t++ {
		p.Steps[t].Inputs, p.Steps[t].Outputs, p.Steps[t].Pieces = nil, nil, nil
	}
}

// stepScratch gives the scratch tensor sc of step name (−1: none yet)
// need bytes, adding one where the step has none and needs some, and
// returns it (−1: none).
func stepScratch(p *plan.Problem, name string, sc int, need int64) int {
	if sc < 0 && need > 0 {
		sc = len(p.Tensors)
		p.Tensors = append(p.Tensors, plan.Tensor{Name: name + "/scratch", Size: need})
	}
	if sc >= 0 {
		p.Tensors[sc].Size = need
	}
	return sc
}

// chainable reports whether m can extend the chain after the producer of
// y whose values are vals: one output of y's type and shape, reading a
// chain value, every other input constant or computed before step s.
func chainable(g *ir.Graph, m *ir.Node, y ir.TensorID, vals map[ir.TensorID]bool, producedAt func(ir.TensorID) int, s int) bool {
	if !m.DefaultDomain() || !epilogueOp(m.Op) || len(m.Outputs) != 1 || m.Outputs[0] == ir.NoTensor {
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

// tryFusion compiles the epilogue of chain after node i, whose kernel
// uses kernelBytes of scratch; nil when the chain cannot be fused.
//
// When an activation the epilogue reads dies there in every schedule and
// has the result's type and size (a residual), the kernel runs in
// overwrite mode if it can (fuseOverwrite) and the plan may then give
// the result that activation's bytes; only where its tile buffers are
// small beside the result, so that the mode saves memory.
func (e *Executable) tryFusion(i int, y ir.TensorID, rowLen int, chain []*ir.Node, kernelBytes int64, readers [][]int, isOut []bool) *fusion {
	g := e.g
	ep, ext, err := newEpilogue(g, y, rowLen, chain)
	if err != nil {
		return nil
	}
	z := chain[len(chain)-1].Outputs[0]
	f := &fusion{ext: ext, result: z, kernelBytes: kernelBytes}
	for _, m := range chain {
		f.ops = append(f.ops, m.Op)
	}
	if fuseTiles {
		var dying []ir.TensorID
		for _, id := range ext {
			if e.diesAt(id, i, z, chain, readers, isOut) {
				dying = append(dying, id)
			}
		}
		if len(dying) > 0 {
			if k, temp, ok := fuseOverwrite(e.kernels[i], ep, len(g.Nodes[i].Inputs), e.threads); ok && 4*int64(temp) <= g.Tensor(z).Bytes() {
				f.kernel, f.overwrite = k, dying
				f.tempAt, f.temp = plan.AlignUp(kernelBytes, Alignment), int64(temp)
			}
		}
	}
	if fuseTiles {
		f.plain, _ = fuseEpilogue(e.kernels[i], ep, len(g.Nodes[i].Inputs), e.threads)
	}
	ok := f.kernel != nil
	if !ok && f.plain != nil {
		f.kernel, ok = f.plain, true
	}
	if !ok {
		f.kernel = fuseAfter(e.kernels[i], ep, len(g.Nodes[i].Inputs), e.threads)
	}
	f.regs = workBytes(f.kernel)
	return f
}

// maxPruneTrials bounds the plans pruneOverwrites makes, and
// pruneSteps the steps of all of them together, so that a large graph
// gets few (the same ones on every compile).
const (
	maxPruneTrials = 32
	pruneSteps     = 100_000
)

// pruneOverwrites takes overwrite mode back from the fused steps whose
// takeover does not lower the arena of pl, the plan of p made with opts,
// one at a time in the file's order, planning again each time: the mode
// computes tiles aside and costs time, which pays only where it lowers
// the peak. It returns the plan that stands.
func (e *Executable) pruneOverwrites(p *plan.Problem, pl *plan.Plan, opts plan.Options) *plan.Plan {
	trials := min(maxPruneTrials, pruneSteps/max(len(p.Steps), 1))
	var fs []*fusion
	for _, f := range e.fusions {
		if len(f.overwrite) > 0 && f.plain != nil {
			fs = append(fs, f)
		}
	}
	slices.SortFunc(fs, func(a, b *fusion) int { return a.step - b.step })
	for _, f := range fs[:min(len(fs), trials)] {
		st := &p.Steps[f.step]
		ow := st.Overwrite
		st.Overwrite = nil
		if f.scratch >= 0 {
			p.Tensors[f.scratch].Size = f.kernelBytes
		}
		if next, err := plan.Build(p, opts); err == nil && next.ArenaBytes <= pl.ArenaBytes {
			pl = next
			f.kernel, f.overwrite, f.temp, f.tempAt = f.plain, nil, 0, 0
			continue
		}
		st.Overwrite = ow
		if f.scratch >= 0 {
			p.Tensors[f.scratch].Size = f.scratchBytes()
		}
	}
	return pl
}

// scratchBytes is the fused step's scratch: the kernel's own and the tile
// buffers of overwrite mode.
func (f *fusion) scratchBytes() int64 {
	if f.temp > 0 {
		return f.tempAt + f.temp
	}
	return f.kernelBytes
}

// diesAt reports whether the activation id, read by the epilogue of node i
// whose result is z, is last read there in every schedule and may give
// its bytes to z: the same type and size as z, not a graph input or
// output, not read by node i itself, and every reader outside the chain
// an ancestor of node i.
func (e *Executable) diesAt(id ir.TensorID, i int, z ir.TensorID, chain []*ir.Node, readers [][]int, isOut []bool) bool {
	g := e.g
	t, zt := g.Tensor(id), g.Tensor(z)
	if isOut[id] || t.Producer < 0 || t.DType != zt.DType || t.Bytes() != zt.Bytes() || slices.Contains(e.nodeInputs(i), id) {
		return false
	}
	for _, r := range readers[id] {
		if r > i && r <= i+len(chain) {
			continue // a node of the chain
		}
		if !ancestor(g, r, i) {
			return false
		}
	}
	return true
}

// ancestor reports whether node a must run before node b: b reads,
// through some path, what a writes. Nodes are in topological order, so
// the search skips nodes before a.
func ancestor(g *ir.Graph, a, b int) bool {
	if a >= b {
		return false
	}
	seen := map[int]bool{b: true}
	stack := []int{b}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, id := range g.Nodes[n].Inputs {
			if id == ir.NoTensor {
				continue
			}
			p := g.Tensors[id].Producer
			if p == a {
				return true
			}
			if p > a && !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false
}
