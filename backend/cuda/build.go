package cuda

import (
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/passes"
	"github.com/berth-ml/berth/plan"
)

// argKind says where the value of a kernel argument comes from.
type argKind uint8

const (
	argWords   argKind = iota // literal words (scalars, Geo, parameter structs)
	argTensor                 // the device address of an ir tensor, plus off bytes
	argScratch                // the node's planned scratch, plus off bytes
	argExtra                  // a constant made at compile time, uploaded with the weights
	// argScratchOf is the planned scratch of another node (node), plus
	// off bytes: where a product split in parts left them for the fused
	// kernels that read its output to add up (fusion.parts).
	argScratchOf
)

// arg is one kernel argument before the plan gives tensors their addresses.
type arg struct {
	kind  argKind
	id    ir.TensorID // argTensor: the tensor; argExtra: the index of the constant
	off   int64       // byte offset added to the address
	words []uint64
	half  bool // argTensor: the kernel reads the tensor as 16-bit values (fusion.half)
	node  int  // argScratchOf: the node whose scratch
}

// launch is one kernel launch of a node.
type launch struct {
	node         int
	module       *source
	kernel       string
	grid, block  [3]uint32
	shared       uint32
	args         []arg
	elideIfAlias bool // a copy from args[0] to args[1]: nothing to do when they are the same bytes
	// blas, when set, makes the launch a cuBLAS GEMM instead of a kernel:
	// args are its A, B and C (cuBLAS's column-major operands).
	blas *blasGemm
	// dnn, when set, makes it a cuDNN convolution (its pointers unset):
	// args are x, w and y, in 16 bits.
	dnn *driver.DNNConv
	// early marks a kernel that may start before the one ahead of it
	// ends (driver.LaunchEarlyWith): it waits in GRID_WAIT before it
	// touches what earlier kernels read or write.
	early bool
}

// blasGemm is one cublasSgemmStridedBatched call, in column-major terms.
type blasGemm struct {
	transA, transB   int
	m, n, k          int64
	lda, ldb, ldc    int64
	strideA, strideB int64
	strideC          int64
	batch            int64
	alpha, beta      float32
	ab               driver.DataType // A and B: R32F (cublasSgemmStridedBatched) or a 16-bit type (GemmEx)
	c                driver.DataType // C: R32F, or R16BF where fusion.out16 holds the output
	// epilogue, when not zero, makes the GEMM a cuBLASLt product
	// (driver.LtPlan) whose epilogue adds a bias, args[3], to each column
	// of our row-major output: float32, or of C's type where bias16 says
	// so (cuBLASLt takes no float32 bias for a 16-bit output); args[4],
	// where present, is C, added with beta (D, args[2], is then a tensor
	// of its own).
	epilogue driver.Epilogue
	bias16   bool
}

// run issues the GEMM whose arguments are in a.
func (b *blasGemm) run(a driver.Args) error {
	if b.ab != driver.R32F {
		return driver.RunGemmEx(a)
	}
	return driver.RunSgemm(a)
}

// halves is the compile-wide state of 16-bit GEMM operands: the precision
// and the extra holding each constant's shadow copy.
type halves struct {
	prec   Precision
	shadow map[ir.TensorID]int
	// store holds the model file's constants and their shadows; from
	// holds, by extra, the constant of the file whose shadow it is, which
	// the store makes.
	store *WeightStore
	from  map[int][]byte
	// krsc holds the extra of each constant's copy laid out for a
	// channels-last convolution, form the layout of those the store
	// makes (by extra; absent: the plain shadow).
	krsc map[krscKey]int
	form map[int]krscForm
	// stored holds the activations their producers write as 16-bit
	// values (fusion.half): GEMMs read them as they are.
	stored map[ir.TensorID]bool
	// dry makes no shadow copies (a trial build that is thrown away).
	dry bool
	// mma says the GPU has the 16-bit tensor-core products of sm_80
	// (mma.sync m16n8k16), which the fused attention uses.
	mma bool
	// lt says cuBLASLt is installed: MatMulAdd nodes run on it
	// (fuseEpilogues).
	lt bool
	// dnn says cuDNN is installed: convolutions whose output is held in
	// 16 bits run on it (dnnConvLaunch).
	dnn bool
}

// trial is hs for a trial build that is thrown away: the same precision
// and libraries, no shadow copies made, and stored the activations held
// in 16 bits.
func (hs *halves) trial(stored map[ir.TensorID]bool) *halves {
	return &halves{prec: hs.prec, shadow: map[ir.TensorID]int{}, stored: stored, dry: true, mma: hs.mma, lt: hs.lt, dnn: hs.dnn}
}

// buildContext is what a builder sees of its node, and where it leaves its
// launches.
type buildContext struct {
	g      *ir.Graph
	n      *ir.Node
	node   int
	opset  int64
	sms    int
	extras *[][]byte // compile-time constants of the whole executable
	blas   bool      // GEMMs may go to cuBLAS
	half   *halves   // non-nil: cuBLAS GEMMs take 16-bit operands
	fz     *fusion   // non-nil: the fusion decisions (fuse.go)
	// room, where not negative, is the scratch the node may take for
	// the parts of a split K (splitFits): the node's at the bound of
	// the shapes, whose plan this one's refits.
	room int64
	// fold, under a bound, is whether the node's product left its parts
	// to the readers of its output there (1) or not (0); -1: no bound.
	fold int8

	launches []launch
	scratch  int64
}

type buildFunc func(c *buildContext) error

var builders map[string]buildFunc

func init() {
	builders = map[string]buildFunc{
		"Clip": buildClip, "Cast": buildCast,
		"Add": buildBinary, "Sub": buildBinary, "Mul": buildBinary, "Div": buildBinary,
		"Pow": buildBinary, "Max": buildBinary, "Min": buildBinary,
		"Equal": buildBinary, "Less": buildBinary, "Greater": buildBinary,
		"LessOrEqual": buildBinary, "GreaterOrEqual": buildBinary,
		"And": buildBinary, "Or": buildBinary, "Xor": buildBinary, "Not": buildNot,
		"Where":    buildWhere,
		"Identity": buildView, "Reshape": buildView, "Flatten": buildView,
		"Squeeze": buildView, "Unsqueeze": buildView, "Dropout": buildView,
		"Transpose": buildTranspose, "Slice": buildSlice, "Expand": buildExpand,
		"Concat": buildConcat, "Split": buildSplit, "Gather": buildGather,
		"MatMul": buildMatMul, "Gemm": buildGemm, "Conv": buildConv, "ConvTranspose": buildConvTranspose,
		"BatchNormalization": buildBatchNorm, "LayerNormalization": buildLayerNorm,
		"Softmax": buildSoftmax, "LogSoftmax": buildSoftmax,
		"MaxPool": buildPool, "AveragePool": buildPool, "GlobalAveragePool": buildGlobalAveragePool,
		"ReduceMean": buildReduce, "ReduceSum": buildReduce,
		"Pad": buildPad, "Resize": buildResize, "Upsample": buildResize,
		"GatherND": buildGatherND, "TopK": buildTopK,
	}
	// ir.BerthDomain's and cudaDomain's operators.
	maps.Copy(builders, berthBuilders)
	// The unary elementwise operators, one kernel each.
	for op := range unaryKernels {
		builders[op] = buildUnary
	}
}

// Supported reports whether the CUDA backend has kernels for the operator
// (for some dtypes; Compile has the final word).
func Supported(op string) bool { _, ok := builders[op]; return ok }

// buildNode compiles node i of g into its launches and scratch size.
func buildNode(g *ir.Graph, i int, sms int, blas bool, extras *[][]byte) (c *buildContext, err error) {
	return buildNodeWith(g, i, sms, blas, extras, nil, nil)
}

// buildNodeWith is buildNode with the GEMMs' operands in 16 bits where hs
// is non-nil (and blas is set), and the fusion decisions fz (nil: none).
func buildNodeWith(g *ir.Graph, i int, sms int, blas bool, extras *[][]byte, hs *halves, fz *fusion) (c *buildContext, err error) {
	return buildNodeIn(g, i, sms, blas, extras, hs, fz, -1, -1)
}

// buildNodeIn is buildNodeWith where the node's GEMMs split K into no
// more parts than room bytes of scratch hold (room < 0: no limit), and
// leave their parts to the readers of the output as fold says (the
// node's at the bound: 1 they do, 0 they do not, -1 no bound).
func buildNodeIn(g *ir.Graph, i int, sms int, blas bool, extras *[][]byte, hs *halves, fz *fusion, room int64, fold int8) (c *buildContext, err error) {
	n := &g.Nodes[i]
	c = &buildContext{g: g, n: n, node: i, opset: g.Opset(), sms: sms, blas: blas, extras: extras, fz: fz, room: room, fold: fold}
	if blas {
		c.half = hs
	}
	if c.opset == 0 {
		c.opset = 17
	}
	if !n.DefaultDomain() && !(n.Domain == ir.BerthDomain && ir.BerthOp(n.Op)) && n.Domain != cudaDomain {
		return nil, c.errorf("operator domain %q is not supported by the CUDA backend", n.Domain)
	}
	f, ok := builders[n.Op]
	if !ok && n.Op == "If" && n.DefaultDomain() {
		f, ok = buildIf, true // no kernel: it asks for its condition
	}
	if !ok {
		return nil, c.errorf("operator %s is not supported by the CUDA backend", n.Op)
	}
	for _, ids := range [][]ir.TensorID{n.Inputs, n.Outputs} {
		for _, id := range ids {
			if id == ir.NoTensor {
				continue
			}
			if id < 0 || int(id) >= len(g.Tensors) {
				return nil, c.errorf("tensor id %d out of range", id)
			}
			t := g.Tensor(id)
			if !t.DType.Valid() {
				return nil, c.errorf("tensor %q has no valid type", t.Name)
			}
			if err := t.Shape.Validate(); err != nil {
				return nil, c.errorf("tensor %q: %v", t.Name, err)
			}
			if t.IsConst() && int64(len(t.Data)) != t.Bytes() {
				return nil, c.errorf("constant %q holds %d bytes, want %d", t.Name, len(t.Data), t.Bytes())
			}
		}
	}
	if len(n.Outputs) == 0 || n.Outputs[0] == ir.NoTensor {
		return nil, c.errorf("node has no output")
	}
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, c.errorf("internal error while compiling for CUDA: %v", p)
		}
	}()
	if fz.codegen(g, i) {
		f = func(c *buildContext) error { return buildFused(c, fz) }
	} else if ir.WritesNothing(g, n) {
		return c, nil // nothing to compute, and nothing to build (ir.WritesNothing)
	}
	if err := f(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *buildContext) errorf(format string, a ...any) error {
	return fmt.Errorf("node %q (%s): %s", c.n.Name, c.n.Op, fmt.Sprintf(format, a...))
}

func (c *buildContext) unsupported(dt ir.DType) error {
	return c.errorf("dtype %s is not supported by the CUDA backend", dt)
}

func (c *buildContext) in(i int) *ir.Tensor { return c.g.InputOf(c.n, i) }

func (c *buildContext) out(i int) *ir.Tensor { return c.g.OutputOf(c.n, i) }

func (c *buildContext) need(k int) error {
	for i := range k {
		if c.in(i) == nil {
			return c.errorf("input %d is missing", i)
		}
	}
	return nil
}

// Arguments.

func (c *buildContext) inArg(i int) arg  { return arg{kind: argTensor, id: c.n.Input(i)} }
func (c *buildContext) outArg(i int) arg { return arg{kind: argTensor, id: c.n.Outputs[i]} }

// optIn is the address of input i, or a null pointer when it is absent.
func (c *buildContext) optIn(i int) arg {
	if c.in(i) == nil {
		return null()
	}
	return c.inArg(i)
}

func (c *buildContext) optOut(i int) arg {
	if c.out(i) == nil {
		return null()
	}
	return c.outArg(i)
}

func (c *buildContext) extra(b []byte) arg {
	*c.extras = append(*c.extras, b)
	return arg{kind: argExtra, id: ir.TensorID(len(*c.extras) - 1)}
}

func null() arg            { return arg{words: []uint64{0}} }
func i64(v int64) arg      { return arg{words: []uint64{uint64(v)}} }
func i32(v int32) arg      { return arg{words: []uint64{uint64(uint32(v))}} }
func f32(v float32) arg    { return arg{words: []uint64{uint64(math.Float32bits(v))}} }
func words(w []uint64) arg { return arg{words: w} }
func at(a arg, off int64) arg {
	a.off += off
	return a
}

// Launch shapes.

const threads = 256

// grid1D covers n elements with grid-stride loops.
func (c *buildContext) grid1D(n int64) [3]uint32 {
	b := (n + threads - 1) / threads
	b = min(b, int64(max(c.sms, 1))*32, 1<<30)
	return [3]uint32{uint32(max(b, 1)), 1, 1}
}

// elementwise adds a launch of a grid-stride kernel over n elements.
func (c *buildContext) elementwise(m *source, kernel string, n int64, args ...arg) {
	if n <= 0 {
		return
	}
	c.launches = append(c.launches, launch{node: c.node, module: m, kernel: kernel, grid: c.grid1D(n), block: [3]uint32{threads, 1, 1}, args: args})
}

// rowwise adds a launch with one block per row.
func (c *buildContext) rowwise(m *source, kernel string, rows int64, args ...arg) {
	if rows <= 0 {
		return
	}
	b := min(rows, 1<<20)
	c.launches = append(c.launches, launch{node: c.node, module: m, kernel: kernel, grid: [3]uint32{uint32(b), 1, 1}, block: [3]uint32{threads, 1, 1}, args: args})
}

// byRows adds a launch over ny·nz rows of n elements: blockIdx.y and
// blockIdx.z pick the row (ny, nz ≤ 65535), x-blocks stride along it.
func (c *buildContext) byRows(m *source, kernel string, n, ny, nz int64, args ...arg) {
	if n <= 0 || ny <= 0 || nz <= 0 {
		return
	}
	bx := min((n+threads-1)/threads, 65535)
	c.launches = append(c.launches, launch{node: c.node, module: m, kernel: kernel, grid: [3]uint32{uint32(bx), uint32(ny), uint32(nz)}, block: [3]uint32{threads, 1, 1}, args: args})
}

// copyBytes adds a device copy of n bytes.
func (c *buildContext) copyBytes(src, dst arg, n int64) {
	if n <= 0 {
		return
	}
	c.elementwise(eltwise, "copy_bytes", (n+3)/4, src, dst, i64(n))
	c.launches[len(c.launches)-1].elideIfAlias = true
}

// Geo: an iteration space and its strides (see common in source.go).

type geo struct {
	shape []int64
	st    [][]int64
}

// broadcastStrides returns the strides of a tensor of shape in read as
// shape out (numpy broadcasting; in is aligned to the right).
func broadcastStrides(in, out []int64) []int64 {
	s := make([]int64, len(out))
	cs := ir.Shape(in).Strides()
	off := len(out) - len(in)
	for d := range out {
		if k := d - off; k >= 0 && in[k] != 1 {
			s[d] = cs[k]
		}
	}
	return s
}

// encode collapses the space (dropping size-1 axes, merging axes that every
// stride set walks as one) and writes it as the words of a Geo.
func (g geo) encode() ([]uint64, error) {
	var shape []int64
	st := make([][]int64, len(g.st))
	n := int64(1)
	for d, s := range g.shape {
		n *= s
		if s == 1 {
			continue
		}
		if len(shape) > 0 {
			merge := true
			for k := range g.st {
				if st[k][len(st[k])-1] != g.st[k][d]*s {
					merge = false
				}
			}
			if merge {
				shape[len(shape)-1] *= s
				for k := range g.st {
					st[k][len(st[k])-1] = g.st[k][d]
				}
				continue
			}
		}
		shape = append(shape, s)
		for k := range g.st {
			st[k] = append(st[k], g.st[k][d])
		}
	}
	if len(shape) > maxRank {
		return nil, fmt.Errorf("an iteration space of rank %d (after merging axes) is more than the CUDA kernels' %d", len(shape), maxRank)
	}
	w := make([]uint64, 2+maxRank+4*maxRank)
	w[0], w[1] = uint64(len(shape)), uint64(n)
	for d, s := range shape {
		w[2+d] = uint64(s)
		for k := range st {
			w[2+maxRank+k*maxRank+d] = uint64(st[k][d])
		}
	}
	return w, nil
}

func prod(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// Builders.

var unaryKernels = map[string]string{
	"Relu": "u_relu", "LeakyRelu": "u_leakyrelu", "Sigmoid": "u_sigmoid",
	"HardSigmoid": "u_hardsigmoid", "HardSwish": "u_hardswish", "Tanh": "u_tanh",
	"Erf": "u_erf", "Exp": "u_exp", "Log": "u_log", "Sqrt": "u_sqrt", "Neg": "u_neg",
	"Abs": "u_abs", "Reciprocal": "u_reciprocal", "Floor": "u_floor", "Ceil": "u_ceil",
	"Sin": "u_sin", "Cos": "u_cos", "Softplus": "u_softplus", "Elu": "u_elu",
}

func buildUnary(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 || y.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	var a, b float32
	at := c.n.Attrs
	switch c.n.Op {
	case "LeakyRelu":
		a = at.Float("alpha", 0.01)
	case "HardSigmoid":
		a, b = at.Float("alpha", 0.2), at.Float("beta", 0.5)
	case "Elu":
		a = at.Float("alpha", 1)
	}
	c.elementwise(eltwise, unaryKernels[c.n.Op], y.Shape.Elements(), c.inArg(0), c.outArg(0), i64(y.Shape.Elements()), f32(a), f32(b))
	return nil
}

func buildClip(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 || y.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	lo, hi := float32(math.Inf(-1)), float32(math.Inf(1))
	if c.opset < 11 {
		lo, hi = c.n.Attrs.Float("min", lo), c.n.Attrs.Float("max", hi)
	}
	bound := [2]arg{null(), null()}
	for i := 1; i <= 2; i++ {
		t := c.in(i)
		if t == nil {
			continue
		}
		if t.DType != ir.Float32 || t.Shape.Elements() != 1 {
			return c.errorf("bound %q must be a float32 scalar, not %s%v", t.Name, t.DType, t.Shape)
		}
		if t.IsConst() {
			v := math.Float32frombits(uint32(t.Data[0]) | uint32(t.Data[1])<<8 | uint32(t.Data[2])<<16 | uint32(t.Data[3])<<24)
			if i == 1 {
				lo = v
			} else {
				hi = v
			}
			continue
		}
		bound[i-1] = c.inArg(i)
	}
	n := y.Shape.Elements()
	c.elementwise(eltwise, "u_clip", n, c.inArg(0), c.outArg(0), i64(n), f32(lo), f32(hi), bound[0], bound[1])
	return nil
}

var castNames = map[ir.DType]string{ir.Float32: "f32", ir.Int64: "i64", ir.Int32: "i32", ir.Bool: "bool"}

func buildCast(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	n := y.Shape.Elements()
	if x.DType == y.DType {
		c.copyBytes(c.inArg(0), c.outArg(0), y.Bytes())
		return nil
	}
	from, ok1 := castNames[x.DType]
	to, ok2 := castNames[y.DType]
	if !ok1 || !ok2 {
		return c.errorf("cast from %s to %s is not supported by the CUDA backend", x.DType, y.DType)
	}
	c.elementwise(eltwise, "cast_"+from+"_"+to, n, c.inArg(0), c.outArg(0), i64(n))
	return nil
}

var binaryNames = map[string]string{
	"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow", "Max": "max", "Min": "min",
	"Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "lessorequal",
	"GreaterOrEqual": "greaterorequal", "And": "and", "Or": "or", "Xor": "xor",
}

func buildBinary(c *buildContext) error {
	if len(c.n.Inputs) != 2 {
		return c.errorf("takes %d inputs; the CUDA backend handles two", len(c.n.Inputs))
	}
	if err := c.need(2); err != nil {
		return err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	if a.DType != b.DType {
		return c.errorf("inputs of types %s and %s are not supported by the CUDA backend", a.DType, b.DType)
	}
	op := binaryNames[c.n.Op]
	var dt string
	switch a.DType {
	case ir.Float32:
		dt = "f32"
	case ir.Int64:
		dt = "i64"
	case ir.Int32:
		dt = "i32"
	case ir.Bool:
		if op == "equal" || op == "and" || op == "or" || op == "xor" {
			dt = "bool"
		}
	}
	logical := op == "and" || op == "or" || op == "xor"
	if dt == "" || (op == "pow" && dt != "f32") || (logical && dt != "bool") {
		return c.unsupported(a.DType)
	}
	out := []int64(y.Shape)
	gw, err := binaryGeo(a.Shape, b.Shape, out)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.elementwise(eltwise, "b_"+op+"_"+dt, y.Shape.Elements(), c.inArg(0), c.inArg(1), c.outArg(0), words(gw))
	return nil
}

func buildNot(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Bool || y.DType != ir.Bool {
		return c.unsupported(x.DType)
	}
	n := y.Shape.Elements()
	c.elementwise(eltwise, "u_not", n, c.inArg(0), c.outArg(0), i64(n))
	return nil
}

// binaryGeo is the Geo of a broadcasting binary operator: rank 0 (a flat
// loop) when neither input broadcasts.
func binaryGeo(a, b ir.Shape, out []int64) ([]uint64, error) {
	if a.Equal(out) && b.Equal(out) {
		w := make([]uint64, 2+maxRank+4*maxRank)
		w[1] = uint64(prod(out))
		return w, nil
	}
	return geo{shape: out, st: [][]int64{broadcastStrides(a, out), broadcastStrides(b, out)}}.encode()
}

func buildWhere(c *buildContext) error {
	if err := c.need(3); err != nil {
		return err
	}
	cond, x, yv, z := c.in(0), c.in(1), c.in(2), c.out(0)
	if cond.DType != ir.Bool || x.DType != yv.DType {
		return c.errorf("types %s, %s, %s are not supported by the CUDA backend", cond.DType, x.DType, yv.DType)
	}
	size := x.DType.Size()
	if size != 1 && size != 4 && size != 8 {
		return c.unsupported(x.DType)
	}
	out := []int64(z.Shape)
	gw, err := geo{shape: out, st: [][]int64{broadcastStrides(cond.Shape, out), broadcastStrides(x.Shape, out), broadcastStrides(yv.Shape, out)}}.encode()
	if err != nil {
		return c.errorf("%v", err)
	}
	c.elementwise(eltwise, fmt.Sprintf("where_%d", size), z.Shape.Elements(), c.inArg(0), c.inArg(1), c.inArg(2), c.outArg(0), words(gw))
	return nil
}

// buildView copies the input's bytes to the output, which the plan usually
// places at the same address: then the launch is dropped.
func buildView(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	if c.n.Op == "Dropout" && c.out(1) != nil {
		return c.errorf("the mask output is not supported by the CUDA backend")
	}
	x, y := c.in(0), c.out(0)
	if x.Bytes() != y.Bytes() {
		return c.errorf("input %v and output %v differ in size", x.Shape, y.Shape)
	}
	c.copyBytes(c.inArg(0), c.outArg(0), y.Bytes())
	return nil
}

// stridedCopy adds a copy of the elements of g (strides st[0] in src,
// st[1] in dst) of the given element size.
func (c *buildContext) stridedCopy(src, dst arg, size int, g geo) error {
	if prod(g.shape) == 0 {
		return nil
	}
	switch size {
	case 1, 2, 4, 8:
	default:
		return c.errorf("elements of %d bytes are not supported by the CUDA backend", size)
	}
	gw, err := g.encode()
	if err != nil {
		return c.errorf("%v", err)
	}
	c.elementwise(layout, fmt.Sprintf("strided_%d", size), prod(g.shape), src, dst, words(gw))
	return nil
}

func buildTranspose(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	perm, err := ir.ResolvePerm(c.n, x.Shape.Rank())
	if err != nil {
		return c.errorf("%v", err)
	}
	xs := x.Shape.Strides()
	src := make([]int64, len(perm))
	for d, p := range perm {
		src[d] = xs[p]
	}
	gm := geo{shape: y.Shape, st: [][]int64{src, y.Shape.Strides()}}
	if c.fz != nil && x.DType == ir.Float32 && y.Shape.Elements() > 0 {
		// A generated kernel: constant index arithmetic.
		text, args := c.fz.gatherKernel(y.Shape, src, c.halfOut(0))
		name := c.fz.gen.add(text)
		c.elementwise(c.fz.gen.src, name, y.Shape.Elements(), append([]arg{c.outArg(0), c.inArg(0)}, args...)...)
		return nil
	}
	if c.halfOut(0) {
		// The only readers are GEMMs: write their 16-bit operand.
		if prod(gm.shape) == 0 {
			return nil
		}
		gw, err := gm.encode()
		if err != nil {
			return c.errorf("%v", err)
		}
		c.elementwise(layout, "strided_f32_h", prod(gm.shape), c.inArg(0), c.outArg(0), words(gw), i32(c.fz.mode))
		return nil
	}
	return c.stridedCopy(c.inArg(0), c.outArg(0), x.DType.Size(), gm)
}

// halfOut reports whether output i is held as 16-bit values (fusion.half).
func (c *buildContext) halfOut(i int) bool {
	return c.fz != nil && c.out(i) != nil && c.fz.half[c.n.Outputs[i]]
}

func buildSlice(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	p, err := ir.ResolveSlice(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	xs := x.Shape.Strides()
	src := make([]int64, len(xs))
	var base int64
	for d := range xs {
		src[d] = xs[d] * p.Step[d]
		base += p.Start[d] * xs[d]
	}
	size := x.DType.Size()
	return c.stridedCopy(at(c.inArg(0), base*int64(size)), c.outArg(0), size, geo{shape: y.Shape, st: [][]int64{src, y.Shape.Strides()}})
}

func buildExpand(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	return c.stridedCopy(c.inArg(0), c.outArg(0), x.DType.Size(), geo{shape: y.Shape, st: [][]int64{broadcastStrides(x.Shape, y.Shape), y.Shape.Strides()}})
}

func buildConcat(c *buildContext) error {
	y := c.out(0)
	axis, err := ir.NormAxis(c.n.Attrs.Int("axis", 0), y.Shape.Rank())
	if err != nil {
		return c.errorf("%v", err)
	}
	ys := y.Shape.Strides()
	size := y.DType.Size()
	var pos int64
	for i := range c.n.Inputs {
		x := c.in(i)
		if x == nil {
			continue
		}
		if err := c.stridedCopy(c.inArg(i), at(c.outArg(0), pos*ys[axis]*int64(size)), size, geo{shape: x.Shape, st: [][]int64{x.Shape.Strides(), ys}}); err != nil {
			return err
		}
		pos += x.Shape[axis]
	}
	return nil
}

func buildSplit(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x := c.in(0)
	axis, split, err := ir.ResolveSplit(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	xs := x.Shape.Strides()
	size := x.DType.Size()
	var pos int64
	for i := range c.n.Outputs {
		y := c.out(i)
		if y != nil {
			if err := c.stridedCopy(at(c.inArg(0), pos*xs[axis]*int64(size)), c.outArg(i), size, geo{shape: y.Shape, st: [][]int64{xs, y.Shape.Strides()}}); err != nil {
				return err
			}
		}
		pos += split[i]
	}
	return nil
}

// gatherTypes checks the types of a gather's data x and indices ind: it
// returns the indices' type as the kernels name it (i64, i32) and the
// data's element size (1, 2, 4 or 8 bytes).
func (c *buildContext) gatherTypes(x, ind *ir.Tensor) (string, int, error) {
	var is string
	switch ind.DType {
	case ir.Int64:
		is = "i64"
	case ir.Int32:
		is = "i32"
	default:
		return "", 0, c.errorf("indices of type %s are not supported by the CUDA backend", ind.DType)
	}
	size := x.DType.Size()
	switch size {
	case 1, 2, 4, 8:
	default:
		return "", 0, c.unsupported(x.DType)
	}
	return is, size, nil
}

func buildGather(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	x, ind, y := c.in(0), c.in(1), c.out(0)
	axis, err := ir.NormAxis(c.n.Attrs.Int("axis", 0), x.Shape.Rank())
	if err != nil {
		return c.errorf("%v", err)
	}
	is, size, err := c.gatherTypes(x, ind)
	if err != nil {
		return err
	}
	outer, dim, inner := prod(x.Shape[:axis]), x.Shape[axis], prod(x.Shape[axis+1:])
	nidx := ind.Shape.Elements()
	if dim == 0 && y.Shape.Elements() > 0 {
		return c.errorf("gathers from an empty axis")
	}
	c.elementwise(layout, fmt.Sprintf("gather_%d_%s", size, is), y.Shape.Elements(), c.inArg(0), c.inArg(1), c.outArg(0), i64(outer), i64(dim), i64(nidx), i64(inner))
	return nil
}

// gemmCall describes one (batched) gemm launch.
type gemmCall struct {
	a, b, c, d  arg
	m, n, k     int64
	sam, sak    int64
	sbk, sbn    int64
	sdm, sdn    int64
	alpha, beta float32
	batch       geo  // over the batch axes; strides into A, B, C, D
	bHalf       bool // b already holds 16-bit values of the precision's type (c.half)
}

func (c *buildContext) gemm(g gemmCall) error {
	if g.m == 0 || g.n == 0 {
		return nil
	}
	nb := prod(g.batch.shape)
	if nb == 0 {
		return nil
	}
	if nb > 65535 {
		return c.errorf("a batch of %d matrices is more than the CUDA kernel's 65535", nb)
	}
	for len(g.batch.st) < 4 {
		g.batch.st = append(g.batch.st, make([]int64, len(g.batch.shape)))
	}
	if c.blas && c.blasGemm(g) {
		return nil
	}
	if g.bHalf {
		return c.errorf("internal error: 16-bit GEMM operand without cuBLAS")
	}
	gw, err := g.batch.encode()
	if err != nil {
		return c.errorf("%v", err)
	}
	kernel, tile, parts := gemmTiling(g.m, g.n, g.k, nb, int64(c.sms))
	parts = splitFits(parts, 4*g.m*g.n*nb, c.scratch, c.room)
	if (g.m+tile-1)/tile > 65535 {
		return c.errorf("%d rows are more than the CUDA kernel handles", g.m)
	}
	// The fused kernels that read the output may add the parts up as
	// they load it (no launch of gemm_reduce): where the product splits,
	// or, under a bound, where it did at the bound (c.fold), so that the
	// plans of all shapes read the same scratch (one part, then, written
	// there as a part).
	fold := c.fz.addsParts(g.c, g.d, nb) && (c.fold < 0 && parts > 1 || c.fold > 0)
	w, out := null(), g.c
	if parts > 1 || fold {
		w = c.reserve(4 * parts * g.m * g.n * nb)
	}
	if fold && parts == 1 {
		out = w
	}
	grid := [3]uint32{uint32((g.n + tile - 1) / tile), uint32((g.m + tile - 1) / tile), uint32(nb * parts)}
	threads := uint32(256)
	if tile == 64 {
		threads = 128
	}
	c.launches = append(c.launches, launch{node: c.node, module: gemmModule, kernel: kernel, grid: grid, block: [3]uint32{threads, 1, 1},
		args: []arg{g.a, g.b, out, g.d, i64(g.m), i64(g.n), i64(g.k), i64(g.sam), i64(g.sak), i64(g.sbk), i64(g.sbn), i64(g.sdm), i64(g.sdn), f32(g.alpha), f32(g.beta), words(gw), i32(int32(parts)), w}})
	if fold {
		c.fz.parts[g.c.id] = splitParts{count: parts, node: c.node, off: w.off, mn: g.m * g.n}
		return nil
	}
	if parts > 1 {
		mn := g.m * g.n
		c.launches = append(c.launches, launch{node: c.node, module: gemmModule, kernel: "gemm_reduce", grid: [3]uint32{uint32(min((mn+255)/256, 1024)), uint32(nb), 1}, block: [3]uint32{256, 1, 1},
			args: []arg{w, g.c, g.d, i64(g.m), i64(g.n), i64(g.sdm), i64(g.sdn), f32(g.beta), words(gw), i32(int32(parts))}})
	}
	return nil
}

// gemmTiling chooses the tiled SGEMM for an m×n×k product over nb
// matrices on a GPU of sms multiprocessors: 128×128 tiles where the
// matrices fill them and they give every multiprocessor one at least,
// 64×64 where not, and K split in parts (2 to 16, each 128 deep or more,
// about four blocks of 64×64 a multiprocessor) where even those tiles
// leave multiprocessors idle.
func gemmTiling(m, n, k, nb, sms int64) (kernel string, tile, parts int64) {
	tiles := func(t int64) int64 { return (m + t - 1) / t * ((n + t - 1) / t) * nb }
	kernel, tile = "gemm128", 128
	if m < 128 || n < 128 || tiles(128) < sms {
		kernel, tile = "gemm64", 64
	}
	parts = 1
	if t := tiles(tile); t < sms && k >= 256 {
		parts = min((4*sms+t-1)/t, k/128, 16, 65535/nb)
	}
	return kernel, tile, max(parts, 1)
}

// splitFits is parts, a GEMM's K split, cut to the parts (of part bytes
// of scratch each, aligned after the held bytes the node has already)
// that room bytes of scratch hold, one at least, which takes none; room <
// 0 holds any.
func splitFits(parts, part, held, room int64) int64 {
	if room < 0 || parts <= 1 {
		return parts
	}
	return max(1, min(parts, (room-plan.AlignUp(held, Alignment))/part))
}

func buildMatMul(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	if a.DType != ir.Float32 || b.DType != ir.Float32 {
		return c.unsupported(a.DType)
	}
	as, bs := []int64(a.Shape), []int64(b.Shape)
	if len(as) == 0 || len(bs) == 0 {
		return c.errorf("scalar operands are not allowed")
	}
	if len(as) == 1 {
		as = []int64{1, as[0]}
	}
	if len(bs) == 1 {
		bs = []int64{bs[0], 1}
	}
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	if bs[len(bs)-2] != k {
		return c.errorf("inner dimensions %v and %v differ", a.Shape, b.Shape)
	}
	ab, bb := as[:len(as)-2], bs[:len(bs)-2]
	if len(bb) == 0 && len(ab) > 0 {
		// One B for every batch of a contiguous A: a single taller GEMM.
		m *= prod(ab)
		ab = nil
	}
	rank := max(len(ab), len(bb))
	batch := make([]int64, rank)
	for d := range batch {
		da, db := int64(1), int64(1)
		if k := d - (rank - len(ab)); k >= 0 {
			da = ab[k]
		}
		if k := d - (rank - len(bb)); k >= 0 {
			db = bb[k]
		}
		if da != db && da != 1 && db != 1 {
			return c.errorf("batch dimensions %v and %v do not broadcast", a.Shape, b.Shape)
		}
		batch[d] = max(da, db)
	}
	if prod(batch)*m*n != y.Shape.Elements() {
		return c.errorf("output %v does not match inputs %v and %v", y.Shape, a.Shape, b.Shape)
	}
	sa, sb := broadcastStrides(ab, batch), broadcastStrides(bb, batch)
	sc := ir.Shape(batch).Strides()
	for d := range batch {
		sa[d] *= m * k
		sb[d] *= k * n
		sc[d] *= m * n
	}
	return c.gemm(gemmCall{a: c.inArg(0), b: c.inArg(1), c: c.outArg(0), d: null(), m: m, n: n, k: k,
		sam: k, sak: 1, sbk: n, sbn: 1, alpha: 1, batch: geo{shape: batch, st: [][]int64{sa, sb, sc}}})
}

func buildGemm(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	a, b, y := c.in(0), c.in(1), c.out(0)
	if a.DType != ir.Float32 || b.DType != ir.Float32 || a.Shape.Rank() != 2 || b.Shape.Rank() != 2 {
		return c.errorf("operands %s%v and %s%v are not supported by the CUDA backend", a.DType, a.Shape, b.DType, b.Shape)
	}
	at := c.n.Attrs
	ta, tb := at.Int("transA", 0) != 0, at.Int("transB", 0) != 0
	g := gemmCall{a: c.inArg(0), b: c.inArg(1), c: c.outArg(0), d: null(), alpha: at.Float("alpha", 1), beta: at.Float("beta", 1)}
	g.m, g.k, g.sam, g.sak = a.Shape[0], a.Shape[1], a.Shape[1], 1
	if ta {
		g.m, g.k, g.sam, g.sak = a.Shape[1], a.Shape[0], 1, a.Shape[1]
	}
	g.n, g.sbk, g.sbn = b.Shape[1], b.Shape[1], 1
	if tb {
		g.n, g.sbk, g.sbn = b.Shape[0], 1, b.Shape[1]
	}
	kb := b.Shape[0]
	if tb {
		kb = b.Shape[1]
	}
	if kb != g.k {
		return c.errorf("inner dimensions of %v and %v differ", a.Shape, b.Shape)
	}
	if d := c.in(2); d != nil && g.beta != 0 {
		if d.DType != ir.Float32 || d.Shape.Rank() > 2 {
			return c.errorf("C %s%v is not supported by the CUDA backend", d.DType, d.Shape)
		}
		st := broadcastStrides(d.Shape, []int64{g.m, g.n})
		g.d, g.sdm, g.sdn = c.inArg(2), st[0], st[1]
	}
	if y.Shape.Elements() != g.m*g.n {
		return c.errorf("output %v is not %d×%d", y.Shape, g.m, g.n)
	}
	return c.gemm(g)
}

// convGeometry returns the geometry of the Conv-like node's convolution
// over one or two spatial axes (a one-axis convolution has H = OH = KH =
// 1): N, C, H, W, OC, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW, its groups,
// and the rank of its input.
func (c *buildContext) convGeometry() (d [15]int64, group int64, r int, err error) {
	if err := c.need(2); err != nil {
		return d, 0, 0, err
	}
	x, w, y := c.in(0), c.in(1), c.out(0)
	if x.DType != ir.Float32 || w.DType != ir.Float32 {
		return d, 0, 0, c.unsupported(x.DType)
	}
	r = x.Shape.Rank()
	if r != 3 && r != 4 {
		return d, 0, 0, c.errorf("convolutions over %d spatial axes are not supported by the CUDA backend", r-2)
	}
	win, err := ir.SpatialWindow(c.g, c.n)
	if err != nil {
		return d, 0, 0, c.errorf("%v", err)
	}
	group = c.n.Attrs.Int("group", 1)
	N, C, OC := x.Shape[0], x.Shape[1], w.Shape[0]
	H, W, OH, OW := int64(1), x.Shape[r-1], int64(1), y.Shape[r-1]
	KH, KW, SH, SW, PH, PW, DH, DW := int64(1), win.Kernel[r-3], int64(1), win.Strides[r-3], int64(0), win.Pads[r-3], int64(1), win.Dilations[r-3]
	if r == 4 {
		H, OH = x.Shape[2], y.Shape[2]
		KH, SH, PH, DH = win.Kernel[0], win.Strides[0], win.Pads[0], win.Dilations[0]
		KW, SW, PW, DW = win.Kernel[1], win.Strides[1], win.Pads[1], win.Dilations[1]
	}
	if group <= 0 || C%group != 0 || OC%group != 0 || w.Shape[1] != C/group {
		return d, 0, 0, c.errorf("group %d does not fit input %v and weights %v", group, x.Shape, w.Shape)
	}
	return [15]int64{N, C, H, W, OC, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW}, group, r, nil
}

func buildConv(c *buildContext) error {
	d, group, r, err := c.convGeometry()
	if err != nil {
		return err
	}
	w, y := c.in(1), c.out(0)
	N, C, H, W, OC, KH, KW, PH, PW, SH, SW, DH, DW, OH, OW := d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13], d[14]
	bias := c.optIn(2)
	if c.fz != nil {
		if _, ok := c.fz.bias[c.node]; ok {
			// The readers of the output add the bias (fuse.go).
			bias = null()
		}
	}
	if group == C && w.Shape[1] == 1 && group > 1 {
		p := []uint64{uint64(N), uint64(C), uint64(H), uint64(W), uint64(OC), uint64(OH), uint64(OW), uint64(KH), uint64(KW),
			uint64(SH), uint64(SW), uint64(PH), uint64(PW), uint64(DH), uint64(DW), uint64(OC / C)}
		c.elementwise(convModule, "depthwise", y.Shape.Elements(), c.inArg(0), c.inArg(1), bias, c.outArg(0), words(p))
		return nil
	}
	cig, cog := C/group, OC/group
	kk := KH * KW
	ohw := OH * OW
	src := c.inArg(0)
	xHalf := c.stored16(0) // x holds 16-bit values
	below := foldBelow
	if kk == 1 && SH == 1 && SW == 1 {
		below = foldBelowPointwise
	}
	if c.dnnConvLaunch(bias, xHalf, r, group, d, nil) {
		return nil
	}
	if c.fz != nil && (c.fz.nhwc[c.n.Inputs[0]] || c.fz.nhwc[c.n.Outputs[0]]) {
		return c.errorf("internal error: a channels-last convolution not on cuDNN")
	}
	if implicitConv && c.half != nil && c.half.mma && group == 1 && c.halfable(c.inArg(1), false) {
		p := []uint64{uint64(N), uint64(C), uint64(H), uint64(W), uint64(OC), uint64(OH), uint64(OW), uint64(KH), uint64(KW),
			uint64(SH), uint64(SW), uint64(PH), uint64(PW), uint64(DH), uint64(DW), 1}
		if iconvFits(p) {
			c.implicitConvLaunch(bias, xHalf, p)
			return nil
		}
	}
	if c.half != nil && group == 1 && N > 1 && ohw < below && N*C*kk*ohw <= math.MaxInt32 && (N*C*kk*ohw)%4 == 0 && N*OC*ohw <= math.MaxInt32 {
		return c.foldedConv(bias, xHalf, []uint64{uint64(N), uint64(C), uint64(H), uint64(W), uint64(OC), uint64(OH), uint64(OW), uint64(KH), uint64(KW),
			uint64(SH), uint64(SW), uint64(PH), uint64(PW), uint64(DH), uint64(DW), 1})
	}
	direct := kk == 1 && SH == 1 && SW == 1 && PH == 0 && PW == 0 && OH == H && OW == W
	half := false
	if !direct {
		p := []uint64{uint64(N), uint64(C), uint64(H), uint64(W), uint64(OC), uint64(OH), uint64(OW), uint64(KH), uint64(KW),
			uint64(SH), uint64(SW), uint64(PH), uint64(PW), uint64(DH), uint64(DW), 1}
		// By rows (a block row per patch row and image) where the grid
		// and 32-bit indices allow it.
		rows := C*kk <= 65535 && N <= 65535 && ohw <= math.MaxInt32 && H*W <= math.MaxInt32
		if c.half != nil {
			// The patches go straight to 16 bits: half the scratch, no
			// separate rounding pass.
			c.scratch = N * C * kk * ohw * 2
			k, in := "im2col_rows_h", c.inArg(0)
			if xHalf {
				k, in.half = "im2col_rows_hh", true
			}
			switch {
			case rows && C*kk*ohw <= math.MaxInt32 && (C*kk*ohw)%4 == 0:
				// Each image's patches as one flat array: a block row
				// per patch row would leave threads idle on short rows.
				c.byRows(convModule, strings.Replace(k, "_rows", "_flat4", 1), C*kk*ohw/4, N, 1, in, arg{kind: argScratch}, words(p), i32(halfMode(c.half.prec)))
			case rows && ohw%4 == 0:
				c.byRows(convModule, strings.Replace(k, "_rows", "_rows4", 1), ohw/4, C*kk, N, in, arg{kind: argScratch}, words(p), i32(halfMode(c.half.prec)))
			case rows:
				c.byRows(convModule, k, ohw, C*kk, N, in, arg{kind: argScratch}, words(p), i32(halfMode(c.half.prec)))
			default:
				c.elementwise(convModule, strings.Replace(k, "_rows", "", 1), N*C*kk*ohw, in, arg{kind: argScratch}, words(p), i32(halfMode(c.half.prec)))
			}
			half = true
		} else {
			c.scratch = N * C * kk * ohw * 4
			switch {
			case rows && ohw%4 == 0:
				c.byRows(convModule, "im2col_rows4", ohw/4, C*kk, N, c.inArg(0), arg{kind: argScratch}, words(p))
			case rows:
				c.byRows(convModule, "im2col_rows", ohw, C*kk, N, c.inArg(0), arg{kind: argScratch}, words(p))
			default:
				c.elementwise(convModule, "im2col", N*C*kk*ohw, c.inArg(0), arg{kind: argScratch}, words(p))
			}
		}
		src = arg{kind: argScratch}
	}
	if half && group > 1 && N > 1 {
		// cuBLAS takes one batch axis: a GEMM per image, batched over
		// the groups.
		for b := range N {
			g := gemmCall{a: c.inArg(1), b: at(src, b*C*kk*ohw*2), bHalf: true, c: at(c.outArg(0), b*OC*ohw*4), d: bias, m: cog, n: ohw, k: cig * kk,
				sam: cig * kk, sak: 1, sbk: ohw, sbn: 1, sdm: 1, sdn: 0, alpha: 1, beta: 1,
				batch: geo{shape: []int64{group}, st: [][]int64{{cog * cig * kk}, {cig * kk * ohw}, {cog * ohw}, {cog}}}}
			if err := c.gemm(g); err != nil {
				return err
			}
		}
		return nil
	}
	g := gemmCall{a: c.inArg(1), b: src, bHalf: half, c: c.outArg(0), d: bias, m: cog, n: ohw, k: cig * kk,
		sam: cig * kk, sak: 1, sbk: ohw, sbn: 1, sdm: 1, sdn: 0, alpha: 1, beta: 1,
		batch: geo{shape: []int64{N, group}, st: [][]int64{{0, cog * cig * kk}, {C * kk * ohw, cig * kk * ohw}, {OC * ohw, cog * ohw}, {0, cog}}}}
	return c.gemm(g)
}

// buildConvTranspose runs a ConvTranspose (one to three spatial axes) as
// a GEMM per image and group, col = Wᵀ·X: the column matrix, every output
// channel's kernel taps by the input's positions, in planned scratch
// (cuBLAS where it is installed, in the precision of the other GEMMs),
// then col2im sums for each output element the entries that land on it
// and adds the bias.
func buildConvTranspose(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	x, w, b, y := c.in(0), c.in(1), c.in(2), c.out(0)
	for _, t := range []*ir.Tensor{x, w, b, y} {
		if t != nil && t.DType != ir.Float32 {
			return c.unsupported(t.DType)
		}
	}
	r := x.Shape.Rank() - 2
	if r < 1 || r > 3 {
		return c.errorf("a ConvTranspose over %d spatial axes is not supported by the CUDA backend", r)
	}
	win, err := ir.TransposeWindow(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	group := c.n.Attrs.Int("group", 1)
	N, C := x.Shape[0], x.Shape[1]
	if group <= 0 || C%group != 0 || w.Shape[0] != C {
		return c.errorf("weights %v do not fit %d input channels in %d groups", w.Shape, C, group)
	}
	cig, cog := C/group, w.Shape[1]
	OC := cog * group
	if y.Shape[0] != N || y.Shape[1] != OC {
		return c.errorf("output %v, want [%d,%d,...]", y.Shape, N, OC)
	}
	if b != nil && b.Shape.Elements() != OC {
		return c.errorf("bias %v must have %d elements", b.Shape, OC)
	}
	// Three spatial axes, leading ones of size 1.
	var in, out, kern, stride, dil, pad [3]int64
	for i := range 3 {
		in[i], out[i], kern[i], stride[i], dil[i] = 1, 1, 1, 1, 1
	}
	for i := range r {
		j := 3 - r + i
		in[j], out[j], kern[j] = x.Shape[2+i], y.Shape[2+i], win.Kernel[i]
		stride[j], dil[j], pad[j] = win.Strides[i], win.Dilations[i], win.Pads[i]
	}
	isp, kk := in[0]*in[1]*in[2], kern[0]*kern[1]*kern[2]
	if y.Shape.Elements() == 0 {
		return nil
	}
	colBytes := plan.AlignUp(N*OC*kk*isp*4, Alignment)
	c.scratch = colBytes
	col := arg{kind: argScratch}
	m := cog * kk
	call := gemmCall{a: c.inArg(1), b: c.inArg(0), c: col, d: null(), m: m, n: isp, k: cig,
		sam: 1, sak: m, sbk: isp, sbn: 1, alpha: 1,
		batch: geo{shape: []int64{N, group}, st: [][]int64{{0, cig * m}, {C * isp, cig * isp}, {OC * kk * isp, m * isp}, {0, 0}}}}
	if group > 1 && N > 1 {
		// cuBLAS takes one batch axis: a GEMM per image, batched over
		// the groups.
		for i := range N {
			g := call
			g.b, g.c = at(c.inArg(0), i*C*isp*4), at(col, i*OC*kk*isp*4)
			g.batch = geo{shape: []int64{group}, st: [][]int64{{cig * m}, {cig * isp}, {m * isp}, {0}}}
			if err := c.gemm(g); err != nil {
				return err
			}
		}
	} else if err := c.gemm(call); err != nil {
		return err
	}
	p := []uint64{uint64(N), uint64(OC)}
	for _, v := range [][3]int64{in, out, kern, stride, pad, dil} {
		p = append(p, uint64(v[0]), uint64(v[1]), uint64(v[2]))
	}
	c.elementwise(convModule, "col2im", y.Shape.Elements(), col, c.optIn(2), c.outArg(0), words(p))
	return nil
}

// foldBelow is the output size per channel (OH·OW) under which a batched
// 16-bit convolution runs as one GEMM over the whole batch (foldedConv):
// the per-image products of a 7×7 or 14×14 output are too narrow to keep
// the tensor cores busy.
const foldBelow int64 = 256

// foldBelowPointwise is foldBelow for a 1×1 convolution of unit stride,
// which otherwise reads its input as it is: folding adds a pass over the
// input, which pays only on the narrowest outputs.
const foldBelowPointwise int64 = 64

// foldedConv runs a convolution of one group with 16-bit operands as one
// GEMM whose columns are every image's output positions: im2col_fold4
// writes the patches of all images as one C·KH·KW × N·OH·OW matrix, the
// GEMM (with the bias, if any) writes OC × N·OH·OW float32 products after
// it in scratch, and unfold lays them out as the N×OC×OH×OW output (in
// 16 bits where only generated kernels read it). p is the Conv
// parameters of im2col.
func (c *buildContext) foldedConv(bias arg, xHalf bool, p []uint64) error {
	N, C, OC, OH, OW, KH, KW := int64(p[0]), int64(p[1]), int64(p[4]), int64(p[5]), int64(p[6]), int64(p[7]), int64(p[8])
	ohw, K := OH*OW, C*KH*KW
	cols := N * ohw
	colBytes := (K*cols*2 + 255) / 256 * 256
	c.scratch = colBytes + OC*cols*4
	mode := i32(halfMode(c.half.prec))
	k, in := "im2col_fold4_h", c.inArg(0)
	if xHalf {
		k, in.half = "im2col_fold4_hh", true
	}
	c.elementwise(convModule, k, K*cols/4, in, arg{kind: argScratch}, words(p), mode)
	prod := at(arg{kind: argScratch}, colBytes)
	g := gemmCall{a: c.inArg(1), b: arg{kind: argScratch}, bHalf: true, c: prod, d: bias, m: OC, n: cols, k: K,
		sam: K, sak: 1, sbk: cols, sbn: 1, sdm: 1, sdn: 0, alpha: 1, beta: 1,
		batch: geo{shape: []int64{1}, st: [][]int64{{0}, {0}, {0}, {0}}}}
	if err := c.gemm(g); err != nil {
		return err
	}
	y := c.outArg(0)
	if c.fz != nil && y.kind == argTensor && c.fz.out16[y.id] {
		// Only generated kernels read the output: 16 bits, as cuBLAS
		// would have written it.
		y = arg{kind: argTensor, id: y.id, off: y.off / 2, half: true}
		c.elementwise(convModule, "unfold_h", OC*cols, prod, y, i32(int32(OC)), i32(int32(N)), i32(int32(ohw)), mode)
		return nil
	}
	c.elementwise(convModule, "unfold", OC*cols, prod, y, i32(int32(OC)), i32(int32(N)), i32(int32(ohw)))
	return nil
}

func buildBatchNorm(c *buildContext) error {
	if err := c.need(5); err != nil {
		return err
	}
	if c.n.Attrs.Int("training_mode", 0) != 0 || c.out(1) != nil || c.out(2) != nil {
		return c.errorf("training mode is not supported by the CUDA backend")
	}
	x := c.in(0)
	if x.DType != ir.Float32 || x.Shape.Rank() < 2 {
		return c.unsupported(x.DType)
	}
	C := x.Shape[1]
	var p [4][]float64
	for i := range p {
		t := c.in(i + 1)
		if !t.IsConst() {
			return fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("input", t.Name))
		}
		if t.Shape.Elements() != C {
			return c.errorf("input %d (%q) must be a constant of %d values on the CUDA backend", i+1, t.Name, C)
		}
		v, err := t.Float64s()
		if err != nil {
			return c.errorf("%v", err)
		}
		p[i] = v
	}
	eps := float64(c.n.Attrs.Float("epsilon", 1e-5))
	a, b := make([]byte, 4*C), make([]byte, 4*C)
	for i := range C {
		s := p[0][i] / math.Sqrt(p[3][i]+eps)
		putF32(a[4*i:], float32(s))
		putF32(b[4*i:], float32(p[1][i]-p[2][i]*s))
	}
	n := x.Shape.Elements()
	c.elementwise(norm, "channel_affine", n, c.inArg(0), c.extra(a), c.extra(b), c.outArg(0), i64(n), i64(C), i64(prod(x.Shape[2:])))
	return nil
}

func putF32(b []byte, v float32) {
	u := math.Float32bits(v)
	b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
}

func buildLayerNorm(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	x, s := c.in(0), c.in(1)
	if x.DType != ir.Float32 || s.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	axis, err := ir.NormAxis(c.n.Attrs.Int("axis", -1), x.Shape.Rank())
	if err != nil {
		return c.errorf("%v", err)
	}
	rows, dim := prod(x.Shape[:axis]), prod(x.Shape[axis:])
	if s.Shape.Elements() != dim {
		return c.errorf("scale %v must have %d elements on the CUDA backend", s.Shape, dim)
	}
	if b := c.in(2); b != nil && (b.DType != ir.Float32 || b.Shape.Elements() != dim) {
		return c.errorf("bias %v must have %d elements on the CUDA backend", b.Shape, dim)
	}
	for i := 1; i <= 2; i++ {
		if t := c.out(i); t != nil && (t.DType != ir.Float32 || t.Shape.Elements() != rows) {
			return c.errorf("output %d %s%v is not supported by the CUDA backend", i, t.DType, t.Shape)
		}
	}
	eps := c.n.Attrs.Float("epsilon", 1e-5)
	if k := warp4(dim); k > 0 && rows > 0 {
		// A warp per row, eight rows a block, 16-byte accesses.
		b := min((rows+7)/8, 1<<20)
		l := launch{node: c.node, module: norm, kernel: fmt.Sprintf("layernorm_warp4_%d", k), grid: [3]uint32{uint32(b), 1, 1}, block: [3]uint32{threads, 1, 1},
			args: []arg{c.inArg(0), c.inArg(1), c.optIn(2), c.outArg(0), c.optOut(1), c.optOut(2), i64(rows), i32(int32(dim)), f32(eps)}}
		if c.halfOut(0) { // the only readers are GEMMs: write their 16-bit operand
			l.kernel = fmt.Sprintf("layernorm_warp4_h_%d", k)
			l.args = append(l.args, i32(c.fz.mode))
		}
		c.launches = append(c.launches, l)
		return nil
	}
	c.rowwise(norm, "layernorm", rows, c.inArg(0), c.inArg(1), c.optIn(2), c.outArg(0), c.optOut(1), c.optOut(2), i64(rows), i64(dim), f32(eps))
	return nil
}

func buildSoftmax(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x := c.in(0)
	if x.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	outer, dim, inner, err := ir.SoftmaxRows(c.n, c.opset, x.Shape)
	if err != nil {
		return c.errorf("%v", err)
	}
	var log int32
	if c.n.Op == "LogSoftmax" {
		log = 1
	}
	if rows := outer * inner; inner == 1 && dim <= 1024 && rows > 0 {
		// A warp per row, eight rows a block.
		b := min((rows+7)/8, 1<<20)
		l := launch{node: c.node, module: norm, kernel: "softmax_warp", grid: [3]uint32{uint32(b), 1, 1}, block: [3]uint32{threads, 1, 1},
			args: []arg{c.inArg(0), c.outArg(0), i64(rows), i32(int32(dim)), i32(log)}}
		k := warp4(dim)
		if k > 0 {
			l.kernel = fmt.Sprintf("softmax_warp4_%d", k)
		}
		if c.halfOut(0) { // the only readers are GEMMs: write their 16-bit operand
			l.kernel = "softmax_warp_h"
			if k > 0 {
				l.kernel = fmt.Sprintf("softmax_warp4_h_%d", k)
			}
			l.args = append(l.args, i32(c.fz.mode))
		}
		c.launches = append(c.launches, l)
		return nil
	}
	c.rowwise(norm, "softmax", outer*inner, c.inArg(0), c.outArg(0), i64(outer*inner), i64(dim), i64(inner), i32(log))
	return nil
}

// warp4 is the K of the softmax_warp4 and layernorm_warp4 kernels for
// rows of dim elements (float4 a lane, K of them), or 0 where they do not
// apply (dim not a multiple of 4, or more than 1024).
func warp4(dim int64) int {
	if dim <= 0 || dim%4 != 0 || dim > 1024 {
		return 0
	}
	k := 1
	for int64(128*k) < dim {
		k *= 2
	}
	return k
}

func buildReduce(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 || y.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	axes := c.n.Attrs.Ints("axes", nil)
	if c.in(1) != nil {
		t := c.in(1)
		if !t.IsConst() {
			return fmt.Errorf("node %q (%s): %w", c.n.Name, c.n.Op, ir.NeedValue("axes", t.Name))
		}
		v, err := t.Int64s()
		if err != nil {
			return c.errorf("%v", err)
		}
		axes = v
	}
	r := x.Shape.Rank()
	reduced := make([]bool, r)
	if len(axes) == 0 {
		if c.n.Attrs.Int("noop_with_empty_axes", 0) != 0 {
			c.copyBytes(c.inArg(0), c.outArg(0), y.Bytes())
			return nil
		}
		for i := range reduced {
			reduced[i] = true
		}
	}
	for _, a := range axes {
		i, err := ir.NormAxis(a, r)
		if err != nil {
			return c.errorf("axes: %v", err)
		}
		reduced[i] = true
	}
	// The reduced axes (size-1 axes aside) must be one run [lo, hi).
	lo, hi := -1, -1
	for i, red := range reduced {
		if !red || x.Shape[i] == 1 {
			continue
		}
		if lo < 0 {
			lo = i
		} else if hi != i {
			for j := hi; j < i; j++ {
				if x.Shape[j] != 1 {
					return c.errorf("reducing axes %v that are not adjacent is not supported by the CUDA backend", axes)
				}
			}
		}
		hi = i + 1
	}
	if lo < 0 {
		c.copyBytes(c.inArg(0), c.outArg(0), y.Bytes())
		return nil
	}
	outer, dim, inner := prod(x.Shape[:lo]), prod(x.Shape[lo:hi]), prod(x.Shape[hi:])
	scale := float32(1)
	if c.n.Op == "ReduceMean" {
		scale = float32(1 / float64(dim))
	}
	c.rowwise(norm, "reduce_sum", outer*inner, c.inArg(0), c.outArg(0), i64(outer*inner), i64(dim), i64(inner), f32(scale))
	return nil
}

func buildGlobalAveragePool(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x := c.in(0)
	if x.DType != ir.Float32 || x.Shape.Rank() < 2 {
		return c.unsupported(x.DType)
	}
	rows, dim := prod(x.Shape[:2]), prod(x.Shape[2:])
	scale := f32(float32(1 / float64(max(dim, 1))))
	if c.fz != nil && c.fz.nhwc[c.n.Inputs[0]] {
		k, in := "mean_hw_nhwc", c.inArg(0)
		if c.stored16(0) {
			k, in.half = "mean_hw_nhwc_h", true
		}
		c.elementwise(nhwcModule, k, rows, in, c.outArg(0), i64(rows), i64(dim), i64(x.Shape[1]), scale, i32(c.fz.mode))
		return nil
	}
	in := c.floatOperand(0)
	if dim <= 64 {
		c.elementwise(norm, "reduce_rows_small", rows, in, c.outArg(0), i64(rows), i32(int32(dim)), scale)
		return nil
	}
	c.rowwise(norm, "reduce_sum", rows, in, c.outArg(0), i64(rows), i64(dim), i64(1), scale)
	return nil
}

func buildPool(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	x, y := c.in(0), c.out(0)
	if x.DType != ir.Float32 {
		return c.unsupported(x.DType)
	}
	if c.out(1) != nil {
		return c.errorf("the indices output is not supported by the CUDA backend")
	}
	r := x.Shape.Rank()
	if r != 3 && r != 4 {
		return c.errorf("pooling over %d spatial axes is not supported by the CUDA backend", r-2)
	}
	win, err := ir.SpatialWindow(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	s := len(win.Kernel)
	p := make([]uint64, 17)
	set := func(vals ...int64) {
		for i, v := range vals {
			p[i] = uint64(v)
		}
	}
	isMax, incl := int64(0), c.n.Attrs.Int("count_include_pad", 0)
	if c.n.Op == "MaxPool" {
		isMax = 1
	}
	if r == 4 {
		set(x.Shape[0]*x.Shape[1], x.Shape[2], x.Shape[3], y.Shape[2], y.Shape[3], win.Kernel[0], win.Kernel[1], win.Strides[0], win.Strides[1],
			win.Pads[0], win.Pads[1], win.Pads[s], win.Pads[s+1], win.Dilations[0], win.Dilations[1], isMax, incl)
	} else {
		set(x.Shape[0]*x.Shape[1], 1, x.Shape[2], 1, y.Shape[2], 1, win.Kernel[0], 1, win.Strides[0],
			0, win.Pads[0], 0, win.Pads[s], 1, win.Dilations[0], isMax, incl)
	}
	if c.fz != nil && (c.fz.nhwc[c.n.Inputs[0]] || c.fz.nhwc[c.n.Outputs[0]]) {
		if r != 4 || !c.fz.nhwc[c.n.Inputs[0]] || !c.fz.nhwc[c.n.Outputs[0]] {
			return c.errorf("internal error: a pooling between layouts")
		}
		k, in := "pool2d_nhwc", c.inArg(0)
		if x.Shape.Elements() <= math.MaxInt32 && y.Shape.Elements() <= math.MaxInt32 {
			k = "pool2d_nhwc32"
		}
		if c.stored16(0) {
			k, in.half = k+"_h", true
		}
		c.elementwise(nhwcModule, k, y.Shape.Elements(), in, c.outArg(0), words(p), i64(x.Shape[1]), i32(c.fz.mode))
		return nil
	}
	k := "pool2d"
	if x.Shape.Elements() <= math.MaxInt32 && y.Shape.Elements() <= math.MaxInt32 {
		k = "pool2d32"
	}
	c.elementwise(pool, k, y.Shape.Elements(), c.floatOperand(0), c.outArg(0), words(p))
	return nil
}

// stored16 reports whether the node's input i is held in 16 bits
// (fusion.half): its producer wrote it so.
func (c *buildContext) stored16(i int) bool {
	return c.half != nil && c.half.stored[c.n.Input(i)]
}

// floatOperand is the node's input i as float32: itself, or where it is
// held in 16 bits, its values widened into the node's scratch.
func (c *buildContext) floatOperand(i int) arg {
	if !c.stored16(i) {
		return c.inArg(i)
	}
	n := c.in(i).Shape.Elements()
	wide := c.reserve(4 * n)
	in := c.inArg(i)
	in.half = true
	c.elementwise(eltwise, "widen_h_f32", n, in, wide, i64(n), i32(halfMode(c.half.prec)))
	return wide
}

// reserve adds bytes to the node's scratch, Alignment-aligned after what
// it holds already, and returns them as an argument.
func (c *buildContext) reserve(bytes int64) arg {
	off := plan.AlignUp(c.scratch, Alignment)
	c.scratch = off + bytes
	return arg{kind: argScratch, off: off}
}

// buildIf refuses an If whose condition is known only at run time (one
// whose condition is a constant is gone before compiling: passes.Fold
// inlines its branch) with the error of a shape that waits for a value,
// naming the condition. A session of a model with open shapes then
// learns the condition first, from the inputs it follows from or in a
// stage that computes it, and plans the branch taken alone, which the
// GPU runs.
func buildIf(c *buildContext) error {
	if err := c.need(1); err != nil {
		return err
	}
	return fmt.Errorf("node %q (If): the CUDA backend runs the branch taken, planned alone: %w",
		c.n.Name, &ir.ValueError{Tensor: c.in(0).Name, Why: "the condition of an If"})
}

// Check reports whether every node of g has CUDA kernels, without touching
// a device: the first node that has none is the error. LSTM, GRU and RNN
// nodes count as the nodes Compile writes them out as
// (passes.LowerRecurrent).
func Check(g *ir.Graph) error {
	g = passes.LowerRecurrent(g)
	var extras [][]byte
	for i := range g.Nodes {
		if _, err := buildNode(g, i, 1, false, &extras); err != nil {
			return err
		}
	}
	return nil
}
