package plan

import (
	"fmt"
	"slices"

	"github.com/berth-ml/berth/ir"
)

// Tensor is one activation the planner gives bytes to.
//
// A tensor is a root, which owns a slot of its own, unless SetAlias makes
// it a view of another tensor's bytes; the zero Tensor is a root.
type Tensor struct {
	Name string
	// Size is the true byte length. The slot is Size rounded up to the
	// alignment; the true size is what a view must fit in.
	Size int64
	// alias is one more than the index of the tensor whose bytes this one
	// views, and 0 for a root (see Alias and SetAlias).
	alias int
	// AliasOffset is the byte offset of a view inside the aliased tensor
	// (0 for reshape-like views).
	AliasOffset int64
	// DType is the element type (ir.Undefined when unknown). In-place
	// execution only hands an input's bytes to an output of the same type.
	DType ir.DType
}

// Alias returns the index of the tensor whose bytes t views, or -1 if t is
// a root.
func (t *Tensor) Alias() int { return t.alias - 1 }

// SetAlias makes t a view of the bytes of tensor of, at AliasOffset inside
// them; of = -1 makes t a root again.
func (t *Tensor) SetAlias(of int) { t.alias = of + 1 }

// IsView reports whether t views the bytes of another tensor.
func (t *Tensor) IsView() bool { return t.Alias() >= 0 }

// Step is one operator application: it reads its inputs and writes its
// outputs, all indices into Problem.Tensors.
type Step struct {
	Name, Op string
	// Domain is the operator set of Op: "" (or "ai.onnx") for ONNX's own
	// operators.
	Domain string
	// InPlace says that the device's kernel is correct when the step's
	// first output occupies exactly the bytes of any one of its inputs:
	// each element of the output is computed from the elements at the
	// same position of the inputs (and from values read before any output
	// is written), and is written only after those are read. The device
	// that builds the problem sets it for the operators whose kernels it
	// vouches for (see backend/cpu's inPlaceOps); the rest of the rule of
	// in-place execution (see Build) applies.
	InPlace bool
	Inputs  []int
	Outputs []int
	// Pieces are the runs of bytes the step copies whole between an input
	// and an output (see Piece); nil for most steps.
	Pieces []Piece
	// Overwrite lists inputs whose slot the step's first output may take
	// over in place although the step is not InPlace: the step reads
	// each element of such an input before it writes the element at the
	// same position of its first output, and never reads it after (a
	// producer running a residual Add as its epilogue, say). The input
	// must have the output's type and size; the rest of the rule of
	// in-place execution (see Build) applies as for any input.
	Overwrite []int
	// Updates lists the step's outputs that are new values of state
	// tensors (see Problem.State), written in place: each is a view of
	// all of the bytes of one of the step's inputs (its Alias), whose old
	// value must not be read after the step (Verify checks it).
	Updates []int
}

// A Piece says that after its step, tensor Part holds exactly the bytes of
// tensor Whole from byte Offset on: a Concat writes each input (a part)
// into its output (the whole) so, and a Split or a Slice writes each output
// (a part) from its input (the whole). One of Part and Whole is an input of
// the step and the other an output.
//
// Pieces let SharePieces place a part inside its whole, so that the step's
// copy of it is one onto itself and the part's bytes are shared, and let
// Verify check that a part sharing its whole's bytes sits exactly where
// the step copies it.
type Piece struct {
	Part, Whole int
	Offset      int64
}

// sides tells, for one step at a time, which tensors the step reads and
// which it writes, so that a piece's kind is found in constant time: stamp
// the step, then ask.
type sides struct{ in, out []int }

func newSides(n int) *sides {
	sd := &sides{in: make([]int, n), out: make([]int, n)}
	for i := range n {
		sd.in[i], sd.out[i] = -1, -1
	}
	return sd
}

// stamp records the inputs and outputs of step s, which must be in range.
func (sd *sides) stamp(s int, st *Step) {
	for _, id := range st.Inputs {
		sd.in[id] = s
	}
	for _, id := range st.Outputs {
		sd.out[id] = s
	}
}

// concat reports whether pc, a piece of the step s stamped last, is one a
// Concat makes: its part is an input and its whole an output.
func (sd *sides) concat(s int, pc Piece) bool { return sd.in[pc.Part] == s && sd.out[pc.Whole] == s }

// split reports whether pc, a piece of the step s stamped last, is one a
// Split or a Slice makes: its whole is an input and its part an output.
func (sd *sides) split(s int, pc Piece) bool { return sd.in[pc.Whole] == s && sd.out[pc.Part] == s }

// checkPiece reports what is wrong with pc, a piece of step s, stamped
// last in sd: a part or whole that is not a tensor of the step on the right
// sides, or a part that does not fit in the whole at its offset.
func (p *Problem) checkPiece(sd *sides, s int, pc Piece) error {
	n := len(p.Tensors)
	if pc.Part < 0 || pc.Part >= n || pc.Whole < 0 || pc.Whole >= n || pc.Part == pc.Whole {
		return fmt.Errorf("piece (%d of %d) names no two tensors", pc.Part, pc.Whole)
	}
	if !sd.concat(s, pc) && !sd.split(s, pc) {
		return fmt.Errorf("piece %q of %q: one must be an input of the step and the other an output",
			p.Tensors[pc.Part].Name, p.Tensors[pc.Whole].Name)
	}
	part, whole := p.Tensors[pc.Part].Size, p.Tensors[pc.Whole].Size
	if pc.Offset < 0 || pc.Offset > whole || part > whole-pc.Offset {
		return fmt.Errorf("piece %q (%d bytes at offset %d) does not fit in %q (%d bytes)",
			p.Tensors[pc.Part].Name, part, pc.Offset, p.Tensors[pc.Whole].Name, whole)
	}
	return nil
}

// Problem is what the planner packs: steps in the order the model file gave
// them and the activation tensors they read and write.
type Problem struct {
	Tensors []Tensor
	Steps   []Step
	Inputs  []int // graph inputs: live from before the first step
	Outputs []int // graph outputs: live until after the last step
	// State lists graph inputs whose values outlive the run (a language
	// model's cache of keys and values): they are live from before the
	// first step until after the last, and take the first bytes of the
	// arena, one after the other in this order, each slot aligned, so that
	// every plan of problems with the same state places it alike.
	State []int
}

// maxTotalBytes bounds the sum of all tensor sizes, so that no sum of slots,
// rounded up to any alignment up to maxAlignment, can overflow an int64.
const (
	maxTotalBytes = 1 << 60
	maxAlignment  = 1 << 30
)

// check reports the first way in which p is not a well-formed problem:
// indices out of range, a tensor written twice or never, a view that does
// not fit inside the tensor it aliases, a cycle of views, or a piece that
// is not one.
func (p *Problem) check() error {
	n := len(p.Tensors)
	var total int64
	for i := range p.Tensors {
		t := &p.Tensors[i]
		if t.Size < 0 {
			return fmt.Errorf("tensor %q has negative size %d", t.Name, t.Size)
		}
		if t.Size > maxTotalBytes-total {
			return fmt.Errorf("tensors hold more than %d bytes in all", int64(maxTotalBytes))
		}
		total += t.Size
		a := t.Alias()
		if a == -1 {
			continue
		}
		if a < -1 || a >= n || a == i {
			return fmt.Errorf("tensor %q: alias %d is not another tensor", t.Name, a)
		}
		base := &p.Tensors[a]
		if t.AliasOffset < 0 || t.AliasOffset > base.Size || t.Size > base.Size-t.AliasOffset {
			return fmt.Errorf("view %q (%d bytes at offset %d) does not fit in %q (%d bytes)",
				t.Name, t.Size, t.AliasOffset, base.Name, base.Size)
		}
	}
	if err := p.checkAliasCycles(); err != nil {
		return err
	}

	written := make([]bool, n)
	sd := newSides(n)
	for _, id := range p.Inputs {
		if id < 0 || id >= n {
			return fmt.Errorf("graph input %d out of range", id)
		}
		if p.Tensors[id].IsView() {
			return fmt.Errorf("graph input %q is a view", p.Tensors[id].Name)
		}
		written[id] = true
	}
	for s := range p.Steps {
		st := &p.Steps[s]
		for _, id := range st.Inputs {
			if id < 0 || id >= n {
				return fmt.Errorf("step %s: input %d out of range", p.stepName(s), id)
			}
		}
		for _, id := range st.Outputs {
			if id < 0 || id >= n {
				return fmt.Errorf("step %s: output %d out of range", p.stepName(s), id)
			}
			if written[id] {
				return fmt.Errorf("step %s: tensor %q is written twice", p.stepName(s), p.Tensors[id].Name)
			}
			written[id] = true
		}
		for _, id := range st.Overwrite {
			if !slices.Contains(st.Inputs, id) {
				return fmt.Errorf("step %s: overwrites tensor %d, which it does not read", p.stepName(s), id)
			}
		}
		if len(st.Pieces) > 0 {
			sd.stamp(s, st)
		}
		for _, pc := range st.Pieces {
			if err := p.checkPiece(sd, s, pc); err != nil {
				return fmt.Errorf("step %s: %w", p.stepName(s), err)
			}
		}
	}
	for _, id := range p.Outputs {
		if id < 0 || id >= n {
			return fmt.Errorf("graph output %d out of range", id)
		}
	}
	if err := p.checkState(); err != nil {
		return err
	}
	for i := range p.Tensors {
		if !written[i] {
			return fmt.Errorf("tensor %q is neither a graph input nor written by a step", p.Tensors[i].Name)
		}
	}
	return nil
}

// checkState checks that every state tensor is a graph input listed once
// and owns its bytes, and that every update (see Step.Updates) is an
// output of its step that views all of the bytes of an input of it, a
// state tensor.
func (p *Problem) checkState() error {
	isState := make(map[int]bool, len(p.State))
	for _, id := range p.State {
		if id < 0 || id >= len(p.Tensors) || !slices.Contains(p.Inputs, id) {
			return fmt.Errorf("state tensor %d is not a graph input", id)
		}
		if isState[id] || p.Tensors[id].IsView() {
			return fmt.Errorf("state tensor %q is listed twice or is a view", p.Tensors[id].Name)
		}
		isState[id] = true
	}
	for s := range p.Steps {
		st := &p.Steps[s]
		for _, id := range st.Updates {
			if !slices.Contains(st.Outputs, id) {
				return fmt.Errorf("step %s updates tensor %d, which is not its output", p.stepName(s), id)
			}
			out := &p.Tensors[id]
			in := out.Alias()
			if !slices.Contains(st.Inputs, in) || out.AliasOffset != 0 || out.Size != p.Tensors[in].Size {
				return fmt.Errorf("step %s: its update %q is not a view of all of an input", p.stepName(s), out.Name)
			}
			if r, _ := wholeRoot(p, in); !isState[r] {
				return fmt.Errorf("step %s updates %q, which is not state", p.stepName(s), p.Tensors[in].Name)
			}
		}
	}
	return nil
}

// stateBytes is the bytes the state takes at the start of the arena.
func (p *Problem) stateBytes(align int64) int64 {
	var b int64
	for _, id := range p.State {
		b += AlignUp(p.Tensors[id].Size, align)
	}
	return b
}

// checkAliasCycles rejects views that, following Alias, come back to
// themselves.
func (p *Problem) checkAliasCycles() error {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(p.Tensors))
	for i := range p.Tensors {
		j := i
		for state[j] == unseen && p.Tensors[j].IsView() {
			state[j] = onPath
			j = p.Tensors[j].Alias()
		}
		if state[j] == onPath {
			return fmt.Errorf("tensor %q is a view of itself through a cycle of aliases", p.Tensors[j].Name)
		}
		for j = i; state[j] == onPath; j = p.Tensors[j].Alias() {
			state[j] = done
		}
		state[j] = done
	}
	return nil
}

// checkOrder reports whether order is a schedule of p: every step exactly
// once, and every step after the writers of what it reads.
func (p *Problem) checkOrder(order []int) error {
	if len(order) != len(p.Steps) {
		return fmt.Errorf("%d steps listed, the problem has %d", len(order), len(p.Steps))
	}
	scheduled := make([]bool, len(p.Steps))
	written := make([]bool, len(p.Tensors))
	for _, id := range p.Inputs {
		written[id] = true
	}
	// The updates of state run so far (see Step.Updates): a step after
	// one may read the state's bytes only through its new value.
	var updated [][2]int // root, the update's output
	for _, s := range order {
		if s < 0 || s >= len(p.Steps) || scheduled[s] {
			return fmt.Errorf("step %d out of range or listed twice", s)
		}
		scheduled[s] = true
		for _, id := range p.Steps[s].Inputs {
			if !written[id] {
				return fmt.Errorf("step %s reads %q before it is written", p.stepName(s), p.Tensors[id].Name)
			}
			if len(updated) == 0 {
				continue
			}
			r, _ := p.rootOf(id)
			for _, u := range updated {
				if r == u[0] && !p.viewsOf(id, u[1]) {
					return fmt.Errorf("step %s reads %q after an update wrote over it", p.stepName(s), p.Tensors[id].Name)
				}
			}
		}
		for _, id := range p.Steps[s].Outputs {
			written[id] = true
		}
		for _, id := range p.Steps[s].Updates {
			r, _ := p.rootOf(id)
			updated = append(updated, [2]int{r, id})
		}
	}
	return nil
}

// viewsOf reports whether id is of, or a view of it through its aliases.
// p must have no cycle of aliases (check refuses them).
func (p *Problem) viewsOf(id, of int) bool {
	for j := id; j >= 0; j = p.Tensors[j].Alias() {
		if j == of {
			return true
		}
	}
	return false
}

// stepName names step s for messages.
func (p *Problem) stepName(s int) string {
	if name := p.Steps[s].Name; name != "" {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("#%d (%s)", s, p.Steps[s].Op)
}

// AlignUp rounds n up to a multiple of a.
func AlignUp(n, a int64) int64 { return (n + a - 1) / a * a }
