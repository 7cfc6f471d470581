package cuda

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/onnx/onnxtest"
	"github.com/berth-ml/berth/passes"
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
// with Options.Bound reads it (plan.Refit).
func boundOf(f *compiled) *Executable {
	return &Executable{g: f.g, problem: f.p, plan: f.pl, index: f.index}
}

// BenchmarkFrontAtShapes compiles the front of ResNet-50 (full width,
// bound 1×3×320×320) at new shapes within the bound, one after another,
// with the bound's executable as Options.Bound, as an open model
// compiled with Options.MaxDims does for each new shape (re-inferring
// the shapes aside). refit/op is the share of compiles whose plan is the
// bound's refit.
func BenchmarkFrontAtShapes(b *testing.B) {
	gen := preparedAt(b, "", resNet50(), []int64{1, 3, 320, 320})
	var graphs []*ir.Graph
	for _, s := range resNetShapes() {
		g, err := passes.Reinfer(gen, [][]int64{s})
		if err != nil {
			b.Fatal(err)
		}
		graphs = append(graphs, g)
	}
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
