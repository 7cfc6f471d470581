package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// blockLayouts chooses the activations that the CPU kernels hold in
// NCHW16c, sixteen channels of a position side by side (blockKernels), and
// gives their producers and readers the kernels that keep that layout:
// an activation is blocked when the step that writes it and every step
// that reads it can take it so (blockRoles), a residual that a
// convolution adds as it stores is blocked exactly when the result is,
// and it is not a graph input or output. In a ResNet these are the
// activations between the bottleneck blocks: their 1×1 convolutions then
// read and write sixteen channels of a position at a time instead of
// rows of planes far apart. Everything else keeps NCHW. It runs after
// fusion, before planning; the layouts take the same bytes.
func (e *Executable) blockLayouts(scratch []int64) error {
	g := e.g
	steps := len(g.Nodes)
	// owner maps a node absorbed into a fused chain to its fused step.
	owner := make([]int, steps)
	for s := range owner {
		owner[s] = s
		if e.absorbed != nil && e.absorbed[s] {
			owner[s] = -1
		}
	}
	for s, f := range e.fusions {
		for t := s + 1; t <= s+len(f.ops); t++ {
			owner[t] = s
		}
	}
	kernels := func(s int) []Kernel {
		ks := []Kernel{e.kernels[s]}
		if f := e.fusions[s]; f != nil {
			ks = append(ks, f.kernel)
			if f.plain != nil && f.plain != f.kernel {
				ks = append(ks, f.plain)
			}
		}
		return ks
	}
	// What each step can take blocked: every kernel it may run.
	type roles struct{ in, out bool }
	can := make([]roles, steps)
	result := make([]ir.TensorID, steps)
	residual := make([]ir.TensorID, steps)
	tied := make([]bool, steps)
	allIn := make([]bool, steps)
	for s := range steps {
		result[s], residual[s] = ir.NoTensor, ir.NoTensor
		if owner[s] != s || e.prologues[s] != nil || len(g.Nodes[s].Outputs) == 0 {
			continue
		}
		result[s] = g.Nodes[s].Outputs[0]
		// The kernels the step may run, with the scratch each gets.
		runs, bytes := []Kernel{e.kernels[s]}, scratch[s]
		if f := e.fusions[s]; f != nil {
			result[s], runs, bytes = f.result, kernels(s)[1:], f.kernelBytes
			if ri := residualInput(f.kernel); ri >= len(g.Nodes[s].Inputs) {
				residual[s] = f.ext[ri-len(g.Nodes[s].Inputs)]
			}
		}
		r := roles{true, true}
		for _, k := range runs {
			in, out := blockRoles(k, bytes)
			r.in, r.out = r.in && in, r.out && out
			tied[s] = tied[s] || blockTied(k)
			allIn[s] = allIn[s] || blockAllInputs(k)
		}
		can[s] = r
	}
	isOut := g.OutputMask()
	blocked := make([]bool, len(g.Tensors))
	readers := g.Consumers()
	for s := range steps {
		y := result[s]
		if y == ir.NoTensor || !can[s].out || isOut[y] || g.Tensors[y].DType != ir.Float32 || g.Tensors[y].Shape.Rank() != 4 {
			continue
		}
		ok := true
		for _, rn := range readers[y] {
			rs := owner[rn]
			switch {
			case rs < 0:
				ok = false
			case rs != rn:
				// An absorbed node: the residual its fused step adds.
				ok = ok && residual[rs] == y
			default:
				for i, id := range g.Nodes[rn].Inputs {
					if id == y && (i != 0 && !allIn[rn] || !can[rn].in) {
						ok = false
					}
				}
			}
		}
		blocked[y] = ok
	}
	input0 := func(s int) ir.TensorID {
		if ins := g.Nodes[s].Inputs; len(ins) > 0 {
			return ins[0]
		}
		return ir.NoTensor
	}
	// The inputs a step reads in its result's layout when tied: input 0,
	// or all of a concatenation's.
	tiedInputs := func(s int) []ir.TensorID {
		if allIn[s] {
			return g.Nodes[s].Inputs
		}
		return []ir.TensorID{input0(s)}
	}
	isBlocked := func(id ir.TensorID) bool { return id != ir.NoTensor && blocked[id] }
	for pruned := true; pruned; {
		// A residual shares its result's layout, and so does the input
		// of a step that takes both blocked or neither.
		for changed := true; changed; {
			changed = false
			for s := range steps {
				y := result[s]
				if y == ir.NoTensor {
					continue
				}
				pairs := []ir.TensorID{residual[s]}
				if tied[s] {
					pairs = append(pairs, tiedInputs(s)...)
				}
				for _, r := range pairs {
					if r != ir.NoTensor && blocked[r] != blocked[y] {
						blocked[r], blocked[y], changed = false, false, true
					}
				}
			}
		}
		pruned = e.pruneBlocked(blocked, result, residual, tiedInputs)
	}
	e.blocked = blocked
	for s := range steps {
		if result[s] == ir.NoTensor {
			continue
		}
		in, out := isBlocked(input0(s)), blocked[result[s]]
		if !in && !out {
			continue
		}
		var w []byte
		if ins := g.Nodes[s].Inputs; len(ins) > 1 && ins[1] != ir.NoTensor {
			w = g.Tensor(ins[1]).Data
		}
		ks, err := blockKernels(kernels(s), in, out, w)
		if err != nil {
			return err
		}
		e.kernels[s] = ks[0]
		if f := e.fusions[s]; f != nil {
			plain := f.plain == f.kernel
			f.kernel = ks[1]
			switch {
			case plain:
				f.plain = f.kernel
			case f.plain != nil:
				f.plain = ks[2]
			}
		}
		if e.release != nil && w != nil {
			e.release(w)
		}
	}
	return nil
}

// pruneBlocked unblocks the activations of every group of blocked
// activations (linked by the steps that read one and write another, or
// add one as a residual to another) in which no step both reads and
// writes NCHW16c: such a group only moves the transposes of a layout
// change into its producers and readers (as in MobileNetV2, whose
// expansions and projections meet depthwise layers in planes). It
// reports whether it unblocked any.
func (e *Executable) pruneBlocked(blocked []bool, result, residual []ir.TensorID, inputs func(int) []ir.TensorID) bool {
	parent := make([]int, len(blocked))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	both := make([]bool, len(blocked))
	for s, y := range result {
		if y == ir.NoTensor || !blocked[y] {
			continue
		}
		if r := residual[s]; r != ir.NoTensor && blocked[r] {
			parent[find(int(r))] = find(int(y))
		}
		for _, x := range inputs(s) {
			if x != ir.NoTensor && blocked[x] {
				parent[find(int(x))] = find(int(y))
				both[int(y)] = true
			}
		}
	}
	good := make([]bool, len(blocked))
	for i, b := range both {
		if b {
			good[find(i)] = true
		}
	}
	pruned := false
	for i, b := range blocked {
		if b && !good[find(i)] {
			blocked[i], pruned = false, true
		}
	}
	return pruned
}
