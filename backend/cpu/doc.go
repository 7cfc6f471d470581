// Package cpu runs berth graphs on the host CPU in pure Go.
//
// Build compiles one node of an ir.Graph, whose tensor types and shapes are
// already known, into a Kernel: an immutable object holding everything that
// can be decided ahead of time (broadcast plans, packed weights, index
// tables, loop bounds). At run time the executor hands a kernel the exact
// bytes of the node's input and output tensors (windows of the arena and of
// the weight region) and a scratch window whose size Build reported; the
// kernel computes without allocating. Evaluate runs a node whose inputs
// are all constants and stores its results in the graph, so constant
// folding and execution share one implementation of every operator.
//
// Compile turns a whole graph into an Executable: a kernel per node, the
// rewrites that merge steps (fusion of elementwise chains and
// BatchNormalization prologues, rewrite_fuse.go; channel-blocked layouts,
// rewrite_block.go; pointwise+depthwise pairs, rewrite_pair.go;
// attention, rewrite_attention.go), a verified memory plan and the
// weights as the kernels read them. A Session binds each step to its
// slots in the arena of its Lane (Workers and a host buffer, which the
// sessions of one model's plans may share) and runs the steps in plan
// order without allocating (session.go). Backend puts all of this behind
// the backend contract (backend.go).
//
// Parallel work goes through Workers, a persistent pool of goroutines owned
// by one lane. A kernel splits its work into items and hands each
// goroutine a contiguous range of them; small loops stay on the caller.
//
// MatMul, Gemm, Conv and ConvTranspose share one single-precision GEMM:
// operands are packed into panels of 6 rows and 16 columns (constant weights
// once, at build time), C is cut into tiles that the workers share, and
// micro-kernels in assembly accumulate over slices of k (256 steps deep, up
// to 1024 for products of 512 rows and 2²⁰ elements or more): 12×32 tiles in
// zmm registers where the CPU has AVX-512 (6×32, 8×32 and 12×16 at the
// edges), 6×16 in ymm with AVX2 and FMA, a pure-Go 6×16 kernel elsewhere
// (gemm*.go). Those deep products pack B four panels side by side for a
// 6×64 AVX-512 kernel, which can read A's rows unpacked (gemm_quads.go).
// The kernels can add a residual and clamp (Relu, Clip) as they store the
// last k slice. A convolution packs im2col in blocks of at most 256×256 into
// each worker's own scratch area, from a zero-padded copy of the rows it
// reads; a 1×1 convolution reads its input in place, or, on 1×1 planes, runs
// with the images as the product's rows. With AVX-512, a 3×3 convolution of
// unit stride, at least 32 channels each way and at least 32 output tiles of
// 2×2 runs as Winograd F(2×2, 3×3): sixteen products of transformed filters
// and tiles, block by block of tiles, or, on planes of at least 64 tiles of
// 4×4 with at most 512 channels in all, as F(4×4, 3×3): 36 products, 2.25
// times fewer multiply-adds (winograd.go). A depthwise convolution runs in
// bands of output rows on AVX2/AVX-512 kernels (3×3 ones on AVX-512 four
// rows at a time, each input row loaded once), or, on small planes, sixteen
// channels at a time interleaved in registers (conv_depthwise_channels.go).
//
// Activations may be held channel-blocked (NCHW16c: sixteen channels of a
// position side by side) where Compile chooses so (blockLayouts, after
// fusion, with blockRoles and blockKernels): the kernels that take such
// activations are 1×1 convolutions (pointwiseBlocked12x32: twelve positions
// by 32 output channels a tile, the input read in place, its residual added
// and its output stored sixteen channels at a time), Winograd layers (their
// transforms a tile of sixteen channels a call, their products on
// pointwiseBlocked12x32), other convolutions of windows from whole blocks
// of channels (their windows gathered a k slice at a time, conv_gather.go),
// the stride-2 stem from planes (blockedWindows12x32), max pooling, channel
// concatenation and global average pooling (conv_blocked.go,
// winograd_blocked.go, conv_strided.go).
//
// A stem of stride 2 whose output stays in planes (fewer input channels
// than a block: MobileNetV2's, EfficientNet's) runs without im2col: its
// padded input split by column parity, eight output channels by 48
// positions of a row a tile, the channels as rows, stored straight into
// the planes (conv_rows.go).
//
// fusePair runs a pointwise convolution onto large planes and the
// depthwise convolution on its output as one kernel, a group of channels
// at a time: each worker computes a group's planes into a buffer of its
// own and the depthwise planes of them from there, with both kernels'
// own code, so the expansion's whole output never exists (conv_pair.go).
//
// fuseAttention runs attention's scores (a batch of products, a head
// each, with their scale and constant mask as epilogue), an Add of a
// padding mask, the softmax along the scores' rows and the product of
// the probabilities by the values as one kernel, a head at a time on each
// worker: the head's scores stay in a buffer of the worker's own, in its
// cache, from the first product to the packing of the second, and the
// scores of all the heads never exist. The heads' operands may be
// strided views of the projections' rows, with the Transposes that would
// split the heads out of them (and merge the output's back) folded into the
// packing and the store. Each part runs its own kernel's code, so the
// result is the same bit for bit (attention.go).
//
// fuseEpilogue and fuseAfter attach an epilogue to a MatMul, Gemm or Conv
// kernel: the elementwise nodes that follow it in the plan, run on each
// tile of its output while the tile is in cache (or in one more pass), each
// with its own kernel's loop, so the result is the same bit for bit. A
// leading residual Add and Relu or Clip move into the GEMM kernels' store,
// and Sigmoid followed by Mul runs as one SiLU pass.
//
// Float32 Add, Sub, Mul, Div, Relu, Clip, Square, Cube, Exp, Sigmoid,
// Tanh, Erf, Softmax and LayerNormalization have AVX2 kernels that round
// as the scalar loops do or stay within 2 ulp of float64 math (package vmath;
// Add, Sub, Mul, Div, sigmoid, SiLU, tanh, erf and softmax's exponentials
// also on AVX-512, with the same bits); the Go loops remain for other types
// and CPUs.
//
// Elementwise operators broadcast like numpy through a loop nest planned at
// build time: adjacent dimensions with the same broadcast pattern merge, and
// the innermost run has a dedicated loop for equal shapes, a scalar on
// either side, or any mix, so no element needs index arithmetic. They are
// correct when an output occupies exactly the memory of an input, so the
// planner may run them in place.
//
// If, Loop and Scan compile their subgraphs at Build into kernels of their
// own; the subgraph's tensors live in the parent node's scratch, which the
// plan places in the session's arena with a lifetime spanning the node,
// so control flow allocates nothing per run (see control.go).
//
// The kernels are chosen once, at start-up, from the CPU features that
// golang.org/x/sys/cpu reports, so GODEBUG=cpu.avx512f=off runs the
// package as on a CPU without AVX-512, and cpu.avx2=off without the AVX2
// kernels either. The build tag noasm leaves the assembly out on amd64 too
// and builds the pure-Go kernels of other platforms (files *_amd64.* are
// !noasm, their *_other.go, *_noasm.go and *_generic.go counterparts
// !amd64 || noasm).
//
// Operators follow the ONNX specification for opsets 11 to 20 (and the
// older forms of Softmax, Clip, Slice, Pad, Split and Reduce*).
// Other transcendental functions go through float64 math; normalisations
// and reductions accumulate in float64; Softmax subtracts the maximum.
package cpu
