package cuda

import (
	"math"

	"github.com/berth-ml/berth/backend/cuda/driver"
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
// cuDNN takes NCHW tensors but runs its tensor-core kernels on NHWC:
// each convolution transposes its input and output (some 7–10 µs each at
// batch 32), which a channels-last layout of the activations would save.

// dnnConvLaunch adds the launch of cuDNN's convolution for the node, of
// rank r, group groups and geometry d (N, C, H, W, OC, KH, KW, PH, PW, SH,
// SW, DH, DW, OH, OW), and reports true, where cuDNN is installed and
// takes it as above; else it adds nothing and reports false.
func (c *buildContext) dnnConvLaunch(bias arg, xHalf bool, r int, groups int64, d [15]int64) bool {
	if c.half == nil || !c.half.dnn || c.fz == nil || bias.kind != argWords || (r != 3 && r != 4) {
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
	t := driver.R16BF
	if c.half.prec == F16 {
		t = driver.R16F
	}
	i := func(v int64) int32 { return int32(v) }
	conv := &driver.DNNConv{N: i(d[0]), C: i(d[1]), H: i(d[2]), W: i(d[3]), K: i(d[4]), R: i(d[5]), S: i(d[6]),
		PadH: i(d[7]), PadW: i(d[8]), StrideH: i(d[9]), StrideW: i(d[10]), DilH: i(d[11]), DilW: i(d[12]),
		Groups: i(groups), OH: i(d[13]), OW: i(d[14]), T: t}
	x := c.halfOperand(c.inArg(0), xHalf)
	w := c.halfOperand(c.inArg(1), false)
	c.launches = append(c.launches, launch{node: c.node, dnn: conv, args: []arg{x, w, {kind: argTensor, id: y.id, off: y.off / 2, half: true}}})
	return true
}
