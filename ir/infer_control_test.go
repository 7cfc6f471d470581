package ir

import (
	"strings"
	"testing"
)

// typedGraph is a subgraph whose outputs have the given types (as if
// already inferred) and that takes the given inputs.
func typedGraph(inputs int, outs ...Type) *Graph {
	g := &Graph{Name: "sub"}
	for i := 0; i < inputs; i++ {
		g.Inputs = append(g.Inputs, g.NewTensor("in", Undefined, nil, nil))
	}
	for _, t := range outs {
		g.Outputs = append(g.Outputs, g.AddTensor(Tensor{Name: "out", DType: t.DType, Shape: t.Shape, Producer: 0}))
	}
	return g
}

// TestInferControlFlow checks the output types of If, Loop and Scan and
// their refusals of what berth cannot plan statically.
func TestInferControlFlow(t *testing.T) {
	b := Type{Bool, Shape{}}
	f2 := Type{Float32, Shape{2}}
	f3 := Type{Float32, Shape{3}}
	cases := []struct {
		name   string
		op     string
		opset  int64
		inputs []in
		attrs  Attrs
		want   []Type
		err    string
	}{
		{name: "if", op: "If", inputs: []in{act(Bool)},
			attrs: Attrs{"then_branch": {Kind: AttrGraph, Graph: typedGraph(0, f2)}, "else_branch": {Kind: AttrGraph, Graph: typedGraph(0, f2)}},
			want:  []Type{f2}},
		{name: "if/shapes differ", op: "If", inputs: []in{act(Bool)},
			attrs: Attrs{"then_branch": {Kind: AttrGraph, Graph: typedGraph(0, f2)}, "else_branch": {Kind: AttrGraph, Graph: typedGraph(0, f3)}},
			err:   "same static type"},
		{name: "if/condition not bool", op: "If", inputs: []in{f32()},
			attrs: Attrs{"then_branch": {Kind: AttrGraph, Graph: typedGraph(0, f2)}, "else_branch": {Kind: AttrGraph, Graph: typedGraph(0, f2)}},
			err:   "one bool"},
		{name: "loop", op: "Loop", inputs: []in{scalar(4), act(Bool), f32(2)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(3, b, f2, f3)}},
			want:  []Type{f2, {Float32, Shape{4, 3}}}},
		{name: "loop/no scans, no M", op: "Loop", inputs: []in{none, act(Bool), f32(2)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(3, b, f2)}},
			want:  []Type{f2}},
		{name: "loop/scans need a constant M", op: "Loop", inputs: []in{act(Int64), act(Bool), f32(2)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(3, b, f2, f3)}},
			err:   "trip count M of scan outputs"},
		{name: "loop/carried value changes", op: "Loop", inputs: []in{scalar(4), act(Bool), f32(2)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(3, b, f3)}},
			err:   "keep its static type"},
		{name: "scan", op: "Scan", opset: 11, inputs: []in{f32(2), f32(5, 3)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(2, f2, f3)}, "num_scan_inputs": {Kind: AttrInt, Int: 1}},
			want:  []Type{f2, {Float32, Shape{5, 3}}}},
		{name: "scan/output axis", op: "Scan", opset: 11, inputs: []in{f32(2), f32(5, 3)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(2, f2, f3)}, "num_scan_inputs": {Kind: AttrInt, Int: 1},
				"scan_output_axes": {Kind: AttrInts, Ints: []int64{-1}}},
			want: []Type{f2, {Float32, Shape{3, 5}}}},
		{name: "scan/opset 8 batch", op: "Scan", opset: 8, inputs: []in{none, f32(1, 2), f32(1, 5, 3)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(2, f2, f3)}, "num_scan_inputs": {Kind: AttrInt, Int: 1}},
			want:  []Type{{Float32, Shape{1, 2}}, {Float32, Shape{1, 5, 3}}}},
		{name: "scan/lengths differ", op: "Scan", opset: 11, inputs: []in{f32(5, 3), f32(4, 3)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(2, f3, f3)}, "num_scan_inputs": {Kind: AttrInt, Int: 2}},
			err:   "lengths"},
		{name: "scan/opset 8 needs a batch", op: "Scan", opset: 8, inputs: []in{none, f32(2), f32(5)},
			attrs: Attrs{"body": {Kind: AttrGraph, Graph: typedGraph(2, f2, f3)}, "num_scan_inputs": {Kind: AttrInt, Int: 1}},
			err:   "opset 8 needs"},
		{name: "scan/no body", op: "Scan", opset: 11, inputs: []in{f32(2), f32(5, 3)},
			attrs: Attrs{"num_scan_inputs": {Kind: AttrInt, Int: 1}},
			err:   "no body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Graph{Opsets: map[string]int64{"": c.opset}}
			if c.opset == 0 {
				g.Opsets[""] = LatestOpset
			}
			n := Node{Name: "n", Op: c.op, Attrs: c.attrs}
			for _, x := range c.inputs {
				if x.none {
					n.Inputs = append(n.Inputs, NoTensor)
					continue
				}
				n.Inputs = append(n.Inputs, g.NewTensor("x", x.dt, x.shape, x.data))
			}
			for range c.want {
				n.Outputs = append(n.Outputs, g.AddTensor(Tensor{Name: "y", Producer: 0}))
			}
			got, err := Infer(g, &n)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d outputs, want %d", len(got), len(c.want))
			}
			for i := range got {
				if got[i].DType != c.want[i].DType || !got[i].Shape.Equal(c.want[i].Shape) {
					t.Errorf("output %d is %s%v, want %s%v", i, got[i].DType, got[i].Shape, c.want[i].DType, c.want[i].Shape)
				}
			}
		})
	}
}
