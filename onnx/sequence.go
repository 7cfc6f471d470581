package onnx

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Sequences with a static structure. berth plans tensors only, so the
// importer resolves every sequence value to a fixed tuple of tensors while
// it reads the graph: a sequence's length and which tensor sits at each
// position must follow from the graph alone (positions, split sizes and
// the input shapes SplitToSequence cuts are constants or declared). The
// sequence operators then disappear: SequenceAt becomes an Identity,
// SequenceLength a constant, ConcatFromSequence a Concat (after one
// Unsqueeze per element when new_axis is set), SplitToSequence a Split (and
// Squeezes when keepdims is 0); SequenceConstruct, SequenceEmpty,
// SequenceInsert and SequenceErase only rearrange the tuple.

// maxSequence bounds the length of a sequence and the nodes one
// SequenceMap unrolls into, so that a hostile file cannot make the
// importer build an unbounded graph.
const maxSequence = 1 << 16

// maxLowered bounds the nodes lowering all of a graph's sequences may add.
const maxLowered = 1 << 20

// sequenceOps lists the operators the importer lowers this way.
var sequenceOps = map[string]bool{
	"SequenceEmpty": true, "SequenceConstruct": true, "SequenceInsert": true,
	"SequenceErase": true, "SequenceAt": true, "SequenceLength": true,
	"ConcatFromSequence": true, "SplitToSequence": true,
}

// sequenceNode lowers one sequence operator, appending the ordinary nodes
// it becomes to *nodes.
func (im *importer) sequenceNode(name, op string, np *onnxpb.NodeProto, attrs ir.Attrs, nodes *[]pending) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("node %q (%s): %s", name, op, fmt.Sprintf(format, a...))
	}
	if im.depth > 0 {
		return fail("sequence operators inside subgraphs are not supported")
	}
	ins, outs := np.GetInput(), np.GetOutput()
	if len(outs) != 1 || outs[0] == "" {
		return fail("needs exactly one named output")
	}
	out := outs[0]
	if err := im.checkNew(name, op, out); err != nil {
		return err
	}
	if _, dup := im.seqs[out]; dup {
		return fail("output %q is already defined as a sequence", out)
	}
	arg := func(i int) string {
		if i < len(ins) {
			return ins[i]
		}
		return ""
	}
	seq := func(i int) ([]ir.TensorID, error) {
		s, ok := im.seqs[arg(i)]
		if !ok {
			return nil, fail("input %q is not a sequence defined earlier in the graph (berth needs each sequence's structure statically)", arg(i))
		}
		return s, nil
	}
	tensor := func(n string) (ir.TensorID, error) {
		if _, ok := im.seqs[n]; ok {
			return ir.NoTensor, fail("input %q is a sequence, want a tensor", n)
		}
		id, ok := im.ids[n]
		if !ok {
			return ir.NoTensor, fail("input %q is not defined before the node", n)
		}
		return id, nil
	}
	// position reads constant input i as a position in a sequence of
	// length n (end: one past the last position is allowed), dflt when
	// the input is omitted.
	position := func(i, n int, end bool, dflt int) (int, error) {
		if arg(i) == "" {
			return dflt, nil
		}
		v, err := im.constInts(name, op, arg(i))
		if err != nil {
			return 0, err
		}
		if len(v) != 1 {
			return 0, fail("position %q must be a scalar", arg(i))
		}
		p, hi := int(v[0]), n
		if !end {
			hi = n - 1
		}
		if p < 0 {
			p += n
		}
		if p < 0 || p > hi {
			return 0, fail("position %d is out of range for a sequence of length %d", v[0], n)
		}
		return p, nil
	}
	// emit queues an ordinary node.
	emit := func(op string, in []string, outs []string, attrs ir.Attrs) error {
		if im.lowered++; im.lowered > maxLowered {
			return fail("lowering the graph's sequences takes more than %d nodes", maxLowered)
		}
		n := ir.Node{Name: name + "/" + op, Op: op, Attrs: attrs}
		for _, o := range outs {
			if err := im.checkNew(name, op, o); err != nil {
				return err
			}
			id := im.g.AddTensor(ir.Tensor{Name: o, Producer: -1})
			im.ids[o] = id
			n.Outputs = append(n.Outputs, id)
		}
		*nodes = append(*nodes, pending{node: n, inputs: in})
		return nil
	}
	ints := func(suffix string, v []int64) (string, error) {
		n := out + "/" + suffix
		if err := im.checkNew(name, op, n); err != nil {
			return "", err
		}
		im.ids[n] = im.g.AddTensor(ir.Tensor{Name: n, DType: ir.Int64, Shape: ir.Shape{int64(len(v))}, Data: ir.Int64Bytes(v), Producer: -1})
		return n, nil
	}
	opset := im.g.Opset()
	// alongAxis replaces each tensor of names by its Unsqueeze or Squeeze
	// (op) at axis, named out/unsqueeze0, out/unsqueeze1, …; from opset
	// 13 the nodes share one constant axes input.
	alongAxis := func(op string, names []string, axis int64) error {
		for i := range names {
			o := out + "/" + strings.ToLower(op) + strconv.Itoa(i)
			in, at := []string{names[i]}, ir.Attrs{}
			if opset >= 13 {
				axes := out + "/axes"
				if i == 0 {
					var err error
					if axes, err = ints("axes", []int64{axis}); err != nil {
						return err
					}
				}
				in = append(in, axes)
			} else {
				at["axes"] = ir.Attr{Kind: ir.AttrInts, Ints: []int64{axis}}
			}
			if err := emit(op, in, []string{o}, at); err != nil {
				return err
			}
			names[i] = o
		}
		return nil
	}

	switch op {
	case "SequenceEmpty":
		im.seqs[out] = []ir.TensorID{}
	case "SequenceConstruct":
		if len(ins) == 0 {
			return fail("needs at least one input")
		}
		s := make([]ir.TensorID, len(ins))
		for i, n := range ins {
			id, err := tensor(n)
			if err != nil {
				return err
			}
			s[i] = id
		}
		im.seqs[out] = s
	case "SequenceInsert":
		s, err := seq(0)
		if err != nil {
			return err
		}
		t, err := tensor(arg(1))
		if err != nil {
			return err
		}
		p, err := position(2, len(s), true, len(s))
		if err != nil {
			return err
		}
		r := append(append(append([]ir.TensorID{}, s[:p]...), t), s[p:]...)
		im.seqs[out] = r
	case "SequenceErase":
		s, err := seq(0)
		if err != nil {
			return err
		}
		if len(s) == 0 {
			return fail("cannot erase from an empty sequence")
		}
		p, err := position(1, len(s), false, len(s)-1)
		if err != nil {
			return err
		}
		im.seqs[out] = append(append([]ir.TensorID{}, s[:p]...), s[p+1:]...)
	case "SequenceAt":
		s, err := seq(0)
		if err != nil {
			return err
		}
		if arg(1) == "" {
			return fail("needs a position")
		}
		p, err := position(1, len(s), false, 0)
		if err != nil {
			return err
		}
		return emit("Identity", []string{im.g.Tensors[s[p]].Name}, []string{out}, ir.Attrs{})
	case "SequenceLength":
		s, err := seq(0)
		if err != nil {
			return err
		}
		im.ids[out] = im.g.AddTensor(ir.Tensor{Name: out, DType: ir.Int64, Shape: ir.Shape{}, Data: ir.Int64Bytes([]int64{int64(len(s))}), Producer: -1})
	case "ConcatFromSequence":
		s, err := seq(0)
		if err != nil {
			return err
		}
		if len(s) == 0 {
			return fail("cannot concatenate an empty sequence")
		}
		if !attrs.Has("axis") {
			return fail("attribute \"axis\" is required")
		}
		axis := attrs.Int("axis", 0)
		parts := make([]string, len(s))
		for i, id := range s {
			parts[i] = im.g.Tensors[id].Name
		}
		if attrs.Int("new_axis", 0) != 0 {
			if err := alongAxis("Unsqueeze", parts, axis); err != nil {
				return err
			}
		}
		return emit("Concat", parts, []string{out}, ir.Attrs{"axis": {Kind: ir.AttrInt, Int: axis}})
	case "SplitToSequence":
		x, err := tensor(arg(0))
		if err != nil {
			return err
		}
		xt := &im.g.Tensors[x]
		if !xt.DType.Valid() {
			return fail("the shape of input %q must be known when the graph is read (a graph input or a constant)", xt.Name)
		}
		r := int64(xt.Shape.Rank())
		axis := attrs.Int("axis", 0)
		if axis < 0 {
			axis += r
		}
		if axis < 0 || axis >= r {
			return fail("axis %d is out of range for rank %d", attrs.Int("axis", 0), r)
		}
		dim := xt.Shape[axis]
		var sizes []int64
		if arg(1) == "" && dim > maxSequence {
			return fail("splitting %d pieces; berth splits at most %d", dim, maxSequence)
		}
		squeeze, bySize := false, arg(1) == ""
		if bySize {
			sizes = make([]int64, dim)
			for i := range sizes {
				sizes[i] = 1
			}
			squeeze = attrs.Int("keepdims", 1) == 0
		} else {
			v, err := im.constInts(name, op, arg(1))
			if err != nil {
				return err
			}
			if len(im.g.Tensors[im.ids[arg(1)]].Shape) == 0 {
				bySize = true
				if v[0] <= 0 {
					return fail("split %d must be positive", v[0])
				}
				if (dim+v[0]-1)/v[0] > maxSequence {
					return fail("splitting %d pieces; berth splits at most %d", (dim+v[0]-1)/v[0], maxSequence)
				}
				for left := dim; left > 0; left -= v[0] {
					sizes = append(sizes, min(left, v[0]))
				}
			} else {
				sizes = v
			}
		}
		if bySize && !xt.IsConst() {
			// The pieces are as many as an input's size says.
			im.g.ShapeDecided = true
		}
		if len(sizes) == 0 {
			im.seqs[out] = []ir.TensorID{}
			return nil
		}
		pieces := make([]string, len(sizes))
		for i := range pieces {
			pieces[i] = out + "/split" + strconv.Itoa(i)
		}
		in, at := []string{xt.Name}, ir.Attrs{"axis": {Kind: ir.AttrInt, Int: axis}}
		if opset >= 13 {
			sp, err := ints("split", sizes)
			if err != nil {
				return err
			}
			in = append(in, sp)
		} else {
			at["split"] = ir.Attr{Kind: ir.AttrInts, Ints: sizes}
		}
		if err := emit("Split", in, pieces, at); err != nil {
			return err
		}
		if squeeze {
			if err := alongAxis("Squeeze", pieces, axis); err != nil {
				return err
			}
		}
		s := make([]ir.TensorID, len(pieces))
		for i, p := range pieces {
			s[i] = im.ids[p]
		}
		im.seqs[out] = s
	}
	return nil
}

// constInts reads the named constant integer tensor (an initializer or an
// earlier Constant node).
func (im *importer) constInts(node, op, n string) ([]int64, error) {
	id, ok := im.ids[n]
	if !ok || !im.g.Tensors[id].IsConst() {
		return nil, fmt.Errorf("node %q (%s): %w", node, op, ir.NeedValue("input", n))
	}
	t := &im.g.Tensors[id]
	var v []int64
	switch t.DType {
	case ir.Int64:
		for i := 0; i+8 <= len(t.Data); i += 8 {
			v = append(v, int64(le64(t.Data[i:])))
		}
	case ir.Int32:
		for i := 0; i+4 <= len(t.Data); i += 4 {
			v = append(v, int64(int32(le32(t.Data[i:]))))
		}
	default:
		return nil, fmt.Errorf("node %q (%s): input %q is %s, want int32 or int64", node, op, n, t.DType)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("node %q (%s): input %q is empty", node, op, n)
	}
	return v, nil
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// sequenceMap unrolls SequenceMap: its body is instantiated once per
// element, reading element i of each sequence input (and each tensor input
// whole), and the body's outputs at each step make up the output
// sequences. Body nodes are renamed "<node>/<i>/<name>"; the body may read
// outer-scope values but may hold no initializers or nested subgraphs.
func (im *importer) sequenceMap(name string, np *onnxpb.NodeProto, nodes *[]pending) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("node %q (SequenceMap): %s", name, fmt.Sprintf(format, a...))
	}
	var body *onnxpb.GraphProto
	for _, a := range np.GetAttribute() {
		if a.GetName() == "body" {
			body = a.GetG()
		} else {
			return fail("attribute %q is not supported", a.GetName())
		}
	}
	if body == nil {
		return fail("attribute \"body\" (a graph) is required")
	}
	if len(body.GetInitializer()) > 0 || len(body.GetSparseInitializer()) > 0 {
		return fail("a body with initializers is not supported")
	}
	ins, outs := np.GetInput(), np.GetOutput()
	if len(ins) == 0 || len(ins) != len(body.GetInput()) {
		return fail("has %d inputs, its body %d", len(ins), len(body.GetInput()))
	}
	if len(outs) != len(body.GetOutput()) {
		return fail("has %d outputs, its body %d", len(outs), len(body.GetOutput()))
	}
	first, ok := im.seqs[ins[0]]
	if !ok {
		return fail("input %q is not a sequence defined earlier in the graph (berth needs each sequence's structure statically)", ins[0])
	}
	steps := len(first)
	if steps*max(len(body.GetNode()), 1) > maxSequence {
		return fail("unrolling %d steps of a %d-node body exceeds berth's limit of %d nodes", steps, len(body.GetNode()), maxSequence)
	}
	if im.lowered += steps * len(body.GetNode()); im.lowered > maxLowered {
		return fail("lowering the graph's sequences takes more than %d nodes", maxLowered)
	}
	for _, in := range ins {
		if s, ok := im.seqs[in]; ok && len(s) != steps {
			return fail("sequence %q has %d elements, %q has %d", in, len(s), ins[0], steps)
		}
	}
	for _, o := range outs {
		if err := im.checkNew(name, "SequenceMap", o); err != nil {
			return err
		}
		if _, dup := im.seqs[o]; dup {
			return fail("output %q is already defined as a sequence", o)
		}
	}
	for _, bn := range body.GetNode() {
		for _, a := range bn.GetAttribute() {
			if a.GetG() != nil || len(a.GetGraphs()) > 0 {
				return fail("a body whose nodes hold subgraphs is not supported")
			}
		}
	}
	results := make([][]ir.TensorID, len(outs))
	for i := range steps {
		rename := make(map[string]string)
		for j, vi := range body.GetInput() {
			if s, ok := im.seqs[ins[j]]; ok {
				rename[vi.GetName()] = im.g.Tensors[s[i]].Name
			} else {
				rename[vi.GetName()] = ins[j]
			}
		}
		prefix := name + "/" + strconv.Itoa(i) + "/"
		for _, bn := range body.GetNode() {
			for _, o := range bn.GetOutput() {
				if o != "" {
					rename[o] = prefix + o
				}
			}
		}
		for k, bn := range body.GetNode() {
			c := proto.Clone(bn).(*onnxpb.NodeProto)
			for x, in := range c.Input {
				if r, ok := rename[in]; ok {
					c.Input[x] = r
				}
			}
			for x, o := range c.Output {
				if o != "" {
					c.Output[x] = rename[o]
				}
			}
			n := prefix + c.GetName()
			if c.GetName() == "" {
				n = prefix + c.GetOpType() + "_" + strconv.Itoa(k)
			}
			c.Name = &n
			if err := im.node(k, c, nodes); err != nil {
				return fail("%v", err)
			}
		}
		for j, vi := range body.GetOutput() {
			r, ok := rename[vi.GetName()]
			if !ok {
				r = vi.GetName() // an outer-scope value
			}
			if _, isSeq := im.seqs[r]; isSeq {
				return fail("body output %q is a sequence (sequences of sequences are not supported)", vi.GetName())
			}
			id, ok := im.ids[r]
			if !ok {
				return fail("body output %q is not produced by the body, its inputs or the outer graph", vi.GetName())
			}
			results[j] = append(results[j], id)
		}
	}
	for j, o := range outs {
		if results[j] == nil {
			results[j] = []ir.TensorID{}
		}
		im.seqs[o] = results[j]
	}
	return nil
}
