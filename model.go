package berth

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// Model is an imported, shape-inferred and verified graph, ready to be
// compiled. Its weights stay in the memory-mapped model file.
type Model struct {
	src      *onnx.Model
	graph    *ir.Graph
	fileOps  map[string]int
	fileNode int
}

// Load imports the ONNX model at path: it maps the file, decodes the graph,
// infers every shape, folds constants and verifies the result.
func Load(path string) (*Model, error) {
	src, err := onnx.Import(path)
	if err != nil {
		return nil, err
	}
	m, err := prepare(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// LoadBytes imports an ONNX model held in memory. External data files, if
// the model names any, are looked up in dir ("" refuses them). b must not
// change while the model is in use: the weights are read from it in place.
func LoadBytes(b []byte, dir string) (*Model, error) {
	src, err := onnx.ImportBytes(b, dir)
	if err != nil {
		return nil, err
	}
	return prepare(src)
}

func prepare(src *onnx.Model) (*Model, error) {
	g := src.Graph
	m := &Model{src: src, graph: g, fileOps: g.OpCounts(), fileNode: len(g.Nodes)}
	if err := passes.Prepare(g, cpu.Evaluate); err != nil {
		src.Close()
		return nil, err
	}
	// Importing read the whole file; compiling reads back what it needs.
	src.Release(nil)
	return m, nil
}

// Close releases the model file. Executables compiled from the model must
// not be used afterwards.
func (m *Model) Close() error { return m.src.Close() }

// Graph is the prepared graph (for tools; treat it as read-only).
func (m *Model) Graph() *ir.Graph { return m.graph }

// Inputs describes the graph inputs in order.
func (m *Model) Inputs() []TensorInfo {
	out := make([]TensorInfo, len(m.graph.Inputs))
	for i, id := range m.graph.Inputs {
		out[i] = infoOf(m.graph, id)
	}
	return out
}

// Outputs describes the graph outputs in order.
func (m *Model) Outputs() []TensorInfo {
	out := make([]TensorInfo, len(m.graph.Outputs))
	for i, id := range m.graph.Outputs {
		out[i] = infoOf(m.graph, id)
	}
	return out
}

// Info summarises a model for people: what the file holds and what berth
// made of it.
type Info struct {
	Inputs      []TensorInfo
	Outputs     []TensorInfo
	Opsets      map[string]int64
	Producer    string
	FileNodes   int            // nodes in the file (Constant nodes excluded)
	FileOps     map[string]int // operator counts in the file
	Nodes       int            // nodes left after constant folding
	Ops         map[string]int // operator counts after folding
	WeightBytes int64
}

// Info describes the model.
func (m *Model) Info() Info {
	return Info{
		Inputs:      m.Inputs(),
		Outputs:     m.Outputs(),
		Opsets:      maps.Clone(m.graph.Opsets),
		Producer:    m.src.Producer(),
		FileNodes:   m.fileNode,
		FileOps:     maps.Clone(m.fileOps),
		Nodes:       len(m.graph.Nodes),
		Ops:         m.graph.OpCounts(),
		WeightBytes: m.graph.WeightBytes(),
	}
}

// SortedOps returns the operator names of a count map in a stable order.
func SortedOps(counts map[string]int) []string {
	return slices.Sorted(maps.Keys(counts))
}
