package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// Verify proves that pl is a sound plan for p, independently of Build:
//
//   - Order lists every step once, and every step reads only graph inputs
//     and tensors written by earlier steps; every tensor is written once;
//   - every view sits at its parent's offset plus its AliasOffset and lies
//     inside the true bytes of its root;
//   - every root's slot (its size rounded up to Alignment) starts at a
//     multiple of Alignment and ends within ArenaBytes;
//   - no two slots share a byte while both are live, except that the
//     first output of a step may take over exactly the slot of an input
//     under the rule of in-place execution (see Build): the input's slot
//     dies at that step, holds no graph input or output, and the step,
//     the two tensors' types and sizes allow it;
//   - every piece of a step (see Piece) whose part shares its whole's slot
//     sits exactly where the step copies it, and no byte of a slot is
//     written by two steps (see verifyPieces): a view written before its
//     root, a Concat's input placed in its output, keeps its bytes;
//   - LoadBytes is the LOAD of the schedule and ArenaBytes is not below it.
//
// Lifetimes are those Build documents: a slot is live from the first write
// of its root or any view of it (step 0 for graph inputs) to the last read
// of any of them (the last step for graph outputs).
func Verify(p *Problem, pl *Plan) error {
	if err := verify(p, pl); err != nil {
		return fmt.Errorf("plan: verify: %w", err)
	}
	return nil
}

func verify(p *Problem, pl *Plan) error {
	n := len(p.Tensors)
	if pl == nil || p == nil {
		return fmt.Errorf("no plan or no problem")
	}
	if len(pl.Offsets) != n {
		return fmt.Errorf("%d offsets for %d tensors", len(pl.Offsets), n)
	}
	align := pl.Alignment
	if align <= 0 {
		return fmt.Errorf("alignment %d is not positive", align)
	}
	if pl.ArenaBytes < 0 || pl.ArenaBytes%align != 0 {
		return fmt.Errorf("arena of %d bytes is not a multiple of the alignment %d", pl.ArenaBytes, align)
	}
	name := func(id int) string { return p.Tensors[id].Name }

	// Replay the schedule: each tensor's first write and last read.
	if len(pl.Order) != len(p.Steps) {
		return fmt.Errorf("schedule has %d steps, the problem %d", len(pl.Order), len(p.Steps))
	}
	ran := make([]bool, len(p.Steps))
	first := make([]int, n)
	last := make([]int, n)
	written := make([]bool, n)
	for _, id := range p.Inputs {
		if id < 0 || id >= n {
			return fmt.Errorf("graph input %d out of range", id)
		}
		written[id] = true
	}
	for t, s := range pl.Order {
		if s < 0 || s >= len(p.Steps) || ran[s] {
			return fmt.Errorf("schedule position %d: step %d out of range or run twice", t, s)
		}
		ran[s] = true
		st := &p.Steps[s]
		for _, id := range st.Inputs {
			if id < 0 || id >= n {
				return fmt.Errorf("step %s reads tensor %d, out of range", p.stepName(s), id)
			}
			if !written[id] {
				return fmt.Errorf("step %s (position %d) reads %q before any step writes it", p.stepName(s), t, name(id))
			}
			last[id] = t
		}
		for _, id := range st.Overwrite {
			if !slices.Contains(st.Inputs, id) {
				return fmt.Errorf("step %s overwrites tensor %d, which it does not read", p.stepName(s), id)
			}
		}
		for _, id := range st.Outputs {
			if id < 0 || id >= n {
				return fmt.Errorf("step %s writes tensor %d, out of range", p.stepName(s), id)
			}
			if written[id] {
				return fmt.Errorf("step %s writes %q, which is already written", p.stepName(s), name(id))
			}
			written[id] = true
			first[id], last[id] = t, t
		}
	}
	final := max(len(pl.Order), 1) - 1
	read := slices.Clone(last) // each tensor's last read (its write where none)
	for _, id := range p.Outputs {
		if id < 0 || id >= n {
			return fmt.Errorf("graph output %d out of range", id)
		}
		last[id] = final
	}
	if err := p.checkState(); err != nil {
		return err
	}
	for _, id := range p.State {
		last[id] = final
	}
	for id := range p.Tensors {
		if !written[id] {
			return fmt.Errorf("tensor %q is never written", name(id))
		}
		if p.Tensors[id].Size < 0 {
			return fmt.Errorf("tensor %q has negative size", name(id))
		}
	}

	// Views: find each root by walking the aliases (at most n links).
	root := make([]int, n)
	for id := range p.Tensors {
		r := id
		for links := 0; p.Tensors[r].Alias() >= 0; links++ {
			if links == n || p.Tensors[r].Alias() >= n {
				return fmt.Errorf("tensor %q: aliases lead nowhere or in a circle", name(id))
			}
			r = p.Tensors[r].Alias()
		}
		root[id] = r
	}
	for id := range p.Tensors {
		t := &p.Tensors[id]
		if t.Alias() < 0 {
			continue
		}
		if want := pl.Offsets[t.Alias()] + t.AliasOffset; pl.Offsets[id] != want {
			return fmt.Errorf("view %q is at %d, not at %q's offset plus %d (%d)", t.Name, pl.Offsets[id], name(t.Alias()), t.AliasOffset, want)
		}
		r := root[id]
		lo, hi := pl.Offsets[r], pl.Offsets[r]+p.Tensors[r].Size
		if pl.Offsets[id] < lo || pl.Offsets[id] > hi || t.Size > hi-pl.Offsets[id] {
			return fmt.Errorf("view %q [%d, +%d) is not inside its root %q [%d, %d)", t.Name, pl.Offsets[id], t.Size, name(r), lo, hi)
		}
		first[r] = min(first[r], first[id])
		last[r] = max(last[r], last[id])
	}

	if err := verifyPieces(p, pl, root); err != nil {
		return err
	}
	if err := verifyState(p, pl, root, read); err != nil {
		return err
	}

	// Roots: aligned slots inside the arena.
	var roots []int
	for id := range p.Tensors {
		if root[id] != id {
			continue
		}
		off, size := pl.Offsets[id], p.Tensors[id].Size
		if off < 0 || off%align != 0 {
			return fmt.Errorf("tensor %q is at %d, not a non-negative multiple of %d", name(id), off, align)
		}
		if off > pl.ArenaBytes || size > pl.ArenaBytes-off || AlignUp(size, align) > pl.ArenaBytes-off {
			return fmt.Errorf("tensor %q [%d, +%d) ends beyond the arena of %d bytes", name(id), off, size, pl.ArenaBytes)
		}
		if size > 0 {
			roots = append(roots, id)
		}
	}

	// An output may share the slot of an input of its step under the rule
	// of inPlace; the schedule's part of the rule is checked here.
	boundary := make([]bool, n) // the root is a graph input or output
	for _, id := range p.Inputs {
		boundary[root[id]] = true
	}
	for _, id := range p.Outputs {
		boundary[root[id]] = true
	}
	for _, id := range p.State {
		boundary[root[id]] = true
	}
	takesOver := func(t, out, r int) bool {
		s := pl.Order[t]
		if last[r] != t || boundary[r] || first[out] != t || AlignUp(p.Tensors[out].Size, align) != AlignUp(p.Tensors[r].Size, align) {
			return false
		}
		for _, in := range p.Steps[s].Inputs {
			if root[in] == r && pl.Offsets[in] == pl.Offsets[out] && inPlace(p, s, in, out) {
				return true
			}
		}
		return false
	}

	// Sweep the steps. live holds the slots live now, sorted by offset and
	// disjoint so far, so a new slot meets one of them exactly when it
	// meets its neighbour below or above. A slot taken over in place leaves
	// live as its new owner enters.
	slot := func(id int) (int64, int64) {
		return pl.Offsets[id], pl.Offsets[id] + AlignUp(p.Tensors[id].Size, align)
	}
	born := make([][]int, final+1)
	dies := make([][]int, final+1)
	for _, id := range roots {
		born[first[id]] = append(born[first[id]], id)
		dies[last[id]] = append(dies[last[id]], id)
	}
	handed := make([]bool, n) // the root's slot was taken over in place
	var live []int
	var load, bytes int64
	at := func(off int64) (int, bool) {
		return slices.BinarySearchFunc(live, off, func(id int, off int64) int { return cmp.Compare(pl.Offsets[id], off) })
	}
	for t := 0; t <= final; t++ {
		for _, id := range born[t] {
			lo, hi := slot(id)
			i, _ := at(lo)
			if i < len(live) && pl.Offsets[live[i]] == lo && takesOver(t, id, live[i]) {
				handed[live[i]] = true
				live[i] = id
				continue
			}
			for _, j := range []int{i - 1, i} {
				if j < 0 || j >= len(live) {
					continue
				}
				if jlo, jhi := slot(live[j]); jlo < hi && lo < jhi {
					return fmt.Errorf("tensors %q [%d, %d) and %q [%d, %d) overlap, both live at schedule position %d",
						name(live[j]), jlo, jhi, name(id), lo, hi, t)
				}
			}
			live = slices.Insert(live, i, id)
			bytes += hi - lo
		}
		load = max(load, bytes)
		for _, id := range dies[t] {
			if handed[id] {
				continue
			}
			lo, hi := slot(id)
			i, _ := at(lo)
			live = slices.Delete(live, i, i+1)
			bytes -= hi - lo
		}
	}

	if pl.LoadBytes != load {
		return fmt.Errorf("LoadBytes is %d, the schedule's LOAD is %d", pl.LoadBytes, load)
	}
	if pl.ArenaBytes < load {
		return fmt.Errorf("arena of %d bytes is below LOAD, %d bytes", pl.ArenaBytes, load)
	}
	return nil
}

// verifyState checks that the state takes the first bytes of the arena in
// its order (see Problem.State), and that no value a step updates in place
// (see Step.Updates) is read after the update: every tensor sharing the
// updated bytes that does not hold the new value (the update's output or
// a view of it) is read at or before the update's position. read gives
// each tensor's last read in schedule positions.
func verifyState(p *Problem, pl *Plan, root, read []int) error {
	var at int64
	for _, id := range p.State {
		if pl.Offsets[id] != at {
			return fmt.Errorf("state tensor %q is at %d, not at %d, after the state before it", p.Tensors[id].Name, pl.Offsets[id], at)
		}
		at += AlignUp(p.Tensors[id].Size, pl.Alignment)
	}
	for t, s := range pl.Order {
		for _, out := range p.Steps[s].Updates {
			for id := range p.Tensors {
				if root[id] != root[out] || read[id] <= t {
					continue
				}
				if !p.viewsOf(id, out) {
					return fmt.Errorf("%q is read at schedule position %d, after step %s updated its bytes at %d", p.Tensors[id].Name, read[id], p.stepName(s), t)
				}
			}
		}
	}
	return nil
}

// verifyPieces checks the pieces of every step (see Piece) against the
// plan: a part that shares its whole's slot sits exactly where the step
// copies it, so that the copy is one onto itself; and no byte of a slot is
// written by two steps, so that a value, once written, is never
// overwritten while the slot lives. A step writes all the bytes of its
// outputs but for
//
//   - a Split's or Slice's output in its input's slot: its bytes are its
//     input's already;
//   - the parts of a Concat's pieces in its output's slot: their producers
//     wrote them, and the Concat copies them onto themselves;
//   - a view of one of the step's own inputs (Reshape, Flatten …): its bytes
//     are that input's, written by the step that wrote those;
//   - a view of another output of its own step (a fused producer's output
//     inside the result of its epilogue): the step writes those bytes once
//     as that output.
//
// So a view that a Concat's producer writes straight into the Concat's
// output is written by that producer. root gives each tensor's root.
func verifyPieces(p *Problem, pl *Plan, root []int) error {
	n := len(p.Tensors)
	name := func(id int) string { return p.Tensors[id].Name }
	type run struct {
		lo, hi int64
		id     int
	}
	covered := make([][]run, n) // per Concat output: bytes its step copies onto themselves
	noop := make([]bool, n)     // a Split or Slice output in its input's slot
	whole := make([]bool, n)    // a Concat's output
	reads := make([]bool, n)    // a view whose alias is an input or another output of its own step
	sd := newSides(n)
	for s := range p.Steps {
		st := &p.Steps[s]
		sd.stamp(s, st)
		for _, id := range st.Outputs {
			if a := p.Tensors[id].Alias(); a >= 0 && (sd.in[a] == s || sd.out[a] == s) {
				reads[id] = true
			}
		}
		for _, pc := range st.Pieces {
			if err := p.checkPiece(sd, s, pc); err != nil {
				return fmt.Errorf("step %s: %w", p.stepName(s), err)
			}
			whole[pc.Whole] = whole[pc.Whole] || sd.concat(s, pc)
			if root[pc.Part] != root[pc.Whole] {
				continue // an ordinary copy between two slots
			}
			if at, want := pl.Offsets[pc.Part], pl.Offsets[pc.Whole]+pc.Offset; at != want {
				return fmt.Errorf("step %s copies %q to or from offset %d of %q, at %d, but it sits at %d, in the same slot",
					p.stepName(s), name(pc.Part), pc.Offset, name(pc.Whole), want, at)
			}
			if sd.concat(s, pc) {
				covered[pc.Whole] = append(covered[pc.Whole], run{pl.Offsets[pc.Part], pl.Offsets[pc.Part] + p.Tensors[pc.Part].Size, pc.Part})
			} else {
				noop[pc.Part] = true
			}
		}
	}

	// The runs each tensor's writer writes, by slot.
	var writes []run
	for id := range p.Tensors {
		t := &p.Tensors[id]
		lo, hi := pl.Offsets[id], pl.Offsets[id]+t.Size
		switch {
		case lo == hi || noop[id]:
		case !whole[id] && reads[id]:
		default:
			c := covered[id]
			slices.SortFunc(c, func(a, b run) int { return cmp.Compare(a.lo, b.lo) })
			for _, r := range c {
				if r.lo > lo {
					writes = append(writes, run{lo, min(r.lo, hi), id})
				}
				lo = max(lo, r.hi)
			}
			if lo < hi {
				writes = append(writes, run{lo, hi, id})
			}
		}
	}
	slices.SortFunc(writes, func(a, b run) int {
		return cmp.Or(cmp.Compare(root[a.id], root[b.id]), cmp.Compare(a.lo, b.lo))
	})
	for i := 1; i < len(writes); i++ {
		a, b := writes[i-1], writes[i]
		if root[a.id] == root[b.id] && b.lo < a.hi {
			return fmt.Errorf("the steps writing %q and %q both write bytes [%d, %d) of %q's slot",
				name(a.id), name(b.id), b.lo, min(a.hi, b.hi), name(root[a.id]))
		}
	}
	return nil
}
