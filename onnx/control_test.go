package onnx_test

import (
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// TestImportSubgraphs checks how control-flow bodies import: as graph
// attributes whose outer-scope reads become captures of the subgraph and
// implicit inputs of the node, level by level.
func TestImportSubgraphs(t *testing.T) {
	cases := []struct {
		name     string
		model    []byte
		op       string
		implicit []string // names of the node's implicit inputs
		attrs    []string // its subgraph attributes
		captures [][]string
	}{
		{"loop-reads-x", onnxtest.LoopModel(2), "Loop", []string{"x"}, []string{"body"}, [][]string{{"x"}}},
		{"if-reads-cond-and-x", onnxtest.NestedIfModel(2), "If", []string{"cond", "x"}, []string{"else_branch", "then_branch"},
			[][]string{{"x"}, {"cond", "x"}}},
		{"scan-reads-nothing", onnxtest.ScanModel(false), "Scan", nil, []string{"body"}, [][]string{nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := onnx.ImportBytes(c.model, "")
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			g := m.Graph
			if len(g.Nodes) != 1 || g.Nodes[0].Op != c.op {
				t.Fatalf("nodes: %+v", g.Nodes)
			}
			n := &g.Nodes[0]
			var implicit []string
			for _, id := range n.Inputs[n.Formal():] {
				implicit = append(implicit, g.Tensor(id).Name)
			}
			if strings.Join(implicit, ",") != strings.Join(c.implicit, ",") {
				t.Errorf("implicit inputs %v, want %v", implicit, c.implicit)
			}
			subs := n.Subgraphs()
			if len(subs) != len(c.attrs) {
				t.Fatalf("%d subgraphs, want %d", len(subs), len(c.attrs))
			}
			for i, sub := range subs {
				if n.Attrs.Graph(c.attrs[i]) != sub {
					t.Errorf("subgraph %d is not attribute %q", i, c.attrs[i])
				}
				var caps []string
				for _, id := range sub.Captures {
					caps = append(caps, sub.Tensor(id).Name)
				}
				if strings.Join(caps, ",") != strings.Join(c.captures[i], ",") {
					t.Errorf("%s captures %v, want %v", c.attrs[i], caps, c.captures[i])
				}
			}
		})
	}
}

// TestImportSubgraphDepth accepts subgraphs nested up to the limit and
// refuses deeper ones with an error that names the limit.
func TestImportSubgraphDepth(t *testing.T) {
	for _, c := range []struct {
		depth int
		ok    bool
	}{{1, true}, {ir.MaxSubgraphDepth, true}, {ir.MaxSubgraphDepth + 1, false}, {200, false}} {
		m, err := onnx.ImportBytes(onnxtest.NestedIfModel(c.depth), "")
		if c.ok {
			if err != nil {
				t.Errorf("depth %d: %v", c.depth, err)
				continue
			}
			m.Close()
			continue
		}
		if err == nil {
			m.Close()
			t.Errorf("depth %d: imported", c.depth)
		} else if !strings.Contains(err.Error(), "nest more than 16 levels") {
			t.Errorf("depth %d: error %q does not name the limit", c.depth, err)
		}
	}
}
