package onnx

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// The opset versions of the default ONNX domain that berth imports. Models
// older than opset 7 (PyTorch's early exports) import too; see the
// package documentation for the limits of their legacy broadcasting.
const (
	MinOpset = 1
	MaxOpset = 20
)

// ErrNotONNX is wrapped by the error for a file that is not a readable ONNX
// model: empty, truncated, not a protobuf, or a protobuf without a graph.
var ErrNotONNX = errors.New("not an ONNX model")

// Model is an imported ONNX model.
//
// The Data of its initializers are windows into the memory-mapped model
// file (and external data files); they stay valid until Close.
type Model struct {
	// Graph is the model's main graph. Node output tensors have no type
	// yet (DType Undefined, nil Shape): package passes infers them.
	Graph *ir.Graph

	IRVersion       int64
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	// Opsets maps each imported operator set domain to its version; the
	// default ONNX domain ("ai.onnx") is recorded as "".
	Opsets map[string]int64
	// Metadata holds the model's metadata_props.
	Metadata map[string]string

	files []*device.MappedFile
	// shared is the mapping an ImportMapped model reads from and does
	// not own.
	shared *device.MappedFile
	// data are the external data files of the Parsed it was imported
	// from, which that Parsed owns (nil: the model owns its own, in
	// files).
	data *dataFiles
}

// Release hints that the mapped bytes of b (constant Data, or nil for
// every file) are not needed for now: their pages leave resident memory
// and are read again from the file when next touched. Nothing changes for
// a reader but the time of that read. Release(nil) leaves the mapping of
// an ImportMapped model alone, which other imports may be reading.
func (m *Model) Release(b []byte) {
	release := func(f *device.MappedFile) {
		if b == nil {
			f.Release(f.Bytes())
		} else {
			f.Release(b)
		}
	}
	if b != nil {
		// The whole of a shared mapping is its owner's to release: other
		// imports of the file may be reading it.
		if m.shared != nil {
			release(m.shared)
		}
		m.data.each(func(f *device.MappedFile) bool { release(f); return false })
	}
	for _, f := range m.files {
		release(f)
	}
}

// ReadInto copies b, part of a constant's Data, into dst by reading the
// file it is mapped from rather than the mapping (device.MappedFile's
// ReadInto), and reports whether it did. It does not allocate.
func (m *Model) ReadInto(dst, b []byte) bool {
	if m.shared != nil && m.shared.ReadInto(dst, b) {
		return true
	}
	for _, f := range m.files {
		if f.ReadInto(dst, b) {
			return true
		}
	}
	return m.data.each(func(f *device.MappedFile) bool { return f.ReadInto(dst, b) })
}

// Detached reports whether the model owns no file: its constants lie in
// memory, or in mappings it reads without owning (ImportMapped, an
// import of a parsed mapped file, whose Parsed owns the external data).
// A copy of its graph then stays valid whatever becomes of the model, as
// long as those mappings do.
func (m *Model) Detached() bool { return len(m.files) == 0 }

// Close unmaps the model's files. The graph's constant Data must not be
// used afterwards. Close is safe to call more than once.
func (m *Model) Close() error {
	var first error
	for _, f := range m.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	m.files = nil
	return first
}

// Import maps the ONNX model file at path read-only and imports it. The
// initializers' bytes are used in place, not copied. External data files
// are looked up in the model's folder.
func Import(path string) (*Model, error) {
	return ImportWith(path, ImportOptions{})
}

// ImportWith is Import with options.
func ImportWith(path string, opts ImportOptions) (*Model, error) {
	f, err := device.MapFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no such file", path)
		}
		return nil, err
	}
	m, err := importModel(path, f.Bytes(), filepath.Dir(path), opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	m.files = append([]*device.MappedFile{f}, m.files...)
	return m, nil
}

// ImportMapped imports the model file f maps, reading its initializers
// in place as Import does. Several imports of one file (specialised with
// different options) share the mapping: f stays open when the model is
// closed, and must outlive it. Its external data files are looked up in
// f's folder.
func ImportMapped(f *device.MappedFile, opts ImportOptions) (*Model, error) {
	p, err := ParseMapped(f)
	if err != nil {
		return nil, err
	}
	return p.Import(opts)
}

// ImportBytes imports a serialized ONNX model held in memory. The
// initializers' Data alias b, which must stay unchanged while the model is
// in use. dir is the folder that external data paths are relative to; with
// dir "" a model with external data is refused.
func ImportBytes(b []byte, dir string) (*Model, error) {
	return ImportBytesWith(b, dir, ImportOptions{})
}

// ImportBytesWith is ImportBytes with options.
func ImportBytesWith(b []byte, dir string, opts ImportOptions) (*Model, error) {
	return importModel("onnx", b, dir, opts)
}

// importer holds the state of one import.
type importer struct {
	file    []byte        // the serialized model; raw_data windows point into it
	opts    ImportOptions // what the caller fixed
	dir     string        // the model's folder, for external data
	realDir string        // dir with symbolic links resolved, once needed
	// data are the external data files: the Parsed's, or the import's
	// own (which its Model then owns).
	data *dataFiles
	// attrData holds the raw_data windows of the main graph's tensor
	// attributes (Constant values), which the wire walk stripped.
	attrData map[*onnxpb.TensorProto]window

	g   *ir.Graph
	ids map[string]ir.TensorID // tensor name → ID
	// seqs maps the main graph's sequence values to their tensors (see
	// sequence.go).
	seqs    map[string][]ir.TensorID
	lowered int // nodes the sequence lowering added (see maxLowered)
	// prebound holds the values of ImportOptions.Values made constants
	// before the nodes were converted, their nodes left out.
	prebound map[string]bool
	// producers returns the main graph's nodes by the tensors they write
	// (nil: needed indexes them itself).
	producers func() map[string]int

	// Subgraph state: depth is how deeply the graph being imported nests
	// (0 for the main graph); free lists the outer-scope names it reads, in
	// first-use order; implicit collects the free names of the subgraphs
	// of the node whose attributes are being converted.
	depth    int
	free     []string
	implicit []string
}

func importModel(name string, b []byte, dir string, opts ImportOptions) (*Model, error) {
	p, err := parse(name, b, dir)
	if err != nil {
		return nil, err
	}
	return p.Import(opts)
}

// Parsed is an ONNX model decoded once, to be imported any number of
// times with different options: a model with open shapes is imported
// again for every set of shapes it runs with, and decoding the file is
// most of an import. A Parsed is read-only; imports of it may run
// concurrently.
type Parsed struct {
	name   string
	file   []byte // the serialized model; raw_data windows point into it
	dir    string
	shared *device.MappedFile // the mapping file lies in, when imports share it
	// data, when set, are the external data files the imports share
	// (ParseMapped, ParseBytes); Close unmaps them.
	data    *dataFiles
	mp      *onnxpb.ModelProto // decoded with raw_data stripped
	windows []window           // the initializers' raw_data
	// attrData holds the raw_data windows of the main graph's tensor
	// attributes (Constant values), which the wire walk stripped.
	attrData map[*onnxpb.TensorProto]window
	opsets   map[string]int64
	// producers indexes the main graph's nodes by the tensors they
	// write, once, for the imports that cut the graph (see needed).
	producers struct {
		once sync.Once
		of   map[string]int
	}
}

// ParseMapped decodes the model file f maps. Its imports read the
// initializers in place and share the mapping, as ImportMapped does.
func ParseMapped(f *device.MappedFile) (*Parsed, error) {
	p, err := parse(f.Path(), f.Bytes(), filepath.Dir(f.Path()))
	if err != nil {
		return nil, err
	}
	p.shared, p.data = f, new(dataFiles)
	return p, nil
}

// ParseBytes decodes a serialized ONNX model held in memory, as
// ImportBytes reads it. Its imports share the external data files they
// map, as ParseMapped's do.
func ParseBytes(b []byte, dir string) (*Parsed, error) {
	p, err := parse("onnx", b, dir)
	if err != nil {
		return nil, err
	}
	p.data = new(dataFiles)
	return p, nil
}

// Files are the bytes the imports so far read their constants from: the
// serialized model, then each external data file mapped. The windows
// stay valid until Close.
func (p *Parsed) Files() [][]byte {
	files := [][]byte{p.file}
	p.data.each(func(f *device.MappedFile) bool { files = append(files, f.Bytes()); return false })
	return files
}

// Release hints that the pages of the external data files are not
// needed for now, as Model.Release(nil) does for the files a model owns.
func (p *Parsed) Release() {
	p.data.each(func(f *device.MappedFile) bool { f.Release(f.Bytes()); return false })
}

// Close unmaps the external data files the imports shared: the models
// imported from p must not be used afterwards. The mapping of
// ParseMapped's file stays its caller's.
func (p *Parsed) Close() error {
	if p.data == nil {
		return nil
	}
	return p.data.close()
}

// Import imports the decoded model with the options given.
func (p *Parsed) Import(opts ImportOptions) (*Model, error) {
	im := &importer{file: p.file, dir: p.dir, opts: opts, attrData: p.attrData, data: p.data}
	own := p.data == nil
	if own {
		im.data = new(dataFiles)
	}
	im.producers = func() map[string]int {
		p.producers.once.Do(func() { p.producers.of = producersOf(p.mp.GetGraph().GetNode()) })
		return p.producers.of
	}
	m, err := im.model(p)
	if err != nil {
		if own {
			im.data.close()
		}
		return nil, fmt.Errorf("%s: %w", p.name, err)
	}
	if own {
		m.files = im.data.list
	}
	m.shared, m.data = p.shared, p.data
	return m, nil
}

func notONNX(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotONNX, fmt.Sprintf(format, args...))
}

// parse decodes b (named name in errors) with its raw data stripped,
// checking what every import relies on.
func parse(name string, b []byte, dir string) (*Parsed, error) {
	p, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.name, p.file, p.dir = name, b, dir
	return p, nil
}

func decode(b []byte) (*Parsed, error) {
	if len(b) == 0 {
		return nil, notONNX("empty file")
	}
	stripped, windows, attrWindows, err := stripRawDataNodes(b)
	if err != nil {
		return nil, notONNX("%v", err)
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(stripped, &mp); err != nil {
		return nil, notONNX("%v", err)
	}
	if mp.GetIrVersion() <= 0 {
		return nil, notONNX("no IR version")
	}
	gp := mp.GetGraph()
	if gp == nil {
		return nil, notONNX("no graph")
	}
	if len(windows) != len(gp.GetInitializer()) {
		return nil, notONNX("found %d initializers in the wire format, %d after decoding", len(windows), len(gp.GetInitializer()))
	}
	if len(attrWindows) != len(gp.GetNode()) {
		return nil, notONNX("found %d nodes in the wire format, %d after decoding", len(attrWindows), len(gp.GetNode()))
	}
	p := &Parsed{mp: &mp, windows: windows}
	for k, np := range gp.GetNode() {
		aps := np.GetAttribute()
		if len(attrWindows[k]) != len(aps) {
			return nil, notONNX("node %d: found %d attributes in the wire format, %d after decoding", k, len(attrWindows[k]), len(aps))
		}
		for j, ap := range aps {
			if w := attrWindows[k][j]; w.ok && ap.GetT() != nil {
				if p.attrData == nil {
					p.attrData = make(map[*onnxpb.TensorProto]window)
				}
				p.attrData[ap.GetT()] = w
			}
		}
	}
	opsets, err := opsetsOf(mp.GetOpsetImport())
	if err != nil {
		return nil, err
	}
	p.opsets = opsets
	return p, nil
}

func (im *importer) model(p *Parsed) (*Model, error) {
	mp := p.mp
	m := &Model{
		IRVersion:       mp.GetIrVersion(),
		ProducerName:    mp.GetProducerName(),
		ProducerVersion: mp.GetProducerVersion(),
		Domain:          mp.GetDomain(),
		ModelVersion:    mp.GetModelVersion(),
		DocString:       mp.GetDocString(),
		Opsets:          maps.Clone(p.opsets),
	}
	if props := mp.GetMetadataProps(); len(props) > 0 {
		m.Metadata = make(map[string]string, len(props))
		for _, kv := range props {
			m.Metadata[kv.GetKey()] = kv.GetValue()
		}
	}
	g, err := im.graph(mp.GetGraph(), p.windows, m.Opsets)
	if err != nil {
		return nil, err
	}
	m.Graph = g
	return m, nil
}

// opsetsOf checks the imported operator sets.
func opsetsOf(imports []*onnxpb.OperatorSetIdProto) (map[string]int64, error) {
	opsets := make(map[string]int64, len(imports))
	for _, os := range imports {
		domain, v := normDomain(os.GetDomain()), os.GetVersion()
		if old, ok := opsets[domain]; ok && old != v {
			return nil, fmt.Errorf("opset of domain %q imported twice (versions %d and %d)", os.GetDomain(), old, v)
		}
		if domain == "" && (v < MinOpset || v > MaxOpset) {
			return nil, fmt.Errorf("opset %d of the default domain (ai.onnx) is not supported; berth imports opsets %d to %d", v, MinOpset, MaxOpset)
		}
		opsets[domain] = v
	}
	// A model of only optimizer nodes may import the training domain alone.
	if _, ok := opsets[""]; !ok && opsets[ir.TrainingDomain] == 0 {
		return nil, fmt.Errorf("the model imports no opset of the default domain (ai.onnx)")
	}
	return opsets, nil
}

// normDomain maps both spellings of the default domain to "".
func normDomain(d string) string {
	if d == "ai.onnx" {
		return ""
	}
	return d
}
