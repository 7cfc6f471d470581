package plan_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/berth-ml/berth/plan"
)

// decodeProblem turns arbitrary bytes into a problem, valid or not: each
// record adds a graph input, a step, a view, an output, a Concat or Split
// with pieces, or a step updating state in place, with sizes and indices
// taken from the bytes.
func decodeProblem(b []byte) *plan.Problem {
	p := &plan.Problem{}
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		v := int(b[0])
		b = b[1:]
		return v
	}
	size := func() int64 { return int64(next())<<int(next()%12) - 16 } // sometimes negative
	pick := func() int {
		if len(p.Tensors) == 0 {
			return next() - 1 // an index that may not exist
		}
		return next() % (len(p.Tensors) + 1) // sometimes one past the end
	}
	for len(b) > 0 {
		switch next() % 8 {
		case 5, 6: // a Concat (5) or a Split (6) with pieces, valid or not
			var st plan.Step
			st.Op = "Concat"
			for range 1 + next()%3 {
				st.Inputs = append(st.Inputs, pick())
			}
			if len(b) > 0 && b[0]%2 == 1 {
				// a part written just before, which may move in
				p.Tensors = append(p.Tensors, plan.Tensor{Size: 64 * int64(next()%4)})
				p.Steps = append(p.Steps, plan.Step{Op: "Op", Inputs: []int{pick()}, Outputs: []int{len(p.Tensors) - 1}})
				st.Inputs = append(st.Inputs, len(p.Tensors)-1)
			}
			p.Tensors = append(p.Tensors, plan.Tensor{Size: size()})
			st.Outputs = []int{len(p.Tensors) - 1}
			parts, whole := st.Inputs, st.Outputs[0]
			if next()%7 == 6 {
				st.Op, st.Inputs, st.Outputs = "Split", []int{pick()}, nil
				for range 1 + next()%3 {
					p.Tensors = append(p.Tensors, plan.Tensor{Size: size()})
					st.Outputs = append(st.Outputs, len(p.Tensors)-1)
				}
				parts, whole = st.Outputs, st.Inputs[0]
			}
			var off int64
			for _, part := range parts {
				st.Pieces = append(st.Pieces, plan.Piece{Part: part, Whole: whole, Offset: off})
				if part >= 0 && part < len(p.Tensors) {
					off += p.Tensors[part].Size
				}
				off += int64(next()%3-1) * 64 // now and then a gap or an overlap
			}
			p.Steps = append(p.Steps, st)
		case 0:
			p.Tensors = append(p.Tensors, plan.Tensor{Size: size()})
			p.Inputs = append(p.Inputs, len(p.Tensors)-1)
		case 1, 2:
			var st plan.Step
			for range 1 + next()%3 {
				st.Inputs = append(st.Inputs, pick())
			}
			// Some steps may run in place: their first output has the
			// size of their first input.
			st.Op = []string{"", "Relu", "Add"}[next()%3]
			for k := range 1 + next()%2 {
				sz := size()
				if in := st.Inputs[0]; k == 0 && st.Op != "" && in >= 0 && in < len(p.Tensors) {
					sz = p.Tensors[in].Size
				}
				p.Tensors = append(p.Tensors, plan.Tensor{Size: sz})
				st.Outputs = append(st.Outputs, len(p.Tensors)-1)
			}
			p.Steps = append(p.Steps, st)
		case 3:
			in := pick()
			p.Tensors = append(p.Tensors, viewOf("", size(), in, int64(next())-8))
			p.Steps = append(p.Steps, plan.Step{Op: "Reshape", Inputs: []int{in}, Outputs: []int{len(p.Tensors) - 1}})
		case 4:
			p.Outputs = append(p.Outputs, pick())
		case 7: // an update of state in place (of one or two), valid or not
			st := plan.Step{Op: "CacheWrite"}
			for range 1 + next()%2 {
				s := pick()
				if next()%4 != 0 {
					p.State = append(p.State, s)
				}
				sz := size()
				if s >= 0 && s < len(p.Tensors) && next()%4 != 0 {
					sz = p.Tensors[s].Size
				}
				p.Tensors = append(p.Tensors, viewOf("", sz, s, int64(next()%3-1)*64))
				st.Inputs = append(st.Inputs, s)
				st.Outputs = append(st.Outputs, len(p.Tensors)-1)
				st.Updates = append(st.Updates, []int{len(p.Tensors) - 1, pick()}[next()%4/3])
			}
			st.Inputs = append(st.Inputs, pick())
			p.Steps = append(p.Steps, st)
		}
	}
	return p
}

// FuzzBuild plans arbitrary problems, their pieces shared by SharePieces:
// SharePieces or Build either refuses one with an error or Build returns a
// plan that Verify accepts and that is at least LOAD.
func FuzzBuild(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		f.Add(b)
	}
	f.Add([]byte{0, 10, 1, 1, 0, 0, 20, 3, 1, 4, 0, 4, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		// A hang is a failure too: past the deadline the process dies and
		// the fuzzer keeps the input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic("FuzzBuild: one input ran for 10 s") })
		defer watchdog.Stop()
		if len(b) > 4096 {
			return // large graphs are the benchmarks' business
		}
		p := decodeProblem(b)
		share := plan.SharePieces
		if len(b)%2 == 1 {
			share = plan.ShareAllPieces
		}
		if err := share(p); err != nil {
			return
		}
		pl, err := plan.Build(p, plan.Options{})
		if err != nil {
			return
		}
		if err := plan.Verify(p, pl); err != nil {
			t.Fatalf("Build's plan fails verification: %v", err)
		}
		if pl.ArenaBytes < pl.LoadBytes {
			t.Fatalf("arena %d below LOAD %d", pl.ArenaBytes, pl.LoadBytes)
		}
	})
}
