package cuda

import (
	"math"
	"slices"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// Convolutions on cuDNN. Under BF16 or F16, where cuDNN is installed, a
// convolution whose output is held in 16 bits (read only by generated
// kernels, which widen it as they load, or by other products) runs as one
// cudnnConvolutionForward on the 16-bit input and the weights' 16-bit
// copy: no patch matrix in the arena, and cuDNN's implicit-GEMM kernels
// on the tensor cores. Its bias is left to the readers (fusion.bias), as
// on the GEMM path; a convolution that must add its own bias, or write
// float32, keeps the GEMM path. A lane whose sessions have convolutions
// on cuDNN gives it a workspace of its own (dnnWorkspace, 256 MB, outside
// the arena as cuBLAS's 32 MB are), and each session plans its
// convolutions once (driver.DNNPlan), choosing the algorithm cuDNN's
// heuristics rank first among those the workspace fits (ResNet-50's
// stem at batch 32 asks for 77 MB; with 32 MB cuDNN's 3×3 convolutions
// fell to kernels without the tensor cores, 241 µs each).
//
// cuDNN runs its tensor-core kernels on NHWC tensors: handed NCHW ones,
// each convolution transposes its input and output (some 7–10 µs each at
// batch 32). Between such convolutions the activations are held
// channels-last (nhwc.go), and the convolution is told so.

// dnnEpilogue is what a ConvAct node adds in cuDNN's epilogue: its bias
// (the node's input 2), its addend (input 3, where present), its ReLU.
type dnnEpilogue struct {
	addend, relu bool
}

// dnnConvLaunch adds the launch of cuDNN's convolution for the node, of
// rank r, group groups and geometry d (N, C, H, W, OC, KH, KW, PH, PW, SH,
// SW, DH, DW, OH, OW), and reports true, where cuDNN is installed and
// takes it as above; else it adds nothing and reports false. ep, where
// not nil, is the fused epilogue of a ConvAct node (bias is then unused).
func (c *buildContext) dnnConvLaunch(bias arg, xHalf bool, r int, groups int64, d [15]int64, ep *dnnEpilogue) bool {
	if c.half == nil || !c.half.dnn || c.fz == nil || ep == nil && bias.kind != argWords || (r != 3 && r != 4) {
		return false
	}
	for j, v := range d {
		if v > math.MaxInt32 || v < 0 || v == 0 && (j < 7 || j > 8) { // only pads may be 0
			return false
		}
	}
	// cuDNN pads both ends alike: the output must be what that gives.
	if (d[2]+2*d[7]-d[11]*(d[5]-1)-1)/d[9]+1 != d[13] || (d[3]+2*d[8]-d[12]*(d[6]-1)-1)/d[10]+1 != d[14] {
		return false
	}
	if d[0]*d[1]*d[2]*d[3] > math.MaxInt32 || d[0]*d[4]*d[13]*d[14] > math.MaxInt32 {
		return false
	}
	y := c.outArg(0)
	if !c.fz.out16[y.id] && !c.fz.half[y.id] || !c.halfable(c.inArg(0), xHalf) || !c.halfable(c.inArg(1), false) {
		return false
	}
	if ep != nil && (!c.halfable(c.inArg(2), false) || ep.addend && !c.halfable(c.inArg(3), c.stored16(3))) {
		return false
	}
	t := driver.R16BF
	if c.half.prec == F16 {
		t = driver.R16F
	}
	i := func(v int64) int32 { return int32(v) }
	conv := &driver.DNNConv{N: i(d[0]), C: i(d[1]), H: i(d[2]), W: i(d[3]), K: i(d[4]), R: i(d[5]), S: i(d[6]),
		PadH: i(d[7]), PadW: i(d[8]), StrideH: i(d[9]), StrideW: i(d[10]), DilH: i(d[11]), DilW: i(d[12]),
		Groups: i(groups), OH: i(d[13]), OW: i(d[14]), T: t}
	var x, w arg
	switch {
	case !c.fz.nhwc[y.id]:
		x, w = c.halfOperand(c.inArg(0), xHalf), c.halfOperand(c.inArg(1), false)
	case c.fz.nhwc[c.n.Inputs[0]]:
		conv.NHWC = true
		x = c.halfOperand(c.inArg(0), xHalf)
		w = c.krscOperand(c.inArg(1), krscForm{K: d[4], C: d[1] / groups, R: d[5], S: d[6], Cp: d[1] / groups})
	default:
		// The input laid out channels-last in the scratch, its channels
		// padded where there is one group (entryChannels).
		conv.NHWC = true
		cp, ok := entryChannels(c.in(0).Shape, groups)
		if !ok {
			return false
		}
		conv.C = int32(cp)
		k, in := "to_nhwc_h", c.inArg(0)
		if xHalf {
			k, in.half = "to_nhwc_hh", true
		}
		x = c.reserve(d[0] * d[2] * d[3] * cp * 2)
		c.elementwise(nhwcModule, k, d[0]*d[2]*d[3]*cp/8, in, x, i64(d[0]), i64(d[1]), i64(d[2]*d[3]), i64(cp), i32(halfMode(c.half.prec)))
		w = c.krscOperand(c.inArg(1), krscForm{K: d[4], C: d[1] / groups, R: d[5], S: d[6], Cp: cp / groups})
	}
	args := []arg{x, w, {kind: argTensor, id: y.id, off: y.off / 2, half: true}}
	if ep != nil {
		conv.Fused, conv.ReLU = true, ep.relu
		args = append(args, c.halfOperand(c.inArg(2), false))
		if ep.addend {
			args = append(args, c.halfOperand(c.inArg(3), c.stored16(3)))
		}
	}
	c.launches = append(c.launches, launch{node: c.node, dnn: conv, args: args})
	return true
}

// A ConvAct node (of this backend's own domain) is a convolution with its
// epilogue: ConvAct(x, W, b[, z]) = act(Conv(x, W) + b [+ z]), act the
// ReLU where the attribute relu is 1, else nothing. Under 16-bit
// precision with convolutions on cuDNN, fuseConvActs rewrites each
// convolution that cuDNN takes (with its constant bias, or zeros), with the Add of an
// activation and the Relu that follow it (each where it is its
// predecessor's only reader), into one ConvAct: one
// cudnnConvolutionBiasActivationForward whose epilogue adds the bias (in
// 16 bits: cuDNN refuses a float32 one with 16-bit operands) and z and
// takes the ReLU, where a generated kernel read the convolution's 16-bit
// output back to do so (ResNet-50: 53 convolutions, 36 such kernels, some
// 0.4 ms at batch 32). The output is held in 16 bits (fusion.half), so
// every reader of it must take 16-bit values: convolutions, generated
// kernels, the poolings (which widen as they load, or in a pass of their
// own). The node sits where its last node sat, where z is ready.

// fuseConvActs returns g with its convolutions and their epilogues fused
// as above, or g itself where there are none. accepts says whether node i
// reads t in 16 bits were it held so (acceptsHalf).
func fuseConvActs(g *ir.Graph, hs *halves, accepts func(i int, t ir.TensorID) bool) *ir.Graph {
	cons, isOut, fused, gone := rewriteOf(g)
	// reads16 reports whether every reader of t takes it in 16 bits.
	reads16 := func(t ir.TensorID) bool {
		if isOut[t] || len(cons[t]) == 0 {
			return false
		}
		for _, c := range cons[t] {
			n := &g.Nodes[c]
			switch {
			case !n.DefaultDomain():
				return false
			case n.Op == "Conv" && n.Inputs[0] == t && !slices.Contains(n.Inputs[1:], t) && accepts(c, t):
			case fusable(g, c):
			case (n.Op == "MaxPool" || n.Op == "AveragePool" || n.Op == "GlobalAveragePool") && n.Inputs[0] == t:
			default:
				return false
			}
		}
		return true
	}
	h := *g // g with the zero biases of convolutions that have none
	h.Tensors = slices.Clone(g.Tensors)
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Op != "Conv" || !n.DefaultDomain() || len(n.Inputs) < 2 || len(n.Inputs) > 3 || len(n.Outputs) != 1 || !dnnTakes(g, i, hs) {
			continue
		}
		oc := g.Tensor(n.Outputs[0]).Shape[1]
		bias := n.Input(2)
		if bias != ir.NoTensor {
			if b := g.Tensor(bias); !b.IsConst() || b.DType != ir.Float32 || b.Shape.Elements() != oc {
				continue
			}
		}
		inputs := []ir.TensorID{n.Inputs[0], n.Inputs[1], bias}
		out, at, relu := n.Outputs[0], i, int64(0)
		var absorbed []int
		// next is the only reader of t where t has one and is no graph
		// output.
		next := func(t ir.TensorID) int {
			if isOut[t] || len(cons[t]) != 1 || fused[cons[t][0]] != nil || gone[cons[t][0]] {
				return -1
			}
			return cons[t][0]
		}
		if ai := next(out); ai >= 0 {
			// cuDNN's z is laid out as y: an activation of y's shape,
			// not one that broadcasts.
			y := g.Tensor(out)
			if z, s, ok := addOf(g, ai, out, func(t *ir.Tensor) bool { return !t.IsConst() && t.Shape.Equal(y.Shape) }); ok && z != n.Inputs[0] {
				inputs = append(inputs, z)
				absorbed = append(absorbed, ai)
				out, at = s, ai
			}
		}
		if ri := next(out); ri >= 0 && g.Nodes[ri].Op == "Relu" && g.Nodes[ri].DefaultDomain() && len(g.Nodes[ri].Outputs) == 1 {
			absorbed = append(absorbed, ri)
			out, at, relu = g.Nodes[ri].Outputs[0], ri, 1
		}
		if !reads16(out) {
			continue
		}
		if bias == ir.NoTensor {
			// cuDNN's fused epilogue adds a bias, here zeros.
			inputs[2] = h.NewTensor(n.Name+"/bias", ir.Float32, ir.Shape{oc}, make([]byte, 4*oc))
		}
		for _, a := range absorbed {
			gone[a] = true
		}
		gone[i], gone[at] = true, false
		fused[at] = &ir.Node{Name: n.Name, Op: "ConvAct", Domain: cudaDomain, Inputs: inputs, Outputs: []ir.TensorID{out},
			Attrs: ir.Attrs{"relu": {Kind: ir.AttrInt, Int: relu}}}
		for k, a := range n.Attrs {
			fused[at].Attrs[k] = a
		}
		if _, ok := n.Attrs["kernel_shape"]; !ok {
			// A Conv's is its weights' shape; spelled out, as
			// ir.SpatialWindow takes it of other nodes.
			fused[at].Attrs["kernel_shape"] = ir.Attr{Kind: ir.AttrInts, Ints: slices.Clone([]int64(g.Tensor(n.Inputs[1]).Shape[2:]))}
		}
	}
	if unchanged(fused, gone) {
		return g // without the tensors added to h
	}
	return rebuild(&h, fused, gone)
}

// isConvAct reports whether n is a ConvAct node (fuseConvActs).
func isConvAct(n *ir.Node) bool { return n.Op == "ConvAct" && n.Domain == cudaDomain }

// dnnTakes reports whether Conv node i of g would run on cuDNN were its
// output held in 16 bits and its bias left to its readers (a trial
// build).
func dnnTakes(g *ir.Graph, i int, hs *halves) bool {
	if hs == nil || !hs.dnn {
		return false
	}
	y := g.Nodes[i].Outputs[0]
	group := make([]int, len(g.Nodes))
	for k := range group {
		group[k] = -1
	}
	trial := &fusion{group: group, bias: map[int]ir.TensorID{}, out16: map[ir.TensorID]bool{y: true}, gen: &genModule{}}
	if b := g.Nodes[i].Input(2); b != ir.NoTensor {
		trial.bias[i] = b // left to the readers: none to add
	}
	c, err := buildNodeWith(g, i, 1, true, new([][]byte), hs.trial(nil), trial)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(c.launches, func(l launch) bool { return l.dnn != nil })
}

// buildConvAct runs a ConvAct node as one cuDNN convolution with its
// epilogue.
func buildConvAct(c *buildContext) error {
	d, group, r, err := c.convGeometry()
	if err != nil {
		return err
	}
	if err := c.need(3); err != nil {
		return err
	}
	ep := &dnnEpilogue{addend: c.in(3) != nil, relu: c.n.Attrs.Int("relu", 0) == 1}
	if !c.dnnConvLaunch(null(), c.stored16(0), r, group, d, ep) {
		return c.errorf("internal error: a convolution with its epilogue that cuDNN does not take")
	}
	return nil
}
