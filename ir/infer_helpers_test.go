package ir

import (
	"strings"
	"testing"
)

// in describes one input of a node under test.
type in struct {
	dt    DType
	shape Shape
	data  []byte // nil: an activation
	none  bool   // an omitted optional input
}

func act(dt DType, dims ...int64) in { return in{dt: dt, shape: Shape(dims).Clone()} }
func f32(dims ...int64) in           { return act(Float32, dims...) }

// ints is a constant 1-D int64 tensor.
func ints(v ...int64) in {
	return in{dt: Int64, shape: Shape{int64(len(v))}, data: Int64Bytes(v)}
}

// scalar is a constant int64 scalar.
func scalar(v int64) in { return in{dt: Int64, shape: Shape{}, data: Int64Bytes([]int64{v})} }

// constOf is a constant of the given type and shape with zeroed bytes.
func constOf(dt DType, dims ...int64) in {
	s := Shape(dims).Clone()
	return in{dt: dt, shape: s, data: make([]byte, s.Bytes(dt))}
}

var none = in{none: true}

// inferCase is one shape inference test.
type inferCase struct {
	name    string
	op      string
	opset   int64 // 0: LatestOpset
	attrs   Attrs
	inputs  []in
	outputs int // number of requested outputs; 0 means 1
	want    []Type
	err     string // substring of the expected error
}

// build makes a graph holding one node of the case.
func (c inferCase) build() (*Graph, *Node) {
	g := &Graph{}
	if c.opset != 0 {
		g.Opsets = map[string]int64{"": c.opset}
	}
	n := Node{Name: "n", Op: c.op, Attrs: c.attrs}
	for i, x := range c.inputs {
		if x.none {
			n.Inputs = append(n.Inputs, NoTensor)
			continue
		}
		n.Inputs = append(n.Inputs, g.NewTensor(string(rune('a'+i)), x.dt, x.shape, x.data))
	}
	outs := max(c.outputs, 1)
	for i := 0; i < outs; i++ {
		id := g.AddTensor(Tensor{Name: "out" + string(rune('0'+i)), Producer: 0})
		n.Outputs = append(n.Outputs, id)
	}
	g.Nodes = append(g.Nodes, n)
	return g, &g.Nodes[0]
}

func runInferCases(t *testing.T, cases []inferCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, n := c.build()
			got, err := Infer(g, n)
			if c.err != "" {
				if err == nil {
					t.Fatalf("Infer = %v, want an error containing %q", got, c.err)
				}
				if !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %q does not contain %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Infer: %v", err)
			}
			if len(got) < len(c.want) {
				t.Fatalf("Infer gives %d outputs %v, want %v", len(got), got, c.want)
			}
			for i, w := range c.want {
				if got[i].DType != w.DType || !got[i].Shape.Equal(w.Shape) || got[i].Shape == nil {
					t.Errorf("output %d: got %s%v, want %s%v", i, got[i].DType, got[i].Shape, w.DType, w.Shape)
				}
			}
		})
	}
}

// ty is a Type shorthand.
func ty(dt DType, dims ...int64) Type { return Type{DType: dt, Shape: Shape(dims).Clone()} }
func f(dims ...int64) []Type          { return []Type{ty(Float32, dims...)} }
