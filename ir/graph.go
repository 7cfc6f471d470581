package ir

import (
	"fmt"
	"sort"
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
	// FromShapes marks a constant that passes.Fold computed from the
	// shapes of the graph's inputs: the output of a Shape of a tensor
	// that is not a constant, and whatever was folded from such values.
	// Its value holds for the input shapes the graph was prepared for
	// alone (see passes.ShapeGeneric).
	FromShapes bool
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
	// Implicit is how many of the last Inputs are not operands of the
	// operator but outer-scope tensors that its subgraphs read (control
	// flow: If, Loop, Scan). Each one has the name of the capture of the
	// subgraph that reads it (see Graph.Captures), so the planner sees the
	// read and the backend can feed the subgraph.
	Implicit int
}

// DefaultDomain reports whether n is an operator of ONNX's default domain
// ("" here; "ai.onnx" in files).
func (n *Node) DefaultDomain() bool { return n.Domain == "" || n.Domain == "ai.onnx" }

// Input returns the i-th input or NoTensor if the node has fewer inputs.
func (n *Node) Input(i int) TensorID {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return NoTensor
}

// InputOf is n's i-th input tensor in g, or nil when it is absent.
func (g *Graph) InputOf(n *Node, i int) *Tensor {
	if id := n.Input(i); id != NoTensor {
		return g.Tensor(id)
	}
	return nil
}

// OutputOf is n's i-th output tensor in g, or nil when it is absent.
func (g *Graph) OutputOf(n *Node, i int) *Tensor {
	if i < len(n.Outputs) && n.Outputs[i] != NoTensor {
		return g.Tensor(n.Outputs[i])
	}
	return nil
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
	// Captures lists, for a subgraph, the tensors that stand for values of
	// an enclosing graph it reads by name. Each is fed at run time (or
	// given its Data when the outer value is a constant) from the
	// implicit input of the parent node with the same name.
	Captures []TensorID
	// State lists the graph inputs whose values a session keeps from one
	// run to the next, such as a language model's cache of keys and
	// values: each is also in Inputs, the caller does not feed it, and a
	// node that updates it (see UpdatesState) writes its new value in
	// place.
	State []TensorID
	// ShapeDecided is set where importing or preparing the graph took a
	// decision on the shapes of its inputs that the graph's constants do
	// not show: an If inlined on a condition that follows from shapes, a
	// sequence cut by an input's size, a rewrite refused because two
	// shapes differed (see passes.ShapeGeneric).
	ShapeDecided bool
}

// MaxSubgraphDepth bounds how deeply control-flow subgraphs may nest.
const MaxSubgraphDepth = 16

// Subgraphs returns the subgraph attributes of n in a fixed order
// (sorted by attribute name).
func (n *Node) Subgraphs() []*Graph {
	var names []string
	for name, a := range n.Attrs {
		if a.Kind == AttrGraph && a.Graph != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	gs := make([]*Graph, len(names))
	for i, name := range names {
		gs[i] = n.Attrs[name].Graph
	}
	return gs
}

// Formal is the number of n's inputs that are operands of its operator,
// that is all but the implicit outer-scope ones.
func (n *Node) Formal() int { return len(n.Inputs) - n.Implicit }

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

// SetProducers sets every tensor's Producer from the nodes' outputs (after
// the nodes were reordered), leaving the others as they are.
func (g *Graph) SetProducers() {
	for i := range g.Nodes {
		for _, out := range g.Nodes[i].Outputs {
			if out != NoTensor {
				g.Tensors[out].Producer = i
			}
		}
	}
}

// Opset returns the opset version imported for the default ONNX domain.
func (g *Graph) Opset() int64 {
	if v, ok := g.Opsets[""]; ok {
		return v
	}
	return g.Opsets["ai.onnx"]
}

// OutputMask reports, for every tensor, whether it is a graph output.
func (g *Graph) OutputMask() []bool {
	out := make([]bool, len(g.Tensors))
	for _, id := range g.Outputs {
		out[id] = true
	}
	return out
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
