package passes_test

import (
	"github.com/berth-ml/berth/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// TestPrepareModels imports every exported model under testdata/models
// (when present), the demo model and the importer's test files, prepares it without an evaluator (so
// only Shape nodes and views of constants fold; where that leaves a shape
// unknown, with the CPU backend's evaluator, as Load does) and checks that
// the result verifies and has fully typed outputs.
func TestPrepareModels(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/models/*/model.onnx")
	paths = append(paths, "../internal/demo/data/model.onnx", "../onnx/testdata/mixed.onnx", "../onnx/testdata/external/model.onnx")
	ran := 0
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			continue
		}
		ran++
		t.Run(strings.TrimPrefix(path, "../"), func(t *testing.T) {
			m, err := onnx.Import(path)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			g := m.Graph
			if err := passes.Prepare(g, nil); err != nil {
				// Shapes computed by arithmetic on Shape outputs (such as
				// the Concat feeding an Expand in lstm_if's branches) fold
				// only with an evaluator: prepare a fresh import as Load
				// does.
				t.Logf("without an evaluator: %v", err)
				m2, err := onnx.Import(path)
				if err != nil {
					t.Fatal(err)
				}
				defer m2.Close()
				g = m2.Graph
				if err := passes.Prepare(g, cpu.Evaluate); err != nil {
					t.Fatal(err)
				}
			}
			for i := range g.Tensors {
				tt := &g.Tensors[i]
				if !tt.DType.Valid() || tt.Shape == nil {
					t.Errorf("tensor %q has no type after Prepare", tt.Name)
				}
			}
			for _, id := range g.Outputs {
				if g.Tensor(id).Producer < 0 {
					t.Errorf("output %s is not written by a node", g.Describe(id))
				}
			}
			if err := ir.Verify(g); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d nodes, %d tensors, outputs %s", len(g.Nodes), len(g.Tensors), g.Describe(g.Outputs[0]))
		})
	}
	if ran == 0 {
		testenv.Require(t, "../testdata/models/resnet/model.onnx", "run scripts/gen_fixtures.py")
	}
}
