// Package llm builds decoder-only language models from their weight files
// into berth's IR: a model's graph is made from the file's metadata and
// tensors, with no ONNX in between, and then planned, verified and run
// like any other model.
//
// A GGUF file's architecture (general.architecture) says which graph:
// "llama" (LLaMA 2 and 3, TinyLlama, Mistral: RMSNorm, rotary embeddings,
// grouped-query attention, a SwiGLU feed-forward), "qwen2" (the same with
// biases on the query, key and value projections) and "gpt2" (learned
// positions, LayerNorm, one fused query-key-value projection, the tanh
// GELU). Matrix weights
// stay in the file's block formats and are read in place: products and
// the embedding lookup are ir.BerthDomain operators (PackedMatMul,
// PackedGather) over the mapped bytes, never a float32 copy.
//
// Graph builds the forward pass over a prompt of T tokens from position
// 0: its input "tokens" (int64[T]) and its output "logits"
// (float32[T, vocab]), each position attending to itself and those
// before it. StepGraph builds a step over a cache of keys and values
// instead (the graph's state, kept between runs): t tokens at positions
// given at run time, each attending to the cache up to itself, so that a
// decoder takes a prompt in chunks and then one token at a time
// (berth.Generator runs it).
package llm
