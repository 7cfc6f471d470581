package cuda

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Fusion at the CUDA backend's build level. The plan is the one every
// backend shares: fusion never changes it. A fused-away node simply
// launches nothing, and the tensors it would have written stay unused in
// their planned slots.
//
//   - Elementwise groups. A float32 elementwise node whose output is read
//     only by elementwise nodes of one group, all of the same output
//     shape, joins that group; a group runs as one generated kernel at the
//     position of its last node (its sink), reading the group's external
//     inputs once and writing only the sink's output. GELU's
//     x·0.5·(1+erf(x/√2)) with its bias Add is one group, so are the bias
//     and residual Adds before a LayerNorm, a Conv's Add and Relu.
//   - Conv bias. A Conv (on the GEMM path) whose output is read only by
//     elementwise nodes leaves its bias out (no fill of C before a beta = 1
//     GEMM): every kernel that reads the output adds the bias as it loads
//     it.
//   - 16-bit activations. Under BF16 or F16, a tensor whose every reader is
//     a cuBLAS GEMM operand (directly or through a Reshape-like view) is
//     written by its producer (a generated kernel, a Transpose or a
//     Softmax) as 16-bit values in the first half of its slot, instead of
//     float32 that each GEMM then rounds into its own scratch.
//
// Because the plan knows nothing of this, a group's kernel reads its
// external inputs later than the plan promises them. After the plan is
// built, checkGroups proves, from the offsets and the schedule, that no
// step in between writes over them and that the sink's output does not
// overlap them (except as the exact same flat float32 slot, read before
// written by the same thread); a group that fails is split (its sink
// alone, the rest grouped again) until every kernel passes.
//
// Under BF16, two more: a GEMM whose output only generated kernels read
// writes it in bfloat16 (they widen as they load), and a tensor that GEMMs
// and generated kernels read is held in bfloat16 too.

// fusion is the compile-wide fusion decisions.
type fusion struct {
	group  []int                // node → its group (-1: not a fusable elementwise node)
	groups []*egroup            // the groups
	bias   map[int]ir.TensorID  // Conv node → the bias it leaves to the readers of its output
	leaf   map[ir.TensorID]int  // a Conv output whose bias its readers add → the Conv node
	half   map[ir.TensorID]bool // tensors held as 16-bit values in their slots
	// out16 holds the GEMM outputs written in bfloat16 because only
	// generated kernels read them (they widen as they load).
	out16 map[ir.TensorID]bool
	mode  int32 // rounding mode of the 16-bit values (halfMode)
	// nhwc holds the four-axis activations held channels-last (nhwc.go).
	nhwc map[ir.TensorID]bool
	// reciprocal, under 16-bit precision, makes generated kernels
	// multiply by the reciprocal of a constant divisor rather than divide.
	reciprocal bool
	gen        *genModule // the generated kernels
	splits     int        // groups checkGroups split
	// sums holds the Conv outputs (float32, read only by generated
	// kernels, their bias left to them) whose product may leave its
	// split parts for the readers to add up, and parts those whose
	// product did (set as the product is built, before its readers).
	sums  map[ir.TensorID]bool
	parts map[ir.TensorID]splitParts
	// described holds, by sink, each group's kernel as its build
	// described it, for checkGroups to read again (while the group and
	// the decisions it reads are as they were).
	described map[int]*fusedKernel
}

// splitParts is where a product split in count parts left them: at off
// bytes into node's scratch, mn floats apart (the product's M·N).
type splitParts struct {
	count, off, mn int64
	node           int
}

// addsParts reports whether the readers of the product writing c (with
// addend d, over nb matrices) add up its split parts: a Conv output of
// fz.sums, one matrix and no addend (its bias is the readers').
func (fz *fusion) addsParts(c, d arg, nb int64) bool {
	return fz != nil && c.kind == argTensor && c.off == 0 && !c.half && nb == 1 && fz.sums[c.id] &&
		d.kind == argWords && len(d.words) == 1 && d.words[0] == 0
}

// egroup is one elementwise group.
type egroup struct {
	nodes []int // in graph order; the last is the sink
	shape []int64
}

func (e *egroup) sink() int { return e.nodes[len(e.nodes)-1] }

// fusableOps are the elementwise operators a generated kernel computes.
var fusableOps = map[string]bool{
	"Relu": true, "LeakyRelu": true, "Sigmoid": true, "HardSigmoid": true, "HardSwish": true, "Tanh": true,
	"Erf": true, "Exp": true, "Log": true, "Sqrt": true, "Neg": true, "Abs": true, "Reciprocal": true,
	"Floor": true, "Ceil": true, "Sin": true, "Cos": true, "Softplus": true, "Elu": true,
	"Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true, "Max": true, "Min": true,
}

// binaryOp reports whether op takes two inputs.
func binaryOp(op string) bool {
	switch op {
	case "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min":
		return true
	}
	return false
}

// fusable reports whether node i is a float32 elementwise node a generated
// kernel can compute: its inputs broadcast to its output.
func fusable(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	if !fusableOps[n.Op] || !n.DefaultDomain() {
		return false
	}
	want := 1
	if binaryOp(n.Op) {
		want = 2
	}
	if len(n.Inputs) != want || len(n.Outputs) != 1 || n.Outputs[0] == ir.NoTensor {
		return false
	}
	y := g.Tensor(n.Outputs[0])
	if y.DType != ir.Float32 || y.Shape.Validate() != nil || y.Shape.Elements() <= 0 {
		return false
	}
	for _, id := range n.Inputs {
		if id == ir.NoTensor || id < 0 || int(id) >= len(g.Tensors) {
			return false
		}
		x := g.Tensor(id)
		if x.DType != ir.Float32 || x.Shape.Validate() != nil || x.Shape.Rank() > y.Shape.Rank() {
			return false
		}
		if x.IsConst() && int64(len(x.Data)) != x.Bytes() {
			return false
		}
		off := y.Shape.Rank() - x.Shape.Rank()
		for d, s := range x.Shape {
			if s != 1 && s != y.Shape[off+d] {
				return false
			}
		}
	}
	return true
}

// convBiasOf returns the bias of Conv node i when its GEMM path could
// leave it to the readers of the output.
func convBiasOf(g *ir.Graph, i int) (ir.TensorID, bool) {
	n := &g.Nodes[i]
	if n.Op != "Conv" || len(n.Inputs) < 3 || n.Inputs[2] == ir.NoTensor || len(n.Outputs) != 1 {
		return 0, false
	}
	x, w, b, y := g.Tensor(n.Inputs[0]), g.Tensor(n.Inputs[1]), g.Tensor(n.Inputs[2]), g.Tensor(n.Outputs[0])
	if x.DType != ir.Float32 || w.DType != ir.Float32 || b.DType != ir.Float32 || y.DType != ir.Float32 || !b.IsConst() {
		return 0, false
	}
	if x.Shape.Rank() < 3 || w.Shape.Rank() < 2 || y.Shape.Rank() != x.Shape.Rank() || int64(len(b.Data)) != b.Bytes() {
		return 0, false
	}
	group := n.Attrs.Int("group", 1)
	C := x.Shape[1]
	if group == C && w.Shape[1] == 1 && group > 1 { // the depthwise kernel adds its bias itself
		return 0, false
	}
	if b.Shape.Elements() != y.Shape[1] {
		return 0, false
	}
	return n.Inputs[2], true
}

// analyzeFusion makes the fusion decisions for g. blas says the GEMMs go
// to cuBLAS; hs (non-nil under BF16 or F16) lets tensors be held in 16
// bits, where accepts says that node i reads tensor t as 16-bit values
// if t is held so.
func analyzeFusion(g *ir.Graph, blas bool, hs *halves, accepts func(i int, t ir.TensorID) bool) *fusion {
	fz := &fusion{group: make([]int, len(g.Nodes)), bias: map[int]ir.TensorID{}, leaf: map[ir.TensorID]int{}, half: map[ir.TensorID]bool{},
		out16: map[ir.TensorID]bool{}, gen: &genModule{}, sums: map[ir.TensorID]bool{}, parts: map[ir.TensorID]splitParts{},
		described: map[int]*fusedKernel{}}
	if hs != nil {
		fz.mode, fz.reciprocal = halfMode(hs.prec), true
	}
	cons := g.Consumers()
	isOut := g.OutputMask()
	for i := range fz.group {
		fz.group[i] = -1
	}
	// Groups, from the last node back: a node joins the group of its
	// readers when they all belong to one.
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		if !fusable(g, i) {
			continue
		}
		y := g.Nodes[i].Outputs[0]
		gi := -1
		if r := cons[y]; len(r) > 0 && !isOut[y] {
			gi = fz.group[r[0]]
			for _, c := range r {
				if fz.group[c] != gi {
					gi = -1
					break
				}
			}
			if gi >= 0 && !slices.Equal(fz.groups[gi].shape, g.Tensor(y).Shape) {
				gi = -1
			}
		}
		if gi < 0 {
			gi = len(fz.groups)
			fz.groups = append(fz.groups, &egroup{shape: g.Tensor(y).Shape})
		}
		fz.group[i] = gi
		fz.groups[gi].nodes = append(fz.groups[gi].nodes, i)
	}
	for _, e := range fz.groups {
		slices.Sort(e.nodes)
	}
	// generated reports whether only generated kernels read y, a float32
	// tensor that is no graph output.
	generated := func(y ir.TensorID) bool {
		r := cons[y]
		all := len(r) > 0 && !isOut[y] && g.Tensor(y).DType == ir.Float32
		for _, c := range r {
			all = all && fz.group[c] >= 0
		}
		return all
	}
	// Conv biases left to the readers: with cuBLAS, which would need C
	// filled with them first; on berth's own GEMM, where the readers
	// also add up the parts of a product split in K (fusion.parts).
	if blas || hs == nil {
		for i := range g.Nodes {
			b, ok := convBiasOf(g, i)
			if y := g.Nodes[i].Outputs; ok && generated(y[0]) {
				fz.bias[i] = b
				fz.leaf[y[0]] = i
				fz.sums[y[0]] = !blas
			}
		}
	}
	if !blas && hs == nil {
		// Convolutions without a bias, on berth's GEMM, read only by
		// generated kernels.
		for i := range g.Nodes {
			n := &g.Nodes[i]
			if n.Op == "Conv" && n.DefaultDomain() && len(n.Outputs) == 1 && (len(n.Inputs) < 3 || n.Inputs[2] == ir.NoTensor) {
				fz.sums[n.Outputs[0]] = generated(n.Outputs[0])
			}
		}
	}
	if hs == nil {
		return fz
	}
	// GEMM outputs in bfloat16 (not IEEE half: its range could overflow)
	// where only generated kernels read them.
	if hs.prec == BF16 {
		for i := range g.Nodes {
			n := &g.Nodes[i]
			lt := isMatMulAdd(n) && hs.lt && !hasResidual(n)
			if (n.Op != "MatMul" && n.Op != "Conv" && !lt) || len(n.Outputs) != 1 {
				continue
			}
			if y := n.Outputs[0]; generated(y) && fz.gemm16(g, i, hs) {
				fz.out16[y] = true
			}
		}
	}
	// 16-bit activations: acc[t] says every reader of t takes it in 16
	// bits, and one at least is a GEMM (or a fused attention's q, k or
	// v); a tensor is held so when, besides,
	// its producer can write it. Under BF16 a generated kernel reads such
	// a tensor too (it widens as it loads: a residual stream in bfloat16,
	// as autocast keeps it); under F16 only GEMMs do.
	acc := make(map[ir.TensorID]bool)
	gemmRead := make(map[ir.TensorID]bool)
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		n := &g.Nodes[i]
		for _, y := range n.Outputs {
			if y == ir.NoTensor || isOut[y] || g.Tensor(y).DType != ir.Float32 || g.Tensor(y).IsConst() {
				continue
			}
			r := cons[y]
			ok := len(r) > 0
			for _, c := range r {
				if !ok {
					break
				}
				cn := &g.Nodes[c]
				switch {
				case ir.IsView(cn) && firstOnly(cn, y):
					ok = acc[cn.Outputs[0]]
					gemmRead[y] = gemmRead[y] || gemmRead[cn.Outputs[0]]
				case cn.Op == "MatMul" || cn.Op == "Gemm" || cn.Op == "Conv":
					ok = accepts(c, y)
					gemmRead[y] = true
				case isConvAct(cn) && slices.Index(cn.Inputs[1:3], y) < 0:
					// Its x or its addend z, both 16-bit operands of
					// cuDNN's.
					ok = accepts(c, y)
					gemmRead[y] = true
				case isMatMulAdd(cn) && firstOnly(cn, y):
					ok = accepts(c, y)
					gemmRead[y] = true
				case cn.Op == "Attend" && cn.Domain == cudaDomain && slices.Index(cn.Inputs, y) < 3:
					// Its q, k and v go to the tensor cores in 16
					// bits: rounded by the producer, the same values.
					ok = accepts(c, y)
					gemmRead[y] = true
				case hs.prec == BF16 && fz.group[c] >= 0:
				default:
					ok = false
				}
			}
			acc[y] = ok && gemmRead[y]
		}
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if isConvAct(n) {
			fz.half[n.Outputs[0]] = true // cuDNN writes 16 bits, which its readers take (fuseConvActs)
			continue
		}
		if n.Op == "NormRound" && n.Domain == cudaDomain && len(n.Outputs) == 2 && acc[n.Outputs[1]] {
			fz.half[n.Outputs[1]] = true // the norm's kernel writes the copy in 16 bits
			continue
		}
		if len(n.Outputs) != 1 || !acc[n.Outputs[0]] {
			continue
		}
		y := n.Outputs[0]
		switch {
		case fz.group[i] >= 0:
			fz.half[y] = true
		case n.Op == "Transpose" && g.Tensor(n.Inputs[0]).DType == ir.Float32:
			fz.half[y] = true
		case n.Op == "Softmax" && softmaxWarp(g, i):
			fz.half[y] = true
		case (n.Op == "Attend" || n.Op == "Round16") && n.Domain == cudaDomain:
			fz.half[y] = true
		case isMatMulAdd(n) && hs.lt && !hasResidual(n):
			// cuBLASLt writes it in 16 bits (buildMatMulAdd).
			fz.half[y] = true
		case n.Op == "LayerNormalization" && layerNormWarp(g, i) && onlyProducts(g, cons, y):
			// Not where a generated kernel reads it too: a residual
			// stream kept in bfloat16 from the norm on doubles the error
			// (BERT-base's outputs against PyTorch's float32: 3.2e-3 →
			// 8.6e-3); autocast keeps a norm's output in float32 too.
			fz.half[y] = true
		case ir.IsView(n) && fz.half[n.Inputs[0]]:
			fz.half[y] = true
		}
	}
	if hs.dnn && nhwcOn {
		fz.decideNHWC(g, cons, isOut, func(i int) bool { return fz.onDNN(g, i, hs) })
	}
	return fz
}

// gemm16 reports whether node i's GEMM (a trial build) writes its output
// in bfloat16 when asked to: cuBLAS (or cuBLASLt) takes it, with no
// addend, or a batch folded into one GEMM is laid out by unfold_h
// (foldedConv), or iconv or cuDNN writes it.
func (fz *fusion) gemm16(g *ir.Graph, i int, hs *halves) bool {
	y := g.Nodes[i].Outputs[0]
	trial := &fusion{group: fz.group, bias: map[int]ir.TensorID{}, out16: map[ir.TensorID]bool{y: true}, gen: &genModule{}}
	if b, ok := fz.bias[i]; ok {
		trial.bias[i] = b
	}
	var extras [][]byte
	c, err := buildNodeWith(g, i, 1, true, &extras, hs.trial(nil), trial)
	if err != nil {
		return false
	}
	wrote := false
	for _, l := range c.launches {
		for _, a := range l.args {
			if a.kind == argTensor && a.id == y {
				// Not cuBLAS: unfold_h, iconv or cuDNN writing bfloat16.
				other16 := l.blas == nil && (l.kernel == "unfold_h" || strings.HasPrefix(l.kernel, "iconv_") || l.dnn != nil) && hs.prec == BF16
				if !a.half || !other16 && (l.blas == nil || l.blas.c != driver.R16BF) {
					return false
				}
				wrote = true
			}
		}
	}
	return wrote
}

// softmaxWarp reports whether Softmax node i runs on softmax_warp.
func softmaxWarp(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	if n.Op != "Softmax" || len(n.Inputs) == 0 || n.Inputs[0] == ir.NoTensor {
		return false
	}
	x := g.Tensor(n.Inputs[0])
	if x.DType != ir.Float32 {
		return false
	}
	_, dim, inner, ok := softmaxShape(g, n)
	return ok && inner == 1 && dim <= 1024
}

// onlyProducts reports whether every reader of t, directly or through
// views, is a MatMul, Gemm or Conv, or a MatMulAdd that takes t as its
// first operand.
func onlyProducts(g *ir.Graph, cons [][]int, t ir.TensorID) bool {
	for _, c := range cons[t] {
		cn := &g.Nodes[c]
		switch {
		case cn.Op == "MatMul" || cn.Op == "Gemm" || cn.Op == "Conv":
		case isMatMulAdd(cn) && firstOnly(cn, t):
		case ir.IsView(cn) && firstOnly(cn, t):
			if !onlyProducts(g, cons, cn.Outputs[0]) {
				return false
			}
		default:
			return false
		}
	}
	return len(cons[t]) > 0
}

// layerNormWarp reports whether LayerNormalization node i runs on
// layernorm_warp4 (which may write 16-bit values): a float32 row of a
// length warp4 takes, over the last axes, and only its first output.
func layerNormWarp(g *ir.Graph, i int) bool {
	n := &g.Nodes[i]
	if len(n.Inputs) < 2 || len(n.Outputs) == 0 || !n.DefaultDomain() || g.InputOf(n, 0) == nil || g.InputOf(n, 0).DType != ir.Float32 {
		return false
	}
	for _, id := range n.Outputs[1:] {
		if id != ir.NoTensor {
			return false
		}
	}
	x := g.InputOf(n, 0)
	axis, err := ir.NormAxis(n.Attrs.Int("axis", -1), x.Shape.Rank())
	if err != nil {
		return false
	}
	return warp4(prod(x.Shape[axis:])) > 0 && prod(x.Shape[:axis]) > 0
}

// softmaxShape is the outer, dim and inner of a Softmax or LogSoftmax.
func softmaxShape(g *ir.Graph, n *ir.Node) (outer, dim, inner int64, ok bool) {
	opset := g.Opset()
	if opset == 0 {
		opset = 17
	}
	outer, dim, inner, err := ir.SoftmaxRows(n, opset, g.Tensor(n.Inputs[0]).Shape)
	if err != nil {
		return 0, 0, 0, false
	}
	return outer, dim, inner, true
}

// codegen reports whether node i runs as (part of) a generated kernel:
// every fusable node does, a group of one included, since a generated
// kernel indexes its broadcast inputs with constants rather than a Geo.
func (fz *fusion) codegen(g *ir.Graph, i int) bool {
	return fz != nil && fz.group[i] >= 0
}

// buildFused adds the launch of node i's generated kernel: its whole
// group's at the sink, nothing at the group's other nodes.
func buildFused(c *buildContext, fz *fusion) error {
	e := fz.groups[fz.group[c.node]]
	nodes := e.nodes
	if c.node != e.sink() {
		return nil
	}
	k, err := fz.kernel(c.g, nodes)
	if err != nil {
		return c.errorf("%v", err)
	}
	fz.described[c.node] = k
	name := fz.gen.addText(k.kernelText)
	n := k.n
	if n%4 == 0 {
		n /= 4 // four elements a thread where the accesses are aligned
	}
	c.elementwise(fz.gen.src, name, n, append([]arg{c.outArg(0)}, k.args...)...)
	return nil
}

// fusedKernel is the generated kernel of a set of nodes.
type fusedKernel struct {
	*kernelText               // the kernel (nil from describe)
	nodes       []int         // the nodes it computes
	ext         []ir.TensorID // the external non-scalar inputs, in argument order
	flat        []bool        // per ext: read at the output's own index, as float32 (so the output may be the same slot)
	n           int64         // elements of the output
	// args are the kernel's arguments after the output: the inputs, the
	// Conv biases, the sizes its index arithmetic divides and multiplies
	// by, and last the element count. The text depends on the shapes only
	// through which of those sizes are 1, so one compiled kernel serves
	// a model's every shape of the same structure.
	args []arg
}

// kernel generates the kernel computing nodes (in graph order; the last
// one's output is written): described (describe), then written out
// (render), or its text taken from an earlier kernel of the same
// description.
func (fz *fusion) kernel(g *ir.Graph, nodes []int) (*fusedKernel, error) {
	k, d, err := fz.describe(g, nodes)
	if err != nil {
		return nil, err
	}
	k.kernelText = fusedTexts.of(d)
	return k, nil
}

// fusedDesc is everything a fused kernel's text is made from: two kernels
// of equal descriptions have the same text (render reads nothing else),
// whatever their sizes.
type fusedDesc struct {
	wide bool  // 64-bit indices
	half bool  // the output in 16 bits
	mode int32 // the 16-bit type (fusion.mode)
	exts []extDesc
	body []string // each node's C expression, over v<node>, x<input> and literals
}

// extDesc is how a fused kernel reads one of its external inputs.
type extDesc struct {
	h16   bool       // 16-bit values, widened as loaded
	sums  bool       // the parts of a split product, added up as loaded (fusion.parts)
	flat  bool       // read at the output's own index
	index []termCode // the read offset's terms, where not flat
	bias  bool       // a Conv's bias added by channel
	ch    termCode   // that channel from the offset
}

// key is d written out whole, the key of its text in fusedTexts.
func (d *fusedDesc) key() string {
	b := make([]byte, 0, 64)
	flag := func(v bool) {
		if v {
			b = append(b, '1')
		} else {
			b = append(b, '0')
		}
	}
	term := func(t termCode) { flag(t.div); flag(t.mod); flag(t.mul) }
	flag(d.wide)
	flag(d.half)
	b = strconv.AppendInt(b, int64(d.mode), 10)
	b = append(b, ';')
	for _, x := range d.exts {
		b = append(b, '|')
		flag(x.h16)
		flag(x.sums)
		flag(x.flat)
		flag(x.bias)
		term(x.ch)
		b = strconv.AppendInt(b, int64(len(x.index)), 10)
		b = append(b, ':')
		for _, t := range x.index {
			term(t)
		}
	}
	for _, e := range d.body {
		b = append(b, '\x00')
		b = append(b, e...)
	}
	return string(b)
}

// describe is kernel's description of nodes and its kernel without the
// text: the external inputs and the arguments, which carry the sizes.
func (fz *fusion) describe(g *ir.Graph, nodes []int) (*fusedKernel, *fusedDesc, error) {
	sink := &g.Nodes[nodes[len(nodes)-1]]
	yt := g.Tensor(sink.Outputs[0])
	k := &fusedKernel{n: yt.Shape.Elements(), nodes: nodes, args: make([]arg, 0, 4*len(nodes)+2)}
	d := &fusedDesc{wide: k.n > math.MaxInt32, half: fz.half[sink.Outputs[0]], mode: fz.mode, body: make([]string, 0, len(nodes))}
	// vars names each value the kernel has: the nodes' outputs, then the
	// inputs and constants as they come (a group has a few of each).
	type named struct {
		id   ir.TensorID
		name string
	}
	vars := make([]named, len(nodes), 2*len(nodes)+2)
	for j, ni := range nodes {
		vars[j] = named{g.Nodes[ni].Outputs[0], "v" + strconv.Itoa(j)}
	}
	val := func(id ir.TensorID) string {
		for _, v := range vars {
			if v.id == id {
				return v.name
			}
		}
		t := g.Tensor(id)
		if t.IsConst() && t.Shape.Elements() == 1 {
			v := fmt.Sprintf("__int_as_float(0x%08x)", binary.LittleEndian.Uint32(t.Data))
			vars = append(vars, named{id, v})
			return v
		}
		x := extDesc{h16: fz.out16[id] || fz.half[id]}
		sp, sums := fz.parts[id]
		x.sums = sums && !x.h16
		k.ext = append(k.ext, id)
		if x.sums {
			k.args = append(k.args, arg{kind: argScratchOf, node: sp.node, off: sp.off})
		} else {
			k.args = append(k.args, arg{kind: argTensor, id: id})
		}
		space, st := fz.readSpace(g, id, sink.Outputs[0])
		ix := newIndexPattern(space, st, d.wide)
		x.flat = ix.flat
		k.flat = append(k.flat, x.flat && !x.h16 && !x.sums)
		if !x.flat {
			x.index = ix.terms
			k.args = append(k.args, ix.args...)
		}
		if x.sums {
			k.args = append(k.args, i32(int32(sp.count)), sizeArg(sp.mn, d.ity()))
		}
		if cv, ok := fz.leaf[id]; ok {
			// The Conv's bias, by channel (axis 1) of the tensor.
			x.bias = true
			k.args = append(k.args, arg{kind: argTensor, id: fz.bias[cv]})
			ch := channelPattern(t.Shape, d.wide)
			if fz.nhwc[id] {
				ch = channelPatternNHWC(t.Shape, d.wide)
			}
			x.ch = ch.terms[0]
			k.args = append(k.args, ch.args...)
		}
		v := "x" + strconv.Itoa(len(d.exts))
		d.exts = append(d.exts, x)
		vars = append(vars, named{id, v})
		return v
	}
	var ops []string
	for _, ni := range nodes {
		n := &g.Nodes[ni]
		ops = ops[:0]
		for _, id := range n.Inputs {
			ops = append(ops, val(id))
		}
		e, err := opExpr(n, ops)
		if err != nil {
			return nil, nil, err
		}
		if c, ok := scalarDivisor(g, n); ok && fz.reciprocal {
			// A product by the reciprocal (within an ulp of the quotient;
			// an IEEE division takes some ten instructions).
			e = "(" + ops[0] + " * " + floatLit(float32(1/float64(c))) + ")"
		}
		d.body = append(d.body, e)
	}
	k.args = append(k.args, sizeArg(k.n, d.ity()))
	return k, d, nil
}

// ity is the C type of the kernel's indices.
func (d *fusedDesc) ity() string {
	if d.wide {
		return "u64"
	}
	return "u32"
}

// render writes the kernel d describes, NAME standing for its name:
// NAME_f computes element i from the flat inputs' values (aK) and the
// other inputs' pointers (pK), and each Conv bias (qK); NAME runs it over
// the output.
func (d *fusedDesc) render() string {
	ity := d.ity()
	var fparams, kparams, loads, body strings.Builder
	var scalarArgs, vecLoads []string
	var vecArgs [4][]string
	var align []string
	// param adds a parameter that NAME_f takes as the kernel does and
	// both call sites pass on by name.
	param := func(decl string) {
		fmt.Fprintf(&fparams, ", %s", decl)
		name := decl[strings.LastIndexAny(decl, " *")+1:]
		scalarArgs = append(scalarArgs, name)
		for u := range vecArgs {
			vecArgs[u] = append(vecArgs[u], name)
		}
	}
	// both adds a parameter of the kernel that it passes on to NAME_f.
	both := func(decl string) {
		fmt.Fprintf(&kparams, ", %s", decl)
		param(decl)
	}
	for x, e := range d.exts {
		pty, load := "float", func(s string) string { return s }
		if e.h16 {
			pty = "u16"
			load = func(s string) string { return fmt.Sprintf("widen_h(%s, %d)", s, d.mode) }
		}
		fmt.Fprintf(&kparams, ", const %s* p%d", pty, x)
		raw := load(fmt.Sprintf("p%d[o%d]", x, x))
		parts, mn := fmt.Sprintf("s%d_parts", x), fmt.Sprintf("s%d_mn", x)
		if e.sums {
			raw = fmt.Sprintf("sum_parts(p%d, o%d, %s, %s)", x, x, parts, mn)
		}
		if e.flat {
			fmt.Fprintf(&fparams, ", const float a%d", x)
			if e.sums {
				fmt.Fprintf(&kparams, ", const int %s, const %s %s", parts, ity, mn)
				scalarArgs = append(scalarArgs, fmt.Sprintf("sum_parts(p%d, i, %s, %s)", x, parts, mn))
				vecLoads = append(vecLoads, fmt.Sprintf("\t\t\tconst float4 f%d = sum_parts4((const float4*)p%d, q, %s, %s >> 2);\n", x, x, parts, mn))
				for u, c := range []string{"x", "y", "z", "w"} {
					vecArgs[u] = append(vecArgs[u], fmt.Sprintf("f%d.%s", x, c))
				}
				align = append(align, fmt.Sprintf("((u64)p%d & 15) | (%s & 3)", x, mn))
			} else if scalarArgs = append(scalarArgs, load(fmt.Sprintf("p%d[i]", x))); e.h16 {
				vecLoads = append(vecLoads, fmt.Sprintf("\t\t\tconst uint2 f%d = ((const uint2*)p%d)[q];\n", x, x))
				for u, c := range []string{"(u16)f%d.x", "(u16)(f%d.x >> 16)", "(u16)f%d.y", "(u16)(f%d.y >> 16)"} {
					vecArgs[u] = append(vecArgs[u], load(fmt.Sprintf(c, x)))
				}
				align = append(align, fmt.Sprintf("((u64)p%d & 7)", x))
			} else {
				vecLoads = append(vecLoads, fmt.Sprintf("\t\t\tconst float4 f%d = ((const float4*)p%d)[q];\n", x, x))
				for u, c := range []string{"x", "y", "z", "w"} {
					vecArgs[u] = append(vecArgs[u], fmt.Sprintf("f%d.%s", x, c))
				}
				align = append(align, fmt.Sprintf("((u64)p%d & 15)", x))
			}
			if e.bias {
				fmt.Fprintf(&loads, "\tconst %s o%d = i;\n", ity, x)
			}
			raw = fmt.Sprintf("a%d", x)
		} else {
			param(fmt.Sprintf("const %s* p%d", pty, x))
			ix := renderIndex(e.index, "i", fmt.Sprintf("s%d_", x), ity, true)
			ix.declare(both)
			if e.sums {
				both("const int " + parts)
				both(fmt.Sprintf("const %s %s", ity, mn))
			}
			fmt.Fprintf(&loads, "\tconst %s o%d = %s;\n", ity, x, ix.expr)
		}
		if e.bias {
			fmt.Fprintf(&kparams, ", const float* q%d", x)
			param(fmt.Sprintf("const float* q%d", x))
			ch := renderIndex([]termCode{e.ch}, fmt.Sprintf("o%d", x), fmt.Sprintf("c%d_", x), ity, false)
			ch.declare(both)
			fmt.Fprintf(&loads, "\tconst float x%d = %s + q%d[%s];\n", x, raw, x, ch.expr)
		} else {
			fmt.Fprintf(&loads, "\tconst float x%d = %s;\n", x, raw)
		}
	}
	for j, e := range d.body {
		fmt.Fprintf(&body, "\tconst float v%d = %s;\n", j, e)
	}
	yty, conv := "float", func(v string) string { return v }
	if d.half {
		yty = "u16"
		conv = func(v string) string { return fmt.Sprintf("round_h(%s, %d)", v, d.mode) }
	}
	call := func(i string, args []string) string {
		return "NAME_f(" + strings.Join(append([]string{i}, args...), ", ") + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "__device__ __forceinline__ float NAME_f(const %s i%s) {\n", ity, fparams.String())
	b.WriteString(loads.String())
	b.WriteString(body.String())
	fmt.Fprintf(&b, "\treturn v%d;\n}\n", len(d.body)-1)
	// No __restrict__: the output may be the very slot of a flat input
	// (each element read before the same thread writes it).
	fmt.Fprintf(&b, "extern \"C\" __global__ void __launch_bounds__(256) NAME(%s* y%s, const %s n) {\n", yty, kparams.String(), ity)
	{
		// Four elements a thread, 16-byte accesses to the flat inputs
		// and the output, where n is a multiple of 4 and they are
		// aligned.
		mask := 15
		if d.half {
			mask = 7
		}
		cond := strings.Join(append([]string{"(n & 3)", fmt.Sprintf("((u64)y & %d)", mask)}, align...), " | ")
		fmt.Fprintf(&b, "\tif ((%s) == 0) {\n", cond)
		fmt.Fprintf(&b, "\t\tfor (%s q = (%s)blockIdx.x * blockDim.x + threadIdx.x; q < (n >> 2); q += (%s)blockDim.x * gridDim.x) {\n", ity, ity, ity)
		for _, l := range vecLoads {
			b.WriteString(l)
		}
		var r [4]string
		for u := range 4 {
			r[u] = conv(call(fmt.Sprintf("4 * q + %d", u), vecArgs[u]))
		}
		if d.half {
			fmt.Fprintf(&b, "\t\t\t((uint2*)y)[q] = make_uint2((u32)%s | ((u32)%s << 16), (u32)%s | ((u32)%s << 16));\n", r[0], r[1], r[2], r[3])
		} else {
			fmt.Fprintf(&b, "\t\t\t((float4*)y)[q] = make_float4(%s, %s, %s, %s);\n", r[0], r[1], r[2], r[3])
		}
		b.WriteString("\t\t}\n\t\treturn;\n\t}\n")
	}
	fmt.Fprintf(&b, "\tfor (%s i = (%s)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (%s)blockDim.x * gridDim.x) {\n", ity, ity, ity)
	fmt.Fprintf(&b, "\t\ty[i] = %s;\n\t}\n}\n", conv(call("i", scalarArgs)))
	return b.String()
}

// fusedTexts keeps the text of every fused kernel described so far, by
// description, so that a model compiled again at other sizes writes none
// anew. It holds at most maxFusedTexts texts, and forgets them all when
// full.
var fusedTexts textCache

// maxFusedTexts bounds fusedTexts.
const maxFusedTexts = 4096

// textCache is fusedTexts' type.
type textCache struct {
	sync.Mutex
	byKey map[string]*kernelText
}

// kernelText is a generated kernel's text, with NAME standing for its
// name, the name (from the text's SHA-256) and the text under it.
type kernelText struct {
	text, name, named string
}

// newKernelText names text.
func newKernelText(text string) *kernelText {
	h := sha256.Sum256([]byte(text))
	name := "fz_" + hex.EncodeToString(h[:8])
	return &kernelText{text: text, name: name, named: strings.ReplaceAll(text, "NAME", name)}
}

// of is d's text, rendered at the first call for its description.
func (c *textCache) of(d *fusedDesc) *kernelText {
	key := d.key()
	c.Lock()
	defer c.Unlock()
	if t, ok := c.byKey[key]; ok {
		return t
	}
	if c.byKey == nil || len(c.byKey) >= maxFusedTexts {
		c.byKey = map[string]*kernelText{}
	}
	t := newKernelText(d.render())
	c.byKey[key] = t
	return t
}

// gatherKernel generates y[i] = x[offset(i)] over the contiguous space
// out, x read with element strides st (a Transpose): the output in 16
// bits (round_h) where half says so. It returns the kernel's text and its
// arguments after y and x.
func (fz *fusion) gatherKernel(out, st []int64, half bool) (string, []arg) {
	n := prod(out)
	ity := "u32"
	if n > math.MaxInt32 {
		ity = "u64"
	}
	yty, store := "float", "x[o]"
	if half {
		yty, store = "u16", fmt.Sprintf("round_h(x[o], %d)", fz.mode)
	}
	ix, args := newIndexCode(out, st, "i", "s_", ity)
	var params strings.Builder
	ix.declare(func(d string) { fmt.Fprintf(&params, ", %s", d) })
	var b strings.Builder
	fmt.Fprintf(&b, "extern \"C\" __global__ void __launch_bounds__(256) NAME(%s* __restrict__ y, const float* __restrict__ x%s, const %s n) {\n", yty, params.String(), ity)
	fmt.Fprintf(&b, "\tfor (%s i = (%s)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (%s)blockDim.x * gridDim.x) {\n", ity, ity, ity)
	fmt.Fprintf(&b, "\t\tconst %s o = %s;\n\t\ty[i] = %s;\n\t}\n}\n", ity, ix.expr, store)
	return b.String(), append(args, sizeArg(n, ity))
}

// indexTerm is one term of an element offset: ((i / os) % size) · is,
// without the modulo for the outermost axis (mod false).
type indexTerm struct {
	os, size, is int64
	mod          bool
}

// indexTerms returns the terms of the element offset, in a tensor read
// with element strides st, of an index of the contiguous space out (axes
// of size 1 dropped, axes the tensor walks as one merged), and whether the
// offset is the index itself.
func indexTerms(out, st []int64) (terms []indexTerm, flat bool) {
	cs := ir.Shape(out).Strides()
	var ds []indexTerm
	for d, s := range out {
		if s == 1 {
			continue
		}
		if n := len(ds); n > 0 && ds[n-1].is == st[d]*s {
			ds[n-1].size *= s
			ds[n-1].os, ds[n-1].is = cs[d], st[d]
			continue
		}
		ds = append(ds, indexTerm{os: cs[d], size: s, is: st[d], mod: len(ds) > 0})
	}
	flat = true
	for _, d := range ds {
		flat = flat && d.os == d.is
	}
	for _, d := range ds {
		if d.is != 0 {
			terms = append(terms, d)
		}
	}
	return terms, flat
}

// evalTerms is the offset the terms give for index i.
func evalTerms(terms []indexTerm, i int64) int64 {
	var o int64
	for _, t := range terms {
		q := i / t.os
		if t.mod {
			q %= t.size
		}
		o += q * t.is
	}
	return o
}

// isFlat reports whether a tensor read with element strides st is read at
// each index of the contiguous space out.
func isFlat(out, st []int64) bool {
	_, flat := indexTerms(out, st)
	return flat
}

// indexPattern is the element offset, in a tensor read with element
// strides st, of an index of the contiguous space out, as a generated
// kernel computes it: which terms divide, take a remainder and multiply
// (terms), and the sizes they do it by (args, kernel parameters rather
// than constants, so that the code depends on the shapes only through
// which of them are 1).
type indexPattern struct {
	flat  bool // the offset is the index itself
	terms []termCode
	args  []arg
}

// termCode is one term of an indexPattern: the index divided by a
// parameter, then its remainder by another, then times a third, each
// where the size is not 1.
type termCode struct{ div, mod, mul bool }

func newIndexPattern(out, st []int64, wide bool) indexPattern {
	terms, flat := indexTerms(out, st)
	p := indexPattern{flat: flat}
	if flat {
		return p
	}
	for _, d := range terms {
		var t termCode
		if d.os != 1 {
			t.div = true
			p.args = append(p.args, divisorArg(d.os, wide))
		}
		if d.mod {
			t.mod = true
			p.args = append(p.args, divisorArg(d.size, wide))
		}
		if d.is != 1 {
			t.mul = true
			if wide {
				p.args = append(p.args, sizeArg(d.is, "u64"))
			} else {
				p.args = append(p.args, sizeArg(d.is, "u32"))
			}
		}
		p.terms = append(p.terms, t)
	}
	return p
}

// channelPattern is the channel (axis 1) of an element offset of a tensor
// of shape, as one term of an indexPattern.
func channelPattern(shape []int64, wide bool) indexPattern {
	var p indexPattern
	var t termCode
	if inner := prod(shape[2:]); inner != 1 {
		t.div = true
		p.args = append(p.args, divisorArg(inner, wide))
	}
	if shape[0] != 1 {
		t.mod = true
		p.args = append(p.args, divisorArg(shape[1], wide))
	}
	p.terms = []termCode{t}
	return p
}

// divisorArg is the argument dividing by v: a u64 where the indices are
// wide, else a fastDivisor.
func divisorArg(v int64, wide bool) arg {
	if wide {
		return i64(max(v, 1))
	}
	return fastDivisor(uint32(v))
}

// indexCode is the C code of an indexPattern: the offset's expression and
// the declarations of its parameters, in the order of the pattern's
// arguments.
type indexCode struct {
	expr  string
	decls []string
}

// renderIndex writes terms over index iv (of C type ity), their
// parameters named with prefix: numbered by term where numbered (an
// offset's), plain where not (a channel's single term, from iv).
func renderIndex(terms []termCode, iv, prefix, ity string, numbered bool) *indexCode {
	c := &indexCode{}
	var parts []string
	for k, d := range terms {
		suffix := ""
		if numbered {
			suffix = strconv.Itoa(k)
		}
		t := iv
		if d.div {
			t = c.divide(t, prefix+"d"+suffix, ity, "(%s / %s)", "fdiv_q(%s, %s)")
		}
		if d.mod {
			t = c.divide(t, prefix+"m"+suffix, ity, "(%s %% %s)", "fdiv_r(%s, %s)")
		}
		if d.mul {
			name := prefix + "k" + suffix
			c.decls = append(c.decls, fmt.Sprintf("const %s %s", ity, name))
			t = fmt.Sprintf("%s * %s", t, name)
		}
		parts = append(parts, t)
	}
	c.expr = "0u"
	if len(parts) > 0 {
		c.expr = strings.Join(parts, " + ")
	}
	return c
}

// newIndexCode is the code and arguments of the offset, in a tensor read
// with element strides st, of index iv of the contiguous space out.
func newIndexCode(out, st []int64, iv, prefix, ity string) (*indexCode, []arg) {
	p := newIndexPattern(out, st, ity == "u64")
	if p.flat {
		return &indexCode{expr: iv}, nil
	}
	return renderIndex(p.terms, iv, prefix, ity, true), p.args
}

// divide adds a divisor parameter and returns x and it formatted by
// wide (a u64 index) or fast (a fastDivisor).
func (c *indexCode) divide(x, name, ity, wide, fast string) string {
	if ity == "u64" {
		c.decls = append(c.decls, "const u64 "+name)
		return fmt.Sprintf(wide, x, name)
	}
	c.decls = append(c.decls, "const fdiv "+name)
	return fmt.Sprintf(fast, x, name)
}

// declare passes the declaration of every parameter to add, in order.
func (c *indexCode) declare(add func(string)) {
	for _, d := range c.decls {
		add(d)
	}
}

// sizeArg is v as a kernel argument of index type ity.
func sizeArg(v int64, ity string) arg {
	if ity == "u64" {
		return i64(v)
	}
	return i32(int32(v))
}

// fastDivisor is the fdiv argument (fdivCommon) that divides by d, for
// 0 < d < 2³¹: fdiv_q(n, f) = ⌊(⌊n·m / 2³²⌋ + n) / 2ˢ⌋ equals n / d for
// every n < 2³¹, where 2ˢ is the least power of two ≥ d and
// m = ⌊2³²·(2ˢ − d) / d⌋ + 1.
func fastDivisor(d uint32) arg {
	// A tensor with no elements has strides of 0; its kernel never runs.
	d = max(d, 1)
	m, s := divisorMagic(d)
	return words([]uint64{uint64(d) | uint64(m)<<32, uint64(s)})
}

func divisorMagic(d uint32) (m, s uint32) {
	for s < 32 && uint64(1)<<s < uint64(d) {
		s++
	}
	return uint32((uint64(1)<<32*(uint64(1)<<s-uint64(d)))/uint64(d) + 1), s
}

// sumsCommon adds up, for generated kernels, element o (or the four
// from 4q) of the s parts a split product left mn elements apart, in
// the order gemm_reduce adds them.
const sumsCommon = `
template <typename I> __device__ __forceinline__ float sum_parts(const float* p, const I o, const int s, const I mn) {
	float v = 0.f;
	for (int j = 0; j < s; j++) v += p[(u64)j * mn + o];
	return v;
}
template <typename I> __device__ __forceinline__ float4 sum_parts4(const float4* p, const I q, const int s, const I mn4) {
	float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
	for (int j = 0; j < s; j++) {
		const float4 t = p[(u64)j * mn4 + q];
		v.x += t.x; v.y += t.y; v.z += t.z; v.w += t.w;
	}
	return v;
}
`

// fdivCommon defines the divisors of generated kernels (fastDivisor).
const fdivCommon = `
struct fdiv { u32 d, m, s; };
__device__ __forceinline__ u32 fdiv_q(u32 n, const fdiv f) { return (__umulhi(n, f.m) + n) >> f.s; }
__device__ __forceinline__ u32 fdiv_r(u32 n, const fdiv f) { return n - fdiv_q(n, f) * f.d; }
`

// floatLit is v as an exact C expression.
func floatLit(v float32) string { return fmt.Sprintf("__int_as_float(0x%08x)", math.Float32bits(v)) }

// opExpr is the C expression of elementwise node n over operands ops, the
// same arithmetic as the operator's own kernel in eltwiseSource.
func opExpr(n *ir.Node, ops []string) (string, error) {
	at := n.Attrs
	v := ""
	if len(ops) > 0 {
		v = ops[0]
	}
	switch n.Op {
	case "Relu":
		return "fmaxf(" + v + ", 0.f)", nil
	case "LeakyRelu":
		return fmt.Sprintf("(%s >= 0.f ? %s : %s * %s)", v, v, floatLit(at.Float("alpha", 0.01)), v), nil
	case "Sigmoid":
		return fmt.Sprintf("(1.f / (1.f + expf(-%s)))", v), nil
	case "HardSigmoid":
		return fmt.Sprintf("fminf(fmaxf(%s * %s + %s, 0.f), 1.f)", floatLit(at.Float("alpha", 0.2)), v, floatLit(at.Float("beta", 0.5))), nil
	case "HardSwish":
		return fmt.Sprintf("(%s * fminf(fmaxf(%s / 6.f + 0.5f, 0.f), 1.f))", v, v), nil
	case "Tanh":
		return fmt.Sprintf("tanhf(%s)", v), nil
	case "Erf":
		return fmt.Sprintf("erff(%s)", v), nil
	case "Exp":
		return fmt.Sprintf("expf(%s)", v), nil
	case "Log":
		return fmt.Sprintf("logf(%s)", v), nil
	case "Sqrt":
		return fmt.Sprintf("sqrtf(%s)", v), nil
	case "Neg":
		return fmt.Sprintf("(-%s)", v), nil
	case "Abs":
		return fmt.Sprintf("fabsf(%s)", v), nil
	case "Reciprocal":
		return fmt.Sprintf("(1.f / %s)", v), nil
	case "Floor":
		return fmt.Sprintf("floorf(%s)", v), nil
	case "Ceil":
		return fmt.Sprintf("ceilf(%s)", v), nil
	case "Sin":
		return fmt.Sprintf("sinf(%s)", v), nil
	case "Cos":
		return fmt.Sprintf("cosf(%s)", v), nil
	case "Softplus":
		return fmt.Sprintf("(%s > 20.f ? %s : log1pf(expf(%s)))", v, v, v), nil
	case "Elu":
		return fmt.Sprintf("(%s >= 0.f ? %s : %s * (expf(%s) - 1.f))", v, v, floatLit(at.Float("alpha", 1)), v), nil
	}
	if len(ops) != 2 {
		return "", fmt.Errorf("node %q (%s): no generated kernel", n.Name, n.Op)
	}
	a, b := ops[0], ops[1]
	switch n.Op {
	case "Add":
		return "(" + a + " + " + b + ")", nil
	case "Sub":
		return "(" + a + " - " + b + ")", nil
	case "Mul":
		return "(" + a + " * " + b + ")", nil
	case "Div":
		return "(" + a + " / " + b + ")", nil
	case "Pow":
		return fmt.Sprintf("powf(%s, %s)", a, b), nil
	case "Max":
		return fmt.Sprintf("(%s > %s ? %s : %s)", a, b, a, b), nil
	case "Min":
		return fmt.Sprintf("(%s < %s ? %s : %s)", a, b, a, b), nil
	}
	return "", fmt.Errorf("node %q (%s): no generated kernel", n.Name, n.Op)
}

// scalarDivisor returns the divisor of n, a Div by a finite non-zero
// float32 constant scalar.
func scalarDivisor(g *ir.Graph, n *ir.Node) (float32, bool) {
	if n.Op != "Div" || len(n.Inputs) != 2 {
		return 0, false
	}
	d := g.Tensor(n.Inputs[1])
	if !d.IsConst() || d.DType != ir.Float32 || d.Shape.Elements() != 1 || len(d.Data) != 4 {
		return 0, false
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(d.Data))
	if v == 0 || math.IsInf(float64(v), 0) || math.IsNaN(float64(v)) || math.IsInf(1/float64(v), 0) || float32(1/float64(v)) == 0 {
		return 0, false
	}
	return v, true
}

// genModule collects the generated kernels of one compile, named by the
// hash of their text (so equal kernels are one), into one module.
type genModule struct {
	names map[string]bool // the names added
	order []string        // names in order of addition
	texts []string
	src   *source // placeholder until finish gives it its text
}

// add returns the name of the kernel with text (NAME standing for the name).
func (m *genModule) add(text string) string { return m.addText(newKernelText(text)) }

// addText adds the kernel k, once, and returns its name.
func (m *genModule) addText(k *kernelText) string {
	if m.src == nil {
		m.src = &source{name: "fused.cu"}
	}
	if m.names == nil {
		m.names = map[string]bool{}
	}
	if !m.names[k.name] {
		m.names[k.name] = true
		m.order = append(m.order, k.name)
		m.texts = append(m.texts, k.named)
	}
	return k.name
}

// genSources keeps one source per distinct generated module text, so that
// a module compiled and loaded once serves every later compile: by its
// kernels' names, which name their texts.
var genSources struct {
	sync.Mutex
	byNames map[string]*source
}

// finish returns the module holding every kernel added: a source shared
// by all compiles that generate the same text.
func (m *genModule) finish() *source {
	if m.src == nil {
		return nil
	}
	names := strings.Join(m.order, ",")
	genSources.Lock()
	defer genSources.Unlock()
	if genSources.byNames == nil {
		genSources.byNames = map[string]*source{}
	}
	if s, ok := genSources.byNames[names]; ok {
		return s
	}
	text := common + halfCommon + fdivCommon + sumsCommon + strings.Join(m.texts, "")
	h := sha256.Sum256([]byte(text))
	s := &source{name: "fused-" + hex.EncodeToString(h[:8]) + ".cu", text: text}
	genSources.byNames[names] = s
	return s
}

// checkGroups makes every group's kernel safe under the plan: a group
// whose kernel would read an external input after the plan lets another
// step overwrite it, or whose output overlaps an input other than as the
// same flat float32 slot, is split: its sink runs alone, and the rest is
// grouped again (as analyzeFusion does) and checked in turn. Single
// nodes are always safe (they read their inputs where the plan puts
// them, and no output of a step overlaps its inputs). It returns the
// nodes whose launches changed.
func (fz *fusion) checkGroups(g *ir.Graph, p *plan.Problem, pl *plan.Plan, index, scratchOf []int) []int {
	var work, rebuild []int
	for gi, e := range fz.groups {
		if len(e.nodes) > 1 {
			work = append(work, gi)
		}
	}
	if len(work) == 0 {
		return nil
	}
	cons := g.Consumers()
	pos := make([]int, len(g.Nodes)) // each node's place in the schedule
	for q, s := range pl.Order {
		pos[s] = q
	}
	for len(work) > 0 {
		gi := work[len(work)-1]
		work = work[:len(work)-1]
		if fz.safe(g, p, pl, index, pos, scratchOf, gi) {
			continue
		}
		x := fz.dropAliased16(g, pl, index, gi)
		if len(x) > 0 {
			clear(fz.described) // the kernels read other widths now
		}
		if len(x) > 0 && fz.safe(g, p, pl, index, pos, scratchOf, gi) {
			// Read as float32 (the GEMM writes float32) the inputs in
			// the very slot the sink writes: every kernel that reads
			// them, and their GEMMs, are built again.
			for _, id := range x {
				rebuild = append(rebuild, g.Tensor(id).Producer)
				for _, c := range cons[id] {
					for _, ni := range fz.groups[fz.group[c]].nodes {
						rebuild = append(rebuild, ni)
					}
				}
			}
			continue
		}
		fz.splits++
		e := fz.groups[gi]
		rest := e.nodes[:len(e.nodes)-1]
		rebuild = append(rebuild, e.nodes...)
		e.nodes = e.nodes[len(e.nodes)-1:]
		base := len(fz.groups)
		for j := len(rest) - 1; j >= 0; j-- {
			i := rest[j]
			ng := -1
			if r := cons[g.Nodes[i].Outputs[0]]; len(r) > 0 {
				ng = fz.group[r[0]]
				for _, c := range r {
					if fz.group[c] != ng {
						ng = -1
						break
					}
				}
			}
			if ng < base {
				ng = len(fz.groups)
				fz.groups = append(fz.groups, &egroup{shape: e.shape})
			}
			fz.group[i] = ng
			fz.groups[ng].nodes = append(fz.groups[ng].nodes, i)
		}
		for ng := base; ng < len(fz.groups); ng++ {
			slices.Sort(fz.groups[ng].nodes)
			if len(fz.groups[ng].nodes) > 1 {
				work = append(work, ng)
			}
		}
		// The sink now reads what the rest writes: in bfloat16 where
		// that gives the sink's result exactly.
		if t, ok := fz.exactHalfInput(g, e.sink(), cons); ok && slices.Contains(rest, g.Tensor(t).Producer) {
			fz.half[t] = true
			clear(fz.described)
		}
	}
	slices.Sort(rebuild)
	return slices.Compact(rebuild)
}

// exactHalfInput returns the input of node i that may be held in
// bfloat16 with no change to i's 16-bit output: i writes bfloat16, and is
// a Relu, or a Mul or Div by a power of two (both commute with rounding to
// bfloat16, whose range is float32's), and is the input's only reader.
func (fz *fusion) exactHalfInput(g *ir.Graph, i int, cons [][]int) (ir.TensorID, bool) {
	n := &g.Nodes[i]
	if fz.mode != 0 || !fz.half[n.Outputs[0]] {
		return 0, false
	}
	var t ir.TensorID
	switch n.Op {
	case "Relu":
		t = n.Inputs[0]
	case "Mul", "Div":
		k := -1
		for j, id := range n.Inputs {
			c := g.Tensor(id)
			if c.IsConst() && c.Shape.Elements() == 1 && c.DType == ir.Float32 {
				v := math.Float32frombits(uint32(c.Data[0]) | uint32(c.Data[1])<<8 | uint32(c.Data[2])<<16 | uint32(c.Data[3])<<24)
				if f, e := math.Frexp(float64(v)); f == 0.5 && e > -120 && e < 120 && (n.Op == "Mul" || j == 1) {
					k = j
				}
			}
		}
		if k < 0 {
			return 0, false
		}
		t = n.Inputs[1-k]
	default:
		return 0, false
	}
	if g.Tensor(t).IsConst() || len(cons[t]) != 1 || !slices.Equal(g.Tensor(t).Shape, g.Tensor(n.Outputs[0]).Shape) {
		return 0, false
	}
	for _, o := range g.Outputs {
		if o == t {
			return 0, false
		}
	}
	return t, true
}

// dropAliased16 stops writing in bfloat16 the GEMM outputs (out16) that
// group gi reads flat from the very slot its sink writes, and returns
// them: read as float32 they may share the slot.
func (fz *fusion) dropAliased16(g *ir.Graph, pl *plan.Plan, index []int, gi int) []ir.TensorID {
	e := fz.groups[gi]
	k, err := fz.kernel(g, e.nodes)
	if err != nil {
		return nil
	}
	y := g.Nodes[e.sink()].Outputs[0]
	if fz.half[y] {
		return nil
	}
	var drop []ir.TensorID
	for _, x := range k.ext {
		t := g.Tensor(x)
		// A channels-last convolution writes 16 bits only (cuDNN).
		if fz.out16[x] && !fz.nhwc[x] && pl.Offsets[index[x]] == pl.Offsets[index[y]] && t.Bytes() == g.Tensor(y).Bytes() &&
			isFlat(fz.readSpace(g, x, y)) {
			drop = append(drop, x)
		}
	}
	for _, x := range drop {
		delete(fz.out16, x)
	}
	return drop
}

// safe reports whether group gi's kernel, run at its sink's place in the
// schedule (pos: each node's), reads only bytes that no step since the
// group's first node has written, and writes none that it reads but its
// own flat element. The parts of a split product it adds up are read in
// their node's scratch (scratchOf: by node).
func (fz *fusion) safe(g *ir.Graph, p *plan.Problem, pl *plan.Plan, index, pos, scratchOf []int, gi int) bool {
	e := fz.groups[gi]
	k, ok := fz.described[e.sink()]
	if !ok || !slices.Equal(k.nodes, e.nodes) {
		var err error
		if k, _, err = fz.describe(g, e.nodes); err != nil {
			return false
		}
	}
	first, last := len(pl.Order), -1
	for _, ni := range e.nodes {
		first, last = min(first, pos[ni]), max(last, pos[ni])
	}
	if last != pos[e.sink()] {
		return false
	}
	y := g.Nodes[e.sink()].Outputs[0]
	rangeOf := func(t int) [2]int64 { return [2]int64{pl.Offsets[t], pl.Offsets[t] + p.Tensors[t].Size} }
	overlap := func(a, b [2]int64) bool { return a[0] < b[1] && b[0] < a[1] && a[0] < a[1] && b[0] < b[1] }
	var ins [][2]int64
	var flat, h16 []bool
	for xi, x := range k.ext {
		if sp, ok := fz.parts[x]; ok {
			if sp.node >= len(scratchOf) || scratchOf[sp.node] < 0 {
				return false
			}
			ins = append(ins, rangeOf(scratchOf[sp.node]))
			flat = append(flat, false)
			h16 = append(h16, false)
			continue
		}
		if !g.Tensor(x).IsConst() {
			ins = append(ins, rangeOf(index[x]))
			flat = append(flat, k.flat[xi] || fz.flat16(g, x, y))
			h16 = append(h16, fz.out16[x] || fz.half[x])
		}
	}
	for q := first + 1; q < last; q++ {
		s := pl.Order[q]
		if fz.group[s] == gi {
			continue
		}
		for _, t := range p.Steps[s].Outputs {
			for _, r := range ins {
				if overlap(rangeOf(t), r) {
					return false
				}
			}
		}
	}
	for _, t := range p.Steps[e.sink()].Outputs {
		w := rangeOf(t)
		for j, r := range ins {
			if !overlap(w, r) {
				continue
			}
			// Thread i reads element i before it writes it: safe over
			// the same slot, read flat, where the input's elements and
			// the output's are of one size (both float32, or both 16
			// bits in the slot's first half).
			if t != index[y] || !flat[j] || r != w || fz.half[y] != h16[j] {
				return false
			}
		}
	}
	return true
}

// flat16 reports whether x, a 16-bit input of a kernel writing y, is read
// flat: element i of y reads element i of x (kernel's flat leaves out
// the 16-bit inputs, whose vector loads it does not count as float4s).
func (fz *fusion) flat16(g *ir.Graph, x, y ir.TensorID) bool {
	if !fz.out16[x] && !fz.half[x] {
		return false
	}
	return isFlat(fz.readSpace(g, x, y))
}

// FusionStats counts what fusion did to an executable.
type FusionStats struct {
	Groups     int // elementwise groups of two or more nodes run as one kernel
	Nodes      int // nodes in those groups
	Split      int // groups the plan did not allow as they were (split: see checkGroups)
	ConvBiases int // Conv biases added by the readers of the output
	Half       int // activations held as 16-bit GEMM operands
	Out16      int // GEMM outputs written in bfloat16 for generated kernels
	Attentions int // attentions run as one kernel each (fuseAttention)
}

func (fz *fusion) stats() FusionStats {
	s := FusionStats{ConvBiases: len(fz.bias), Half: len(fz.half), Split: fz.splits, Out16: len(fz.out16)}
	for _, e := range fz.groups {
		if len(e.nodes) > 1 {
			s.Groups++
			s.Nodes += len(e.nodes)
		}
	}
	return s
}

// acceptsHalf returns the test analyzeFusion asks of each GEMM reader of
// a tensor: a trial build of node i with t held in 16 bits in which every
// launch that reads t reads it so (cuBLAS took the GEMM, im2col reads 16
// bits). It returns nil when hs is.
func acceptsHalf(g *ir.Graph, sms int, hs *halves) func(i int, t ir.TensorID) bool {
	if hs == nil {
		return nil
	}
	return func(i int, t ir.TensorID) bool {
		var extras [][]byte
		c, err := buildNodeWith(g, i, sms, true, &extras, hs.trial(map[ir.TensorID]bool{t: true}), nil)
		if err != nil {
			return false
		}
		for _, l := range c.launches {
			for _, a := range l.args {
				if a.kind == argTensor && a.id == t && !a.half {
					return false
				}
			}
		}
		return true
	}
}
