package cuda

import (
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

// Channels-last activations. cuDNN's tensor-core convolutions work on
// NHWC tensors: handed NCHW ones, each convolution transposes its input
// and its output (ResNet-50 at batch 32: 67 transposes, some 0.64 ms of a
// 2.8 ms run). So, under 16-bit precision with convolutions on cuDNN, the
// four-axis activations that flow between such convolutions are held
// channels-last: their slots in the plan are the same bytes, laid out
// N×H×W×C instead of N×C×H×W.
//
// A tensor is held so (fusion.nhwc) when its producer and every reader
// can take that layout: a convolution on cuDNN (as its input or output,
// or a ConvAct's addend, which is laid out as its output),
// a generated elementwise kernel (which walks its output in the order it
// is stored and reads each input with the strides of its own layout, so
// a per-channel bias broadcast from C×1×1 is read by o mod C), a MaxPool
// or AveragePool over two axes (pool2d_nhwc), a GlobalAveragePool (whose
// N×C×1×1 output is the same in both layouts), or a Round16. A pooling
// or a Round16 takes and gives one layout; a convolution whose input is
// channels-last writes channels-last. Where a convolution on cuDNN that
// writes channels-last reads an input that is not (the image), a kernel
// lays it out channels-last in 16 bits in the node's scratch first
// (to_nhwc), its channels padded with zeros (entryChannels: the stem's 3
// become 16, its weights padded alike). The weights of a channels-last convolution are its
// 16-bit copy laid out K×R×S×C (krscForm). Graph inputs and outputs keep
// the layout ONNX gives them. A convolution that passes.MergePointwiseSums
// made over a Concat of the channels is split in two again first: the
// Concat would be a copy channels-last (and break the layout), where
// NCHW the planner lets its inputs' producers write into it.
// BERTH_CUDA_NHWC=0 turns all this off.

// nhwcOn says whether channels-last activations are allowed.
var nhwcOn = os.Getenv("BERTH_CUDA_NHWC") != "0"

// nhwcPerm is the order of a four-axis tensor's axes as it is stored
// channels-last.
var nhwcPerm = [4]int{0, 2, 3, 1}

// decideNHWC chooses the activations held channels-last (fusion.nhwc).
// onDNN says whether node i is a convolution that runs on cuDNN.
func (fz *fusion) decideNHWC(g *ir.Graph, cons [][]int, isOut []bool, onDNN func(i int) bool) {
	fz.nhwc = map[ir.TensorID]bool{}
	pool := func(i int) bool {
		n := &g.Nodes[i]
		return (n.Op == "MaxPool" || n.Op == "AveragePool") && n.DefaultDomain() && len(n.Inputs) == 1 &&
			(len(n.Outputs) == 1 || n.Outputs[1] == ir.NoTensor) && g.Tensor(n.Inputs[0]).Shape.Rank() == 4
	}
	round := func(i int) bool { return g.Nodes[i].Op == "Round16" && g.Nodes[i].Domain == cudaDomain }
	// onCuDNN[i]: node i is a convolution on cuDNN over four axes whose
	// input can be laid out channels-last (asked once a node, before any
	// tensor is channels-last).
	onCuDNN := make([]bool, len(g.Nodes))
	for i := range g.Nodes {
		if onDNN(i) {
			x := g.InputOf(&g.Nodes[i], 0).Shape
			_, ok := entryChannels(x, g.Nodes[i].Attrs.Int("group", 1))
			onCuDNN[i] = x.Rank() == 4 && ok
		}
	}
	conv := func(i int) bool { return onCuDNN[i] }
	isIn := make(map[ir.TensorID]bool, len(g.Inputs))
	for _, id := range g.Inputs {
		isIn[id] = true
	}
	for id := range g.Tensors {
		t := g.Tensor(ir.TensorID(id))
		if t.IsConst() || t.DType != ir.Float32 || t.Shape.Rank() != 4 || t.Shape.Validate() != nil || isOut[id] || isIn[ir.TensorID(id)] ||
			t.Shape[1] == 1 || t.Shape[2]*t.Shape[3] == 1 || t.Producer < 0 || len(cons[id]) == 0 {
			continue
		}
		p := t.Producer
		if !(conv(p) || fz.group[p] >= 0 && fz.groups[fz.group[p]].sink() == p || pool(p) || round(p)) {
			continue
		}
		ok := true
		for _, c := range cons[id] {
			n := &g.Nodes[c]
			first := n.Inputs[0] == ir.TensorID(id) && !slices.Contains(n.Inputs[1:], ir.TensorID(id))
			switch {
			case fz.group[c] >= 0 && len(fz.groups[fz.group[c]].shape) == 4:
				// A generated kernel of four axes: readSpace gives
				// its strides in either layout.
			case first && (conv(c) || pool(c) || round(c)):
			case isConvAct(n) && len(n.Inputs) > 3 && n.Inputs[3] == ir.TensorID(id) && conv(c) && !slices.Contains(n.Inputs[:3], ir.TensorID(id)):
				// Its addend, laid out as its output.
			case first && n.Op == "GlobalAveragePool" && n.DefaultDomain():
			default:
				ok = false
			}
		}
		if ok {
			fz.nhwc[ir.TensorID(id)] = true
		}
	}
	// A pooling or a Round16 gives the layout it takes; a convolution
	// whose input is channels-last writes channels-last.
	for changed := true; changed; {
		changed = false
		for i := range g.Nodes {
			n := &g.Nodes[i]
			if len(n.Inputs) == 0 || len(n.Outputs) == 0 || n.Inputs[0] == ir.NoTensor || n.Outputs[0] == ir.NoTensor {
				continue
			}
			x, y := n.Inputs[0], n.Outputs[0]
			switch {
			case (pool(i) || round(i)) && fz.nhwc[x] != fz.nhwc[y]:
				delete(fz.nhwc, x)
				delete(fz.nhwc, y)
				changed = true
			case (n.Op == "Conv" || isConvAct(n)) && fz.nhwc[x] && !fz.nhwc[y]:
				delete(fz.nhwc, x)
				changed = true
			case isConvAct(n) && len(n.Inputs) > 3 && n.Inputs[3] != ir.NoTensor && fz.nhwc[n.Inputs[3]] != fz.nhwc[y]:
				delete(fz.nhwc, n.Inputs[3])
				delete(fz.nhwc, y)
				changed = true
			}
		}
	}
}

// entryChannels returns the channels of the channels-last copy of a
// convolution's input of shape x (N×C×H×W) and groups (to_nhwc): C
// padded to a multiple of 8, and to 16 at least, where there is one
// group; C itself where there are more and it is a multiple of 8 (else
// false); and false where the copy would have 2³¹ elements or more.
// ResNet-50's stem at batch 32 (C = 3) took cuDNN 205 µs padded to 16,
// 228 as it is, 477 padded to 8 (BenchmarkDNNStem, an H200).
func entryChannels(x ir.Shape, groups int64) (int64, bool) {
	if x.Rank() != 4 {
		return 0, false
	}
	cp := x[1]
	if groups == 1 {
		cp = max((cp+7)&^7, 16)
	}
	return cp, cp%8 == 0 && x[0]*x[2]*x[3]*cp <= math.MaxInt32
}

// onDNN reports whether Conv or ConvAct node i runs on cuDNN (a trial
// build).
func (fz *fusion) onDNN(g *ir.Graph, i int, hs *halves) bool {
	if g.Nodes[i].Op != "Conv" && !isConvAct(&g.Nodes[i]) || !hs.dnn {
		return false
	}
	var extras [][]byte
	c, err := buildNodeWith(g, i, 1, true, &extras, hs.trial(fz.half), fz)
	if err != nil {
		return false
	}
	for _, l := range c.launches {
		if l.dnn != nil {
			return true
		}
	}
	return false
}

// readSpace returns the iteration space of a kernel that writes y
// element by element as y is stored (its shape, its axes in the order
// they are stored), and the element strides in that space of its input
// x, as x is stored (broadcast as numpy does).
func (fz *fusion) readSpace(g *ir.Graph, x, y ir.TensorID) (space, strides []int64) {
	ys, xs := []int64(g.Tensor(y).Shape), []int64(g.Tensor(x).Shape)
	space, strides = ys, broadcastStrides(xs, ys)
	if fz == nil {
		return space, strides
	}
	if fz.nhwc[x] && len(xs) == len(ys) {
		strides = storedStrides(xs)
		for d := range xs {
			if xs[d] == 1 {
				strides[d] = 0
			}
		}
	}
	if fz.nhwc[y] {
		space, strides = permuted(space), permuted(strides)
	}
	return space, strides
}

// storedStrides is the element strides, by axis N, C, H, W, of a tensor
// of shape s held channels-last.
func storedStrides(s []int64) []int64 {
	return []int64{s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]}
}

// permuted is a four-axis list in the order the axes are stored
// channels-last.
func permuted(s []int64) []int64 {
	p := make([]int64, 4)
	for d, a := range nhwcPerm {
		p[d] = s[a]
	}
	return p
}

// channelPatternNHWC is channelPattern for a tensor of shape held
// channels-last: the channel is the offset modulo C.
func channelPatternNHWC(shape []int64, wide bool) indexPattern {
	var p indexPattern
	var t termCode
	if shape[0]*shape[2]*shape[3] != 1 {
		t.mod = true
		p.args = append(p.args, divisorArg(shape[1], wide))
	}
	p.terms = []termCode{t}
	return p
}

// krscForm is how a convolution's weights are laid out for a
// channels-last cuDNN convolution: K×R×S×Cp in 16 bits, from float32
// K×C×R×S, channels C to Cp zero. The zero form is no conversion but the
// rounding (shadowBytes).
type krscForm struct {
	K, C, R, S, Cp int64
}

// bytes converts float32 weights (native byte order) as f says.
func (f krscForm) bytes(data []byte, p Precision) []byte {
	if f == (krscForm{}) {
		return shadowBytes(data, p)
	}
	out := make([]byte, 2*f.K*f.R*f.S*f.Cp)
	if len(data) == 0 || int64(len(data)) != 4*f.K*f.C*f.R*f.S {
		return out
	}
	src := unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), len(data)/4)
	dst := unsafe.Slice((*uint16)(unsafe.Pointer(&out[0])), len(out)/2)
	one := dtype.BF16FromF32
	if p == F16 {
		one = dtype.F16FromF32
	}
	for k := range f.K {
		for c := range f.C {
			for r := range f.R {
				for s := range f.S {
					dst[((k*f.R+r)*f.S+s)*f.Cp+c] = one(src[((k*f.C+c)*f.R+r)*f.S+s])
				}
			}
		}
	}
	return out
}

// size is the bytes of the converted copy of n bytes of float32.
func (f krscForm) size(n int) int64 {
	if f == (krscForm{}) {
		return int64(n / 2)
	}
	return 2 * f.K * f.R * f.S * f.Cp
}

// krscKey names a constant's copy in a form.
type krscKey struct {
	id   ir.TensorID
	form krscForm
}

// krscOperand returns the argument of the K×R×S×Cp 16-bit copy of the
// constant weights a (float32 K×C×R×S).
func (c *buildContext) krscOperand(a arg, f krscForm) arg {
	key := krscKey{a.id, f}
	idx, ok := c.half.krsc[key]
	if !ok {
		if c.half.krsc == nil {
			c.half.krsc = map[krscKey]int{}
		}
		idx = c.constCopy(c.g.Tensor(a.id), f)
		c.half.krsc[key] = idx
	}
	return arg{kind: argExtra, id: ir.TensorID(idx)}
}

// constCopy adds the extra holding the 16-bit copy of constant t laid
// out as f says (krscForm{}: as it is) and returns its index: empty in a
// dry build, or where the weight store makes it (once for every shape),
// else the copy itself.
func (c *buildContext) constCopy(t *ir.Tensor, f krscForm) int {
	idx := len(*c.extras)
	switch {
	case c.half.dry:
		c.extra(nil)
	case c.half.store.holds(t.Data):
		c.extra(nil)
		c.half.from[idx] = t.Data
		if f != (krscForm{}) {
			if c.half.form == nil {
				c.half.form = map[int]krscForm{}
			}
			c.half.form[idx] = f
		}
	default:
		c.extra(f.bytes(t.Data, c.half.prec))
	}
	return idx
}

// nhwcSource holds the kernels of channels-last activations.
const nhwcSource = common + halfCommon + `
// to_nhwc_h writes x (N×C×HW, float32) channels-last in 16 bits, its
// channels padded with zeros to Cp (a multiple of 8): a thread per eight
// channels of a position, one 16-byte store. to_nhwc_hh reads x in 16
// bits.
template <typename T> __device__ __forceinline__ float nhwc_in(const T* x, i64 i, int mode);
template <> __device__ __forceinline__ float nhwc_in<float>(const float* x, i64 i, int) { return x[i]; }
template <> __device__ __forceinline__ float nhwc_in<u16>(const u16* x, i64 i, int mode) { return widen_h(x[i], mode); }
// The copy has fewer than 2³¹ elements (entryChannels), and x no more:
// 32-bit indices (a 64-bit division costs tens of instructions).
template <typename T> __device__ __forceinline__ void to_nhwc_t(const T* __restrict__ x, uint4* __restrict__ y, i64 N64, i64 C64, i64 HW64, i64 Cp, int mode) {
	const int C = (int)C64, HW = (int)HW64, groups = (int)(Cp >> 3), n = (int)(N64 * HW64) * groups;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
		const int g = i % groups, p = i / groups, b = p / HW, hw = p % HW;
		u32 w[4];
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			const int c0 = g * 8 + 2 * j, c1 = c0 + 1;
			const u32 lo = c0 < C ? round_h(nhwc_in<T>(x, (b * C + c0) * HW + hw, mode), mode) : 0;
			const u32 hi = c1 < C ? round_h(nhwc_in<T>(x, (b * C + c1) * HW + hw, mode), mode) : 0;
			w[j] = lo | (hi << 16);
		}
		y[i] = make_uint4(w[0], w[1], w[2], w[3]);
	}
}
extern "C" __global__ void to_nhwc_h(const float* __restrict__ x, uint4* __restrict__ y, i64 N, i64 C, i64 HW, i64 Cp, int mode) {
	to_nhwc_t<float>(x, y, N, C, HW, Cp, mode);
}
extern "C" __global__ void to_nhwc_hh(const u16* __restrict__ x, uint4* __restrict__ y, i64 N, i64 C, i64 HW, i64 Cp, int mode) {
	to_nhwc_t<u16>(x, y, N, C, HW, Cp, mode);
}
// pool2d_nhwc is MaxPool or AveragePool of channels-last tensors into
// float32 (pool2d's parameters, NC = N·C, and C): a thread per output
// element, neighbouring threads neighbouring channels; _h reads x in 16
// bits, and pool2d_nhwc32 takes 32-bit indices where the tensors allow
// (pool2d_nhwc 64-bit ones, some four times the instructions).
struct Pool { i64 NC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, PH1, PW1, DH, DW, isMax, includePad; };
template <typename T, typename I> __device__ __forceinline__ void pool2d_nhwc_t(const T* __restrict__ x, float* __restrict__ y, const Pool& p, i64 C64, int mode) {
	const I C = (I)C64, H = (I)p.H, W = (I)p.W, OH = (I)p.OH, OW = (I)p.OW, KH = (I)p.KH, KW = (I)p.KW;
	const I SH = (I)p.SH, SW = (I)p.SW, PH = (I)p.PH, PW = (I)p.PW, DH = (I)p.DH, DW = (I)p.DW;
	const I n = (I)(p.NC * p.OH * p.OW);
	for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)blockDim.x * gridDim.x) {
		const I c = i % C, q = i / C, ow = q % OW, oh = (q / OW) % OH, b = q / (OW * OH);
		const T* xp = x + b * H * W * C + c;
		float acc = p.isMax ? NEG_INF : 0.f;
		I cnt = 0;
		for (I kh = 0; kh < KH; kh++) {
			const I h = oh * SH - PH + kh * DH;
			if (h < 0 || h >= H) continue;
			for (I kw = 0; kw < KW; kw++) {
				const I w = ow * SW - PW + kw * DW;
				if (w < 0 || w >= W) continue;
				const float v = nhwc_in<T>(xp, (h * W + w) * C, mode);
				if (p.isMax) acc = fmaxf(acc, v); else acc += v;
				cnt++;
			}
		}
		if (!p.isMax) {
			if (p.includePad) {
				const I h0 = oh * SH - PH, w0 = ow * SW - PW;
				const I h1 = min(h0 + (KH - 1) * DH + 1, H + (I)p.PH1), w1 = min(w0 + (KW - 1) * DW + 1, W + (I)p.PW1);
				cnt = ((h1 - h0 + DH - 1) / DH) * ((w1 - w0 + DW - 1) / DW);
			}
			acc = cnt > 0 ? acc / (float)cnt : 0.f;
		}
		y[i] = acc;
	}
}
#define POOL_NHWC(name, T, I) \
extern "C" __global__ void name(const T* __restrict__ x, float* __restrict__ y, Pool p, i64 C, int mode) { pool2d_nhwc_t<T, I>(x, y, p, C, mode); }
POOL_NHWC(pool2d_nhwc, float, i64)
POOL_NHWC(pool2d_nhwc_h, u16, i64)
POOL_NHWC(pool2d_nhwc32, float, int)
POOL_NHWC(pool2d_nhwc32_h, u16, int)
// mean_hw_nhwc is GlobalAveragePool of a channels-last tensor: y[b, c] =
// scale · Σ x[b, ·, ·, c], a thread per (b, c); mean_hw_nhwc_h reads x in
// 16 bits.
template <typename T> __device__ __forceinline__ void mean_hw_nhwc_t(const T* __restrict__ x, float* __restrict__ y, i64 NC, i64 HW, i64 C, float scale, int mode) {
	LOOP(i, NC) {
		const T* xp = x + (i / C) * HW * C + i % C;
		float s = 0.f;
		for (i64 j = 0; j < HW; j++) s += nhwc_in<T>(xp, j * C, mode);
		y[i] = s * scale;
	}
}
extern "C" __global__ void mean_hw_nhwc(const float* __restrict__ x, float* __restrict__ y, i64 NC, i64 HW, i64 C, float scale, int mode) {
	mean_hw_nhwc_t<float>(x, y, NC, HW, C, scale, mode);
}
extern "C" __global__ void mean_hw_nhwc_h(const u16* __restrict__ x, float* __restrict__ y, i64 NC, i64 HW, i64 C, float scale, int mode) {
	mean_hw_nhwc_t<u16>(x, y, NC, HW, C, scale, mode);
}
`

// nhwcModule holds nhwcSource's kernels.
var nhwcModule = &source{"nhwc.cu", nhwcSource}
