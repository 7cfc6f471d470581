package ir

import "fmt"

// Type is the element type and shape of a tensor.
type Type struct {
	DType DType
	Shape Shape
}

// An inferFunc computes the output types of one node from its inputs' types
// (and, for shape-driving inputs such as Reshape's shape, their constant
// values).
type inferFunc func(g *Graph, n *Node) ([]Type, error)

// inferers maps operator types of the default domain to their shape rules.
var inferers = map[string]inferFunc{}

// Infer returns the type and shape of each output of n. Inputs whose values
// decide an output shape (Reshape's shape, Slice's starts, …) must be
// constants by the time Infer runs.
func Infer(g *Graph, n *Node) ([]Type, error) {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return nil, fmt.Errorf("operator %s of domain %q is not supported", n.Op, n.Domain)
	}
	f, ok := inferers[n.Op]
	if !ok {
		return nil, fmt.Errorf("operator %s is not supported", n.Op)
	}
	return f(g, n)
}

// Supported reports whether berth knows the operator (default domain).
func Supported(op string) bool { _, ok := inferers[op]; return ok }
