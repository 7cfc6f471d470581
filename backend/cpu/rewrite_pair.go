package cpu

import (
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// merged is a step that also runs the steps after it that read its
// result: a pointwise convolution with the depthwise convolution reading
// its output (fusePair, pairUp), or attention's two products and the
// padding mask's Add and softmax between them (fuseAttention,
// attend). The steps in more are
// absorbed; the merged step binds its own node's inputs and outputs, then
// each absorbed node's, in order, and runs kernel on them.
type merged struct {
	kernel Kernel
	more   []int
	// folded lists the Transposes whose work the merged step does as it
	// reads or writes (attend): absorbed, binding nothing themselves.
	folded []int
}

// pairUp finds each step whose result only a depthwise convolution reads,
// a step that reads no other activation, and where fusePair takes the
// two kernels, merges the depthwise's step into it: the merged step reads
// both steps' inputs but the result, writes both steps' outputs, and one
// scratch for both, which holds the workers' buffers of the result, so
// that the result itself takes no bytes. It runs after fusion and
// the choice of layouts, before planning (index maps the graph's tensors
// to p's, scratch holds each node's scratch bytes and is updated).
func (e *Executable) pairUp(p *plan.Problem, index []int, scratch []int64) {
	g := e.g
	readers := g.Consumers()
	isOut := g.OutputMask()
	// kernel is the kernel node s runs and its result.
	kernel := func(s int) (k Kernel, y ir.TensorID) {
		k, y = e.kernels[s], ir.NoTensor
		if outs := g.Nodes[s].Outputs; len(outs) > 0 {
			y = outs[0]
		}
		if f := e.fusions[s]; f != nil {
			k, y = f.kernel, f.result
		}
		return k, y
	}
	e.merged = make(map[int]*merged)
	for s := range g.Nodes {
		if e.absorbed[s] || e.prologues[s] != nil || len(g.Nodes[s].Outputs) != 1 {
			continue
		}
		kpw, y := kernel(s)
		if y == ir.NoTensor || isOut[y] || len(readers[y]) != 1 {
			continue
		}
		d := readers[y][0]
		dn := &g.Nodes[d]
		if d == s || e.absorbed[d] || e.prologues[d] != nil || e.merged[d] != nil || len(dn.Inputs) == 0 || dn.Inputs[0] != y {
			continue
		}
		others := false
		for _, id := range dn.Inputs[1:] {
			others = others || id != ir.NoTensor && !g.Tensor(id).IsConst()
		}
		if f := e.fusions[d]; others || f != nil && len(f.ext) > 0 {
			continue
		}
		kdw, _ := kernel(d)
		nIn, nOut := e.stepArity(s)
		k, bytes, ok := fusePair(kpw, kdw, nIn, nOut, scratch[s], scratch[d], e.threads)
		if !ok {
			continue
		}
		e.merged[s] = &merged{kernel: k, more: []int{d}}
		mergePair(p, index, s, d, bytes)
		// The expansion's output lives in the workers' group buffers
		// only: it takes no bytes of the arena.
		p.Tensors[index[y]].Size = 0
		p.Tensors[index[g.Nodes[s].Outputs[0]]].Size = 0
		scratch[s], scratch[d] = bytes, 0
		e.absorbed[d] = true
	}
}

// mergePair makes step s of p the pair of steps s and d: it reads d's
// inputs too, except what s writes, and writes s's outputs, then d's,
// then one scratch of need bytes (s's or d's scratch tensor, resized, or
// a new one), last; step d reads and writes nothing.
func mergePair(p *plan.Problem, index []int, s, d int, need int64) {
	isIR := make([]bool, len(p.Tensors))
	for _, j := range index {
		if j >= 0 {
			isIR[j] = true
		}
	}
	ss, sd := &p.Steps[s], &p.Steps[d]
	sc := -1
	var outs []int
	for _, st := range []*plan.Step{ss, sd} {
		for _, t := range st.Outputs {
			if !isIR[t] && sc < 0 {
				sc = t
				continue
			}
			if !isIR[t] {
				// A second scratch: written, of no bytes (the last
				// output of the step is the one its kernel gets).
				p.Tensors[t].Size = 0
			}
			outs = append(outs, t)
		}
	}
	for _, j := range sd.Inputs {
		if !slices.Contains(outs, j) && !slices.Contains(ss.Inputs, j) {
			ss.Inputs = append(ss.Inputs, j)
		}
	}
	if sc = stepScratch(p, ss.Name, sc, need); sc >= 0 {
		outs = append(outs, sc)
	}
	ss.Outputs = outs
	sd.Inputs, sd.Outputs, sd.Pieces = nil, nil, nil
}
