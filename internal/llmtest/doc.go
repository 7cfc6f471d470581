// Package llmtest reads the language-model fixtures that
// scripts/gen_llm_models.py writes: small LLaMA, Qwen2 and GPT-2 models
// with random weights as GGUF files and Hugging Face safetensors folders,
// the manifest describing each file, and reference logits computed in
// float64 from the weights exactly as each file stores them.
//
// The committed fixtures lie in Dir (testdata/llm); a large model written
// with --size 1b or --size 110m lies wherever BERTH_LLM_DATA names, with a
// manifest of the same form. Tests of the weight readers check every file
// against its manifest; tests of a model builder run a Model and compare
// its logits with its Reference.
package llmtest
