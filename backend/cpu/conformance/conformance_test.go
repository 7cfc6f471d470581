package conformance_test

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// conformanceDir holds ONNX's conformance data (Debian package
// libonnx-testdata).
const conformanceDir = testenv.ConformanceDir

// parallelEval evaluates a node through Build and Run on three workers, so
// that folding exercises the parallel paths.
func parallelEval(w *cpu.Workers) passes.Evaluator {
	return func(g *ir.Graph, n *ir.Node) error {
		k, scratch, err := cpu.Build(g, n)
		if err != nil {
			return err
		}
		in := make([][]byte, len(n.Inputs))
		for i, id := range n.Inputs {
			if id != ir.NoTensor {
				in[i] = aligned(g.Tensor(id).Data)
			}
		}
		out := make([][]byte, len(n.Outputs))
		for i, id := range n.Outputs {
			if id != ir.NoTensor {
				out[i] = aligned(make([]byte, g.Tensor(id).Bytes()))
			}
		}
		k.Run(w, in, out, aligned(make([]byte, scratch)))
		for i, id := range n.Outputs {
			if id != ir.NoTensor {
				g.Tensor(id).Data = out[i]
			}
		}
		return nil
	}
}

// aligned copies b to a 64-byte-aligned buffer.
func aligned(b []byte) []byte {
	buf := make([]byte, len(b)+64)
	off := 0
	for !raw.Aligned(buf[off:], 64) {
		off++
	}
	d := buf[off : off+len(b) : off+len(b)]
	copy(d, b)
	return d
}

// TestConformance runs the ONNX conformance tests whose operators the backend
// supports: the test inputs are bound as constants, the whole graph is
// folded through the kernels, and every output is compared with the
// reference. Tests the importer or shape inference cannot take are
// skipped.
func TestConformance(t *testing.T) {
	testenv.Require(t, conformanceDir, testenv.InstallConformance)
	sets, _ := filepath.Glob(filepath.Join(conformanceDir, "*", "*", "test_data_set_0"))
	if len(sets) == 0 {
		t.Fatalf("no conformance cases under %s", conformanceDir)
	}
	w := cpu.NewWorkers(3)
	defer w.Close()
	eval := parallelEval(w)
	passed, skipped := 0, map[string]string{}
	for _, set := range sets {
		dir := filepath.Dir(set)
		name := filepath.Base(dir)
		if reason := runConformance(t, dir, set, eval); reason != "" {
			skipped[name] = reason
			continue
		}
		passed++
	}
	t.Logf("%d conformance tests passed, %d skipped", passed, len(skipped))
	if passed < 300 {
		t.Errorf("only %d conformance tests ran; expected at least 300", passed)
	}
	if testing.Verbose() {
		var names []string
		for n := range skipped {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			t.Logf("skipped %s: %s", n, skipped[n])
		}
	}
}

// runConformance runs one test; it returns why it was skipped, or "".
func runConformance(t *testing.T, dir, set string, eval passes.Evaluator) string {
	if strings.Contains(filepath.Base(dir), "FLOAT_to_BFLOAT16") {
		// This data set truncates to bfloat16; ONNX (and berth) round to
		// nearest even.
		return "reference truncates bfloat16"
	}
	m, err := onnx.Import(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return "import: " + err.Error()
	}
	defer m.Close()
	g := m.Graph
	for _, n := range g.Nodes {
		if !cpu.Supported(n.Op) || (n.Domain != "" && n.Domain != "ai.onnx") {
			return "operator " + n.Op
		}
	}
	for i, id := range g.Inputs {
		x, err := onnx.ReadTensorFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
		if err != nil {
			return err.Error()
		}
		in := &g.Tensors[id]
		if in.DType.Size() != x.DType.Size() {
			in.DType = x.DType // else keep the declared type: bfloat16 data is stored as uint16
		}
		in.Shape, in.Data = x.Shape, x.Data
	}
	if err := passes.Prepare(g, eval); err != nil {
		// A single node can still run when shape inference refuses it:
		// take its output types from the reference outputs.
		if !typeFromReference(g, set) {
			return "prepare: " + err.Error()
		}
	}
	// Whatever did not fold (too large) still has constant inputs.
	for i := range g.Nodes {
		if err := eval(g, &g.Nodes[i]); err != nil {
			return "evaluate: " + err.Error()
		}
	}
	for i, id := range g.Outputs {
		want, err := onnx.ReadTensorFile(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
		if err != nil {
			return err.Error()
		}
		got := g.Tensor(id)
		if got.DType == ir.BFloat16 && want.DType == ir.Uint16 {
			want.DType = ir.BFloat16 // the reference stores bfloat16 bits as uint16
		}
		if got.DType != want.DType || !got.Shape.Equal(want.Shape) {
			return fmt.Sprintf("output %d is %s%v, want %s%v", i, got.DType, got.Shape, want.DType, want.Shape)
		}
		if msg := compareTensor(got, want); msg != "" {
			t.Errorf("%s: output %d: %s", filepath.Base(dir), i, msg)
		}
	}
	return ""
}

// typeFromReference gives the outputs of a one-node graph the types of the
// reference outputs; it reports whether it could.
func typeFromReference(g *ir.Graph, set string) bool {
	if len(g.Nodes) != 1 || len(g.Nodes[0].Outputs) != len(g.Outputs) {
		return false
	}
	for i, id := range g.Outputs {
		if g.Nodes[0].Outputs[i] != id {
			return false
		}
		want, err := onnx.ReadTensorFile(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
		if err != nil {
			return false
		}
		g.Tensors[id].DType, g.Tensors[id].Shape, g.Tensors[id].Data = want.DType, want.Shape, nil
	}
	return true
}

// compareTensor compares float outputs within 1e-4 (relative and absolute,
// the ONNX backend test default is 1e-3/1e-7) and others exactly.
func compareTensor(got, want *ir.Tensor) string {
	if !got.DType.IsFloat() {
		if string(got.Data) != string(want.Data) {
			return "values differ"
		}
		return ""
	}
	g, w := floats(got), floats(want)
	for i := range g {
		if math.IsNaN(w[i]) && math.IsNaN(g[i]) || g[i] == w[i] {
			continue
		}
		if !(math.Abs(g[i]-w[i]) <= 1e-4+1e-4*math.Abs(w[i])) {
			return fmt.Sprintf("element %d is %v, want %v", i, g[i], w[i])
		}
	}
	return ""
}

func floats(t *ir.Tensor) []float64 { return compare.Float64s(t.DType, t.Data) }
