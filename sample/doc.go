// Package sample chooses a language model's next token from its logits.
//
// A Sampler serves one generation: New checks the Options and allocates
// all the scratch the vocabulary needs, and each Sample call then filters
// one row of logits, turns what is left into a distribution and draws a
// token from it with a seeded generator, allocating nothing.
//
// The filters run in the order of llama.cpp's default sampler chain
// (penalties, top-k, top-p, min-p, temperature, then the draw), with the
// filters llama.cpp has and berth does not (DRY, top-n-σ, typical, XTC)
// left out:
//
//  1. Repetition penalty. Every distinct token among the last
//     RepeatLastN of the recent tokens given to Sample is penalised once,
//     however often it occurs: a logit l > 0 becomes l/RepeatPenalty,
//     any other l·RepeatPenalty (in float32, as llama.cpp does).
//  2. Temperature ≤ 0 stops here: the token is the argmax of the
//     penalised logits, the lowest id of equal ones. The filters below
//     all keep the argmax, so they could not change it.
//  3. Candidates: every token whose logit is not -Inf.
//  4. Top-k keeps the TopK candidates of highest logit; of equal logits at
//     the boundary, the lower ids.
//  5. Top-p takes p_i = softmax of the candidates' logits (at temperature
//     1, as llama.cpp does) and keeps the smallest prefix of the
//     candidates, in order of decreasing logit (lower id first on ties),
//     whose p_i sum to at least TopP: at least one token.
//  6. Min-p keeps the candidates with p_i ≥ MinP·max p_i, again at
//     temperature 1; that is, logit ≥ max logit + ln MinP. The most likely
//     candidate always stays.
//  7. Temperature divides what is left by Temperature, and the softmax of
//     the result is the distribution the token is drawn from.
//
// Because top-p and min-p look at the distribution before temperature, a
// high temperature flattens only what they kept, as in llama.cpp.
//
// Where llama.cpp leaves something open or reads an option otherwise,
// this package decides: equal logits are ordered by id (llama.cpp's
// partial sorts leave their order unspecified), so a tie at the top-k or
// top-p cut keeps the lower id; TopP 0 turns top-p off (llama.cpp keeps
// one token); MinP above 1 is an error (llama.cpp keeps one token); a
// RepeatLastN of 0 means 64 (llama.cpp turns the penalty off). The
// probabilities are computed in float64, the penalised logits in float32.
// scripts/gen_sample_fixtures.py holds the filters up to an independent
// numpy implementation and, where llama.cpp is installed, to llama.cpp's
// own samplers.
//
// Logits must not be NaN or +Inf: Sample reports such a logit as an
// error. -Inf means "never": such a token is not a candidate, and a row
// with no candidate at all is an error.
//
// The draws come from a PCG generator (math/rand/v2) seeded with
// Options.Seed, one number per Sample call that draws (greedy calls take
// none), so the same logits, recent tokens and seed give the same tokens
// on every machine; Reset starts the sequence again.
package sample
