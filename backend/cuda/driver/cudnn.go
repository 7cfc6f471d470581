package driver

import (
	"fmt"
	"sync"
	"unsafe"
)

// DNN is a cuDNN handle (cudnnHandle_t). berth asks cuDNN for one thing:
// convolutions of 16-bit operands, which it runs on the tensor cores
// without a patch matrix in memory.
type DNN uintptr

// DNNStatus is a cudnnStatus_t; every non-zero value is an error.
type DNNStatus int32

func (s DNNStatus) Error() string {
	if fn := dnnLib.errorString; fn != 0 {
		if p := cCall(fn, uintptr(s)); p != 0 {
			return fmt.Sprintf("%s (%d)", goString(p), int32(s))
		}
	}
	return fmt.Sprintf("cuDNN status %d", int32(s))
}

// cuDNN's enumerations (cudnn_graph.h, cudnn_cnn.h).
const (
	dnnNCHW             = 0 // CUDNN_TENSOR_NCHW
	dnnNHWC             = 1 // CUDNN_TENSOR_NHWC
	dnnCrossCorrelation = 1 // CUDNN_CROSS_CORRELATION: ONNX's Conv
	dnnFloat            = 0 // CUDNN_DATA_FLOAT: the sums
	dnnHalf             = 2 // CUDNN_DATA_HALF
	dnnBFloat16         = 9 // CUDNN_DATA_BFLOAT16
	dnnTensorOpMath     = 1 // CUDNN_TENSOR_OP_MATH
	dnnAlgos            = 8 // CUDNN_CONVOLUTION_FWD_ALGO_COUNT: the forward algorithms there are
	dnnReLU             = 1 // CUDNN_ACTIVATION_RELU
	dnnIdentity         = 5 // CUDNN_ACTIVATION_IDENTITY
	dnnPropagateNaN     = 1 // CUDNN_PROPAGATE_NAN
	dnnPrecompGEMM      = 1 // CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
	dnnPerfBytes        = 48
)

var dnnLib struct {
	once sync.Once
	err  error
	name string
	create, destroy, setStream, errorString,
	tensorCreate, tensorSet, tensorDestroy, filterCreate, filterSet, filterDestroy,
	convCreate, convSet, convMath, convGroups, convDestroy, convOutDim,
	algorithms, workspace, forward,
	actCreate, actSet, actDestroy, biasActForward uintptr
}

// dnnNames are the names cuDNN 9 is installed under.
var dnnNames = []string{"libcudnn.so.9", "libcudnn.so"}

// LoadDNN opens cuDNN. Where it is absent the error wraps
// ErrUnavailable, and convolutions run on berth's own kernels.
func LoadDNN() error {
	dnnLib.once.Do(func() {
		if err := Load(); err != nil {
			dnnLib.err = err
			return
		}
		l := &dnnLib
		l.name, l.err = openFirst("cuDNN", dnnNames, []symbolRef{
			{&l.create, "cudnnCreate"}, {&l.destroy, "cudnnDestroy"}, {&l.setStream, "cudnnSetStream"},
			{&l.errorString, "cudnnGetErrorString"},
			{&l.tensorCreate, "cudnnCreateTensorDescriptor"}, {&l.tensorSet, "cudnnSetTensor4dDescriptor"},
			{&l.tensorDestroy, "cudnnDestroyTensorDescriptor"},
			{&l.filterCreate, "cudnnCreateFilterDescriptor"}, {&l.filterSet, "cudnnSetFilter4dDescriptor"},
			{&l.filterDestroy, "cudnnDestroyFilterDescriptor"},
			{&l.convCreate, "cudnnCreateConvolutionDescriptor"}, {&l.convSet, "cudnnSetConvolution2dDescriptor"},
			{&l.convMath, "cudnnSetConvolutionMathType"}, {&l.convGroups, "cudnnSetConvolutionGroupCount"},
			{&l.convDestroy, "cudnnDestroyConvolutionDescriptor"}, {&l.convOutDim, "cudnnGetConvolution2dForwardOutputDim"},
			{&l.algorithms, "cudnnGetConvolutionForwardAlgorithm_v7"},
			{&l.workspace, "cudnnGetConvolutionForwardWorkspaceSize"}, {&l.forward, "cudnnConvolutionForward"},
			{&l.actCreate, "cudnnCreateActivationDescriptor"}, {&l.actSet, "cudnnSetActivationDescriptor"},
			{&l.actDestroy, "cudnnDestroyActivationDescriptor"}, {&l.biasActForward, "cudnnConvolutionBiasActivationForward"},
		})
	})
	return dnnLib.err
}

// DNNLibrary names the cuDNN library LoadDNN opened.
func DNNLibrary() string { return dnnLib.name }

func dnnCall(fn uintptr, args ...uintptr) error {
	if r := int32(cCall(fn, args...)); r != 0 {
		return DNNStatus(r)
	}
	return nil
}

// NewDNN creates a cuDNN handle in the current context, queueing its
// work on s.
func NewDNN(s Stream) (DNN, error) {
	if err := LoadDNN(); err != nil {
		return 0, err
	}
	var h DNN
	if err := dnnCall(dnnLib.create, uintptr(unsafe.Pointer(&h))); err != nil {
		return 0, fmt.Errorf("cudnnCreate: %w", err)
	}
	if err := dnnCall(dnnLib.setStream, uintptr(h), uintptr(s)); err != nil {
		h.Destroy()
		return 0, fmt.Errorf("cudnnSetStream: %w", err)
	}
	return h, nil
}

// Destroy frees the handle.
func (h DNN) Destroy() error {
	if h == 0 {
		return nil
	}
	return dnnCall(dnnLib.destroy, uintptr(h))
}

// DNNConv is one convolution y = x ⋆ w (cross-correlation, as ONNX's
// Conv) of x N×C×H×W, w K×(C/Groups)×R×S and y N×K×OH×OW, all of the
// 16-bit type T (R16BF or R16F), float32 sums. The three are laid out
// NCHW (w KCRS), or where NHWC says so channels-last: x N×H×W×C, w
// K×R×S×(C/Groups), y N×OH×OW×K, the layout cuDNN's tensor-core
// kernels work in.
type DNNConv struct {
	N, C, H, W, K, R, S                      int32
	PadH, PadW, StrideH, StrideW, DilH, DilW int32
	Groups, OH, OW                           int32
	T                                        DataType
	NHWC                                     bool
	X, Wt, Y                                 Ptr
	// Fused adds the bias (K values of type T: cuDNN refuses float32
	// ones here), then Z (a tensor of y's shape and layout, where not
	// 0), then takes the ReLU where ReLU says so, in the convolution's
	// epilogue: y = act(x ⋆ w + z + bias), one
	// cudnnConvolutionBiasActivationForward.
	Fused, ReLU bool
	Bias, Z     Ptr
}

// DNNPlan is a DNNConv made ready to run: its descriptors, the algorithm
// cuDNN's heuristics rank first among those whose workspace fits, and the
// argument block of cudnnConvolutionForward. It is made once (with the
// session) and runs any number of times without allocating; Close frees
// the descriptors.
type DNNPlan struct {
	x, y, w, conv uintptr
	bias, act     uintptr // the fused epilogue's descriptors
	alpha, beta   float32
	fused         bool
	args          Args
	// Algorithm is the forward algorithm chosen (cudnnConvolutionFwdAlgo_t).
	Algorithm int32
}

// Plan prepares c for handle h with at most workspace bytes of workspace
// at ws.
func (h DNN) Plan(c *DNNConv, ws Ptr, workspace int64) (*DNNPlan, error) {
	p := &DNNPlan{alpha: 1, args: NewArgs()}
	fail := func(what string, err error) (*DNNPlan, error) {
		p.Close()
		return nil, fmt.Errorf("cuDNN %s: %w", what, err)
	}
	var t uintptr
	switch c.T {
	case R16BF:
		t = dnnBFloat16
	case R16F:
		t = dnnHalf
	default:
		return nil, fmt.Errorf("cuDNN: operands of type %d, want a 16-bit type", c.T)
	}
	u := func(v int32) uintptr { return uintptr(uint32(v)) }
	format := uintptr(dnnNCHW)
	if c.NHWC {
		format = dnnNHWC
	}
	for _, d := range []*uintptr{&p.x, &p.y} {
		if err := dnnCall(dnnLib.tensorCreate, uintptr(unsafe.Pointer(d))); err != nil {
			return fail("tensor descriptor", err)
		}
	}
	if err := dnnCall(dnnLib.tensorSet, p.x, format, t, u(c.N), u(c.C), u(c.H), u(c.W)); err != nil {
		return fail(fmt.Sprintf("input %d×%d×%d×%d", c.N, c.C, c.H, c.W), err)
	}
	if err := dnnCall(dnnLib.tensorSet, p.y, format, t, u(c.N), u(c.K), u(c.OH), u(c.OW)); err != nil {
		return fail(fmt.Sprintf("output %d×%d×%d×%d", c.N, c.K, c.OH, c.OW), err)
	}
	if err := dnnCall(dnnLib.filterCreate, uintptr(unsafe.Pointer(&p.w))); err != nil {
		return fail("filter descriptor", err)
	}
	if c.Groups <= 0 || c.C%c.Groups != 0 {
		return fail("groups", fmt.Errorf("%d groups of %d channels", c.Groups, c.C))
	}
	if err := dnnCall(dnnLib.filterSet, p.w, t, format, u(c.K), u(c.C/c.Groups), u(c.R), u(c.S)); err != nil {
		return fail("filter", err)
	}
	if err := dnnCall(dnnLib.convCreate, uintptr(unsafe.Pointer(&p.conv))); err != nil {
		return fail("convolution descriptor", err)
	}
	if err := dnnCall(dnnLib.convSet, p.conv, u(c.PadH), u(c.PadW), u(c.StrideH), u(c.StrideW), u(c.DilH), u(c.DilW),
		dnnCrossCorrelation, dnnFloat); err != nil {
		return fail("convolution", err)
	}
	if err := dnnCall(dnnLib.convMath, p.conv, dnnTensorOpMath); err != nil {
		return fail("math type", err)
	}
	if err := dnnCall(dnnLib.convGroups, p.conv, u(c.Groups)); err != nil {
		return fail("group count", err)
	}
	var n, k, oh, ow int32
	if err := dnnCall(dnnLib.convOutDim, p.conv, p.x, p.w, uintptr(unsafe.Pointer(&n)), uintptr(unsafe.Pointer(&k)),
		uintptr(unsafe.Pointer(&oh)), uintptr(unsafe.Pointer(&ow))); err != nil {
		return fail("output size", err)
	}
	if n != c.N || k != c.K || oh != c.OH || ow != c.OW {
		return fail("output size", fmt.Errorf("%d×%d×%d×%d, want %d×%d×%d×%d", n, k, oh, ow, c.N, c.K, c.OH, c.OW))
	}
	if c.Fused {
		if err := p.epilogue(c, t); err != nil {
			return fail("epilogue", err)
		}
	}
	var perf [dnnAlgos * dnnPerfBytes]byte
	var found int32
	if err := dnnCall(dnnLib.algorithms, uintptr(h), p.x, p.w, p.conv, p.y, dnnAlgos,
		uintptr(unsafe.Pointer(&found)), uintptr(unsafe.Pointer(&perf[0]))); err != nil {
		return fail("algorithm heuristics", err)
	}
	// The heuristics' memory figure is not always the workspace the
	// algorithm asks for: each candidate's is asked for in turn.
	p.Algorithm = -1
	for i := range min(int(found), dnnAlgos) {
		r := perf[i*dnnPerfBytes:]
		algo, st := *(*int32)(unsafe.Pointer(&r[0])), *(*int32)(unsafe.Pointer(&r[4]))
		if st != 0 || p.fused && !c.ReLU && algo != dnnPrecompGEMM { // the identity takes no other
			continue
		}
		var size uint64
		if err := dnnCall(dnnLib.workspace, uintptr(h), p.x, p.w, p.conv, p.y, uintptr(algo), uintptr(unsafe.Pointer(&size))); err != nil {
			continue
		}
		if size <= uint64(workspace) {
			p.Algorithm = algo
			break
		}
	}
	if p.Algorithm < 0 {
		return fail("algorithm", fmt.Errorf("none of %d fits %d bytes of workspace", found, workspace))
	}
	a := p.args
	a[0], a[1], a[2], a[3] = uintptr(h), uintptr(unsafe.Pointer(&p.alpha)), p.x, uintptr(c.X)
	a[4], a[5], a[6], a[7] = p.w, uintptr(c.Wt), p.conv, uintptr(p.Algorithm)
	a[8], a[9], a[10] = uintptr(ws), uintptr(workspace), uintptr(unsafe.Pointer(&p.beta))
	a[11], a[12] = p.y, uintptr(c.Y)
	if p.fused {
		// alpha2 (beta), z's descriptor (y's), z, the bias's
		// descriptor and the bias, the activation, y's descriptor and y.
		z := c.Z
		if z == 0 {
			z = c.Y // read with alpha2 = 0
		}
		a[11], a[12], a[13], a[14] = p.y, uintptr(z), p.bias, uintptr(c.Bias)
		a[15], a[16], a[17] = p.act, p.y, uintptr(c.Y)
	}
	return p, nil
}

// epilogue makes the descriptors of the fused bias, addend and activation
// (t is the operands' cuDNN type).
func (p *DNNPlan) epilogue(c *DNNConv, t uintptr) error {
	if c.Bias == 0 {
		return fmt.Errorf("a fused epilogue without a bias")
	}
	p.fused = true
	if c.Z != 0 {
		p.beta = 1
	}
	if err := dnnCall(dnnLib.tensorCreate, uintptr(unsafe.Pointer(&p.bias))); err != nil {
		return err
	}
	if err := dnnCall(dnnLib.tensorSet, p.bias, dnnNCHW, t, 1, uintptr(uint32(c.K)), 1, 1); err != nil {
		return fmt.Errorf("bias: %w", err)
	}
	if err := dnnCall(dnnLib.actCreate, uintptr(unsafe.Pointer(&p.act))); err != nil {
		return err
	}
	mode := uintptr(dnnIdentity)
	if c.ReLU {
		mode = dnnReLU
	}
	// coef is the ReLU's upper bound where not 0: none.
	if r := int32(cCallDouble(dnnLib.actSet, p.act, mode, dnnPropagateNaN, 0)); r != 0 {
		return fmt.Errorf("activation: %w", DNNStatus(r))
	}
	return nil
}

// Run issues the convolution on the handle's stream (or captures it into
// a graph) without allocating.
func (p *DNNPlan) Run() error {
	if p.fused {
		if r := callArgs(dnnLib.biasActForward, p.args[:18]); r != 0 {
			return fmt.Errorf("cudnnConvolutionBiasActivationForward: %w", DNNStatus(r))
		}
		return nil
	}
	if r := callArgs(dnnLib.forward, p.args[:13]); r != 0 {
		return fmt.Errorf("cudnnConvolutionForward: %w", DNNStatus(r))
	}
	return nil
}

// Close frees the plan's descriptors.
func (p *DNNPlan) Close() {
	for _, d := range []struct {
		fn uintptr
		h  *uintptr
	}{{dnnLib.tensorDestroy, &p.x}, {dnnLib.tensorDestroy, &p.y}, {dnnLib.filterDestroy, &p.w}, {dnnLib.convDestroy, &p.conv},
		{dnnLib.tensorDestroy, &p.bias}, {dnnLib.actDestroy, &p.act}} {
		if *d.h != 0 {
			dnnCall(d.fn, *d.h)
			*d.h = 0
		}
	}
}

// ProbeDNN plans one small convolution without running it, in the
// current context: cuDNN opens its convolution library only when first
// asked for a convolution, which LoadDNN does not do, so a cuDNN whose
// libraries are incomplete fails here rather than in a session.
func ProbeDNN() error {
	h, err := NewDNN(0)
	if err != nil {
		return err
	}
	defer h.Destroy()
	c := DNNConv{N: 1, C: 8, H: 8, W: 8, K: 8, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1,
		Groups: 1, OH: 8, OW: 8, T: R16BF}
	p, err := h.Plan(&c, 0, 1<<30)
	if err != nil {
		return err
	}
	p.Close()
	return nil
}
