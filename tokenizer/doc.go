// Package tokenizer turns text into a language model's token ids and
// back, exactly as the model's own tokenizer does: the ids are
// llama.cpp's, id for id, for the vocabularies it reads.
//
// A Tokenizer comes from a GGUF file's tokenizer.ggml.* metadata
// (FromGGUF) or from a Hugging Face tokenizer.json (FromJSON, for the
// same two kinds written as BPE). Two kinds of vocabulary are read:
//
//   - SentencePiece BPE, tokenizer.ggml.model "llama" (LLaMA 1 and 2,
//     Mistral, Gemma): pieces with scores, spaces written as ▁ with one
//     added in front of the text (add_space_prefix), and the byte tokens
//     <0x00>…<0xFF> for what no piece covers. Adjacent pieces are merged,
//     highest score first.
//   - Byte-level BPE, "gpt2" (GPT-2, LLaMA 3, Qwen, and most newer
//     models): every byte written as a character (GPT-2's table, "Ġ" for
//     a space), the text first cut into words by the pre-tokenizer that
//     tokenizer.ggml.pre names ("gpt-2", "llama-bpe", "qwen2",
//     "starcoder", the default one and their aliases), then merged inside
//     each word by merge rank.
//
// Special tokens written in the text (<s>, <|begin_of_text|>,
// <|im_start|>) are found as whole tokens, longest first, before
// anything else; Encode does this for control tokens, AppendEncode can
// leave them as text, which is what untrusted input wants. BOS and EOS
// are added where the model says so (add_bos_token, add_eos_token), and
// IsEOG knows the tokens that end generation.
//
// Decode inverts Encode; AppendDecode is llama.cpp's llama_detokenize
// with its options; a Decoder turns ids into text one at a time and holds
// back a character whose bytes are split over several tokens.
//
// Encoding never fails and never panics: any string is accepted, and
// invalid UTF-8 is handled as llama.cpp handles it (byte tokens for
// SentencePiece, U+FFFD for each bad byte in byte-level BPE). Merging
// uses a priority queue of adjacent pairs, so long texts and long words
// take time in proportion to n log n. A vocabulary file is not trusted:
// counts that disagree, ids out of range, duplicate tokens, oversized
// tokens or merge lists are errors (or, where llama.cpp falls back to a
// default, the same default), never a panic.
//
// Character classes (letters, numbers, white space) come from Go's
// unicode tables; llama.cpp has its own, of a newer Unicode version, so
// characters assigned since Unicode 15.0 may be cut differently. Where
// llama.cpp's choice depends on the order of a hash map (which of two
// end-of-turn tokens is "the" EOT), the lowest id is taken; the set of
// end-of-generation tokens does not depend on it.
package tokenizer
