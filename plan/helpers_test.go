package plan_test

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/berth-ml/berth/plan"
)

// builder assembles problems for tests, one step at a time in file order.
type builder struct{ p plan.Problem }

func (b *builder) tensor(size int64) int {
	id := len(b.p.Tensors)
	b.p.Tensors = append(b.p.Tensors, plan.Tensor{Name: fmt.Sprintf("t%d", id), Size: size})
	return id
}

// input adds a graph input.
func (b *builder) input(size int64) int {
	id := b.tensor(size)
	b.p.Inputs = append(b.p.Inputs, id)
	return id
}

// step adds a step that reads ins and writes one new tensor per size.
func (b *builder) step(op string, ins []int, sizes ...int64) []int {
	var outs []int
	for _, s := range sizes {
		outs = append(outs, b.tensor(s))
	}
	b.p.Steps = append(b.p.Steps, plan.Step{Name: fmt.Sprintf("s%d", len(b.p.Steps)), Op: op, Inputs: ins, Outputs: outs})
	return outs
}

// op adds a step with one output.
func (b *builder) op(op string, size int64, ins ...int) int { return b.step(op, ins, size)[0] }

// viewOf is a tensor of size bytes that views tensor of from byte off on.
func viewOf(name string, size int64, of int, off int64) plan.Tensor {
	t := plan.Tensor{Name: name, Size: size, AliasOffset: off}
	t.SetAlias(of)
	return t
}

// view adds a step that views size bytes of in at offset off.
func (b *builder) view(in int, size, off int64) int {
	id := b.op("Reshape", size, in)
	b.p.Tensors[id].SetAlias(in)
	b.p.Tensors[id].AliasOffset = off
	return id
}

func (b *builder) output(ids ...int) { b.p.Outputs = append(b.p.Outputs, ids...) }

// randomSize spreads sizes over six orders of magnitude, with a few zeros
// and many sizes that are not multiples of any alignment.
func randomSize(rng *rand.Rand) int64 {
	switch rng.IntN(20) {
	case 0:
		return 0
	case 1, 2, 3:
		return 1 + rng.Int64N(100)
	default:
		return 1 + rng.Int64N(int64(1)<<(6+rng.IntN(15)))
	}
}

// randomProblem is a random DAG of about steps steps: several graph inputs
// and outputs, steps of one to three inputs and one or two outputs, scratch
// tensors nobody reads, whole views and slices, views of views, and
// Concats and Splits whose pieces SharePieces may have made views.
func randomProblem(rng *rand.Rand, steps int) *plan.Problem {
	b := &builder{}
	for range 1 + rng.IntN(3) {
		b.input(randomSize(rng))
	}
	pick := func() int { // mostly recent tensors, sometimes any
		n := len(b.p.Tensors)
		if rng.IntN(4) == 0 {
			return rng.IntN(n)
		}
		return max(0, n-1-rng.IntN(6))
	}
	var feats []int // the inputs of the last Concat, for chains of them
	for range steps {
		switch rng.IntN(10) {
		case 8: // a Concat
			feats = randomConcat(rng, b, feats, pick)
		case 9: // a Split or a Slice
			randomSplit(rng, b, pick())
		case 0: // a whole view
			in := pick()
			b.view(in, b.p.Tensors[in].Size, 0)
		case 1: // a slice
			in := pick()
			size := b.p.Tensors[in].Size
			off := rng.Int64N(size + 1)
			b.view(in, rng.Int64N(size-off+1), off)
		default:
			var ins []int
			for range 1 + rng.IntN(3) {
				ins = append(ins, pick())
			}
			op, sizes := "Op", []int64{randomSize(rng)}
			var overwrite []int
			switch rng.IntN(6) {
			case 0, 1: // one that may run in place
				op, sizes[0] = []string{"Relu", "Add", "Softmax"}[rng.IntN(3)], b.p.Tensors[ins[0]].Size
			case 2: // a fused producer that may overwrite its last input
				last := ins[len(ins)-1]
				sizes[0], overwrite = b.p.Tensors[last].Size, []int{last}
			}
			if rng.IntN(4) == 0 {
				sizes = append(sizes, randomSize(rng)) // a second output, or scratch
			}
			b.step(op, ins, sizes...)
			b.p.Steps[len(b.p.Steps)-1].Overwrite = overwrite
		}
	}
	for range 1 + rng.IntN(3) {
		b.output(pick())
	}
	// Turn pieces into views: all that may be shared, or those that do not
	// raise LOAD.
	share := plan.SharePieces
	if rng.IntN(2) == 0 {
		share = plan.ShareAllPieces
	}
	if err := share(&b.p); err != nil {
		panic(err)
	}
	return &b.p
}

// randomConcat adds a Concat with pieces: of new tensors of whole cache
// lines (which SharePieces may place in the output), of tensors picked
// anywhere, of the previous Concat's inputs again (a DenseNet chain), with
// now and then a gap (a constant input) or an input named twice. It
// returns the Concat's inputs.
func randomConcat(rng *rand.Rand, b *builder, feats []int, pick func() int) []int {
	var ins []int
	if len(feats) > 0 && rng.IntN(2) == 0 {
		ins = append(ins, feats...)
	}
	for range 1 + rng.IntN(3) {
		switch rng.IntN(5) {
		case 0:
			ins = append(ins, pick())
		case 1:
			if len(ins) > 0 {
				ins = append(ins, ins[rng.IntN(len(ins))])
				continue
			}
			fallthrough
		default:
			src := pick()
			ins = append(ins, b.op("Op", 64*(1+rng.Int64N(8)), src))
		}
	}
	var pieces []plan.Piece
	var off int64
	for _, in := range ins {
		if rng.IntN(8) == 0 {
			off += 64 * rng.Int64N(3) // a constant input's bytes
		}
		pieces = append(pieces, plan.Piece{Part: in, Offset: off})
		off += b.p.Tensors[in].Size
	}
	if rng.IntN(8) == 0 {
		off += 64
	}
	out := b.op("Concat", off, ins...)
	for i := range pieces {
		pieces[i].Whole = out
	}
	st := &b.p.Steps[len(b.p.Steps)-1]
	st.Pieces = pieces
	return ins
}

// randomSplit adds a Split of whole (or a Slice: one output) into runs of
// its bytes, mostly at multiples of a cache line.
func randomSplit(rng *rand.Rand, b *builder, whole int) {
	size := b.p.Tensors[whole].Size
	var cuts []int64
	for range 1 + rng.IntN(3) {
		c := rng.Int64N(size + 1)
		if rng.IntN(4) != 0 {
			c = c / 64 * 64
		}
		cuts = append(cuts, c)
	}
	cuts = append(cuts, 0, size)
	slices.Sort(cuts)
	var sizes []int64
	var pieces []plan.Piece
	for i := 1; i < len(cuts); i++ {
		if rng.IntN(5) == 0 {
			continue // bytes no output takes, as a Slice leaves
		}
		pieces = append(pieces, plan.Piece{Whole: whole, Offset: cuts[i-1]})
		sizes = append(sizes, cuts[i]-cuts[i-1])
	}
	if len(sizes) == 0 {
		return
	}
	outs := b.step("Split", []int{whole}, sizes...)
	for i := range pieces {
		pieces[i].Part = outs[i]
	}
	b.p.Steps[len(b.p.Steps)-1].Pieces = pieces
}

// randomOrder is a random topological order of p's steps.
func randomOrder(rng *rand.Rand, p *plan.Problem) []int {
	writer := make([]int, len(p.Tensors))
	for i := range writer {
		writer[i] = -1
	}
	for s, st := range p.Steps {
		for _, id := range st.Outputs {
			writer[id] = s
		}
	}
	waiting := make([]int, len(p.Steps))   // unfinished steps each step waits for
	readers := make([][]int, len(p.Steps)) // steps waiting for each step
	for s, st := range p.Steps {
		for _, id := range st.Inputs {
			if w := writer[id]; w >= 0 {
				waiting[s]++
				readers[w] = append(readers[w], s)
			}
		}
	}
	var ready, order []int
	for s := range p.Steps {
		if waiting[s] == 0 {
			ready = append(ready, s)
		}
	}
	for len(ready) > 0 {
		i := rng.IntN(len(ready))
		s := ready[i]
		ready[i] = ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		order = append(order, s)
		for _, r := range readers[s] {
			if waiting[r]--; waiting[r] == 0 {
				ready = append(ready, r)
			}
		}
	}
	return order
}
