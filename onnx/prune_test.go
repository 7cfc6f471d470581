package onnx_test

import (
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// TestImportCutsToWhatIsNeeded imports a graph specialised on computed
// values (ImportOptions.Values) or cut down to some tensors
// (ImportOptions.Outputs): only the nodes that compute what is still
// needed are converted, a bound value whose node is left out is a
// constant of its value, and one whose node stays for another output
// is bound as before.
func TestImportCutsToWhatIsNeeded(t *testing.T) {
	// x → a (Relu) → b (Neg) → y (Abs); x → c (Sigmoid) → z (Exp); a → split
	// into s0, s1 (s1 feeds w (Abs)).
	model := onnxtest.Graph{
		Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"4"}}},
		Nodes: []onnxtest.Node{
			{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Op: "Neg", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Op: "Abs", Inputs: []string{"b"}, Outputs: []string{"y"}},
			{Op: "Sigmoid", Inputs: []string{"x"}, Outputs: []string{"c"}},
			{Op: "Exp", Inputs: []string{"c"}, Outputs: []string{"z"}},
			{Op: "Split", Inputs: []string{"a"}, Outputs: []string{"s0", "s1"}, Ints: map[string]int64{"axis": 0}},
			{Op: "Abs", Inputs: []string{"s1"}, Outputs: []string{"w"}},
		},
		Outputs: []string{"y", "z", "w", "s0"},
	}.Bytes()
	value := func(name string, n int64) ir.Tensor {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i + 1)
		}
		return ir.Tensor{Name: name, DType: ir.Float32, Shape: ir.Shape{n}, Data: raw.Bytes(v)}
	}
	cases := []struct {
		name   string
		opts   onnx.ImportOptions
		ops    []string // the nodes converted, in order
		consts []string // the bound values that are constants
	}{
		{"whole", onnx.ImportOptions{}, []string{"Relu", "Neg", "Abs", "Sigmoid", "Exp", "Split", "Abs"}, nil},
		{"outputs", onnx.ImportOptions{Outputs: []string{"z"}}, []string{"Sigmoid", "Exp"}, nil},
		{"a value cuts its node off", onnx.ImportOptions{Values: map[string]ir.Tensor{"b": value("b", 4)}, Outputs: []string{"y"}}, []string{"Abs"}, []string{"b"}},
		{"a value over the whole graph", onnx.ImportOptions{Values: map[string]ir.Tensor{"a": value("a", 4)}}, []string{"Neg", "Abs", "Sigmoid", "Exp", "Split", "Abs"}, []string{"a"}},
		{"a value nothing needed reads", onnx.ImportOptions{Values: map[string]ir.Tensor{"a": value("a", 4), "b": value("b", 4)}, Outputs: []string{"y"}}, []string{"Abs"}, []string{"b"}},
		{"a value whose node stays", onnx.ImportOptions{Values: map[string]ir.Tensor{"s1": value("s1", 2)}, Outputs: []string{"w", "s0"}}, []string{"Relu", "Split", "Abs"}, []string{"s1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.opts.InputShapes = map[string][]int64{"x": {4}}
			m, err := onnx.ImportBytesWith(model, "", c.opts)
			if err != nil {
				t.Fatal(err)
			}
			g := m.Graph
			var ops []string
			for _, n := range g.Nodes {
				ops = append(ops, n.Op)
			}
			if !slices.Equal(ops, c.ops) {
				t.Errorf("nodes %v, want %v", ops, c.ops)
			}
			for _, name := range c.consts {
				found := false
				for i := range g.Tensors {
					if tt := &g.Tensors[i]; tt.Name == name {
						found = true
						if !tt.IsConst() || tt.Producer != -1 || !slices.Equal(tt.Data, c.opts.Values[name].Data) {
							t.Errorf("value %q: constant %v, producer %d", name, tt.IsConst(), tt.Producer)
						}
					}
				}
				if !found {
					t.Errorf("value %q is not in the graph", name)
				}
			}
		})
	}
}

// TestImportCutKeepsWhatSubgraphsRead: a node whose subgraph reads a
// tensor of the main graph keeps that tensor's node when it is cut down
// (a Loop body adding c, a Sigmoid of the input, on every trip).
func TestImportCutKeepsWhatSubgraphsRead(t *testing.T) {
	model := onnxtest.Graph{
		Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"4"}}},
		Nodes: []onnxtest.Node{
			{Op: "Sigmoid", Inputs: []string{"x"}, Outputs: []string{"c"}},
			{Op: "Exp", Inputs: []string{"x"}, Outputs: []string{"e"}},
			{Op: "Loop", Inputs: []string{"two", "", "x"}, Outputs: []string{"r"}, Body: &onnxtest.Graph{
				Inputs: []onnxtest.Input{{Name: "i", Elem: "int64"}, {Name: "cond", Elem: "bool"}, {Name: "v", Dims: []string{"4"}}},
				Nodes: []onnxtest.Node{
					{Op: "Identity", Inputs: []string{"cond"}, Outputs: []string{"cond_out"}},
					{Op: "Add", Inputs: []string{"v", "c"}, Outputs: []string{"v_out"}},
				},
				Outputs: []string{"cond_out", "v_out"},
			}},
		},
		Consts:  []onnxtest.Const{{Name: "two", Values: []int64{2}}},
		Outputs: []string{"r", "e"},
	}.Bytes()
	m, err := onnx.ImportBytesWith(model, "", onnx.ImportOptions{InputShapes: map[string][]int64{"x": {4}}, Outputs: []string{"r"}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, n := range m.Graph.Nodes {
		ops = append(ops, n.Op)
	}
	if want := []string{"Sigmoid", "Loop"}; !slices.Equal(ops, want) {
		t.Errorf("nodes %v, want %v", ops, want)
	}
}
