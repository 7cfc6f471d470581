// Package quant multiplies activations by weights packed in ggml's block
// formats, as a decoder language model's matrix products need, without
// expanding the weights to float32.
//
// MatMul computes y[m,n] = x[m,k]·Wᵀ, where W is n rows of k values
// stored row after row in ggml blocks (as a GGUF file holds a linear
// layer's weight): Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K,
// and F16, BF16 and F32 (the last in Go only). As in llama.cpp, each row of x is first quantised,
// once per call, to the form ggml pairs with the weight type: Q8_0 for
// the types of 32-value blocks, Q8_K for the K-quants (see
// activations.go; the values are ggml's own). A product of two rows is
// then a sum of block products in integers (8-bit by 8-bit into 32-bit
// sums), each scaled by the two blocks' scales in float32. F16 and BF16
// weights are widened to float32 on the fly and multiply x as it is, as
// F32 weights do.
//
// The result is that of the dequantised weights (ggml's Dequantize) by the
// quantised activations, up to float32 rounding: within about 1e-7 of
// the sum of the terms' magnitudes. The quantised activations are ggml's
// bit for bit, and the products within 3e-7 of that sum of ggml's own
// (vec_dot; the tests hold fixtures of both), but for Q4_1 and Q5_1,
// whose activation sums ggml rounds to f16 (1e-4), and F16 and BF16,
// for which ggml rounds x to f16 or bf16 too. Against the activations as
// they are, 8-bit activations add an error of up to a few 1e-3 of that
// sum.
//
// On amd64 the kernels are assembly: AVX2 for every type (VPMADDUBSW and
// VPMADDWD for the integer sums, F16C for the scales), and AVX-512 for the
// types of 32-value blocks (two blocks a step, VPDPBUSD where the CPU has
// AVX512-VNNI) and for F16 and BF16 (see Paths). They prefetch the
// weights 2 KiB ahead, so that a matrix streamed from memory keeps up
// with the arithmetic. They are chosen once, from the features
// golang.org/x/sys/cpu reports, so GODEBUG=cpu.avx512f=off runs them as
// on a CPU without AVX-512, and cpu.avx2=off as on one without AVX2 (the
// path without VNNI on a CPU that has it is tested directly). The Go kernels (ref.go) define the
// results: every assembly kernel takes the same floating-point steps in
// the same order and returns the same bits. The build tag noasm leaves
// the assembly out.
//
// For a prompt (m > 1) the products are taken a tile at a time: a tile
// kernel multiplies several activation rows by one or more weight rows
// (with AVX-512, 4×4 for Q4_0 and Q8_0 and 4×2 for F16 and BF16; with
// AVX2, 4×1 for Q4_0, Q8_0, Q4_K, Q5_K and Q6_K and 3×1 for F16 and
// BF16; in Go, 4×1 for Q4_0, Q8_0 and F16; see tile.go), so that each
// weight block is loaded and unpacked once for all the rows and each
// activation row's scales are spread once for all the weight rows. Every
// output keeps the accumulators of its dot kernel and takes its steps in
// the same order: a tile's results are the bits of its dot kernel's. The
// rows and weight rows past the last whole tile, and the other types, go
// one output at a time.
//
// On a CPU with AMX (Intel's tile unit: AMX-TILE and AMX-INT8, granted
// by Linux once per process, see amx.go), products of Q4_0, Q8_0, Q4_K
// and Q6_K weights by at least 8 activation rows take its int8 tiles
// instead, four to five times as fast as the vector tiles: TDPBSSD
// multiplies 16 weight rows by 16 activation rows one block of values
// that share a scale at a time (32; Q6_K: 16), and AVX-512 scales each
// block's exact int32 sums by d_w·d_x into float32 accumulators, as
// llama.cpp does. Those sums are not added in ref.go's order, so the
// results are not its bits: each is within a few hundred 2⁻²⁴ of S of
// ref.go's at worst, S the sum of the magnitudes of the terms (for nb
// blocks of 32, (nb/2 + 5 + min(nb, 64) + ⌈nb/64⌉)·2⁻²⁴·S; the K-quants'
// bounds are in amx_test.go), and a few 2⁻²⁴·S in practice (see
// TestAMXMatchesReference). The path needs a work space
// per goroutine (WorkBytes, given to RunWith) and the rows laid out for
// the tiles (ScratchBytes counts them); GODEBUG=cpu.avx512f=off, the
// build tag noasm, or a Linux that refuses the tile state turn it off.
//
// Work is shared among goroutines by rows of W: Prepare checks the
// operands and quantises x into the caller's scratch (ScratchBytes long),
// then each worker calls Run (or RunWith, with its own work space) on
// its range of rows from Split. Nothing allocates.
package quant
