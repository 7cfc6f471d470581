// Package cuda compiles an ir.Graph for an NVIDIA GPU and runs it.
//
// Compile builds the same static memory plan as the CPU backend (256-byte
// slots), uploads every constant once into one device weight region, and
// records for each node the kernel launches it needs with their arguments.
// The kernels are CUDA C compiled at run time by NVRTC, one module per
// family of operators, cached in memory for the process and on disk by the
// SHA-256 of their source and the GPU architecture. MatMul, Gemm, the
// GEMM step of Conv (im2col into planned scratch, or the input itself for
// a 1×1 convolution) and that of ConvTranspose (a column matrix in
// planned scratch, which col2im then sums into the output) go to cuBLAS (cublasSgemmStridedBatched, float32
// arithmetic unless Options.Precision asks for TF32) where it is
// installed and the strides fit; elsewhere to berth's own tiled SGEMM
// (128×128 tiles, or 64×64 and K split in parts where the product has too
// few tiles for the GPU, whose parts one more launch adds, or, for a Conv
// whose output only generated kernels read, those kernels as they load
// it).
// Under Options.Precision BF16 or F16 those GEMMs run through
// cublasGemmStridedBatchedEx on 16-bit operands with float32 accumulation
// and a float32 result: each constant operand gets a 16-bit shadow copy in
// the weight region (rounded to nearest even at compile time; the float32
// original is uploaded only if a kernel still reads it), activations are
// rounded into the node's planned scratch by a small kernel, and im2col
// writes its patches in 16 bits directly. Everything else stays float32.
//
// Between building and binding, fuse.go fuses at the backend's level
// without touching the shared plan: float32 elementwise nodes whose
// intermediates no one else reads run as one generated NVRTC kernel
// (GELU's chain with its bias Add, a bias and a residual Add, a Conv's Add
// and Relu), a Conv on the GEMM path leaves its bias to the kernels that
// read its output (on cuBLAS: no fill of C before a beta = 1 GEMM; on
// berth's GEMM, with the parts of its split product), and under BF16 or
// F16 a tensor read only by cuBLAS GEMMs (directly or through a
// Reshape-like view) is written in 16 bits by its producer (a generated
// kernel, a Transpose, a Softmax, a LayerNorm read by GEMMs alone, an
// attention) instead of being rounded by each GEMM. Under 16-bit
// precision on a GPU of sm_80 or later, attend.go rewrites attention
// before planning (scores, scale, mask, Softmax, the product by V and the
// Transposes around them) into one tensor-core kernel whose scores never
// reach memory. Under 16-bit precision too, before planning: where
// cuBLASLt is installed, a MatMul with its bias Add, and the residual Add
// after it, becomes one cuBLASLt product whose epilogue adds the bias
// and whose C is the residual (epilogue.go), the three projections an
// attention reads becoming one product (qkv.go); a LayerNorm that products
// and other nodes read writes the products' 16-bit copy beside its
// float32 row (NormRound, round.go); and where cuDNN is installed, a
// convolution runs as one cuDNN call with no patch matrix, its bias, the
// Add of a residual and the ReLU after it in cuDNN's epilogue (ConvAct,
// dnn.go), and the four-axis activations that flow between such
// convolutions are held channels-last, as cuDNN's tensor-core kernels
// work (nhwc.go).
// A group whose kernel the plan's offsets do not allow (an input
// overwritten before the group's last node, an output overlapping an
// input) is split until every kernel is safe. Options.NoFusion, or
// BERTH_CUDA_FUSION=0, turns this off.
//
// A Session owns one device arena of exactly the plan's size, a stream,
// a cuBLAS handle with its own workspace (and cuBLASLt's and cuDNN's
// handles where its steps use them, cuDNN with a workspace of its own),
// and page-locked staging for the inputs and outputs; the libraries'
// plans (descriptors, algorithms) are made with the session. When the session is made, every launch of a run is
// captured into one CUDA graph; Run copies the inputs into staging,
// replays the graph (input copies, kernels, GEMMs, output copies) and
// waits once. A run allocates nothing on the host: the calls it makes go
// through argument blocks made with the session (driver.Args).
//
// Berth's own operators (ir.BerthDomain) run too (packed.go): products
// and gathers of weights packed in ggml's block formats, decoded in the
// kernel from the device copy of the file's bytes; a decoder's cache of
// keys and values (CacheWrite, CachedAttention), whose kernels read the
// position from device memory so that one captured graph serves every
// position; and the RMSNorm and Rotary of the step graphs a GPU runs. A
// step's one-row products of f32, f16, bf16, q8_0 and q4_0 weights run
// gemv.go's kernels (q8_0 and q4_0 on activations quantised to 8 bits as
// the CPU's are), and step.go rewrites a step before planning so that
// products over one x share a launch, a residual Add, the RMSNorm before
// them and a gated unit after them run inside it, and the queries' and
// keys' rotary embeddings run as one.
// State (ir.Graph.State, the plan's first bytes) stays in the arena from
// run to run: it is neither staged nor copied in, and sessions on one
// lane share it (NewLaneFor).
//
// Backend puts all of this behind the backend contract: Compiled is an
// Executable of it, Staged a Session whose inputs and outputs are its
// staging and whose Arena copies through the host (arena.Remote).
//
// The CUDA libraries are loaded at run time (see package driver): without
// them Compile returns an error wrapping driver.ErrUnavailable.
package cuda
