package ir

import "fmt"

// AttrKind says which field of an Attr holds its value.
type AttrKind uint8

// Attribute kinds, mirroring ONNX's.
const (
	AttrInt AttrKind = iota + 1
	AttrFloat
	AttrString
	AttrInts
	AttrFloats
	AttrStrings
	AttrTensor
	AttrGraph
)

// Attr is one node attribute.
type Attr struct {
	Kind    AttrKind
	Int     int64
	Float   float32
	String  string
	Ints    []int64
	Floats  []float32
	Strings []string
	Tensor  *Tensor // a constant tensor value (Data set)
	Graph   *Graph  // a subgraph (control flow)
}

// Attrs maps attribute names to values.
type Attrs map[string]Attr

// Has reports whether the attribute is present.
func (a Attrs) Has(name string) bool { _, ok := a[name]; return ok }

// Int returns an integer attribute or def when absent.
func (a Attrs) Int(name string, def int64) int64 {
	if v, ok := a[name]; ok && v.Kind == AttrInt {
		return v.Int
	}
	return def
}

// Float returns a float attribute or def when absent.
func (a Attrs) Float(name string, def float32) float32 {
	if v, ok := a[name]; ok {
		switch v.Kind {
		case AttrFloat:
			return v.Float
		case AttrInt:
			return float32(v.Int)
		}
	}
	return def
}

// String returns a string attribute or def when absent.
func (a Attrs) String(name, def string) string {
	if v, ok := a[name]; ok && v.Kind == AttrString {
		return v.String
	}
	return def
}

// Ints returns an integer-list attribute or def when absent.
func (a Attrs) Ints(name string, def []int64) []int64 {
	if v, ok := a[name]; ok && (v.Kind == AttrInts || v.Kind == AttrInt) {
		if v.Kind == AttrInt {
			return []int64{v.Int}
		}
		return v.Ints
	}
	return def
}

// Floats returns a float-list attribute or def when absent.
func (a Attrs) Floats(name string, def []float32) []float32 {
	if v, ok := a[name]; ok && v.Kind == AttrFloats {
		return v.Floats
	}
	return def
}

// Tensor returns a tensor-valued attribute or nil when absent.
func (a Attrs) Tensor(name string) *Tensor {
	if v, ok := a[name]; ok && v.Kind == AttrTensor {
		return v.Tensor
	}
	return nil
}

// Graph returns a subgraph attribute or nil when absent.
func (a Attrs) Graph(name string) *Graph {
	if v, ok := a[name]; ok && v.Kind == AttrGraph {
		return v.Graph
	}
	return nil
}

func (k AttrKind) String() string {
	switch k {
	case AttrInt:
		return "int"
	case AttrFloat:
		return "float"
	case AttrString:
		return "string"
	case AttrInts:
		return "ints"
	case AttrFloats:
		return "floats"
	case AttrStrings:
		return "strings"
	case AttrTensor:
		return "tensor"
	case AttrGraph:
		return "graph"
	}
	return fmt.Sprintf("attr(%d)", uint8(k))
}

// Strings returns a list-of-strings attribute, or def when absent or of
// another kind.
func (a Attrs) Strings(name string, def []string) []string {
	if v, ok := a[name]; ok && v.Kind == AttrStrings {
		return v.Strings
	}
	return def
}
