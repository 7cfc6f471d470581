package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// Kernel runs one compiled node. in[i]/out[i] are exactly the bytes of the
// node's i-th input/output tensor (len == bytes of its static type); in[i] is
// nil for an omitted optional input. scratch has the length Build returned.
// Buffers are at least 64-byte aligned (weights at least 8-byte aligned), so
// raw.F32 etc. are safe. A kernel may be run by several sessions at once
// (each with its own buffers and Workers), so Run must not mutate the kernel.
type Kernel interface {
	Run(w *Workers, in, out [][]byte, scratch []byte)
}

// alignment is that of the buffers Evaluate allocates (and of arena slots).
const alignment = 64

// buildFunc compiles one node; see Build.
type buildFunc func(c *buildContext) (Kernel, int64, error)

// builders maps ONNX operator types to their compilers. It is filled at
// init, not in its declaration, because the control-flow builders compile
// their subgraphs through Build, which reads it.
var builders map[string]buildFunc

func init() {
	builders = map[string]buildFunc{
		// Elementwise, one input.
		"Relu": buildUnary, "LeakyRelu": buildUnary, "Sigmoid": buildUnary,
		"HardSigmoid": buildUnary, "HardSwish": buildUnary, "Tanh": buildUnary,
		"Erf": buildUnary, "Exp": buildUnary, "Log": buildUnary, "Sqrt": buildUnary,
		"Neg": buildUnary, "Abs": buildUnary, "Reciprocal": buildUnary,
		"Floor": buildUnary, "Ceil": buildUnary, "Round": buildUnary,
		"Sin": buildUnary, "Cos": buildUnary, "Tan": buildUnary, "Asin": buildUnary,
		"Acos": buildUnary, "Atan": buildUnary, "Sinh": buildUnary,
		"Cosh": buildUnary, "Asinh": buildUnary, "Acosh": buildUnary,
		"Atanh": buildUnary, "Softplus": buildUnary, "Softsign": buildUnary,
		"Elu": buildUnary, "Selu": buildUnary, "ThresholdedRelu": buildUnary,
		"Shrink": buildUnary, "Sign": buildUnary, "Not": buildUnary,
		"Celu": buildFloatMap, "Mish": buildFloatMap, "Gelu": buildFloatMap,
		"Clip": buildClip, "IsNaN": buildIsX, "IsInf": buildIsX,
		"Cast": buildCast, "CastLike": buildCast,
		"BitwiseNot": buildBitwise,
		// Elementwise with broadcasting; the arithmetic on float16 and
		// bfloat16 goes through buildHalfBinary.
		"Add": halfOr(buildBinary), "Sub": halfOr(buildBinary),
		"Mul": halfOr(buildBinary), "Div": halfOr(buildBinary),
		"Max": halfOr(buildBinary), "Min": halfOr(buildBinary),
		"Mod": halfOr(buildMod),
		"Sum": buildBinary, "Mean": buildBinary, "Equal": buildBinary,
		"Less": buildBinary, "Greater": buildBinary, "LessOrEqual": buildBinary,
		"GreaterOrEqual": buildBinary, "And": buildBinary, "Or": buildBinary,
		"Xor":        buildBinary,
		"BitwiseAnd": buildBitwise, "BitwiseOr": buildBitwise,
		"BitwiseXor": buildBitwise, "BitShift": buildBitShift,
		"Pow": buildPow, "Where": buildWhere, "PRelu": buildPRelu,
		// Linear algebra and convolution.
		"MatMul": buildMatMul, "Gemm": buildGemm, "Einsum": buildEinsum,
		"Conv": buildConv, "ConvTranspose": buildConvTranspose,
		"PackedMatMul": buildPackedMatMul, "PackedGather": buildPackedGather,
		"MatMulInteger": buildMatMulInteger, "QLinearMatMul": buildMatMulInteger,
		"ConvInteger": buildIntConv, "QLinearConv": buildIntConv,
		"QuantizeLinear": buildQuantize, "DequantizeLinear": buildQuantize,
		"DynamicQuantizeLinear": buildDynamicQuantize, "Det": buildDet,
		// Pooling, normalisation, reductions.
		"MaxPool": buildMaxPool, "AveragePool": buildPool,
		"GlobalAveragePool": buildGlobalPool, "GlobalMaxPool": buildGlobalPool,
		"MaxUnpool": buildMaxUnpool, "LRN": buildLRN,
		"BatchNormalization": buildBatchNorm, "LayerNormalization": buildLayerNorm,
		"InstanceNormalization":     buildInstanceNorm,
		"MeanVarianceNormalization": buildMVN, "Softmax": buildSoftmax,
		"LogSoftmax": buildSoftmax, "Hardmax": buildHardmax,
		"ReduceMean": buildReduce, "ReduceSum": buildReduce,
		"ReduceMax": buildReduce, "ReduceMin": buildReduce,
		"ReduceProd": buildReduce, "ReduceL1": buildReduce, "ReduceL2": buildReduce,
		"ReduceSumSquare": buildReduce, "ReduceLogSum": buildReduce,
		"ReduceLogSumExp": buildReduce, "CumSum": buildCumSum,
		"ArgMax": buildArg, "ArgMin": buildArg, "TopK": buildTopK,
		// Data movement.
		"Identity": buildView, "Reshape": buildView, "Flatten": buildView,
		"Squeeze": buildView, "Unsqueeze": buildView, "Dropout": buildDropout,
		"Transpose": buildTranspose, "Concat": buildConcat, "Split": buildSplit,
		"Slice": buildSlice, "Gather": buildGather, "Expand": buildExpand,
		"Pad": buildPad, "Tile": buildTile, "Resize": buildResize,
		"Upsample": buildResize, "DepthToSpace": buildDepthToSpace,
		"SpaceToDepth": buildSpaceToDepth, "Trilu": buildTrilu,
		"GatherElements": buildGatherElements, "GatherND": buildGatherND,
		"ScatterElements": buildScatterElements, "Scatter": buildScatterElements,
		"ScatterND": buildScatterND, "ReverseSequence": buildReverseSequence,
		"Compress": buildCompress, "NonZero": buildNonZero, "Unique": buildUnique,
		// Shape-like and generated values.
		"Shape": buildShape, "Size": buildSize,
		"ConstantOfShape": buildConstantOfShape, "Constant": buildConstant,
		"Range": buildRange, "OneHot": buildOneHot, "EyeLike": buildEyeLike,
		"HannWindow": buildWindow, "HammingWindow": buildWindow,
		"BlackmanWindow": buildWindow, "MelWeightMatrix": buildMelWeightMatrix,
		// Signal processing and vision.
		"DFT": buildDFT, "STFT": buildSTFT, "GridSample": buildGridSample,
		"RoiAlign": buildRoiAlign, "NonMaxSuppression": buildNMS,
		"TfIdfVectorizer": buildTfIdf,
		// Sequence models, decoding and control flow.
		"RNN": buildRecurrent, "GRU": buildRecurrent, "LSTM": buildRecurrent,
		"RMSNorm": buildRMSNorm, "Rotary": buildRotary,
		"CacheWrite": buildCacheWrite, "CachedAttention": buildCachedAttention,
		"If": buildIf, "Loop": buildLoop, "Scan": buildScan,
		// Training.
		"NegativeLogLikelihoodLoss": buildLoss, "SoftmaxCrossEntropyLoss": buildLoss,
		"Adagrad": buildTraining, "Momentum": buildTraining, "Adam": buildTraining,
	}
}

// Supported reports whether the CPU backend has a kernel for the operator
// (for some dtypes; Build has the final word).
func Supported(op string) bool { _, ok := builders[op]; return ok }

// Build compiles node n of g (types and shapes of all inputs and outputs are
// already inferred: g.Tensor(id).DType/.Shape; constant inputs have .Data)
// into a kernel, returning the scratch bytes it needs per run. Unsupported
// op/dtype combinations return an error naming the node, op and dtype.
func Build(g *ir.Graph, n *ir.Node) (k Kernel, scratch int64, err error) {
	return BuildFor(g, n, 0)
}

// BuildFor is Build for sessions whose Workers have the given number of
// threads (0 or less: runtime.GOMAXPROCS). Kernels that give each worker
// its own scratch area size their scratch for that many; run on a larger
// pool, they use only as many workers as their scratch has areas for.
func BuildFor(g *ir.Graph, n *ir.Node, threads int) (k Kernel, scratch int64, err error) {
	return BuildWith(g, n, BuildOptions{Threads: threads})
}

// BuildOptions are the settings of BuildWith.
type BuildOptions struct {
	// Threads is the thread count of the Workers that will run the kernel
	// (0 or less: runtime.GOMAXPROCS), as for BuildFor.
	Threads int
	// Release, when set, is handed parts of a constant input's Data that
	// the kernel has copied into a layout of its own and will not read
	// again, as soon as each part is copied. A runtime that reads
	// constants from a mapped file can drop those pages while a large
	// operand is still being packed, so that the file's copy and the
	// packed copy of one operand are never resident whole at once. It is
	// a hint: the bytes stay readable.
	Release func(b []byte)
	// Read, when set, copies src, part of a constant input's Data, into
	// dst (len(dst) ≥ len(src)) without reading src's memory (from the
	// file a mapping came from), and reports whether it did; it must not
	// allocate. Gather reads the rows it picks from a large constant table
	// (an embedding) through it, so that a few rows spread over the table
	// do not make large blocks of the mapped file resident.
	Read func(dst, src []byte) bool
	// Weights, when set, is where the kernels put the weights they pack
	// or transform: one store for all the kernels of a model lays their
	// small weights together in huge pages (see WeightStore). Without
	// it each kernel's weights take an allocation of their own.
	Weights *WeightStore
}

// BuildWith is Build with options.
func BuildWith(g *ir.Graph, n *ir.Node, opts BuildOptions) (k Kernel, scratch int64, err error) {
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if !ir.DomainOK(n.Domain, n.Op) {
		return nil, 0, fmt.Errorf("node %q: operator %s of domain %q is not supported by the CPU backend", n.Name, n.Op, n.Domain)
	}
	f, ok := builders[n.Op]
	if !ok {
		return nil, 0, fmt.Errorf("node %q: operator %s is not supported by the CPU backend", n.Name, n.Op)
	}
	c := &buildContext{g: g, n: n, opset: g.Opset(), threads: threads, release: opts.Release, read: opts.Read, weights: opts.Weights}
	if c.opset == 0 {
		c.opset = 17
	}
	for _, ids := range [][]ir.TensorID{n.Inputs, n.Outputs} {
		for _, id := range ids {
			if id == ir.NoTensor {
				continue
			}
			if id < 0 || int(id) >= len(g.Tensors) {
				return nil, 0, c.errorf("tensor id %d out of range", id)
			}
			t := g.Tensor(id)
			if !t.DType.Valid() {
				return nil, 0, c.errorf("tensor %q has no valid type", t.Name)
			}
			if err := t.Shape.Validate(); err != nil {
				return nil, 0, c.errorf("tensor %q: %v", t.Name, err)
			}
			if t.IsConst() && int64(len(t.Data)) != t.Bytes() {
				return nil, 0, c.errorf("constant %q holds %d bytes, want %d", t.Name, len(t.Data), t.Bytes())
			}
		}
	}
	if len(n.Outputs) == 0 || n.Outputs[0] == ir.NoTensor && !optionalFirstOutput[n.Op] {
		return nil, 0, c.errorf("node has no output")
	}
	if ir.WritesNothing(g, n) {
		return nothing{}, 0, nil
	}
	defer func() {
		if p := recover(); p != nil {
			k, scratch, err = nil, 0, c.errorf("internal error while compiling: %v", p)
		}
	}()
	k, scratch, err = f(c)
	if err == nil && scratch < 0 {
		return nil, 0, c.errorf("internal error: negative scratch size")
	}
	return k, scratch, err
}

// nothing is the kernel of a node whose outputs are all empty.
type nothing struct{}

func (nothing) Run(*Workers, [][]byte, [][]byte, []byte) {}

// optionalFirstOutput lists the operators whose first output a model may
// omit (asking only for the final states of a recurrent layer).
var optionalFirstOutput = map[string]bool{"RNN": true, "GRU": true, "LSTM": true}

// shapeOnly lists the operators whose result depends only on the static
// shape of their input, never on its values.
var shapeOnly = map[string]bool{"Shape": true, "Size": true}

// Evaluate runs node n whose inputs are all constants and sets Data on each
// of its outputs (fresh 64-byte-aligned buffers). Used for constant folding.
// Shape and Size, which read no input values, also accept a non-constant
// input.
func Evaluate(g *ir.Graph, n *ir.Node) (err error) {
	in := make([][]byte, len(n.Inputs))
	for i, id := range n.Inputs {
		if id == ir.NoTensor {
			continue
		}
		if id < 0 || int(id) >= len(g.Tensors) {
			return fmt.Errorf("node %q (%s): input id %d out of range", n.Name, n.Op, id)
		}
		t := g.Tensor(id)
		if !t.IsConst() {
			if shapeOnly[n.Op] && n.Domain == "" {
				continue
			}
			return fmt.Errorf("node %q (%s): input %q is not a constant", n.Name, n.Op, t.Name)
		}
		in[i] = t.Data
		if !raw.Aligned(t.Data, alignment) {
			in[i] = alignedBytes(int64(len(t.Data)))
			copy(in[i], t.Data)
		}
	}
	k, scratch, err := BuildFor(g, n, 1)
	if err != nil {
		return err
	}
	out := make([][]byte, len(n.Outputs))
	for i, id := range n.Outputs {
		if id != ir.NoTensor {
			out[i] = alignedBytes(g.Tensor(id).Bytes())
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("node %q (%s): internal error while evaluating: %v", n.Name, n.Op, p)
		}
	}()
	w := NewWorkers(1)
	k.Run(w, in, out, alignedBytes(scratch))
	for i, id := range n.Outputs {
		if id != ir.NoTensor {
			g.Tensor(id).Data = out[i]
		}
	}
	return nil
}

// buildContext is what a builder sees of its node.
type buildContext struct {
	g       *ir.Graph
	n       *ir.Node
	opset   int64
	threads int // threads of the Workers that will run the kernel
	release func([]byte)
	read    func(dst, src []byte) bool // BuildOptions.Read
	weights *WeightStore               // BuildOptions.Weights
}

// copied tells BuildOptions.Release that b, part of a constant's Data, has
// been copied and will not be read again.
func (c *buildContext) copied(b []byte) {
	if c.release != nil && len(b) > 0 {
		c.release(b)
	}
}

// in returns the i-th input tensor, or nil when it is absent.
func (c *buildContext) in(i int) *ir.Tensor { return c.g.InputOf(c.n, i) }

// out returns the i-th output tensor, or nil when it is absent.
func (c *buildContext) out(i int) *ir.Tensor { return c.g.OutputOf(c.n, i) }

func (c *buildContext) attrs() ir.Attrs { return c.n.Attrs }

func (c *buildContext) errorf(format string, a ...any) error {
	return fmt.Errorf("node %q (%s): %s", c.n.Name, c.n.Op, fmt.Sprintf(format, a...))
}

// unsupported reports an unsupported element type.
func (c *buildContext) unsupported(dt ir.DType) error {
	return c.errorf("dtype %s is not supported by the CPU backend", dt)
}

// need checks that inputs [0, k) are present.
func (c *buildContext) need(k int) error {
	for i := 0; i < k; i++ {
		if c.in(i) == nil {
			return c.errorf("input %d is missing", i)
		}
	}
	return nil
}

// inOut returns input 0 and output 0, checking that they are there and of
// one type.
func (c *buildContext) inOut() (x, y *ir.Tensor, err error) {
	if err := c.need(1); err != nil {
		return nil, nil, err
	}
	x, y = c.in(0), c.out(0)
	if x.DType != y.DType {
		return nil, nil, c.errorf("output is %s, want %s", y.DType, x.DType)
	}
	return x, y, nil
}

// floatInput returns input 0, checking that inputs [0, k) are present and
// that input 0 has a floating-point type.
func (c *buildContext) floatInput(k int) (*ir.Tensor, error) {
	if err := c.need(k); err != nil {
		return nil, err
	}
	x := c.in(0)
	if !isFloatType(x.DType) {
		return nil, c.unsupported(x.DType)
	}
	return x, nil
}

// allFloat32 checks that every tensor of ts that is present is float32.
func (c *buildContext) allFloat32(ts ...*ir.Tensor) error {
	for _, t := range ts {
		if t != nil && t.DType != ir.Float32 {
			return c.unsupported(t.DType)
		}
	}
	return nil
}

// constInts reads an optional constant integer input.
func (c *buildContext) constInts(i int) ([]int64, error) {
	t := c.in(i)
	if t == nil {
		return nil, nil
	}
	if !t.IsConst() {
		return nil, fmt.Errorf("node %q (%s): input %d: %w", c.n.Name, c.n.Op, i, ir.NeedValue("input", t.Name))
	}
	v, err := t.Int64s()
	if err != nil {
		return nil, c.errorf("%v", err)
	}
	return v, nil
}

// constF32 decodes a constant float32 tensor into a fresh slice, whatever
// the alignment of its bytes.
// f32src is a float32 operand to pack: a float32 slice, or little-endian
// bytes at any alignment (a constant as the model file stores it), so that
// packing a weight makes no float32 copy of it first.
type f32src struct {
	f []float32 // the values, or nil
	b []byte    // else their bytes
}

// constSrc is the packing source of constant t: a view of its bytes when
// they are aligned for float32, else the bytes.
func constSrc(t *ir.Tensor) f32src {
	if len(t.Data) >= 4 && raw.Aligned(t.Data, 4) {
		return f32src{f: f32s(t.Data)}
	}
	return f32src{b: t.Data}
}

// bytes is the source's little-endian bytes.
func (s f32src) bytes() []byte {
	if s.f != nil {
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s.f))), 4*len(s.f))
	}
	return s.b
}

// packA packs the whole m×k operand whose element (i, l) is
// alpha·src[off + i·rs + l·cs] (see the package-level packA).
func (s f32src) packA(dst []float32, off, m, k, rs, cs int, alpha float32) {
	if s.f != nil {
		packA(dst, s.f[off:], m, k, rs, cs, alpha, 0, ceilDiv(m, gemmMR))
		return
	}
	packABytes(dst, s.b[4*off:], m, k, rs, cs, alpha)
}

// packB packs the whole k×n operand whose element (l, j) is
// src[off + l·rs + j·cs] (see the package-level packB).
func (s f32src) packB(dst []float32, off, k, n, rs, cs int) {
	if s.f != nil {
		packB(dst, s.f[off:], k, n, rs, cs, 0, ceilDiv(n, gemmNR))
		return
	}
	packBBytes(dst, s.b[4*off:], k, n, rs, cs)
}

// packBRows packs rows [l0, l1) of the whole k×n row-major operand whose
// element (l, j) is src[off + l·rs + j] into dst, laid out as packB lays
// out the whole operand: a large constant can be packed a few rows at a
// time, each run of rows released once copied.
func (s f32src) packBRows(dst []float32, off, k, n, rs, l0, l1 int) {
	if s.f != nil {
		packBRowRange(dst, s.f[off:], k, n, rs, 0, ceilDiv(n, gemmNR), l0, l1, false)
		return
	}
	for q := 0; q < ceilDiv(n, gemmNR); q++ {
		d := dst[q*k*gemmNR:]
		j0 := q * gemmNR
		cols := min(gemmNR, n-j0)
		for l := l0; l < l1; l++ {
			row := d[l*gemmNR : (l+1)*gemmNR]
			for j := range cols {
				row[j] = f32At(s.b, off+l*rs+j0+j)
			}
			clear(row[cols:])
		}
	}
}

// f32At reads float32 element i of little-endian bytes at any alignment.
func f32At(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
}

func constF32(t *ir.Tensor) []float32 {
	v := make([]float32, len(t.Data)/4)
	for i := range v {
		v[i] = f32At(t.Data, i)
	}
	return v
}

// ints converts a shape to ints.
func ints(s ir.Shape) []int {
	v := make([]int, len(s))
	for i, d := range s {
		v[i] = int(d)
	}
	return v
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// view reinterprets b as a slice of T without copying. Callers guarantee
// the alignment (see Kernel).
func view[T any](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) < size {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// f32s views b as float32 values.
func f32s(b []byte) []float32 { return view[float32](b) }

// alignedBytes returns n zero bytes starting at a multiple of alignment; the
// result is never nil, so a zero-sized constant still counts as known. It
// is a device.NewHeapBuffer: huge pages back the whole 2 MiB of a large
// one where the system offers them, and the bytes are Go's, valid as
// long as a kernel, a graph or a store references them (they are handed
// on with no owner that could free a mapping).
func alignedBytes(n int64) []byte {
	if h, err := device.NewHeapBuffer(n, alignment); err == nil {
		return h.Bytes()
	}
	b := make([]byte, n+alignment)
	off := int((alignment - uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment) % alignment)
	return b[off : off+int(n) : off+int(n)]
}

// copyDistinct copies src into dst unless they already are the same bytes.
func copyDistinct(dst, src []byte) {
	if !raw.SameStart(dst, src) {
		copy(dst, src)
	}
}

// outAt returns out[i], or nil when the output is absent.
func outAt(out [][]byte, i int) []byte {
	if i < len(out) {
		return out[i]
	}
	return nil
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func ceilDiv(n, m int) int { return (n + m - 1) / m }
