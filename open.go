package berth

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// importer imports the model file with the options given; every import
// is independent of the others and may be closed on its own.
type importer func(onnx.ImportOptions) (*onnx.Model, error)

// openModel is what a Model whose shapes are open keeps: the file's
// declared inputs and outputs, a way to import it again specialised, and
// its structure for reading (probe).
type openModel struct {
	name    string
	sig     *onnx.Signature
	symbols []string
	imp     importer
	// parsed, for an ONNX file, is the decoding imp imports (owned by
	// the Model that loaded it): its files are where constants lie.
	parsed *parsedFile
	probe  *onnx.Model // the graph imported without shapes; nil if that failed
	// file is the model file all imports read (nil for LoadBytes);
	// bytes are its bytes (LoadBytes's).
	file  *device.MappedFile
	bytes []byte
	// describe, where set, adds what the file says of itself to Info (a
	// GGUF file's metadata and tensor types).
	describe func(*Info)
	// closer, where set, holds files the model reads that Close closes
	// (a safetensors checkpoint's).
	closer io.Closer

	mu sync.Mutex
	// byValue marks the declared inputs whose values decide shapes, as
	// specialising has found them so far.
	byValue []bool
	// generic is the first graph a specialisation prepared that turned
	// out shape-generic (see reinfer); nil until one did.
	generic *genericGraph
	// fullOnly makes every specialisation import and prepare the file
	// (for tests that compare the two ways); reinferred counts those
	// that re-inferred generic instead.
	fullOnly   bool
	reinferred atomic.Int64

	// imported keeps the last graph imported with computed values bound
	// (see specialise), under the key of everything but those values.
	imported struct {
		sync.Mutex
		key  string
		src  *onnx.Model
		ids  map[string]ir.TensorID // its tensors by name
		hits int                    // the imports it spared
	}
}

func openModelOf(b []byte, sig *onnx.Signature, name string, imp importer) (*Model, error) {
	for _, v := range sig.Inputs {
		switch {
		case v.Kind == onnx.OptionalValue || v.Kind == onnx.OtherValue:
			what := "an optional value"
			if v.Kind == onnx.OtherValue {
				what = "neither a tensor nor a sequence of tensors"
			}
			return nil, fmt.Errorf("%s: graph input %q is %s (berth takes tensors and sequences of tensors)", name, v.Name, what)
		case v.DType == ir.Undefined:
			return nil, fmt.Errorf("%s: graph input %q has an element type berth does not support", name, v.Name)
		}
	}
	o := &openModel{name: name, bytes: b, sig: sig, symbols: sig.Symbols(), imp: imp, byValue: make([]bool, len(sig.Inputs))}
	probe, err := imp(onnx.ImportOptions{Open: true})
	if err != nil {
		// The structure is needed for reading only: a file that cannot be
		// imported at all says so here, one that needs its shapes first
		// says so when it is specialised.
		if errors.Is(err, onnx.ErrNotONNX) {
			return nil, err
		}
	} else {
		o.probe = probe
		probe.Release(nil)
	}
	return &Model{open: o}, nil
}

func (o *openModel) close() {
	if o.probe != nil {
		o.probe.Close()
	}
	o.imported.Lock()
	if o.imported.src != nil {
		o.imported.src.Close()
		o.imported.src = nil
	}
	o.imported.Unlock()
	if o.closer != nil {
		o.closer.Close()
	}
}

// release lets the pages of the model file go once a plan is compiled:
// compiling read what it packed, and runs read back only the rest (as a
// fixed-shape model's do).
func (o *openModel) release() {
	if o.file != nil {
		o.file.Release(o.file.Bytes())
	}
	o.parsed.release()
}

// infos describes declared values.
func (o *openModel) infos(vs []onnx.Value) []TensorInfo {
	out := make([]TensorInfo, len(vs))
	for i, v := range vs {
		ti := TensorInfo{Name: v.Name, DType: v.DType, Sequence: v.Kind == onnx.SequenceValue}
		if v.Ranked {
			ti.Shape = make([]int64, len(v.Shape))
			for k, d := range v.Shape {
				ti.Shape[k] = d.Size
				if d.Open() {
					if ti.Symbols == nil {
						ti.Symbols = make([]string, len(v.Shape))
					}
					ti.Symbols[k] = d.Symbol
				}
			}
		}
		out[i] = ti
	}
	return out
}

func (o *openModel) info() Info {
	in := Info{Inputs: o.infos(o.sig.Inputs), Outputs: o.infos(o.sig.Outputs), Symbols: o.symbols, Open: true}
	if o.describe != nil {
		o.describe(&in)
	}
	if p := o.probe; p != nil {
		in.Opsets = maps.Clone(p.Opsets)
		in.Producer = p.Producer()
		in.FileOps = p.Graph.OpCounts()
		in.FileNodes = len(p.Graph.Nodes)
		in.WeightBytes = p.Graph.WeightBytes()
	}
	return in
}

// feed is one tensor fed to a graph input of a specialised model: a
// declared tensor input, or one element of a declared sequence input.
type feed struct {
	decl int    // index of the declared input
	name string // the graph input's name (SequenceElement for elements)
}

// specialise imports and prepares the model for the inputs in flat (in
// declared order, sequences element by element, named as the graph
// inputs they feed), binding as constants the declared inputs that
// byValue marks. The model it returns shares the file. Where a graph
// prepared so turned out shape-generic, a plain specialisation (see
// plain) re-infers that graph instead (see reinfer).
//
// bound binds tensors that nodes compute to values a stage of the graph
// computed, and goal, when not nil, names the tensors to compute instead
// of the graph's outputs (see onnx.ImportOptions.Values and Outputs).
func (o *openModel) specialise(flat []Tensor, decls []int, byValue []bool, bound map[string]ir.Tensor, goal []string) (*Model, error) {
	plain := o.plain(byValue, bound, goal)
	if plain {
		if gen := o.keptGeneric(); gen != nil {
			if m, err := o.reinfer(gen, flat, decls); err == nil {
				o.reinferred.Add(1)
				return m, nil
			}
			// Where re-inferring fails, preparing afresh says why (or
			// finds what the shapes need).
		}
	}
	opts := onnx.ImportOptions{InputShapes: make(map[string][]int64, len(flat)), SequenceLengths: map[string]int{}, Values: bound, Outputs: goal}
	for i, t := range flat {
		d := &o.sig.Inputs[decls[i]]
		if d.Kind == onnx.SequenceValue {
			opts.SequenceLengths[d.Name]++
		}
		opts.InputShapes[t.Name] = t.Shape
		if byValue[decls[i]] {
			if opts.Constants == nil {
				opts.Constants = map[string]ir.Tensor{}
			}
			opts.Constants[t.Name] = ir.Tensor{Name: t.Name, DType: t.DType, Shape: ir.Shape(t.Shape), Data: t.Data}
		}
	}
	for _, d := range o.sig.Inputs {
		if _, ok := opts.SequenceLengths[d.Name]; d.Kind == onnx.SequenceValue && !ok {
			opts.SequenceLengths[d.Name] = 0
		}
	}
	var key string
	var src *onnx.Model
	if len(bound) > 0 {
		key = importKey(opts)
		src = o.reimport(key, bound)
	}
	if src == nil {
		var err error
		if src, err = o.imp(opts); err != nil {
			return nil, err
		}
		if goal != nil || bound != nil {
			// Drop what the goal does not need before shapes are
			// inferred: that part may be what waits for the values.
			passes.EliminateDeadCode(src.Graph)
		}
		if key != "" && src.Detached() {
			src = o.keepImport(key, src)
		}
	}
	m, err := prepare(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.name, err)
	}
	if plain {
		o.keepGeneric(m)
	}
	return m, nil
}

// importKey is what an import with values bound depends on but the
// bytes of the floating-point and boolean values: the inputs' shapes and
// bound values, the sequences' lengths, the names, types and shapes of
// the computed values bound (the bytes of integer ones too), and the
// outputs asked for.
func importKey(opts onnx.ImportOptions) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(opts.InputShapes)) {
		fmt.Fprintf(&b, "s %q %v\n", name, opts.InputShapes[name])
	}
	for _, name := range slices.Sorted(maps.Keys(opts.SequenceLengths)) {
		fmt.Fprintf(&b, "q %q %d\n", name, opts.SequenceLengths[name])
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Constants)) {
		c := opts.Constants[name]
		fmt.Fprintf(&b, "c %q %s %v %x\n", name, c.DType, c.Shape, c.Data)
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Values)) {
		v := opts.Values[name]
		fmt.Fprintf(&b, "v %q %s %v", name, v.DType, v.Shape)
		if v.DType == ir.Int64 || v.DType == ir.Int32 {
			// Importing may read an integer's value (a sequence's
			// split sizes): the graph may follow from it.
			fmt.Fprintf(&b, " %x", v.Data)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "o %q %v", opts.Outputs, opts.Open)
	return b.String()
}

// keepImport keeps src, a graph imported with computed values bound, as
// the one later imports under the same key copy (see reimport), and
// returns a copy of it to prepare: preparing changes the graph it is
// given.
func (o *openModel) keepImport(key string, src *onnx.Model) *onnx.Model {
	ids := make(map[string]ir.TensorID, len(src.Graph.Tensors))
	for i := range src.Graph.Tensors {
		ids[src.Graph.Tensors[i].Name] = ir.TensorID(i)
	}
	c := *src
	c.Graph = passes.Clone(src.Graph)
	o.imported.Lock()
	defer o.imported.Unlock()
	if o.imported.src != nil {
		o.imported.src.Close()
	}
	o.imported.key, o.imported.src, o.imported.ids = key, src, ids
	return &c
}

// reimport returns, where the last graph kept was imported under key, a
// copy of it with the values of bound in place of its own, or nil. The
// copy owns no file: the model file it reads lives as long as o.
func (o *openModel) reimport(key string, bound map[string]ir.Tensor) *onnx.Model {
	o.imported.Lock()
	defer o.imported.Unlock()
	if o.imported.src == nil || o.imported.key != key {
		return nil
	}
	c := *o.imported.src
	c.Graph = passes.Clone(o.imported.src.Graph)
	for name, v := range bound {
		id, ok := o.imported.ids[name]
		if !ok {
			continue // nothing the graph computes reads it (onnx: needed)
		}
		t := &c.Graph.Tensors[id]
		if !t.IsConst() || t.DType != v.DType || !t.Shape.Equal(v.Shape) || len(t.Data) != len(v.Data) {
			return nil // cannot happen under the same key; import afresh
		}
		t.Data = v.Data
	}
	o.imported.hits++
	return &c
}

// isInput reports whether name is a declared input or an element of a
// declared sequence input.
func (o *openModel) isInput(name string) bool {
	for _, v := range o.sig.Inputs {
		if feeds(v, name) {
			return true
		}
	}
	return false
}

// valueInputs lists, by operator, the inputs whose values decide the
// shape of its output (ONNX's own shape inference needs their values).
var valueInputs = map[string][]int{
	"NonZero": {0}, "NonMaxSuppression": {0, 1, 2, 3, 4}, "Compress": {1}, "TopK": {1}, "Unique": {0},
	"Range": {0, 1, 2}, "ConstantOfShape": {0}, "Reshape": {1}, "Expand": {1}, "Tile": {1},
	"Slice": {1, 2, 3, 4}, "Pad": {1}, "Resize": {1, 2, 3}, "Upsample": {1}, "Split": {1},
	"Squeeze": {1}, "Unsqueeze": {1}, "OneHot": {1}, "Loop": {0},
}

// stageGoal is what a stage computes when the shapes of the graph depend
// on the value of the tensor called name: that tensor and every other
// value a shape depends on that the same stage can compute, so that one
// stage runs where the graph would otherwise be cut once per value (a
// detector's per-class masks). A value the stage can compute is the input
// of an operator that valueInputs lists, computed by nodes none of which
// waits for a value not bound yet. Where a node's subgraph computes name
// (an If branch's NonMaxSuppression), the values are that node's inputs,
// from which the subgraph then folds.
//
// The goal also holds every tensor the stage computes that a node after
// it reads, so that the plans after the stage take them as they are
// instead of computing them again. It is nil when no node computes name.
func (o *openModel) stageGoal(name string, bound map[string]ir.Tensor) []string {
	if o.probe == nil {
		return nil
	}
	g := o.probe.Graph
	id, host := ir.NoTensor, -1
	for i := range g.Tensors {
		if g.Tensors[i].Name == name {
			id = ir.TensorID(i)
			break
		}
	}
	if id == ir.NoTensor {
		host = slices.IndexFunc(g.Nodes, func(n ir.Node) bool {
			return slices.ContainsFunc(n.Subgraphs(), func(sg *ir.Graph) bool { return computes(sg, name) })
		})
		if host < 0 {
			return nil
		}
	} else if g.Tensors[id].Producer < 0 || g.Tensors[id].IsConst() {
		return nil
	}
	// known marks the values that need no stage: constants, values bound
	// already, and what is computed from shapes alone (Shape, Size),
	// which the shapes of a run settle.
	known := make([]bool, len(g.Tensors))
	for i := range g.Tensors {
		_, done := bound[g.Tensors[i].Name]
		known[i] = g.Tensors[i].IsConst() || done
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		all := n.Op == "Shape" || n.Op == "Size"
		if !all && len(n.Subgraphs()) == 0 {
			all = true
			for _, in := range n.Inputs {
				all = all && (in == ir.NoTensor || known[in])
			}
		}
		if all {
			for _, out := range n.Outputs {
				if out != ir.NoTensor {
					known[out] = true
				}
			}
		}
	}
	open := func(in ir.TensorID) bool {
		return in != ir.NoTensor && g.Tensor(in).Producer >= 0 && !known[in]
	}
	// blocked marks the tensors whose shapes wait for a value: the
	// outputs of a node with an open value input, and everything after.
	blocked := make([]bool, len(g.Tensors))
	var goal []string
	add := func(in ir.TensorID) {
		if t := g.Tensor(in); !blocked[in] && !slices.Contains(goal, t.Name) {
			goal = append(goal, t.Name)
		}
	}
	if id != ir.NoTensor {
		add(id)
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		waits := i == host
		for _, in := range n.Inputs {
			waits = waits || in != ir.NoTensor && blocked[in]
		}
		for _, k := range valueInputs[n.Op] {
			if k < n.Formal() && open(n.Inputs[k]) {
				waits = true
				add(n.Inputs[k])
			}
		}
		if !waits {
			continue
		}
		for _, in := range n.Inputs {
			if open(in) {
				add(in) // what the stage hands on (none where blocked)
			}
		}
		for _, out := range n.Outputs {
			if out != ir.NoTensor {
				blocked[out] = true
			}
		}
	}
	return goal
}

// computes reports whether a node of g, or of a subgraph within it,
// writes the tensor called name.
func computes(g *ir.Graph, name string) bool {
	for i := range g.Nodes {
		n := &g.Nodes[i]
		for _, out := range n.Outputs {
			if out != ir.NoTensor && g.Tensor(out).Name == name {
				return true
			}
		}
		if slices.ContainsFunc(n.Subgraphs(), func(sg *ir.Graph) bool { return computes(sg, name) }) {
			return true
		}
	}
	return false
}

// learn widens byValue after err, a failure to specialise or compile:
// when err names a tensor whose value decides a shape, the declared
// inputs that value is computed from are bound by value from now on. It
// reports whether anything was added; when the probe cannot say which
// inputs feed the tensor, the integer inputs are added first, then every
// input.
func (o *openModel) learn(err error, byValue []bool) bool {
	var ve *ir.ValueError
	if !errors.As(err, &ve) {
		return false
	}
	added := false
	for _, k := range o.feeding(ve.Tensor) {
		if !byValue[k] {
			byValue[k], added = true, true
		}
	}
	if added {
		return true
	}
	for k, v := range o.sig.Inputs {
		if !byValue[k] && v.DType.IsInt() {
			byValue[k], added = true, true
		}
	}
	if added {
		return true
	}
	for k := range o.sig.Inputs {
		if !byValue[k] {
			byValue[k], added = true, true
		}
	}
	return added
}

// feeding lists the declared inputs whose values the value of the tensor
// called name is computed from. Shape and Size read only shapes, which
// are bound already, so the walk stops there. A tensor inside a
// subgraph is computed from everything its node reads.
func (o *openModel) feeding(name string) []int {
	if o.probe == nil {
		return nil
	}
	g := o.probe.Graph
	start := findTensor(g, name)
	if start == ir.NoTensor {
		return nil
	}
	seen := make([]bool, len(g.Tensors))
	stack := []ir.TensorID{start}
	var out []int
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if id == ir.NoTensor || seen[id] {
			continue
		}
		seen[id] = true
		t := g.Tensor(id)
		if t.Producer < 0 {
			for k, v := range o.sig.Inputs {
				if feeds(v, t.Name) {
					out = append(out, k)
				}
			}
			continue
		}
		n := &g.Nodes[t.Producer]
		if n.Op == "Shape" || n.Op == "Size" {
			continue
		}
		stack = append(stack, n.Inputs...)
	}
	return out
}

// findTensor finds the tensor called name in g or, failing that, the
// node of g whose subgraph holds it; it returns a tensor of g to start
// from (the first input of that node stands for all of them through
// the node's producer walk), or NoTensor.
func findTensor(g *ir.Graph, name string) ir.TensorID {
	for id := range g.Tensors {
		if g.Tensors[id].Name == name {
			return ir.TensorID(id)
		}
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		for _, sub := range n.Subgraphs() {
			if findTensor(sub, name) != ir.NoTensor && len(n.Outputs) > 0 {
				return n.Outputs[0]
			}
		}
	}
	return ir.NoTensor
}

// feeds reports whether the graph input called name is the declared
// input v or, for a sequence, one of its elements (SequenceElement).
func feeds(v onnx.Value, name string) bool {
	if name == v.Name {
		return true
	}
	_, elem := elementIndex(name, v.Name)
	return v.Kind == onnx.SequenceValue && elem
}

// elementIndex parses name as SequenceElement(seq, k) without
// allocating.
func elementIndex(name, seq string) (int, bool) {
	if len(name) < len(seq)+3 || name[:len(seq)] != seq || name[len(seq)] != '[' || name[len(name)-1] != ']' {
		return 0, false
	}
	k := 0
	digits := name[len(seq)+1 : len(name)-1]
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' || k > 1<<30 || i > 0 && digits[0] == '0' {
			return 0, false
		}
		k = k*10 + int(c-'0')
	}
	return k, true
}
