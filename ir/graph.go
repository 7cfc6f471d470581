package ir

import (
	"fmt"
)

// TensorID indexes Graph.Tensors. NoTensor marks an omitted optional input.
type TensorID int32

// NoTensor stands for an optional input that the model left out.
const NoTensor TensorID = -1

// Tensor is one value of the graph: a graph input, a constant (weight or
// folded value), or the output of a node.
type Tensor struct {
	Name  string
	DType DType
	Shape Shape
	// Data holds the little-endian bytes of a constant tensor (for weights
	// usually a window into the memory-mapped model file). It is nil for
	// every tensor computed at run time.
	Data []byte
	// Producer is the index in Graph.Nodes of the node that writes this
	// tensor, or -1 for graph inputs and constants.
	Producer int
}

// IsConst reports whether t is a constant whose bytes are known.
func (t *Tensor) IsConst() bool { return t.Data != nil }

// Bytes is the byte size of the tensor.
func (t *Tensor) Bytes() int64 { return t.Shape.Bytes(t.DType) }

// Node is one operator application.
type Node struct {
	Name string
	// Op is the operator type, as ONNX names it ("Conv", "MatMul", …).
	Op string
	// Domain is the operator set domain ("" for the default ONNX domain).
	Domain  string
	Inputs  []TensorID // NoTensor for an omitted optional input
	Outputs []TensorID
	Attrs   Attrs
}

// Input returns the i-th input or NoTensor if the node has fewer inputs.
func (n *Node) Input(i int) TensorID {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return NoTensor
}

// Graph is a dataflow graph with static shapes.
type Graph struct {
	Name    string
	Tensors []Tensor
	Nodes   []Node
	Inputs  []TensorID // graph inputs fed at run time, in declaration order
	Outputs []TensorID // graph outputs, in declaration order
	// Opsets maps an operator domain to the imported opset version.
	Opsets map[string]int64
}

// Tensor returns the tensor with the given ID.
func (g *Graph) Tensor(id TensorID) *Tensor { return &g.Tensors[id] }

// AddTensor appends a tensor and returns its ID.
func (g *Graph) AddTensor(t Tensor) TensorID {
	g.Tensors = append(g.Tensors, t)
	return TensorID(len(g.Tensors) - 1)
}

// NewTensor appends a tensor with no producer and returns its ID.
func (g *Graph) NewTensor(name string, dt DType, shape Shape, data []byte) TensorID {
	return g.AddTensor(Tensor{Name: name, DType: dt, Shape: shape, Data: data, Producer: -1})
}

// Opset returns the opset version imported for the default ONNX domain.
func (g *Graph) Opset() int64 {
	if v, ok := g.Opsets[""]; ok {
		return v
	}
	return g.Opsets["ai.onnx"]
}

// Consumers returns, for every tensor, the indices of the nodes reading it.
func (g *Graph) Consumers() [][]int {
	c := make([][]int, len(g.Tensors))
	for i := range g.Nodes {
		for _, in := range g.Nodes[i].Inputs {
			if in != NoTensor {
				c[in] = append(c[in], i)
			}
		}
	}
	return c
}

// OpCounts returns how many nodes use each operator type.
func (g *Graph) OpCounts() map[string]int {
	m := make(map[string]int)
	for i := range g.Nodes {
		m[g.Nodes[i].Op]++
	}
	return m
}

// WeightBytes is the total size of the constant tensors that some node or
// graph output uses.
func (g *Graph) WeightBytes() int64 {
	used := make([]bool, len(g.Tensors))
	for i := range g.Nodes {
		for _, in := range g.Nodes[i].Inputs {
			if in != NoTensor {
				used[in] = true
			}
		}
	}
	for _, o := range g.Outputs {
		used[o] = true
	}
	var n int64
	for i := range g.Tensors {
		if used[i] && g.Tensors[i].IsConst() {
			n += int64(len(g.Tensors[i].Data))
		}
	}
	return n
}

// Describe is a short human description of a tensor: name, dtype, shape.
func (g *Graph) Describe(id TensorID) string {
	t := g.Tensor(id)
	return fmt.Sprintf("%s %s%v", t.Name, t.DType, t.Shape)
}
