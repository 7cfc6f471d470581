package cuda

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/onnx/onnxtest"
	"github.com/berth-ml/berth/passes"
	"github.com/berth-ml/berth/plan"
)

// h200 is an H200 as front sees it: 132 multiprocessors of compute
// capability 9.0, cuBLAS as blas says.
func h200(blas bool) target { return target{sms: 132, major: 9, blas: blas} }

// preparedAt imports the model in bytes (or, where bytes is nil, the
// file at path) with its input "image" at shape and prepares it as Load
// does: a shape-generic graph (passes.ShapeGeneric), kept as
// openModel.keepGeneric keeps it.
func preparedAt(t testing.TB, path string, bytes []byte, shape []int64) *ir.Graph {
	t.Helper()
	opts := onnx.ImportOptions{InputShapes: map[string][]int64{"image": shape}}
	var m *onnx.Model
	var err error
	if bytes != nil {
		m, err = onnx.ImportBytesWith(bytes, "", opts)
	} else {
		m, err = onnx.ImportWith(path, opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := passes.Prepare(m.Graph, cpu.Evaluate); err != nil {
		t.Fatal(err)
	}
	if !passes.ShapeGeneric(m.Graph) {
		t.Fatalf("%s: the prepared graph is not shape-generic", path)
	}
	return passes.Clone(m.Graph)
}

// resNetShapes is the input shapes of a ResNet within 1×3×320×320: every
// square side from 312 down to 168 in steps of 8, and a few oblongs.
func resNetShapes() [][]int64 {
	var s [][]int64
	for side := int64(312); side >= 168; side -= 8 {
		s = append(s, []int64{1, 3, side, side})
	}
	return append(s, []int64{1, 3, 320, 168}, []int64{1, 3, 168, 320}, []int64{1, 3, 200, 256}, []int64{1, 3, 248, 176})
}

// reinferredAt is the shape-generic graph gen re-inferred at each of
// shapes (of its one input), as an open model does at a new shape.
func reinferredAt(t testing.TB, gen *ir.Graph, shapes [][]int64) []*ir.Graph {
	t.Helper()
	var graphs []*ir.Graph
	for _, s := range shapes {
		g, err := passes.Reinfer(gen, [][]int64{s})
		if err != nil {
			t.Fatalf("%v: %v", s, err)
		}
		graphs = append(graphs, g)
	}
	return graphs
}

// refitCase is a shape-generic model, its bound and shapes within it.
type refitCase struct {
	name   string
	path   string // the model file, or
	bytes  []byte // the model's bytes
	bound  []int64
	shapes [][]int64
}

// resNet50 is onnxtest.ResNet50 at its full width, made once.
var resNet50 = sync.OnceValue(func() []byte { return onnxtest.ResNet50(1, 1) })

// refitCases is testdata/open's CNNs, bound at a batch of four, and
// ResNet-50, bound at a batch of one and at four.
func refitCases() []refitCase {
	open := func(name string) string { return filepath.Join("..", "..", "testdata", "open", name, "model.onnx") }
	small := [][]int64{{1, 3, 32, 32}, {2, 3, 29, 41}, {1, 3, 17, 23}, {4, 3, 64, 48}, {3, 3, 40, 40}, {1, 3, 8, 8}, {4, 3, 63, 64}}
	return []refitCase{
		{name: "cnn", path: open("cnn"), bound: []int64{4, 3, 64, 64}, shapes: small},
		{name: "cnnext", path: open("cnnext"), bound: []int64{4, 3, 64, 64}, shapes: small},
		{name: "resnet50", bytes: resNet50(), bound: []int64{1, 3, 320, 320}, shapes: resNetShapes()},
		// At a batch of one the Concat of the merged 1×1 convolutions
		// (passes.MergePointwiseSums) lists its pieces, at more not.
		{name: "resnet50/batch", bytes: resNet50(), bound: []int64{4, 3, 224, 224},
			shapes: [][]int64{{1, 3, 224, 224}, {2, 3, 168, 200}, {3, 3, 224, 168}, {4, 3, 176, 176}, {1, 3, 168, 168}}},
	}
}

// boundOf is the executable front made at the bound as far as a compile
// with Options.Bound reads it (boundScratch, plan.Refit).
func boundOf(f *compiled) *Executable {
	return &Executable{g: f.g, problem: f.p, plan: f.pl, index: f.index, scratch: f.scratch, folded: f.folded()}
}

// TestFrontRefits compiles the front of shape-generic models at a bound
// and, re-inferred (passes.Reinfer), at shapes within it with the bound's
// executable as Options.Bound, as an open model compiled with
// Options.MaxDims does: each plan must be the bound's refit (plan.Refit),
// on berth's own GEMM and with cuBLAS.
func TestFrontRefits(t *testing.T) {
	for _, c := range refitCases() {
		t.Run(c.name, func(t *testing.T) {
			gen := preparedAt(t, c.path, c.bytes, c.bound)
			for _, tc := range []struct {
				name string
				t    target
			}{{"own", h200(false)}, {"cublas", h200(true)}} {
				t.Run(tc.name, func(t *testing.T) {
					at, err := front(passes.Clone(gen), Options{}, tc.t)
					if err != nil {
						t.Fatal(err)
					}
					bound := boundOf(at)
					for _, s := range c.shapes {
						g, err := passes.Reinfer(gen, [][]int64{s})
						if err != nil {
							t.Fatalf("%v: %v", s, err)
						}
						f, err := front(g, Options{Bound: bound}, tc.t)
						if err != nil {
							t.Fatalf("%v: %v", s, err)
						}
						if f.refit != nil {
							t.Errorf("%v: %v", s, f.refit)
							continue
						}
						if f.pl.Schedule != plan.RefitSchedule || f.pl.ArenaBytes != at.pl.ArenaBytes {
							t.Errorf("%v: plan %q of %d bytes, want the bound's refit (%d bytes)", s, f.pl.Schedule, f.pl.ArenaBytes, at.pl.ArenaBytes)
						}
					}
				})
			}
		})
	}
}

// TestSplitFits checks that a GEMM's K split keeps within the room its
// node has, and is left alone where there is no room to keep to.
func TestSplitFits(t *testing.T) {
	const part = 4 * 64 * 64 // one part of a 64×64 product
	for _, tc := range []struct {
		parts, held, room, want int64
	}{
		{parts: 8, held: 0, room: -1, want: 8},               // no bound
		{parts: 1, held: 0, room: 0, want: 1},                // no split
		{parts: 8, held: 0, room: 8 * part, want: 8},         // fits
		{parts: 8, held: 0, room: 100 * part, want: 8},       // room to spare: the policy's
		{parts: 8, held: 0, room: 5*part + 100, want: 5},     // cut
		{parts: 8, held: 0, room: 0, want: 1},                // none: not split
		{parts: 8, held: 0, room: part, want: 1},             // one part: not split
		{parts: 8, held: 1, room: 3 * part, want: 2},         // the held bytes take an aligned 256
		{parts: 8, held: 256, room: 3*part + 256, want: 3},   // after an im2col of 256 bytes
		{parts: 8, held: 300, room: 3*part + 300, want: 2},   // its end aligned to 512
		{parts: 16, held: 4096, room: 2*part + 100, want: 1}, // the held bytes fill the room
	} {
		if got := splitFits(tc.parts, part, tc.held, tc.room); got != tc.want {
			t.Errorf("splitFits(%d, %d, %d, %d) = %d, want %d", tc.parts, part, tc.held, tc.room, got, tc.want)
		}
	}
}

// TestGemmSplitAtBound builds a Gemm at a bound and at fewer rows:
// gemmTiling splits K further as the tiles get fewer, so that 577 rows
// would take more scratch than the bound's 641; with the bound's scratch
// as the room the node's scratch stays within it, the split as deep as
// it holds.
func TestGemmSplitAtBound(t *testing.T) {
	const n, k = 256, 2048
	build := func(rows, room int64) *buildContext {
		g := newTG(13)
		x := g.input(ir.Float32, rows, k)
		w := g.constant(ir.Float32, k, n)
		g.node("Gemm", nil, 1, x, w)
		c, err := buildNodeIn(g.g, 0, 132, false, new([][]byte), nil, nil, room, -1)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	parts := func(c *buildContext) int64 { return int64(c.launches[0].grid[2]) }
	at := build(641, -1)
	if p := parts(at); p != 12 {
		t.Fatalf("at the bound: %d parts, want 12 (gemmTiling's policy changed: pick other sizes)", p)
	}
	for _, tc := range []struct {
		rows, free, kept int64
	}{
		{rows: 577, free: 14, kept: 13},
		{rows: 513, free: 15, kept: 14},
		{rows: 300, free: 16, kept: 16},
		{rows: 1, free: 16, kept: 16},
	} {
		free, kept := build(tc.rows, -1), build(tc.rows, at.scratch)
		if parts(free) != tc.free || parts(kept) != tc.kept {
			t.Errorf("%d rows: %d parts, %d within the bound's scratch; want %d and %d", tc.rows, parts(free), parts(kept), tc.free, tc.kept)
		}
		if kept.scratch > at.scratch {
			t.Errorf("%d rows: %d parts take %d bytes, the bound's node %d", tc.rows, parts(kept), kept.scratch, at.scratch)
		}
	}
}

// BenchmarkFrontAtShapes compiles the front of ResNet-50 (full width,
// bound 1×3×320×320) at new shapes within the bound, one after another,
// with the bound's executable as Options.Bound, as an open model
// compiled with Options.MaxDims does for each new shape (re-inferring
// the shapes aside). refit/op is the share of compiles whose plan is the
// bound's refit.
func BenchmarkFrontAtShapes(b *testing.B) {
	gen := preparedAt(b, "", resNet50(), []int64{1, 3, 320, 320})
	graphs := reinferredAt(b, gen, resNetShapes())
	for _, tc := range []struct {
		name string
		t    target
	}{{"own", h200(false)}, {"cublas", h200(true)}} {
		b.Run(tc.name, func(b *testing.B) {
			at, err := front(passes.Clone(gen), Options{}, tc.t)
			if err != nil {
				b.Fatal(err)
			}
			opts := Options{Bound: boundOf(at)}
			refits := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				f, err := front(graphs[i%len(graphs)], opts, tc.t)
				if err != nil {
					b.Fatal(err)
				}
				if f.refit == nil {
					refits++
				}
			}
			b.ReportMetric(float64(refits)/float64(b.N), "refit/op")
		})
	}
}

// BenchmarkCompileAtShapes compiles ResNet-50 on the GPU at new shapes
// within 1×3×320×320 as an open model compiled with Options.MaxDims does
// (the bound's executable as Options.Bound, one weight store), and runs
// each twice on the bound's lane: ms a shape for the compile's front, the
// rest of the compile, a session, its first run and its second (launched
// one by one both: no graph).
func BenchmarkCompileAtShapes(b *testing.B) {
	requireGPU(b)
	gen := preparedAt(b, "", resNet50(), []int64{1, 3, 320, 320})
	graphs := reinferredAt(b, gen, resNetShapes())
	for _, c := range []struct {
		name   string
		noBLAS bool
	}{{"cublas", false}, {"own", true}} {
		b.Run(c.name, func(b *testing.B) {
			store := NewWeightStore(resNet50())
			defer store.Close()
			bound, err := Compile(passes.Clone(gen), Options{NoBLAS: c.noBLAS, Weights: store})
			if err != nil {
				b.Fatal(err)
			}
			defer bound.Close()
			lane, err := NewLane(bound)
			if err != nil {
				b.Fatal(err)
			}
			defer lane.Close()
			var front, rest, session, run, again time.Duration
			n := 0
			for b.Loop() {
				g := passes.Clone(graphs[n%len(graphs)])
				start := time.Now()
				e, err := Compile(g, Options{NoBLAS: c.noBLAS, Weights: store, Bound: bound, NoGraphs: true})
				if err != nil {
					b.Fatal(err)
				}
				rest += time.Since(start) - e.frontTime
				front += e.frontTime
				start = time.Now()
				s, err := e.NewSessionOn(lane)
				if err != nil {
					b.Fatal(err)
				}
				session += time.Since(start)
				ins := make([][]byte, len(e.g.Inputs))
				for i := range ins {
					ins[i] = make([]byte, e.inputBytes(i))
				}
				outs := make([][]byte, len(e.outputs))
				for i, o := range e.outputs {
					outs[i] = make([]byte, o.bytes)
				}
				start = time.Now()
				if err := s.Run(ins, outs); err != nil {
					b.Fatal(err)
				}
				run += time.Since(start)
				start = time.Now()
				if err := s.Run(ins, outs); err != nil {
					b.Fatal(err)
				}
				again += time.Since(start)
				s.Close()
				e.Close()
				n++
			}
			for _, m := range []struct {
				name string
				d    time.Duration
			}{{"front", front}, {"rest", rest}, {"session", session}, {"first-run", run}, {"second-run", again}} {
				b.ReportMetric(float64(m.d.Microseconds())/1e3/float64(n), m.name+"-ms")
			}
		})
	}
}

// TestSplitPartsLeftToReaders: on berth's own GEMM, a convolution whose
// product splits K and whose output only generated kernels read leaves
// its parts in its scratch for them to add up (no launch of gemm_reduce),
// the plan keeps that scratch until they run, and a compile at a smaller
// shape within a bound folds the same products as the bound's.
func TestSplitPartsLeftToReaders(t *testing.T) {
	gen := preparedAt(t, "", resNet50(), []int64{1, 3, 320, 320})
	at, err := front(passes.Clone(gen), Options{}, h200(false))
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, f *compiled) {
		reduces, reads, folded := 0, 0, f.folded()
		for i, c := range f.built {
			for _, l := range c.launches {
				if l.kernel == "gemm_reduce" {
					reduces++
				}
				for _, a := range l.args {
					if a.kind != argScratchOf {
						continue
					}
					reads++
					if !folded[a.node] {
						t.Errorf("%s: node %d reads the scratch of node %d, which left no parts there", name, i, a.node)
					}
				}
			}
		}
		if len(f.fz.parts) < 30 || reads < len(f.fz.parts) || reduces > 1 {
			t.Errorf("%s: %d products leave their parts, %d launches read them, %d gemm_reduce launches; want 30 or more, as many, at most one", name, len(f.fz.parts), reads, reduces)
		}
		if err := scratchesLive(f.pl, f.built, f.scratchOf); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := plan.Verify(f.p, f.pl); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	check("the bound", at)
	for _, s := range [][]int64{{1, 3, 224, 224}, {1, 3, 168, 320}} {
		g, err := passes.Reinfer(gen, [][]int64{s})
		if err != nil {
			t.Fatal(err)
		}
		f, err := front(g, Options{Bound: boundOf(at)}, h200(false))
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint(s), f)
		if !slices.Equal(f.folded(), at.folded()) {
			t.Errorf("%v: other products leave their parts than at the bound", s)
		}
	}
	// With cuBLAS nothing is left to readers.
	f, err := front(passes.Clone(gen), Options{}, h200(true))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.fz.parts) != 0 {
		t.Errorf("cuBLAS: %d products leave their parts", len(f.fz.parts))
	}
}
