package berth

import (
	"fmt"
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// genericGraph is a graph an open model's specialisation prepared that
// turned out shape-generic (passes.ShapeGeneric): the same nodes,
// attributes and constants come out of importing and preparing the file
// at any input shapes, so new shapes re-infer a copy of it (reinfer)
// instead. It is read-only once kept.
type genericGraph struct {
	// src is the import it was prepared from, which owns no file (its
	// constants lie in the model file and the decoding's mappings, which
	// live as long as the open model), with the prepared graph as Graph.
	src      onnx.Model
	fileOps  map[string]int
	fileNode int
}

// plain reports whether a specialisation with these arguments may take a
// shape-generic graph: an ONNX file (whose import audits what it decides
// on shapes), no input bound by value, no computed value bound or goal
// of a stage, no sequence input.
func (o *openModel) plain(byValue []bool, bound map[string]ir.Tensor, goal []string) bool {
	if o.fullOnly || o.parsed == nil || bound != nil || goal != nil || slices.Contains(byValue, true) {
		return false
	}
	for i := range o.sig.Inputs {
		if o.sig.Inputs[i].Kind != onnx.TensorValue {
			return false
		}
	}
	return true
}

// keptGeneric is the shape-generic graph kept, or nil.
func (o *openModel) keptGeneric() *genericGraph {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.generic
}

// keepGeneric keeps a copy of m's graph, just prepared for a plain
// specialisation, when it is shape-generic and none is kept yet.
func (o *openModel) keepGeneric(m *Model) {
	if !passes.ShapeGeneric(m.graph) || !m.src.Detached() || o.keptGeneric() != nil {
		return
	}
	gen := &genericGraph{src: *m.src, fileOps: m.fileOps, fileNode: m.fileNode}
	gen.src.Graph = passes.Clone(m.graph)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.generic == nil {
		o.generic = gen
	}
}

// reinfer specialises the model for the inputs flat (as specialise takes
// them, none bound by value) from the shape-generic graph gen: their
// shapes are checked against the declarations as a run's are (rank,
// fixed sizes, one size per symbol), then gen's shapes are inferred
// anew for them (passes.Reinfer). An error means only that this way does
// not serve: importing and preparing the file says what the shapes give.
func (o *openModel) reinfer(gen *genericGraph, flat []Tensor, decls []int) (*Model, error) {
	if len(flat) != len(decls) {
		return nil, fmt.Errorf("%d inputs for %d declarations", len(flat), len(decls))
	}
	sizes := make([]int64, len(o.symbols))
	for i := range sizes {
		sizes[i] = -1
	}
	for i := range flat {
		if decls[i] < 0 || decls[i] >= len(o.sig.Inputs) {
			return nil, fmt.Errorf("input %q: no declared input %d", flat[i].Name, decls[i])
		}
		if err := o.checkDims(flat[i].Name, &o.sig.Inputs[decls[i]], flat[i].Shape, nil, nil, sizes); err != nil {
			return nil, err
		}
	}
	g := gen.src.Graph
	shapes := make([][]int64, len(g.Inputs))
	for i, id := range g.Inputs {
		name := g.Tensor(id).Name
		k := slices.IndexFunc(flat, func(t Tensor) bool { return t.Name == name })
		if k < 0 {
			return nil, fmt.Errorf("graph input %q is not among the inputs given", name)
		}
		shapes[i] = flat[k].Shape
	}
	rg, err := passes.Reinfer(g, shapes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	src := gen.src
	src.Graph = rg
	return &Model{src: &src, graph: rg, fileOps: gen.fileOps, fileNode: gen.fileNode}, nil
}
