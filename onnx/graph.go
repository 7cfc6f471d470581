package onnx

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// graph converts the model's main graph.
func (im *importer) graph(gp *onnxpb.GraphProto, windows []window, opsets map[string]int64) (*ir.Graph, error) {
	g := &ir.Graph{Name: gp.GetName(), Opsets: opsets}
	im.g = g
	im.ids = make(map[string]ir.TensorID)
	im.prebound = make(map[string]bool)

	if sp := gp.GetSparseInitializer(); len(sp) > 0 {
		return nil, fmt.Errorf("sparse initializer %q is not supported", sp[0].GetValues().GetName())
	}
	for i, tp := range gp.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			return nil, fmt.Errorf("initializer %d has no name", i)
		}
		if _, dup := im.ids[name]; dup {
			return nil, fmt.Errorf("initializer %q is defined twice", name)
		}
		t, err := im.tensor(fmt.Sprintf("initializer %q", name), tp, tensorData{raw: windows[i]})
		if err != nil {
			return nil, err
		}
		im.ids[name] = g.AddTensor(t)
	}

	im.seqs = make(map[string][]ir.TensorID)
	for _, vi := range gp.GetInput() {
		name := vi.GetName()
		if name == "" {
			return nil, fmt.Errorf("a graph input has no name")
		}
		if id, ok := im.ids[name]; ok {
			if g.Tensors[id].Producer == -1 && g.Tensors[id].IsConst() {
				continue // an initializer listed as input (IR version < 4): a constant
			}
			return nil, fmt.Errorf("graph input %q is declared twice", name)
		}
		if st := vi.GetType().GetSequenceType(); st != nil {
			k, ok := im.opts.SequenceLengths[name]
			if !ok && im.opts.Open {
				k, ok = 1, true
			}
			if !ok {
				return nil, fmt.Errorf("graph input %q is a sequence; berth needs its length (ImportOptions.SequenceLengths)", name)
			}
			if k < 0 || k > maxSequence {
				return nil, fmt.Errorf("graph input %q: sequence length %d is outside [0, %d]", name, k, maxSequence)
			}
			if st.GetElemType().GetTensorType() == nil {
				return nil, fmt.Errorf("graph input %q is a sequence of non-tensors (not supported)", name)
			}
			s := make([]ir.TensorID, k)
			for i := range k {
				e := SequenceElement(name, i)
				evi := &onnxpb.ValueInfoProto{Name: &e, Type: st.GetElemType()}
				id, err := im.graphInput(evi)
				if err != nil {
					return nil, err
				}
				s[i] = id
			}
			im.seqs[name] = s
			continue
		}
		if _, err := im.graphInput(vi); err != nil {
			return nil, err
		}
	}
	for name := range im.opts.Constants {
		if id, ok := im.ids[name]; !ok || g.Tensors[id].Data == nil || slices.Contains(g.Inputs, id) {
			return nil, fmt.Errorf("constant %q: the model has no graph input of that name", name)
		}
	}

	// A graph specialised on computed values, or cut down to some of its
	// tensors, converts only the nodes that compute what it still needs.
	var keep []bool
	if len(im.opts.Values) > 0 || len(im.opts.Outputs) > 0 {
		wanted := im.opts.Outputs
		if len(wanted) == 0 {
			for _, vi := range gp.GetOutput() {
				wanted = append(wanted, vi.GetName())
			}
		}
		var cut []string
		keep, cut = im.needed(gp.GetNode(), wanted)
		if err := im.bindCut(cut); err != nil {
			return nil, err
		}
	}
	if err := im.nodes(gp.GetNode(), keep); err != nil {
		return nil, err
	}

	// A sequence output becomes one tensor output per element, each an
	// Identity of the element named by SequenceElement. (Where Outputs
	// replaces them, the graph's own outputs may not be computed.)
	for _, vi := range gp.GetOutput() {
		if len(im.opts.Outputs) > 0 {
			break
		}
		name := vi.GetName()
		if s, ok := im.seqs[name]; ok {
			for i, e := range s {
				o := SequenceElement(name, i)
				if err := im.checkNew(o, "Identity", o); err != nil {
					return nil, err
				}
				id := g.AddTensor(ir.Tensor{Name: o, Producer: len(g.Nodes)})
				im.ids[o] = id
				g.Nodes = append(g.Nodes, ir.Node{Name: o, Op: "Identity", Inputs: []ir.TensorID{e}, Outputs: []ir.TensorID{id}})
				g.Outputs = append(g.Outputs, id)
			}
			continue
		}
		id, ok := im.ids[name]
		if !ok {
			return nil, fmt.Errorf("graph output %q is not produced by any node, initializer or input", name)
		}
		g.Outputs = append(g.Outputs, id)
	}
	if err := im.bindValues(); err != nil {
		return nil, err
	}
	if len(im.opts.Outputs) > 0 {
		g.Outputs = g.Outputs[:0]
		for _, name := range im.opts.Outputs {
			id, ok := im.ids[name]
			if !ok {
				return nil, fmt.Errorf("output %q: the graph has no tensor of that name", name)
			}
			g.Outputs = append(g.Outputs, id)
		}
	}
	if len(g.Outputs) == 0 {
		return nil, fmt.Errorf("the graph has no outputs")
	}
	return g, nil
}

// bindValues makes the tensors ImportOptions.Values names constants: the
// node that computed each writes a fresh tensor nobody reads instead.
func (im *importer) bindValues() error {
	g := im.g
	for _, name := range slices.Sorted(maps.Keys(im.opts.Values)) {
		if im.prebound[name] {
			continue // its node was left out (see needed)
		}
		v := im.opts.Values[name]
		id, ok := im.ids[name]
		if !ok {
			return fmt.Errorf("value %q: the graph has no tensor of that name", name)
		}
		t := &g.Tensors[id]
		if t.Producer < 0 || t.IsConst() {
			return fmt.Errorf("value %q: no node of the graph computes it", name)
		}
		n := &g.Nodes[t.Producer]
		k := slices.Index(n.Outputs, id)
		if k < 0 {
			return fmt.Errorf("value %q: its node does not write it", name)
		}
		unused := g.AddTensor(ir.Tensor{Name: name + "#computed", Producer: t.Producer})
		n.Outputs[k] = unused
		t = &g.Tensors[id]
		t.DType, t.Shape = v.DType, v.Shape.Clone()
		c := v
		c.Name = name
		if err := bindConstant(t, c); err != nil {
			return err
		}
		t.Producer = -1
	}
	return nil
}

// graphInput adds one tensor graph input of the main graph (a constant
// when ImportOptions.Constants binds it).
func (im *importer) graphInput(vi *onnxpb.ValueInfoProto) (ir.TensorID, error) {
	g, name := im.g, vi.GetName()
	if _, ok := im.ids[name]; ok {
		return ir.NoTensor, fmt.Errorf("graph input %q is declared twice", name)
	}
	t, err := inputTensor(vi, im.opts.InputShapes[name])
	if err != nil && im.opts.Open && vi.GetType().GetTensorType() != nil {
		t, err = openInput(vi)
	}
	if err != nil {
		return ir.NoTensor, err
	}
	c, bound := im.opts.Constants[name]
	if bound {
		if err := bindConstant(&t, c); err != nil {
			return ir.NoTensor, err
		}
	}
	id := g.AddTensor(t)
	im.ids[name] = id
	if !bound {
		g.Inputs = append(g.Inputs, id)
	}
	return id, nil
}

// bindConstant gives graph input t the value c (see
// ImportOptions.Constants).
func bindConstant(t *ir.Tensor, c ir.Tensor) error {
	if c.DType != t.DType || !t.Shape.Equal(c.Shape) {
		return fmt.Errorf("constant %q: the input is %s%v, the value is %s%v", t.Name, t.DType, t.Shape, c.DType, c.Shape)
	}
	if int64(len(c.Data)) != t.Bytes() {
		return fmt.Errorf("constant %q: %d bytes of data for %s%v", t.Name, len(c.Data), t.DType, t.Shape)
	}
	// A fresh allocation is aligned to the element size; a zero-size
	// constant still needs non-nil Data.
	t.Data = append(make([]byte, 0, max(len(c.Data), 1)), c.Data...)
	return nil
}

// inputTensor converts a graph input declaration. Its type must be a tensor
// with a fully static shape, or bind must give one (see
// ImportOptions.InputShapes).
func inputTensor(vi *onnxpb.ValueInfoProto, bind []int64) (ir.Tensor, error) {
	name := vi.GetName()
	tt := vi.GetType().GetTensorType()
	if tt == nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q is not a tensor (sequences, maps and optionals are not supported)", name)
	}
	dt, err := dtypeOf(tt.GetElemType())
	if err != nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q: %w", name, err)
	}
	if bind != nil {
		return boundInput(name, dt, tt.GetShape(), bind)
	}
	sp := tt.GetShape()
	if sp == nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q has no shape; berth needs static input shapes", name)
	}
	shape := make(ir.Shape, len(sp.GetDim()))
	for i, d := range sp.GetDim() {
		switch v := d.GetValue().(type) {
		case *onnxpb.TensorShapeProto_Dimension_DimValue:
			if v.DimValue < 0 {
				return ir.Tensor{}, fmt.Errorf("graph input %q: dimension %d is negative (%d)", name, i, v.DimValue)
			}
			shape[i] = v.DimValue
		case *onnxpb.TensorShapeProto_Dimension_DimParam:
			return ir.Tensor{}, fmt.Errorf("graph input %q: dimension %d is symbolic (%q); berth needs static input shapes (export the model with fixed sizes)", name, i, v.DimParam)
		default:
			return ir.Tensor{}, fmt.Errorf("graph input %q: dimension %d has no size; berth needs static input shapes", name, i)
		}
	}
	if err := shape.Validate(); err != nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q: %w", name, err)
	}
	return ir.Tensor{Name: name, DType: dt, Shape: shape, Producer: -1}, nil
}

// openInput is a graph input of an Open import: its type, and no shape.
func openInput(vi *onnxpb.ValueInfoProto) (ir.Tensor, error) {
	dt, err := dtypeOf(vi.GetType().GetTensorType().GetElemType())
	if err != nil {
		return ir.Tensor{}, fmt.Errorf("graph input %q: %w", vi.GetName(), err)
	}
	return ir.Tensor{Name: vi.GetName(), DType: dt, Producer: -1}, nil
}

// pending is a converted node whose inputs are still names.
type pending struct {
	node     ir.Node
	inputs   []string
	implicit []string // outer-scope names its subgraphs read
}

// nodes converts the graph's nodes: Constant nodes become constant tensors,
// every other node an ir node; the nodes are then sorted topologically.
func (im *importer) nodes(nps []*onnxpb.NodeProto, keep []bool) error {
	if im.seqs == nil {
		im.seqs = make(map[string][]ir.TensorID)
	}
	g := im.g
	var nodes []pending
	for k, np := range nps {
		if keep != nil && !keep[k] {
			continue
		}
		if err := im.node(k, np, &nodes); err != nil {
			return err
		}
	}

	// Resolve inputs now that every output is known: files are not always
	// sorted.
	list := make([]ir.Node, len(nodes))
	for i := range nodes {
		n := &nodes[i].node
		for _, in := range nodes[i].inputs {
			if in == "" {
				n.Inputs = append(n.Inputs, ir.NoTensor)
				continue
			}
			if _, ok := im.seqs[in]; ok {
				return fmt.Errorf("node %q (%s): input %q is a sequence; berth resolves sequences only through the sequence operators", n.Name, n.Op, in)
			}
			id, ok := im.lookup(in)
			if !ok {
				return fmt.Errorf("node %q (%s): input %q is not produced by any node, initializer or graph input", n.Name, n.Op, in)
			}
			n.Inputs = append(n.Inputs, id)
		}
		for _, in := range nodes[i].implicit {
			id, ok := im.lookup(in)
			if !ok {
				return fmt.Errorf("node %q (%s): a subgraph reads %q, which is not produced by any node, initializer or graph input", n.Name, n.Op, in)
			}
			n.Inputs = append(n.Inputs, id)
			n.Implicit++
		}
		list[i] = *n
	}
	sorted, err := topoSort(g, list)
	if err != nil {
		return err
	}
	g.Nodes = sorted
	g.SetProducers()
	return nil
}

// checkNew reports an error if a tensor called name already exists.
func (im *importer) checkNew(node, op, name string) error {
	id, ok := im.ids[name]
	if !ok {
		return nil
	}
	t := &im.g.Tensors[id]
	what := "node output"
	switch {
	case t.IsConst():
		what = "constant"
	case t.DType.Valid():
		what = "graph input"
	}
	return fmt.Errorf("node %q (%s): output %q is already defined as a %s", node, op, name, what)
}

// lookup resolves a tensor name. In a subgraph, a name the subgraph does
// not define is an outer-scope value: it gets a capture tensor (see
// ir.Graph.Captures) and is recorded as free, for the parent node to read
// as an implicit input.
func (im *importer) lookup(name string) (ir.TensorID, bool) {
	if id, ok := im.ids[name]; ok {
		return id, true
	}
	if im.depth == 0 {
		return ir.NoTensor, false
	}
	id := im.g.AddTensor(ir.Tensor{Name: name, Producer: -1})
	im.ids[name] = id
	im.g.Captures = append(im.g.Captures, id)
	im.free = append(im.free, name)
	return id, true
}

// subgraph converts a control-flow body (If's branches, Loop's and Scan's
// body). Its inputs may leave their type or shape out: the parent node's
// shape inference sets them. It returns the outer-scope names the
// subgraph (or any subgraph nested in it) reads.
func (im *importer) subgraph(gp *onnxpb.GraphProto) (*ir.Graph, []string, error) {
	if im.depth >= ir.MaxSubgraphDepth {
		return nil, nil, fmt.Errorf("subgraphs nest more than %d levels deep", ir.MaxSubgraphDepth)
	}
	g := &ir.Graph{Name: gp.GetName(), Opsets: im.g.Opsets}
	savedG, savedIDs, savedFree, savedImplicit := im.g, im.ids, im.free, im.implicit
	im.g, im.ids, im.free, im.implicit = g, make(map[string]ir.TensorID), nil, nil
	im.depth++
	defer func() {
		im.g, im.ids, im.free, im.implicit = savedG, savedIDs, savedFree, savedImplicit
		im.depth--
	}()
	what := fmt.Sprintf("subgraph %q", gp.GetName())
	if sp := gp.GetSparseInitializer(); len(sp) > 0 {
		return nil, nil, fmt.Errorf("%s: sparse initializer %q is not supported", what, sp[0].GetValues().GetName())
	}
	for i, tp := range gp.GetInitializer() {
		name := tp.GetName()
		if name == "" {
			return nil, nil, fmt.Errorf("%s: initializer %d has no name", what, i)
		}
		if _, dup := im.ids[name]; dup {
			return nil, nil, fmt.Errorf("%s: initializer %q is defined twice", what, name)
		}
		t, err := im.tensor(fmt.Sprintf("%s: initializer %q", what, name), tp, tensorData{})
		if err != nil {
			return nil, nil, err
		}
		im.ids[name] = g.AddTensor(t)
	}
	for _, vi := range gp.GetInput() {
		name := vi.GetName()
		if name == "" {
			return nil, nil, fmt.Errorf("%s: an input has no name", what)
		}
		if _, dup := im.ids[name]; dup {
			return nil, nil, fmt.Errorf("%s: input %q is declared twice", what, name)
		}
		t := ir.Tensor{Name: name, Producer: -1}
		if tt := vi.GetType().GetTensorType(); tt != nil {
			if dt, err := dtypeOf(tt.GetElemType()); err == nil {
				t.DType = dt
			}
		} else if vi.GetType() != nil && vi.GetType().GetValue() != nil {
			return nil, nil, fmt.Errorf("%s: input %q is not a tensor (sequences, maps and optionals are not supported)", what, name)
		}
		id := g.AddTensor(t)
		im.ids[name] = id
		g.Inputs = append(g.Inputs, id)
	}
	if err := im.nodes(gp.GetNode(), nil); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	for _, vi := range gp.GetOutput() {
		id, ok := im.lookup(vi.GetName())
		if !ok || vi.GetName() == "" {
			return nil, nil, fmt.Errorf("%s: an output has no name", what)
		}
		g.Outputs = append(g.Outputs, id)
	}
	if len(g.Outputs) == 0 {
		return nil, nil, fmt.Errorf("%s has no outputs", what)
	}
	return g, im.free, nil
}

// dedup drops repeated names, keeping the first of each.
func dedup(names []string) []string {
	if len(names) < 2 {
		return names
	}
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, s := range names {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// node converts the k-th node proto of a graph, appending what it becomes
// to *nodes (nothing for a Constant or a sequence operator that only
// rearranges a sequence).
func (im *importer) node(k int, np *onnxpb.NodeProto, nodes *[]pending) error {
	g := im.g
	op := np.GetOpType()
	if op == "" {
		return fmt.Errorf("node %d has no operator type", k)
	}
	name := np.GetName()
	if name == "" {
		name = fmt.Sprintf("%s_%d", op, k)
	}
	domain := normDomain(np.GetDomain())
	if domain != "" && !(domain == ir.TrainingDomain && ir.TrainingOp(op)) {
		return fmt.Errorf("node %q: operator %s of domain %q is not supported", name, op, np.GetDomain())
	}
	if _, ok := g.Opsets[domain]; !ok && g.Opsets != nil {
		return fmt.Errorf("node %q: operator %s: the model imports no opset of domain %q", name, op, np.GetDomain())
	}
	if domain == "" && im.depth == 0 {
		if op == "SequenceMap" {
			return im.sequenceMap(name, np, nodes)
		}
		if ins := np.GetInput(); op == "Identity" && len(ins) == 1 && len(np.GetOutput()) == 1 {
			if s, ok := im.seqs[ins[0]]; ok {
				out := np.GetOutput()[0]
				if err := im.checkNew(name, op, out); err != nil {
					return err
				}
				im.seqs[out] = s
				return nil
			}
		}
	}
	im.implicit = nil
	attrs, err := im.attrs(name, op, np.GetAttribute())
	if err != nil {
		return err
	}
	implicit := dedup(im.implicit)
	im.implicit = nil
	if sequenceOps[op] && domain == "" {
		if err := im.sequenceNode(name, op, np, attrs, nodes); err != nil {
			return err
		}
		return nil
	}
	if op == "Constant" {
		if err := im.constant(name, np, attrs); err != nil {
			return err
		}
		return nil
	}
	if len(implicit) > 0 && op == "Constant" {
		return fmt.Errorf("node %q (Constant): a constant cannot hold a subgraph", name)
	}
	n := ir.Node{Name: name, Op: op, Domain: domain, Attrs: attrs}
	for _, out := range np.GetOutput() {
		if out == "" {
			// An omitted optional output.
			n.Outputs = append(n.Outputs, ir.NoTensor)
			continue
		}
		if err := im.checkNew(name, op, out); err != nil {
			return err
		}
		id := g.AddTensor(ir.Tensor{Name: out, Producer: -1})
		im.ids[out] = id
		n.Outputs = append(n.Outputs, id)
	}
	*nodes = append(*nodes, pending{node: n, inputs: np.GetInput(), implicit: implicit})
	return nil
}
