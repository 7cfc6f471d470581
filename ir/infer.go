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
// The infer_*.go files fill it in their init functions.
var inferers = map[string]inferFunc{}

// register adds the shape rule f for each of the operators ops. Each
// operator has one rule (the files' init order must not matter).
func register(f inferFunc, ops ...string) {
	for _, op := range ops {
		if _, dup := inferers[op]; dup {
			panic("ir: two shape rules for " + op)
		}
		inferers[op] = f
	}
}

// LatestOpset is the opset version assumed for a graph that records none
// (a graph built by hand rather than imported).
const LatestOpset = 17

// addedOps names the operators of opsets 18 to 20 that berth does not
// implement, by the opset that added them, for the error that refuses
// them. (Of the operators those opsets changed, berth implements the
// versions they define; what it does not, such as Resize's antialias or
// GridSample's volumes, is refused by the operator's own rules.)
var addedOps = map[string]int64{
	"CenterCropPad": 18, "Col2Im": 18, "GroupNormalization": 18,
	"DeformConv": 19,
	"AffineGrid": 20, "ImageDecoder": 20, "RegexFullMatch": 20, "StringConcat": 20, "StringSplit": 20,
}

// opset returns the default-domain opset of g, LatestOpset when unknown.
func opset(g *Graph) int64 {
	if v := g.Opset(); v > 0 {
		return v
	}
	return LatestOpset
}

// Infer returns the type and shape of each output of n, one entry per
// output the operator defines for this node (for Split, one per output of
// the node). Inputs whose values decide an output shape (Reshape's shape,
// Slice's starts, …) must be constants by the time Infer runs.
//
// Errors begin with the operator type ("Reshape: cannot reshape [2,3] into
// [4,-1]"); callers add the node's name.
func Infer(g *Graph, n *Node) ([]Type, error) {
	if !DomainOK(n.Domain, n.Op) {
		return nil, fmt.Errorf("operator %s of domain %q is not supported", n.Op, n.Domain)
	}
	f, ok := inferers[n.Op]
	if !ok {
		if since, ok := addedOps[n.Op]; ok {
			return nil, fmt.Errorf("operator %s, added in opset %d, is not supported (the model imports opset %d)", n.Op, since, opset(g))
		}
		return nil, fmt.Errorf("operator %s is not supported (the model imports opset %d)", n.Op, opset(g))
	}
	types, err := f(g, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.Op, err)
	}
	for i, out := range n.Outputs {
		if out != NoTensor && i >= len(types) {
			return nil, fmt.Errorf("%s: the node asks for output %d, the operator has %d", n.Op, i, len(types))
		}
	}
	for i := range types {
		if err := types[i].Shape.Validate(); err != nil {
			return nil, fmt.Errorf("%s: output %d: %w", n.Op, i, err)
		}
	}
	return types, nil
}

// Supported reports whether berth knows the operator (default domain).
func Supported(op string) bool { _, ok := inferers[op]; return ok }
