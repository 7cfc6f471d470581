package plan

import (
	"cmp"
	"fmt"
	"slices"
)

// PieceAlignment is the byte alignment SharePieces wants of a part's
// offset inside its whole: the kernels that write a part there (and the
// CUDA backend's vector loads of it) then see the alignment they would see
// at the start of a slot of their own.
const PieceAlignment = 64

// maxSharedPieces bounds the pieces of a step whose parts SharePieces
// shares: deciding one part looks at every input and piece of its step.
const maxSharedPieces = 256

// shareBudget bounds the work SharePieces spends on measuring LOAD, in
// tensors and steps looked at: each measure looks at all of them, and the
// budget allows a few thousand measures of a graph of a thousand steps
// (DenseNet-121 needs a few hundred) and a few dozen, a quarter of a
// second, of a graph of 100k steps.
const shareBudget = 10_000_000

// SharePieces turns pieces (see Piece) into views, so that a Concat's
// producers write straight into their part of its output and a Split's or
// a Slice's outputs read their input's bytes, and the step's copy becomes
// one onto itself. It walks the steps in p's order and shares what it can
// under the rules below, keeping a view only if it does not raise LOAD (of
// p's order, with the outputs that run in place, at DefaultAlignment): a
// part placed inside its whole reserves the whole from the part's write
// on, and keeps the whole's readers from running in place over it, which
// can cost more than the copy saves. The parts of one Concat are tried all
// at once first, as they often pay only together, then one by one. Steps
// of more than maxSharedPieces pieces are left alone, and once measuring
// LOAD has used up its budget (shareBudget), so is the rest. SharePieces
// returns an error only for a problem that is not well formed.
//
// A Split or Slice output P becomes a view of its input W at the piece's
// offset when P owns bytes, has W's element type, is named once by the
// step, the offset is a multiple of PieceAlignment, and no tensor of P's
// slot is a graph input or output.
//
// For a Concat writing W, let R be the root (the tensor that owns the
// bytes) of one of its inputs. R, with all the tensors that view it,
// becomes a view of W when
//
//   - R is not W's root, owns bytes, has W's element type and is not, nor
//     is any tensor of its slot, a graph input or output, nor an output of
//     the step;
//   - every input of the step that lives in R's bytes is the part of a
//     piece into W, each named once, and all of them put R at the same
//     offset d of W (the part's offset in W less its offset in R);
//   - those parts together cover R exactly, and no other piece into W
//     meets R's bytes there: each byte of R is then a byte the Concat
//     copies onto itself;
//   - d is a multiple of PieceAlignment.
//
// When R is the input itself, this makes the input a view of W at its
// piece's offset. When the input already views an earlier Concat's output
// R (DenseNet concatenates every earlier feature map again, layer after
// layer), R moves into W whole, and a chain of Concats becomes one buffer.
//
// A view that SharePieces makes keeps its root's slot reserved from the
// first write of any tensor in it to the last read, like any view (see
// Build); Verify checks that the parts sit where their steps copy them and
// that no two steps write the same bytes of a slot.
func SharePieces(p *Problem) error { return sharePieces(p, true) }

// sharePieces is SharePieces; with guard false it shares all it may,
// whatever that does to LOAD (for tests that want many shared views).
func sharePieces(p *Problem, guard bool) error {
	if err := p.check(); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	n := len(p.Tensors)
	// pinned: a root whose slot holds a graph input or output; kept up to
	// date for roots only.
	pinned := make([]bool, n)
	for _, ids := range [][]int{p.Inputs, p.Outputs} {
		for _, id := range ids {
			r, _ := p.rootOf(id)
			pinned[r] = true
		}
	}
	aligned := func(off int64) bool { return off%PieceAlignment == 0 }

	// Each view is kept only if it does not raise LOAD; beyond the budget,
	// no more are made.
	order := fileOrder(p, 0)
	load := func() int64 { return analyze(p, order, true, inPlace).load(p, DefaultAlignment) }
	budget := shareBudget
	cost := 2*len(p.Tensors) + len(p.Steps) + 1
	best := int64(-1)
	// A move makes tensor id a view of alias at off.
	type move struct {
		id, alias, oldAlias int
		off, oldOff         int64
	}
	apply := func(ms []move) {
		for i := range ms {
			t := &p.Tensors[ms[i].id]
			ms[i].oldAlias, ms[i].oldOff = t.Alias(), t.AliasOffset
			t.SetAlias(ms[i].alias)
			t.AliasOffset = ms[i].off
		}
	}
	undo := func(ms []move) {
		for i := len(ms) - 1; i >= 0; i-- {
			t := &p.Tensors[ms[i].id]
			t.SetAlias(ms[i].oldAlias)
			t.AliasOffset = ms[i].oldOff
		}
	}
	// try makes the moves, and takes them back (and reports false) if
	// that raises LOAD or the budget is spent.
	try := func(ms []move) bool {
		if len(ms) == 0 {
			return true
		}
		if !guard {
			apply(ms)
			return true
		}
		if best < 0 {
			best = load()
			budget -= cost
		}
		if budget < cost {
			return false
		}
		budget -= cost
		apply(ms)
		if l := load(); l <= best {
			best = l
			return true
		}
		undo(ms)
		return false
	}

	sd := newSides(n)
	for s := range p.Steps {
		st := &p.Steps[s]
		if len(st.Pieces) == 0 || len(st.Pieces) > maxSharedPieces {
			continue
		}
		sd.stamp(s, st)
		// A Split or a Slice: each output may view its input.
		for _, pc := range st.Pieces {
			part := &p.Tensors[pc.Part]
			if !sd.split(s, pc) || part.IsView() || pinned[pc.Part] || part.Size == 0 ||
				part.DType != p.Tensors[pc.Whole].DType || !aligned(pc.Offset) || countPart(st, pc.Part) != 1 {
				continue
			}
			if r, _ := p.rootOf(pc.Whole); r == pc.Part {
				continue
			}
			try([]move{{id: pc.Part, alias: pc.Whole, off: pc.Offset}})
		}
		// A Concat: each root its inputs live in may move into the
		// output. All at once first, as the parts of one output often pay
		// only together (each alone reserves the whole while the others
		// still hold bytes of their own); else one by one, twice over, as
		// one that raised LOAD alone may not once others have moved.
		movable := func() []move {
			var ms []move
			for _, pc := range st.Pieces {
				if !sd.concat(s, pc) {
					continue
				}
				r, _ := p.rootOf(pc.Part)
				rw, _ := p.rootOf(pc.Whole)
				if slices.ContainsFunc(ms, func(m move) bool { return m.id == r }) {
					continue
				}
				if d, ok := p.movable(sd, s, pc.Whole, r, rw, pinned); ok && aligned(d) {
					ms = append(ms, move{id: r, alias: pc.Whole, off: d})
				}
			}
			return ms
		}
		if all := movable(); len(all) <= 1 || !try(all) {
			for range 2 {
				for _, m := range movable() {
					try([]move{m})
				}
			}
		}
	}
	return nil
}

// movable reports whether root r may become a view of w, the whole of
// concat pieces of step s (stamped last in sd) whose root is rw, and at
// which offset (see SharePieces).
func (p *Problem) movable(sd *sides, s, w, r, rw int, pinned []bool) (int64, bool) {
	st := &p.Steps[s]
	R := &p.Tensors[r]
	if r == rw || R.IsView() || pinned[r] || R.Size == 0 || R.DType != p.Tensors[w].DType {
		return 0, false
	}
	for _, id := range st.Outputs {
		if rr, _ := p.rootOf(id); rr == r {
			return 0, false
		}
	}
	// The inputs living in r's bytes, each a part of exactly one piece
	// into w, all putting r at the same offset d.
	type run struct{ lo, hi int64 }
	var mine []run
	d, found := int64(0), false
	for _, id := range st.Inputs {
		if rr, _ := p.rootOf(id); rr != r {
			continue
		}
		k := -1
		for j, pc := range st.Pieces {
			if pc.Part == id && pc.Whole == w {
				if k >= 0 {
					return 0, false // the part is copied twice
				}
				k = j
			}
		}
		if k < 0 || countPart(st, id) != 1 {
			return 0, false
		}
		_, at := p.rootOf(id) // id's offset inside r
		pc := st.Pieces[k]
		if dd := pc.Offset - at; !found {
			d, found = dd, true
		} else if dd != d {
			return 0, false
		}
		mine = append(mine, run{pc.Offset, pc.Offset + p.Tensors[id].Size})
	}
	if !found || d < 0 || d > p.Tensors[w].Size || R.Size > p.Tensors[w].Size-d {
		return 0, false
	}
	// Those parts cover [d, d+R.Size) exactly, and no other piece into w
	// meets it.
	slices.SortFunc(mine, func(a, b run) int { return cmp.Compare(a.lo, b.lo) })
	reach := d
	for _, m := range mine {
		if m.lo > reach {
			return 0, false // a byte of r the Concat would write from elsewhere
		}
		reach = max(reach, m.hi)
	}
	if reach != d+R.Size {
		return 0, false
	}
	for _, pc := range st.Pieces {
		if pc.Whole != w || !sd.concat(s, pc) {
			continue
		}
		if rr, _ := p.rootOf(pc.Part); rr == r {
			continue
		}
		if lo, hi := pc.Offset, pc.Offset+p.Tensors[pc.Part].Size; lo < d+R.Size && d < hi && lo < hi {
			return 0, false
		}
	}
	return d, true
}

// countPart is how many times id is an input or output of st.
func countPart(st *Step, id int) int {
	c := 0
	for _, ids := range [][]int{st.Inputs, st.Outputs} {
		for _, j := range ids {
			if j == id {
				c++
			}
		}
	}
	return c
}

// rootOf follows id's aliases to the tensor that owns its bytes and returns
// it with id's byte offset inside it. p must have no cycle of aliases.
func (p *Problem) rootOf(id int) (root int, off int64) {
	for p.Tensors[id].Alias() >= 0 {
		off += p.Tensors[id].AliasOffset
		id = p.Tensors[id].Alias()
	}
	return id, off
}
