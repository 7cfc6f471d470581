package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Control flow: If, Loop and Scan run their subgraphs with kernels built
// once, at Build. A subgraph's tensors live in its parent node's scratch,
// which the parent's plan places in the session's arena like any other
// tensor, with a lifetime spanning the parent node; so running a subgraph
// allocates nothing. Inside that scratch the subgraph's tensors are placed
// by package plan (in the subgraph's node order, views and in-place
// included, checked by plan.Verify), as a main graph's are in the arena.
// The branches of an If share one region, since only one of them runs.
//
// A Loop or Scan body may reuse the slot of one of its inputs once that
// input is dead: the kernels rewrite every body input (iteration number,
// condition, carried values, scan slices) before each run of the body,
// and read the final carried values from where they copied them.

// subprog is a subgraph compiled for the CPU.
type subprog struct {
	g       *ir.Graph
	kernels []Kernel
	refs    []tensorRef // by subgraph tensor ID
	scrOff  []int64     // by node: offset of its scratch in the region
	scrLen  []int64
	size    int64 // bytes of the region

	spare atomic.Pointer[binding] // a binding to reuse (see bind)
}

// tensorRef says where a subgraph tensor's bytes are at run time.
type tensorRef struct {
	kind   uint8  // refNone, refConst, refSlot, refOuter
	data   []byte // refConst: the aligned constant bytes
	off, n int64  // refSlot: the slot in the region
	outer  int    // refOuter: index in the parent node's inputs
}

const (
	refNone = iota
	refConst
	refSlot
	refOuter
)

// binding holds the slices of one run of a subprog: filled in place
// each run, allocated once and then reused.
type binding struct {
	tens    [][]byte
	in, out [][][]byte
	scr     [][]byte
}

// buildSubprog compiles sub, a subgraph of node n of g: a kernel per node
// and a memory plan for its tensors (package plan, in the subgraph's node
// order), which lays them out in a region of the parent's scratch.
func buildSubprog(c *buildContext, sub *ir.Graph) (*subprog, error) {
	p := &subprog{g: sub, refs: make([]tensorRef, len(sub.Tensors))}
	p.kernels = make([]Kernel, len(sub.Nodes))
	p.scrOff = make([]int64, len(sub.Nodes))
	p.scrLen = make([]int64, len(sub.Nodes))
	for i := range sub.Nodes {
		k, s, err := Build(sub, &sub.Nodes[i])
		if err != nil {
			return nil, c.errorf("subgraph %q: %v", sub.Name, err)
		}
		p.kernels[i], p.scrLen[i] = k, s
	}

	outer := make(map[string]int, c.n.Implicit)
	for i := c.n.Formal(); i < len(c.n.Inputs); i++ {
		outer[c.g.Tensor(c.n.Inputs[i]).Name] = i
	}
	// The planner sees the captures as inputs of the subgraph: they are
	// written before it runs and never by it. Their slots stay unused
	// (the kernels read the parent's bytes), which keeps every view or
	// in-place output of a capture in a slot of its own.
	pg := *sub
	pg.Inputs = append(append([]ir.TensorID(nil), sub.Inputs...), sub.Captures...)
	prob, index, err := plan.FromGraph(&pg, p.scrLen)
	if err != nil {
		return nil, c.errorf("subgraph %q: %v", sub.Name, err)
	}
	markInPlace(prob)
	pl, err := plan.Build(prob, plan.Options{Alignment: alignment, FileOrder: true})
	if err == nil {
		err = plan.Verify(prob, pl)
	}
	if err != nil {
		return nil, c.errorf("subgraph %q: %v", sub.Name, err)
	}
	isIR := make([]bool, len(prob.Tensors))
	for _, j := range index {
		if j >= 0 {
			isIR[j] = true
		}
	}
	for i := range sub.Nodes {
		if p.scrLen[i] == 0 {
			continue
		}
		for _, j := range prob.Steps[i].Outputs {
			if !isIR[j] {
				p.scrOff[i] = pl.Offsets[j]
			}
		}
	}
	isCapture := make([]bool, len(sub.Tensors))
	for _, id := range sub.Captures {
		isCapture[id] = true
	}
	for id := range sub.Tensors {
		t := &sub.Tensors[id]
		switch {
		case t.IsConst():
			d := t.Data
			if !raw.Aligned(d, alignment) {
				d = alignedBytes(int64(len(d)))
				copy(d, t.Data)
			}
			p.refs[id] = tensorRef{kind: refConst, data: d}
		case isCapture[id]:
			i, ok := outer[t.Name]
			if !ok {
				return nil, c.errorf("subgraph %q reads %q, which the node does not pass", sub.Name, t.Name)
			}
			p.refs[id] = tensorRef{kind: refOuter, outer: i}
		case index[id] >= 0:
			p.refs[id] = tensorRef{kind: refSlot, off: pl.Offsets[index[id]], n: t.Bytes()}
		}
	}
	for _, id := range sub.Outputs {
		if p.refs[id].kind == refNone {
			return nil, c.errorf("subgraph %q: output %q has no value", sub.Name, sub.Tensor(id).Name)
		}
	}
	p.size = pl.ArenaBytes
	return p, nil
}

// bind returns the slices of the subprog's tensors for a run with the
// parent's inputs in and the region region. The binding comes from the
// subprog's spare when free (so a steady stream of runs allocates nothing);
// release hands it back.
func (p *subprog) bind(in [][]byte, region []byte) *binding {
	b := p.spare.Swap(nil)
	if b == nil {
		b = &binding{tens: make([][]byte, len(p.refs)), in: make([][][]byte, len(p.kernels)), out: make([][][]byte, len(p.kernels)), scr: make([][]byte, len(p.kernels))}
		for i := range p.g.Nodes {
			b.in[i] = make([][]byte, len(p.g.Nodes[i].Inputs))
			b.out[i] = make([][]byte, len(p.g.Nodes[i].Outputs))
		}
	}
	for id, r := range p.refs {
		switch r.kind {
		case refConst:
			b.tens[id] = r.data
		case refOuter:
			b.tens[id] = in[r.outer]
		case refSlot:
			b.tens[id] = region[r.off : r.off+r.n : r.off+r.n]
		default:
			b.tens[id] = nil
		}
	}
	for i := range p.g.Nodes {
		n := &p.g.Nodes[i]
		for j, id := range n.Inputs {
			b.in[i][j] = nil
			if id != ir.NoTensor {
				b.in[i][j] = b.tens[id]
			}
		}
		for j, id := range n.Outputs {
			b.out[i][j] = nil
			if id != ir.NoTensor {
				b.out[i][j] = b.tens[id]
			}
		}
		b.scr[i] = region[p.scrOff[i] : p.scrOff[i]+p.scrLen[i] : p.scrOff[i]+p.scrLen[i]]
	}
	return b
}

func (p *subprog) release(b *binding) { p.spare.Store(b) }

// run runs every kernel of the subprog once.
func (p *subprog) run(w *Workers, b *binding) {
	for i, k := range p.kernels {
		k.Run(w, b.in[i], b.out[i], b.scr[i])
	}
}

// input and output return the bytes of the subgraph's i-th input / output.
func (p *subprog) input(b *binding, i int) []byte  { return b.tens[p.g.Inputs[i]] }
func (p *subprog) output(b *binding, i int) []byte { return b.tens[p.g.Outputs[i]] }

// ---- If ----

type ifKernel struct{ then, els *subprog }

func buildIf(c *buildContext) (Kernel, int64, error) {
	th, el := c.attrs().Graph("then_branch"), c.attrs().Graph("else_branch")
	if th == nil || el == nil {
		return nil, 0, c.errorf("needs then_branch and else_branch")
	}
	k := &ifKernel{}
	var err error
	if k.then, err = buildSubprog(c, th); err != nil {
		return nil, 0, err
	}
	if k.els, err = buildSubprog(c, el); err != nil {
		return nil, 0, err
	}
	for _, p := range []*subprog{k.then, k.els} {
		if len(p.g.Outputs) < len(c.n.Outputs) {
			return nil, 0, c.errorf("a branch has %d outputs, the node %d", len(p.g.Outputs), len(c.n.Outputs))
		}
	}
	return k, max(k.then.size, k.els.size), nil
}

func (k *ifKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	p := k.els
	if in[0][0] != 0 {
		p = k.then
	}
	b := p.bind(in, scratch)
	p.run(w, b)
	for i := range out {
		if out[i] != nil {
			copyDistinct(out[i], p.output(b, i))
		}
	}
	p.release(b)
}

// ---- Loop ----

// ErrCanceled is the value a Loop kernel panics with when its run is
// cancelled (Workers.Canceled) between two iterations; the executor turns
// it into the context's error.
var ErrCanceled = errors.New("run cancelled")

type loopKernel struct {
	body    *subprog
	carried int
	scans   int
	trips   int64 // static trip count that sized the scan outputs; -1 if none
	stage   int64 // offset in scratch of the staging area for carried values
}

func buildLoop(c *buildContext) (Kernel, int64, error) {
	body := c.attrs().Graph("body")
	if body == nil {
		return nil, 0, c.errorf("has no body")
	}
	p, err := buildSubprog(c, body)
	if err != nil {
		return nil, 0, err
	}
	k := &loopKernel{body: p, carried: c.n.Formal() - 2, trips: ir.LoopTrips(c.g, c.n)}
	k.scans = len(body.Outputs) - 1 - k.carried
	if k.carried < 0 || k.scans < 0 || len(body.Inputs) != 2+k.carried {
		return nil, 0, c.errorf("body does not match the node's inputs")
	}
	k.stage = int64(roundUp(int(p.size), alignment))
	var stage int64
	for i := 0; i < k.carried; i++ {
		stage += int64(roundUp(int(c.g.Tensor(c.n.Inputs[2+i]).Bytes()), alignment))
	}
	return k, k.stage + stage, nil
}

func (k *loopKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	p := k.body
	b := p.bind(in, scratch[:p.size])
	trips := int64(-1)
	if in[0] != nil {
		trips = max(int64(binary.LittleEndian.Uint64(in[0])), 0)
	}
	cond := in[1] == nil || in[1][0] != 0
	for i := 0; i < k.carried; i++ {
		copyDistinct(p.input(b, 2+i), in[2+i])
	}
	var it int64
	for ; (trips < 0 || it < trips) && cond; it++ {
		if w.Canceled() {
			p.release(b)
			panic(ErrCanceled)
		}
		binary.LittleEndian.PutUint64(p.input(b, 0), uint64(it))
		p.input(b, 1)[0] = 1
		p.run(w, b)
		cond = p.output(b, 0)[0] != 0
		for s := 0; s < k.scans; s++ {
			if o := outAt(out, k.carried+s); o != nil {
				v := p.output(b, 1+k.carried+s)
				copy(o[it*int64(len(v)):], v)
			}
		}
		k.carry(p, b, scratch, 1, 2)
	}
	if k.scans > 0 && it != k.trips {
		p.release(b)
		panic(fmt.Sprintf("Loop: ran %d of %d iterations; berth sizes scan outputs by the constant trip count, so the condition may not stop the loop early", it, k.trips))
	}
	for i := 0; i < k.carried && i < len(out); i++ {
		if out[i] != nil {
			copyDistinct(out[i], p.input(b, 2+i))
		}
	}
	p.release(b)
}

// carry copies the carried values from the body's outputs (from index
// firstOut) to its inputs (from firstIn) through the staging area, so
// that a body that permutes its carried values reads the old ones.
func (k *loopKernel) carry(p *subprog, b *binding, scratch []byte, firstOut, firstIn int) {
	carryStaged(p, b, scratch[k.stage:], k.carried, firstOut, firstIn)
}

func carryStaged(p *subprog, b *binding, stage []byte, count, firstOut, firstIn int) {
	off := 0
	for i := 0; i < count; i++ {
		v := p.output(b, firstOut+i)
		copy(stage[off:], v)
		off += roundUp(len(v), alignment)
	}
	off = 0
	for i := 0; i < count; i++ {
		dst := p.input(b, firstIn+i)
		copy(dst, stage[off:off+len(dst)])
		off += roundUp(len(dst), alignment)
	}
}

// ---- Scan ----

type scanKernel struct {
	body  *subprog
	l     *ir.ScanLayout
	batch int   // 1 unless batched (opset 8)
	steps int   // the scan length
	stage int64 // offset in scratch of the staging area for states
	// Per scan input and output: elements before the scan axis (outer),
	// and bytes after it (inner), within one batch entry.
	inOuter, inInner, outOuter, outInner []int
}

func buildScan(c *buildContext) (Kernel, int64, error) {
	l, err := ir.ScanLayoutOf(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	body := c.attrs().Graph("body")
	p, err := buildSubprog(c, body)
	if err != nil {
		return nil, 0, err
	}
	k := &scanKernel{body: p, l: l, batch: 1}
	split := func(t *ir.Tensor, axis int) (outer, length, inner int) {
		s := t.Shape
		if l.Batched {
			s = s[1:]
			axis = 0
		}
		outer = int(s[:axis].Elements())
		inner = int(s[axis+1:].Elements()) * t.DType.Size()
		return outer, int(s[axis]), inner
	}
	k.steps = -1
	for i := 0; i < l.Scans; i++ {
		t := c.g.Tensor(c.n.Inputs[l.First+l.States+i])
		if l.Batched {
			k.batch = int(t.Shape[0])
		}
		o, n, in := split(t, l.InAxes[i])
		k.inOuter, k.inInner, k.steps = append(k.inOuter, o), append(k.inInner, in), n
	}
	for j := 0; j < len(body.Outputs)-l.States; j++ {
		t := c.out(l.States + j)
		if t == nil {
			k.outOuter, k.outInner = append(k.outOuter, 0), append(k.outInner, 0)
			continue
		}
		o, _, in := split(t, l.OutAxes[j])
		k.outOuter, k.outInner = append(k.outOuter, o), append(k.outInner, in)
	}
	k.stage = int64(roundUp(int(p.size), alignment))
	var stage int64
	for i := 0; i < l.States; i++ {
		stage += int64(roundUp(int(body.Tensor(body.Inputs[i]).Bytes()), alignment))
	}
	return k, k.stage + stage, nil
}

func (k *scanKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	p, l := k.body, k.l
	b := p.bind(in, scratch[:p.size])
	for bi := 0; bi < k.batch; bi++ {
		// This batch entry's chunk of a tensor of the node.
		chunk := func(v []byte) []byte {
			n := len(v) / k.batch
			return v[bi*n : (bi+1)*n]
		}
		for i := 0; i < l.States; i++ {
			copy(p.input(b, i), chunk(in[l.First+i]))
		}
		for t := 0; t < k.steps; t++ {
			for i := 0; i < l.Scans; i++ {
				pos := t
				if l.InReverse[i] {
					pos = k.steps - 1 - t
				}
				src, dst, inner := chunk(in[l.First+l.States+i]), p.input(b, l.States+i), k.inInner[i]
				for o := 0; o < k.inOuter[i]; o++ {
					copy(dst[o*inner:(o+1)*inner], src[(o*k.steps+pos)*inner:])
				}
			}
			p.run(w, b)
			for j := range k.outOuter {
				if outAt(out, l.States+j) == nil {
					continue
				}
				pos := t
				if l.OutReverse[j] {
					pos = k.steps - 1 - t
				}
				src, dst, inner := p.output(b, l.States+j), chunk(out[l.States+j]), k.outInner[j]
				for o := 0; o < k.outOuter[j]; o++ {
					copy(dst[(o*k.steps+pos)*inner:(o*k.steps+pos+1)*inner], src[o*inner:])
				}
			}
			carryStaged(p, b, scratch[k.stage:], l.States, 0, 0)
		}
		for i := 0; i < l.States && i < len(out); i++ {
			if out[i] != nil {
				copy(chunk(out[i]), p.input(b, i))
			}
		}
	}
	p.release(b)
}
