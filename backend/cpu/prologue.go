package cpu

import "github.com/berth-ml/berth/ir"

// A prologue is an inference-mode BatchNormalization, optionally followed
// by a Relu, that a pointwise convolution applies to its input while it
// packs it, so that the normalised input never exists as a tensor of its
// own. A 1×1 convolution of unit stride and no padding reads its input as
// the im2col matrix itself: row c of a group's matrix is input channel c,
// so the normalisation is one per-row affine map applied in packB.
//
// Every element is computed as the BatchNormalization kernel computes it,
// float32(float64(v)·a[c] + b[c]), and then as the Relu kernel does
// (v < 0 ? 0 : v, so that −0 and NaN pass through), so the fused
// convolution gives the same bits as the three kernels run one by one.
type prologue struct {
	a, b []float64 // per input channel: the BatchNormalization's x·a + b
	relu bool
}

// withPrologue returns a kernel that runs the chain of nodes on the input
// of the convolution kernel k while packing it, instead of as steps of
// their own. chain is [BatchNormalization] or [BatchNormalization, Relu],
// the Relu reading the BatchNormalization's output, and the chain's last
// output is k's input 0 (the caller guarantees that, and that no other
// node reads the chain's outputs). The returned kernel takes the
// BatchNormalization's input in place of k's input 0 and k's other inputs
// unchanged; its outputs, scratch size and any epilogue (see fuseEpilogue; either
// may be applied first) are k's. Its output must not share memory with
// the new input 0: every block of the output reads all input channels.
//
// ok is false unless k is a convolution of a 1×1 kernel with unit stride
// and no padding (not depthwise, any group) without a prologue yet, every
// tensor of the chain is float32 of k's input shape, and the
// BatchNormalization is in inference mode with constant statistics.
func withPrologue(k Kernel, g *ir.Graph, chain []*ir.Node) (Kernel, bool) {
	ck, ok := k.(*convKernel)
	if !ok || !ck.pointwise || ck.sub > 0 || ck.depthwise || ck.pro != nil || g == nil || len(chain) < 1 || len(chain) > 2 {
		return nil, false
	}
	bn := chain[0]
	if bn == nil || !bn.DefaultDomain() || bn.Op != "BatchNormalization" || len(bn.Inputs) < 5 || len(bn.Outputs) < 1 {
		return nil, false
	}
	for _, id := range bn.Outputs[1:] {
		if id != ir.NoTensor {
			return nil, false
		}
	}
	bk, _, err := BuildFor(g, bn, 1)
	if err != nil {
		return nil, false
	}
	bnk, ok := bk.(*batchNormKernel)
	if !ok || bnk.ab == nil || bnk.c != ck.c {
		return nil, false
	}
	ids := []ir.TensorID{bn.Inputs[0], bn.Outputs[0]}
	relu := len(chain) == 2
	if relu {
		r := chain[1]
		if r == nil || !r.DefaultDomain() || r.Op != "Relu" || len(r.Inputs) != 1 || len(r.Outputs) != 1 || r.Inputs[0] != bn.Outputs[0] {
			return nil, false
		}
		ids = append(ids, r.Outputs[0])
	}
	for _, id := range ids {
		if id < 0 || int(id) >= len(g.Tensors) {
			return nil, false
		}
		if t := g.Tensor(id); t.DType != ir.Float32 || t.IsConst() || !convInputShape(ck, t.Shape) {
			return nil, false
		}
	}
	f := *ck
	f.pro = &prologue{a: bnk.ab[:bnk.c], b: bnk.ab[bnk.c : 2*bnk.c], relu: relu}
	return &f, true
}

// convInputShape reports whether s is the shape of k's input 0.
func convInputShape(k *convKernel, s ir.Shape) bool {
	r := s.Rank() - 2
	if r < 1 || r > 3 || int(s[0]) != k.nb || int(s[1]) != k.c {
		return false
	}
	for i := range 3 {
		want := 1
		if j := i - (3 - r); j >= 0 {
			want = int(s[2+j])
		}
		if k.in[i] != want {
			return false
		}
	}
	return true
}

// packB is packB(dst, src, k, n, rs, 1, 0, ceilDiv(n, gemmNR)) of the
// normalised input: row l of the k×n block src (rows rs apart) is input
// channel c0+l.
func (p *prologue) packB(dst, src []float32, c0, k, n, rs int) {
	a, b := p.a[c0:c0+k], p.b[c0:c0+k]
	for q := 0; q < ceilDiv(n, gemmNR); q++ {
		d := dst[q*k*gemmNR : (q+1)*k*gemmNR]
		j0 := q * gemmNR
		cols := min(gemmNR, n-j0)
		if cols == gemmNR && prologueAsm && k > 0 {
			// The kernel reads rows 0 … k−1 of 16 floats each.
			_ = src[j0+(k-1)*rs+gemmNR-1]
			prologuePanelAVX2(d, src[j0:], a, b, rs, p.mode())
			continue
		}
		if cols < gemmNR {
			clear(d)
		}
		for l := range k {
			s := src[l*rs+j0:][:cols]
			bnRelu(d[l*gemmNR:][:cols], s, a[l], b[l], p.relu)
		}
	}
}

// mode is the flags of prologuePanelAVX2: 1 applies the Relu, 2 computes
// v·a + b with one fused multiply-add, as the compiled Go code does when
// it fuses (see bnFused).
// applyA applies the prologue to a packed A operand of rows×k whose
// column l is input channel c0+l (runVec's images × channels), rows
// beyond rows left as they are.
func (p *prologue) applyA(a []float32, rows, k, c0 int) {
	for i := 0; i < rows; i++ {
		panel, r := a[i/gemmMR*k*gemmMR:][:k*gemmMR], i%gemmMR
		for l := 0; l < k; l++ {
			v := float32(float64(panel[l*gemmMR+r])*p.a[c0+l] + p.b[c0+l])
			if p.relu && v < 0 {
				v = 0
			}
			panel[l*gemmMR+r] = v
		}
	}
}

func (p *prologue) mode() int {
	m := 0
	if p.relu {
		m |= 1
	}
	if bnFused {
		m |= 2
	}
	return m
}

// bnRelu is the BatchNormalization of one channel (batchNormKernel's
// expression), then, if relu, reluLoop, from s to d.
func bnRelu(d, s []float32, a, b float64, relu bool) {
	s = s[:len(d)]
	if !relu {
		for i, v := range s {
			d[i] = float32(float64(v)*a + b)
		}
		return
	}
	for i, v := range s {
		x := float32(float64(v)*a + b)
		if x < 0 {
			x = 0
		}
		d[i] = x
	}
}

// bnAffine is the BatchNormalization expression on one value, out of line
// so that its arguments are not constants.
//
//go:noinline
func bnAffine(v float32, a, b float64) float32 { return float32(float64(v)*a + b) }

// bnFused reports whether the compiled BatchNormalization expression
// float32(float64(v)·a + b) rounds once (a fused multiply-add, as the
// compiler emits for GOAMD64=v3 and later) rather than after the product
// and again after the sum. With v = 1+2⁻²³ and a = 1+2⁻³⁰ the exact
// product 1+2⁻²³+2⁻³⁰+2⁻⁵³ rounds to p = 1+2⁻²³+2⁻³⁰, so v·a − p is 0
// when rounded first and 2⁻⁵³ when fused.
var bnFused = func() bool {
	v, a := float32(1+0x1p-23), 1+0x1p-30
	p := 1 + 0x1p-23 + 0x1p-30
	return bnAffine(v, a, -p) != 0
}()
