package berth

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// Model is an imported ONNX model, ready to be compiled. Its weights stay
// in the memory-mapped model file.
//
// A model whose shapes are all known from the file is imported, its
// shapes inferred, its constants folded and the result verified once, by
// Load. A model that leaves dimensions open (a batch, a sequence length,
// an image size), or whose shapes depend on the values of its inputs (a
// Reshape's target fed as an input), is open: its graph is specialised
// for the shapes, and where needed the values, of the inputs it is run
// with (see Compile and Session.Run).
type Model struct {
	src      *onnx.Model
	graph    *ir.Graph
	fileOps  map[string]int
	fileNode int
	file     *device.MappedFile // the model file, when the model owns it
	open     *openModel         // set when the shapes are open
	// reopen makes the open model of the same file, for a model whose
	// kernels turn out to need input values (nil when it cannot).
	reopen func() (*Model, error)
	// parsed is the decoding of the file the model owns, and with it
	// the external data files its imports mapped (nil: none owned).
	parsed *parsedFile
	// lm is set for a decoder language model (NewGenerator).
	lm *decoder
}

// Load imports the ONNX model at path: it maps the file and decodes the
// graph. When the file fixes every input's shape, Load also infers every
// shape, folds constants and verifies the result; otherwise the model is
// open and that happens for each set of shapes it runs with.
func Load(path string) (*Model, error) {
	path, err := modelPath(path)
	if err != nil {
		return nil, err
	}
	if safetensorsPath(path) {
		return loadSafetensors(path)
	}
	f, err := device.MapFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, err
	}
	var m *Model
	if bytes.HasPrefix(f.Bytes(), []byte(ggufMagic)) {
		m, err = loadGGUF(f, path)
	} else {
		m, err = load(f.Bytes(), path, parsedOnce(func() (*onnx.Parsed, error) { return onnx.ParseMapped(f) }))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	m.file = f
	if m.open != nil {
		m.open.file = f
	}
	if m.open == nil {
		// Importing read the whole file: let its pages go (prepare did
		// the same for files the import mapped itself).
		m.releaseFile()
	}
	return m, nil
}

// safetensorsPath reports whether path names a Hugging Face checkpoint:
// a .safetensors file, an index, or a folder (modelPath sends only a
// checkpoint's folder on).
func safetensorsPath(path string) bool {
	if strings.HasSuffix(path, ".safetensors") || strings.HasSuffix(path, ".safetensors.index.json") {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// modelPath resolves a folder to the model it holds: itself where it
// holds a safetensors checkpoint, else its one .gguf or .onnx file. Any
// other path is returned as it is.
func modelPath(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return path, nil
	}
	for _, pattern := range []string{"*.safetensors", "*.safetensors.index.json"} {
		if m, _ := filepath.Glob(filepath.Join(path, pattern)); len(m) > 0 {
			return path, nil
		}
	}
	for _, pattern := range []string{"*.gguf", "*.onnx"} {
		m, _ := filepath.Glob(filepath.Join(path, pattern))
		switch len(m) {
		case 0:
			continue
		case 1:
			return m[0], nil
		}
		return "", fmt.Errorf("%s holds %d %s files: name the one to load", path, len(m), pattern[1:])
	}
	return "", fmt.Errorf("%s holds no model (a .onnx or .gguf file, or a safetensors checkpoint)", path)
}

// releaseFile hints that the pages of the model's files are not needed
// for now (onnx.Model.Release): those of the file the model owns too.
// A specialised model of an open one shares the file with the others and
// leaves it alone.
func (m *Model) releaseFile() {
	m.src.Release(nil)
	if m.parsed != nil {
		m.parsed.release()
	}
	if m.file != nil {
		m.file.Release(m.file.Bytes())
	}
}

// LoadBytes imports an ONNX model held in memory. External data files, if
// the model names any, are looked up in dir ("" refuses them). b must not
// change while the model is in use: the weights are read from it in place.
func LoadBytes(b []byte, dir string) (*Model, error) {
	return load(b, "onnx", parsedOnce(func() (*onnx.Parsed, error) { return onnx.ParseBytes(b, dir) }))
}

// parsedFile is an ONNX file decoded the first time it is imported, and
// that decoding imported every time after: a model with open shapes
// imports once per set of shapes. The imports share the external data
// files they map, which close unmaps.
type parsedFile struct {
	parse func() (*onnx.Parsed, error)

	mu     sync.Mutex
	done   bool
	parsed *onnx.Parsed
	err    error
}

func parsedOnce(parse func() (*onnx.Parsed, error)) *parsedFile {
	return &parsedFile{parse: parse}
}

func (pf *parsedFile) get() (*onnx.Parsed, error) {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if !pf.done {
		pf.parsed, pf.err = pf.parse()
		pf.done = true
	}
	return pf.parsed, pf.err
}

// imp imports the file with the options given.
func (pf *parsedFile) imp(opts onnx.ImportOptions) (*onnx.Model, error) {
	p, err := pf.get()
	if err != nil {
		return nil, err
	}
	return p.Import(opts)
}

// parsedNow is the decoding, or nil where none was made (or it failed).
func (pf *parsedFile) parsedNow() *onnx.Parsed {
	if pf == nil {
		return nil
	}
	pf.mu.Lock()
	defer pf.mu.Unlock()
	return pf.parsed
}

// files are the bytes the imports read constants from (onnx.Parsed.Files),
// b alone before the first import (and for a nil pf: a model that is not
// an ONNX file).
func (pf *parsedFile) files(b []byte) [][]byte {
	if pf == nil {
		return [][]byte{b}
	}
	if p := pf.parsedNow(); p != nil {
		return p.Files()
	}
	return [][]byte{b}
}

// release lets the pages of the external data files go (onnx.Parsed.Release).
func (pf *parsedFile) release() {
	if p := pf.parsedNow(); p != nil {
		p.Release()
	}
}

// close unmaps the external data files.
func (pf *parsedFile) close() error {
	if p := pf.parsedNow(); p != nil {
		return p.Close()
	}
	return nil
}

// load imports the model whose bytes are b (name is for errors) through
// pf, which the model owns from then on (and closes on failure).
func load(b []byte, name string, pf *parsedFile) (m *Model, err error) {
	defer func() {
		if err != nil {
			pf.close()
			return
		}
		// The model owns the decoding: models that reopen it do not.
		m.parsed = pf
	}()
	sig, err := onnx.ReadSignature(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !sig.Static() {
		return openParsed(b, sig, name, pf)
	}
	src, err := pf.imp(onnx.ImportOptions{})
	if err != nil {
		return nil, err
	}
	m, err = prepare(src)
	if errors.Is(err, ir.ErrValueDependent) {
		// Shapes follow from the values of some inputs: specialise on
		// them at run time.
		return openParsed(b, sig, name, pf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m.reopen = func() (*Model, error) { return openParsed(b, sig, name, pf) }
	return m, nil
}

// openParsed is the open model of the ONNX file pf decodes.
func openParsed(b []byte, sig *onnx.Signature, name string, pf *parsedFile) (*Model, error) {
	m, err := openModelOf(b, sig, name, pf.imp)
	if err != nil {
		return nil, err
	}
	m.open.parsed = pf
	return m, nil
}

func prepare(src *onnx.Model) (*Model, error) {
	g := src.Graph
	m := &Model{src: src, graph: g, fileOps: g.OpCounts(), fileNode: len(g.Nodes)}
	if err := passes.Prepare(g, foldNode); err != nil {
		src.Close()
		return nil, err
	}
	// Importing read the whole file; compiling reads back what it needs.
	src.Release(nil)
	return m, nil
}

// Close releases the model file. Executables compiled from the model must
// not be used afterwards.
func (m *Model) Close() error {
	var err error
	if m.open != nil {
		m.open.close()
	} else {
		err = m.src.Close()
	}
	if m.parsed != nil {
		if perr := m.parsed.close(); err == nil {
			err = perr
		}
		m.parsed = nil
	}
	if m.file != nil {
		if ferr := m.file.Close(); err == nil {
			err = ferr
		}
		m.file = nil
	}
	return err
}

// Graph is the prepared graph (for tools; treat it as read-only). It is
// nil for an open model, whose graph is prepared per shape.
func (m *Model) Graph() *ir.Graph { return m.graph }

// Open reports whether the model's shapes are open: known only from the
// inputs it runs with.
func (m *Model) Open() bool { return m.open != nil }

// Symbols lists the symbols that name the model's open dimensions, as the
// file names them, in order of first appearance (nil for a model whose
// shapes are all known).
func (m *Model) Symbols() []string {
	if m.open == nil {
		return nil
	}
	return slices.Clone(m.open.symbols)
}

// Inputs describes the graph inputs in order.
func (m *Model) Inputs() []TensorInfo {
	if m.open != nil {
		return m.open.infos(m.open.sig.Inputs)
	}
	return infosOf(m.graph, m.graph.Inputs)
}

// Outputs describes the graph outputs in order.
func (m *Model) Outputs() []TensorInfo {
	if m.open != nil {
		return m.open.infos(m.open.sig.Outputs)
	}
	return infosOf(m.graph, m.graph.Outputs)
}

// infosOf describes the tensors ids of g.
func infosOf(g *ir.Graph, ids []ir.TensorID) []TensorInfo {
	out := make([]TensorInfo, len(ids))
	for i, id := range ids {
		out[i] = infoOf(g, id)
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
	Nodes       int            // nodes left after constant folding (0 when open)
	Ops         map[string]int // operator counts after folding (nil when open)
	WeightBytes int64
	// Symbols names the open dimensions of the inputs (see
	// Model.Symbols); Open is set when shapes are settled per run.
	Symbols []string `json:",omitempty"`
	Open    bool     `json:",omitempty"`
	// Metadata are a GGUF file's metadata, in file order, each value as
	// text (an array as its length, type and first and last elements);
	// WeightTypes the bytes of its tensors by type ("q4_0": …).
	Metadata    []KeyValue       `json:",omitempty"`
	WeightTypes map[string]int64 `json:",omitempty"`
}

// KeyValue is one metadata entry of a weight file.
type KeyValue struct {
	Key, Value string
}

// Info describes the model.
func (m *Model) Info() Info {
	if m.open != nil {
		return m.open.info()
	}
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
