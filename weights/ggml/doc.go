// Package ggml describes the tensor types of ggml, the library behind
// llama.cpp and the GGUF file format, and turns blocks of them back into
// float32.
//
// A Type is ggml's enum ggml_type, with the same numbers, so that a type id
// read from a GGUF file is a Type as it stands. Quantised types store their
// values in blocks: BlockSize elements packed into TypeSize bytes (Q4_K
// holds 256 values in 144 bytes). A row of n elements, n a multiple of the
// block size, takes RowSize(n) bytes, and the elements from a multiple of
// the block size onwards start at that many bytes into the row.
//
// Dequantize converts F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K and Q8_K to float32, bit for bit as ggml's reference code
// (dequantize_row_* in ggml-quants.c, ggml_fp16_to_fp32_row,
// ggml_bf16_to_fp32_row) does: each product and sum is rounded to float32
// in the same order, never fused, and an f16 signalling NaN comes back as
// a quiet NaN, as it does from ggml. It does not allocate. Every other
// ggml type is known by its size, so that files holding it can be read,
// but CanDequantize reports false for it.
package ggml
