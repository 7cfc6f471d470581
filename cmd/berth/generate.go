package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/sample"
	"github.com/berth-ml/berth/tokenizer"
)

// generateFlags are berth generate's choices.
type generateFlags struct {
	prompt, tokens     string
	n                  int
	context            int64
	temp, topP, minP   float64
	topK, repeatLastN  int
	repeatPenalty      float64
	seed               int64
	ignoreEOS, special bool
	stops              listFlag
	logitsOut          string
	device             string
	threads            int
	asJSON             bool
	warmup             int
}

func (f *generateFlags) register(fs *flag.FlagSet) {
	d := sample.Defaults(0)
	fs.StringVar(&f.prompt, "prompt", "", "the prompt `TEXT`, tokenized as the model's tokenizer does (BOS added where the model wants it)")
	fs.StringVar(&f.tokens, "tokens", "", "the prompt as token `IDS`, comma-separated, fed as they are (no BOS added)")
	fs.IntVar(&f.n, "n", 128, "tokens to generate at most")
	fs.Int64Var(&f.context, "ctx", 0, "positions the cache holds, prompt and generated tokens together (0: the model's, at most 4096)")
	fs.Float64Var(&f.temp, "temp", float64(d.Temperature), "temperature; 0 picks the most likely token (greedy)")
	fs.IntVar(&f.topK, "top-k", d.TopK, "keep the K most likely tokens (0: all)")
	fs.Float64Var(&f.topP, "top-p", float64(d.TopP), "keep the most likely tokens up to this probability in all (1: all)")
	fs.Float64Var(&f.minP, "min-p", float64(d.MinP), "keep the tokens at least this share as likely as the most likely (0: all)")
	fs.Float64Var(&f.repeatPenalty, "repeat-penalty", float64(d.RepeatPenalty), "penalise the recent tokens (1: off)")
	fs.IntVar(&f.repeatLastN, "repeat-last-n", d.RepeatLastN, "how many recent tokens the penalty looks at (-1: all)")
	fs.Int64Var(&f.seed, "seed", -1, "seed of the draws (-1: a new one each run)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", false, "keep generating past the model's end-of-generation tokens, to -n")
	fs.BoolVar(&f.special, "special", false, "print control tokens as their text")
	fs.Var(&f.stops, "stop", "stop when the text produced contains `STRING`; repeat for several")
	fs.StringVar(&f.logitsOut, "logits-out", "", "write the prompt's logits, float32 [tokens, vocab], to `FILE.npy`")
	fs.StringVar(&f.device, "device", "cpu", "device: cpu or cuda")
	fs.IntVar(&f.threads, "threads", 0, "threads (0: all cores)")
	fs.IntVar(&f.warmup, "warmup", 0, "feed the prompt this many times untimed first (for benchmarks)")
	fs.BoolVar(&f.asJSON, "json", false, "print the text, the tokens and the speeds as one JSON object at the end instead of streaming the text")
}

// generateReport is what --json prints.
type generateReport struct {
	Model           string  `json:"model"`
	Text            string  `json:"text"`
	Tokens          []int32 `json:"tokens"`
	PromptTokens    int     `json:"prompt_tokens"`
	GeneratedTokens int     `json:"generated_tokens"`
	PrefillMS       float64 `json:"prefill_ms"`
	DecodeMS        float64 `json:"decode_ms"`
	PrefillTokS     float64 `json:"prefill_tok_s"`
	DecodeTokS      float64 `json:"decode_tok_s"`
	AllocsPerToken  float64 `json:"allocs_per_token"` // after the first two steps
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	KVCacheBytes    int64   `json:"kv_cache_bytes"`
	ArenaBytes      int64   `json:"arena_bytes"`
	WeightBytes     int64   `json:"weight_bytes"`
	Context         int64   `json:"context"`
	Seed            uint64  `json:"seed"`
	Stop            string  `json:"stop"` // why it stopped: "length", "eos", "string", "context"
}

func cmdGenerate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	var f generateFlags
	f.register(fs)
	path, err := parseModel(fs, args, false)
	if err != nil {
		return err
	}
	if (f.prompt == "") == (f.tokens == "") {
		return usageError{"give the prompt as --prompt TEXT or as --tokens IDS (one of them)"}
	}
	if f.warmup < 0 {
		return usageError{fmt.Sprintf("--warmup %d: want 0 or more", f.warmup)}
	}
	if f.n < 0 {
		return usageError{fmt.Sprintf("-n %d: want 0 or more tokens", f.n)}
	}
	if f.device != "cpu" && f.device != "cuda" {
		return usageError{fmt.Sprintf("--device %s: generation runs on the cpu or cuda", f.device)}
	}
	seed := uint64(f.seed)
	if f.seed < 0 {
		seed = uint64(time.Now().UnixNano())
	}
	opts := sample.Options{
		Temperature: float32(f.temp), TopK: f.topK, TopP: float32(f.topP), MinP: float32(f.minP),
		RepeatPenalty: float32(f.repeatPenalty), RepeatLastN: f.repeatLastN, Seed: seed,
	}

	if st, err := os.Stat(path); err == nil && st.Size() > 64<<20 {
		fmt.Fprintf(stderr, "berth: loading %s (%s)…\n", displayName(path), humanBytes(st.Size()))
	}
	m, err := berth.Load(path)
	if err != nil {
		return err
	}
	defer m.Close()
	if !m.LanguageModel() {
		return fmt.Errorf("%s is not a language model (generate takes a GGUF file or a Hugging Face checkpoint)", displayName(path))
	}
	tok, tokErr := m.Tokenizer()
	var prompt []int32
	if f.tokens != "" {
		if prompt, err = parseTokens(f.tokens); err != nil {
			return usageError{"--tokens: " + err.Error()}
		}
	} else {
		if tokErr != nil {
			return fmt.Errorf("--prompt needs the model's tokenizer: %w", tokErr)
		}
		prompt = tok.Encode(f.prompt, true)
		if len(prompt) == 0 {
			return errors.New("--prompt: the text gives no tokens")
		}
	}

	start := time.Now()
	g, err := m.NewGenerator(berth.GeneratorOptions{Context: f.context, Options: berth.Options{Threads: f.threads}, Device: berth.Device(f.device)})
	if err != nil {
		return err
	}
	defer g.Close()
	smp, err := sample.New(g.Vocab(), opts)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := g.CheckPrompt(prompt); err != nil {
		return err
	}
	if int64(len(prompt)) == g.Context() && f.n > 0 {
		return fmt.Errorf("a prompt of %d tokens leaves no room in a context of %d (--ctx)", len(prompt), g.Context())
	}
	if !f.asJSON {
		fmt.Fprintf(stderr, "berth: %d positions of context: cache %s in an arena of %s, weights %s; compiled in %.2f s\n",
			g.Context(), humanBytes(g.CacheBytes()), humanBytes(g.ArenaBytes()), humanBytes(g.WeightBytes()), time.Since(start).Seconds())
	}

	var stopIDs []int32
	if tok != nil && !f.ignoreEOS {
		stopIDs = tok.EOG()
	}
	var promptLogits []float32
	if f.logitsOut != "" {
		promptLogits = make([]float32, len(prompt)*g.Vocab())
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()

	for range f.warmup {
		if _, err := g.Prefill(ctx, prompt, nil); err != nil {
			return err
		}
		g.Reset()
	}
	var stats berth.GenerationStats
	gen := berth.Generation{MaxTokens: f.n, Sampler: smp, Stop: stopIDs, PromptLogits: promptLogits, Stats: &stats, CountAllocs: f.asJSON}
	out := newTextOut(stdout, f.stops, !f.asJSON)
	var dec *tokenizer.Decoder
	if tok != nil {
		dec = tok.NewDecoder(f.special)
	}
	tokens := make([]int32, 0, f.n)
	why := "length"
	if f.n > 0 {
		for id, err := range g.Generate(ctx, prompt, gen) {
			if err != nil {
				return err
			}
			tokens = append(tokens, id)
			if dec != nil && !f.asJSON && out.add(dec.Next(id)) {
				why = "string"
				break
			}
		}
	} else {
		start := time.Now()
		if _, err := g.Prefill(ctx, prompt, promptLogits); err != nil {
			return err
		}
		stats.PromptTokens, stats.Prefill = len(prompt), time.Since(start)
	}
	if f.asJSON && dec != nil {
		for _, id := range tokens {
			if out.add(dec.Next(id)) {
				why = "string"
				break
			}
		}
	}
	if dec != nil && why != "string" {
		out.add(dec.Flush())
	}
	out.flush()
	switch {
	case why == "string":
	case len(tokens) < f.n && g.Position() >= g.Context():
		why = "context"
	case len(tokens) < f.n:
		why = "eos"
	}
	if !f.asJSON {
		fmt.Fprintln(stdout)
	}
	if promptLogits != nil {
		a := &npy.Array{DType: ir.Float32, Shape: []int64{int64(len(prompt)), int64(g.Vocab())}, Data: raw.Bytes(promptLogits)}
		if err := npy.WriteFile(f.logitsOut, a); err != nil {
			return err
		}
	}
	rep := generateReport{
		Model: displayName(path), Text: out.text.String(), Tokens: tokens,
		PromptTokens: stats.PromptTokens, GeneratedTokens: stats.GeneratedTokens,
		PrefillMS: ms(stats.Prefill), DecodeMS: ms(stats.Decode),
		PeakRSSMB: peakRSSMB(), KVCacheBytes: g.CacheBytes(), ArenaBytes: g.ArenaBytes(), WeightBytes: g.WeightBytes(),
		Context: g.Context(), Seed: seed, Stop: why,
	}
	if stats.Prefill > 0 {
		rep.PrefillTokS = float64(stats.PromptTokens) / stats.Prefill.Seconds()
	}
	if stats.Steps > 0 && stats.Decode > 0 {
		rep.DecodeTokS = float64(stats.Steps) / stats.Decode.Seconds()
	}
	if stats.AllocSteps > 0 {
		rep.AllocsPerToken = float64(stats.StepAllocs) / float64(stats.AllocSteps)
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stderr, "berth: %d prompt tokens at %.1f tok/s, %d generated at %.1f tok/s\n",
		rep.PromptTokens, rep.PrefillTokS, rep.GeneratedTokens, rep.DecodeTokS)
	return nil
}

// parseTokens reads comma-separated token ids.
func parseTokens(s string) ([]int32, error) {
	var ids []int32
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		id, err := strconv.ParseInt(f, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a token id", f)
		}
		ids = append(ids, int32(id))
	}
	return ids, nil
}

// textOut writes generated text as it comes, holding back what may be the
// start of a stop string, and keeps all of it.
type textOut struct {
	w       io.Writer
	stream  bool
	stops   []string
	pending string
	text    strings.Builder
}

func newTextOut(w io.Writer, stops []string, stream bool) *textOut {
	return &textOut{w: w, stream: stream, stops: stops}
}

// add takes more text and reports whether a stop string has appeared:
// the text before it is kept, the rest dropped.
func (o *textOut) add(s string) bool {
	o.pending += s
	for _, stop := range o.stops {
		if stop == "" {
			continue
		}
		if i := strings.Index(o.pending, stop); i >= 0 {
			o.emit(o.pending[:i])
			o.pending = ""
			return true
		}
	}
	hold := 0
	for _, stop := range o.stops {
		for n := min(len(stop)-1, len(o.pending)); n > hold; n-- {
			if strings.HasSuffix(o.pending, stop[:n]) {
				hold = n
				break
			}
		}
	}
	o.emit(o.pending[:len(o.pending)-hold])
	o.pending = o.pending[len(o.pending)-hold:]
	return false
}

func (o *textOut) flush() {
	o.emit(o.pending)
	o.pending = ""
}

func (o *textOut) emit(s string) {
	o.text.WriteString(s)
	if o.stream && s != "" {
		io.WriteString(o.w, s)
	}
}
