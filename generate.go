package berth

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/llm"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/tokenizer"
)

// decoder is what a language model keeps to build its graphs: the
// weights, the config, and where its tokenizer comes from.
type decoder struct {
	w   llm.Weights
	cfg llm.Config
	// tokenizer reads the model's tokenizer (nil: the model has none).
	tokenizer func() (*tokenizer.Tokenizer, error)
}

// LanguageModel reports whether m is a decoder language model (a GGUF
// file or a Hugging Face checkpoint), which NewGenerator runs.
func (m *Model) LanguageModel() bool { return m.lm != nil }

// Tokenizer returns the tokenizer of a language model: the one its GGUF
// file describes, or the tokenizer.json beside its checkpoint.
func (m *Model) Tokenizer() (*tokenizer.Tokenizer, error) {
	if m.lm == nil || m.lm.tokenizer == nil {
		return nil, errors.New("the model has no tokenizer")
	}
	return m.lm.tokenizer()
}

// tokenizerJSON reads the tokenizer.json of the checkpoint at path (a file
// or a folder).
func tokenizerJSON(path string) func() (*tokenizer.Tokenizer, error) {
	return func() (*tokenizer.Tokenizer, error) {
		dir := path
		if st, err := os.Stat(path); err == nil && !st.IsDir() {
			dir = filepath.Dir(path)
		}
		return tokenizer.FromJSON(filepath.Join(dir, "tokenizer.json"))
	}
}

// GeneratorOptions tune NewGenerator. The zero value is a sensible
// default.
type GeneratorOptions struct {
	// Context is how many positions the cache of keys and values holds:
	// the prompt and every token generated after it. 0 means the model's
	// own context length, at most DefaultContext.
	Context int64
	// Options are the compile options of the generator's plans: threads,
	// memory limit. Dims, MaxDims and Plans do not apply.
	Options Options
	// Device is where the generator runs: CPU (the default) or CUDA.
	Device Device
}

// DefaultContext is the context a generator holds unless its options
// say otherwise (or the model's own is shorter).
const DefaultContext = 4096

// PrefillChunk is the most tokens of a prompt one plan takes at once: a
// longer prompt is fed a chunk after another.
const PrefillChunk = 512

// A Generator runs a decoder language model one step at a time over a
// cache of keys and values (see llm.StepGraph): a prompt's tokens are fed
// in chunks (Prefill), then one token a step (Step), each at the next
// position, until the context is full (Reset starts again at position 0).
//
// Its plans share one lane (backend.Lane): one arena whose first bytes
// are the cache, planned and verified with every plan, so that the cache
// stays where it is from step to step and plan to plan and is never
// copied; on a GPU also one stream and the page-locked staging where a
// run finds its tokens and position and leaves its logits. A plan of one
// token serves every step (on a GPU its launches are replayed as one
// graph: the kernels read the position from device memory), and a plan
// per prompt length serves prompts. The weights are packed (or uploaded)
// once, into a store the plans share. A step allocates nothing. A
// generator is not safe for concurrent use.
type Generator struct {
	m       *Model
	cfg     llm.Config
	context int64
	device  Device
	opts    Options
	pos     int64 // the positions the cache holds

	dev     backend.Device
	weights backend.Weights // the store every plan's weights are in
	lane    backend.Lane    // the arena of every plan; the cache first
	decode  *stepPlan
	prompts []*stepPlan // the prompt plans, the most recently used last
}

// stepPlan is one step graph's executable and its session on the
// generator's lane: its tokens and position are written straight into
// the session's input buffers.
type stepPlan struct {
	t      int64
	all    bool // the logits of every token, not the last one's alone
	exe    *Executable
	m      *Model
	s      backend.Session
	tokens []int64
	pos    []int64
	out    []byte // the logits, in the session's output buffer
}

// maxPromptPlans is how many prompt plans a generator keeps.
const maxPromptPlans = 4

// NewGenerator compiles m, a language model, for generation on the CPU (or
// the GPU where opts.Device is CUDA): the plan of one token at once, and of a prompt chunk of up to
// PrefillChunk tokens, in one arena holding the cache. It fails, before
// allocating the arena, when the cache, the arena and the weights exceed
// the options' memory limit.
func (m *Model) NewGenerator(opts GeneratorOptions) (*Generator, error) {
	if m.lm == nil {
		return nil, errors.New("generate: the model is not a language model (a GGUF file or a Hugging Face checkpoint)")
	}
	cfg := m.lm.cfg
	ctx := opts.Context
	switch {
	case ctx == 0:
		ctx = min(cfg.Context, DefaultContext)
	case ctx < 0 || ctx > cfg.Context:
		return nil, fmt.Errorf("generate: a context of %d: the model takes 1 to %d positions", ctx, cfg.Context)
	}
	o := opts.Options
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	g := &Generator{m: m, cfg: cfg, context: ctx, device: opts.Device, opts: o}
	b, err := backendOf(opts.Device, &g.opts)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if err := b.Available(); err != nil {
		return nil, fmt.Errorf("generate: compile for %s: %w", b.Name(), err)
	}
	g.dev = b
	if g.decode, err = g.compile(1, false); err != nil {
		g.Close()
		return nil, err
	}
	if t := min(PrefillChunk, ctx); t > 1 {
		p, err := g.compile(t, false)
		if err != nil {
			g.Close()
			return nil, err
		}
		g.prompts = append(g.prompts, p)
	}
	if err := g.bind(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Context is the positions the generator's cache holds.
func (g *Generator) Context() int64 { return g.context }

// Position is how many positions the cache holds so far: where the next
// token goes.
func (g *Generator) Position() int64 { return g.pos }

// CacheBytes is the bytes of the cache of keys and values.
func (g *Generator) CacheBytes() int64 { return llm.CacheBytes(g.cfg, g.context) }

// ArenaBytes is the bytes of the arena the plans share: the cache, then
// the activations of the largest plan (0 once closed).
func (g *Generator) ArenaBytes() int64 {
	if g.lane == nil {
		return 0
	}
	return g.lane.Bytes()
}

// WeightBytes is the bytes of the model's weights as the step reads them
// (0 once closed).
func (g *Generator) WeightBytes() int64 {
	if g.decode == nil {
		return 0
	}
	return g.decode.exe.WeightBytes()
}

// Vocab is the size of the logits rows.
func (g *Generator) Vocab() int { return int(g.cfg.Vocab) }

// Reset empties the cache: the next token goes to position 0.
func (g *Generator) Reset() { g.pos = 0 }

// compile builds and compiles the step graph of t tokens.
func (g *Generator) compile(t int64, all bool) (*stepPlan, error) {
	graph, err := llm.StepGraph(g.m.lm.w, g.cfg, t, g.context, all)
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	m, err := prepare(&onnx.Model{Graph: graph, ProducerName: "berth llm (" + g.cfg.Arch + ")"})
	if err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	if g.weights == nil {
		// One store for every plan, of the graph's packed weights: the
		// uint8 constants, windows of the mapped files.
		var files [][]byte
		for i := range m.graph.Tensors {
			t := &m.graph.Tensors[i]
			if t.IsConst() && t.DType == ir.Uint8 && len(t.Data) > 0 {
				files = append(files, t.Data)
			}
		}
		g.weights = g.dev.NewWeights(files)
		g.opts.weights = g.weights
	}
	if limit := g.opts.MemoryLimit; limit >= 0 && (g.dev.Caps().Host || limit > 0) {
		// The cache comes on top of the plan's activations and the
		// weights, which the compiler checks.
		if limit == 0 {
			limit = device.HostMemory()
		}
		if c := g.CacheBytes(); c > limit {
			m.Close()
			return nil, fmt.Errorf("generate: %w: a cache of %d positions needs %d bytes, the limit is %d", ErrMemoryLimit, g.context, c, limit)
		}
	}
	exe, err := compileStatic(m, g.device, g.opts)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("generate: %w", err)
	}
	return &stepPlan{t: t, all: all, exe: exe, m: m}, nil
}

// plans lists every plan the generator holds.
func (g *Generator) plans() []*stepPlan {
	return append([]*stepPlan{g.decode}, g.prompts...)
}

// bind gives every plan a session on the generator's lane, making a
// larger lane (the cache copied over) where a plan does not fit it. Every
// plan must hold the cache where the step's plan does.
func (g *Generator) bind() error {
	plans := g.plans()
	want := g.decode.exe
	for _, p := range plans {
		got := p.exe
		for i, id := range got.g.State {
			w, s := want.layout.Slots[want.g.State[i]], got.layout.Slots[id]
			if w != s {
				return fmt.Errorf("generate: the plan of %d tokens holds cache %q at %d, the step's at %d", p.t, got.g.Tensor(id).Name, s.Offset, w.Offset)
			}
		}
	}
	if g.lane != nil {
		fits := true
		for _, p := range plans {
			if p.s != nil {
				continue
			}
			err := g.open(p)
			if errors.Is(err, backend.ErrLaneTooSmall) {
				fits = false
				break
			}
			if err != nil {
				return err
			}
		}
		if fits {
			return nil
		}
	}
	exes := make([]backend.Executable, len(plans))
	for i, p := range plans {
		exes[i] = p.exe.x
	}
	lane, err := g.dev.NewLane(exes, g.lane, g.stateBytes())
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	for _, p := range plans {
		if p.s != nil {
			p.s.Close()
			// Views of the old lane's arena, which Close frees.
			p.s, p.tokens, p.pos, p.out = nil, nil, nil, nil
		}
	}
	if g.lane != nil {
		g.lane.Close()
	}
	g.lane = lane
	for _, p := range plans {
		if err := g.open(p); err != nil {
			return err
		}
	}
	return nil
}

// stateBytes is the bytes the cache takes at the start of the arena.
func (g *Generator) stateBytes() int64 {
	var b int64
	for _, id := range g.decode.exe.g.State {
		b = max(b, g.decode.exe.layout.Slots[id].Offset+g.decode.exe.layout.Slots[id].Size)
	}
	return b
}

// open makes p's session on the generator's lane.
func (g *Generator) open(p *stepPlan) error {
	s, err := p.exe.x.NewSession(g.lane)
	if err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	in := s.Inputs()
	p.s, p.out = s, s.Outputs()[0]
	p.tokens, p.pos = raw.I64(in[0]), raw.I64(in[1])
	return nil
}

// promptPlan returns the plan of t tokens (all: with every token's
// logits), compiling it the first time.
func (g *Generator) promptPlan(t int64, all bool) (*stepPlan, error) {
	if g.decode == nil {
		return nil, errGeneratorClosed
	}
	if t == 1 && !all {
		return g.decode, nil
	}
	for i, p := range g.prompts {
		if p.t == t && p.all == all {
			g.prompts = append(slices.Delete(g.prompts, i, i+1), p)
			return p, nil
		}
	}
	p, err := g.compile(t, all)
	if err != nil {
		return nil, err
	}
	if len(g.prompts) == maxPromptPlans {
		// The least recently used goes.
		g.prompts[0].close()
		g.prompts = slices.Delete(g.prompts, 0, 1)
	}
	g.prompts = append(g.prompts, p)
	if err := g.bind(); err != nil {
		g.prompts = g.prompts[:len(g.prompts)-1]
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *stepPlan) close() {
	if p.s != nil {
		p.s.Close()
	}
	p.exe.Close()
	p.m.Close()
}

// CheckPrompt reports whether tokens can be fed at the current position
// (Prefill refuses them otherwise): every id in the vocabulary, and room
// for them all in the rest of the context.
func (g *Generator) CheckPrompt(tokens []int32) error {
	if n := int64(len(tokens)); n > g.context-g.pos {
		return fmt.Errorf("generate: %d tokens at position %d do not fit a context of %d (Reset starts again at 0)", n, g.pos, g.context)
	}
	for i, id := range tokens {
		if id < 0 || int64(id) >= g.cfg.Vocab {
			return fmt.Errorf("generate: token %d (at %d) is not in the vocabulary of %d", id, i, g.cfg.Vocab)
		}
	}
	return nil
}

// run runs p over tokens at the current position and moves it on.
func (g *Generator) run(ctx context.Context, p *stepPlan, tokens []int32) ([]float32, error) {
	if p == nil || p.s == nil {
		// Closed, or a lane change that failed left it without a
		// session.
		return nil, errGeneratorClosed
	}
	for i, id := range tokens {
		p.tokens[i] = int64(id)
	}
	p.pos[0] = g.pos
	logits, err := g.exec(ctx, p)
	if err != nil {
		return nil, err
	}
	g.pos += int64(len(tokens))
	return logits, nil
}

// exec runs p with its inputs in place and returns its logits (in its
// output buffer, valid until the next run).
func (g *Generator) exec(ctx context.Context, p *stepPlan) ([]float32, error) {
	if err := p.s.Run(ctx, nil); err != nil {
		return nil, err
	}
	return raw.F32(p.out), nil
}

// Prefill feeds tokens at the next positions, PrefillChunk at a time,
// and returns the logits of the last one (valid until the generator runs
// again). When all is not nil it must hold len(tokens)·Vocab values: it
// receives the logits of every token, row after row.
func (g *Generator) Prefill(ctx context.Context, tokens []int32, all []float32) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, errors.New("generate: no tokens to feed")
	}
	if err := g.CheckPrompt(tokens); err != nil {
		return nil, err
	}
	v := int(g.cfg.Vocab)
	if all != nil && len(all) < len(tokens)*v {
		return nil, fmt.Errorf("generate: %d values for the logits of %d tokens of %d", len(all), len(tokens), v)
	}
	var logits []float32
	for i := 0; i < len(tokens); i += PrefillChunk {
		chunk := tokens[i:min(len(tokens), i+PrefillChunk)]
		p, err := g.promptPlan(int64(len(chunk)), all != nil)
		if err != nil {
			return nil, err
		}
		if logits, err = g.run(ctx, p, chunk); err != nil {
			return nil, err
		}
		if all != nil {
			copy(all[i*v:], logits)
			logits = logits[len(logits)-v:]
		}
	}
	return logits, nil
}

// Step feeds one token at the next position and returns its logits
// (valid until the generator runs again). It allocates nothing.
func (g *Generator) Step(ctx context.Context, token int32) ([]float32, error) {
	if g.pos >= g.context {
		return nil, fmt.Errorf("generate: the context of %d positions is full (Reset starts again at 0)", g.context)
	}
	if token < 0 || int64(token) >= g.cfg.Vocab {
		return nil, fmt.Errorf("generate: token %d is not in the vocabulary of %d", token, g.cfg.Vocab)
	}
	return g.run(ctx, g.decode, []int32{token})
}

// A Sampler picks the next token from a row of logits, given the tokens
// so far (package sample has one).
type Sampler interface {
	Sample(logits []float32, recent []int32) (int32, error)
}

// Generation is what Generate produces and how: its options.
type Generation struct {
	// MaxTokens is how many tokens to generate at most (0: until the
	// context is full).
	MaxTokens int
	// Sampler picks each token; nil picks the most likely (greedy).
	Sampler Sampler
	// Stop lists tokens that end the generation (a model's end of
	// generation tokens, say); the stop token itself is not yielded.
	Stop []int32
	// PromptLogits, when not nil, receives the logits of every prompt
	// token, row after row: len(prompt)·Vocab values.
	PromptLogits []float32
	// Stats, when not nil, receives the counts and times of the run.
	Stats *GenerationStats
	// CountAllocs counts the heap allocations of the steps into
	// Stats.StepAllocs. It reads the runtime's statistics twice per
	// generation, which stops the world each time: a tool's choice, not a
	// server's.
	CountAllocs bool
}

// GenerationStats are the counts and times of a generation.
type GenerationStats struct {
	PromptTokens    int
	GeneratedTokens int
	Prefill         time.Duration // feeding the prompt
	// Steps is how many tokens were fed one at a time after the prompt
	// (the last token generated is not), and Decode the time from the
	// first step on, sampling and the caller's work between tokens
	// included.
	Steps  int
	Decode time.Duration
	// StepAllocs counts the heap allocations of the AllocSteps steps
	// after the first two (the first may fill the runtime's caches once,
	// the second captures a GPU's graph), the caller's own between tokens
	// included, where Generation.CountAllocs asks for it.
	StepAllocs uint64
	AllocSteps int
}

// settleSteps is how many steps of a generation come before its
// allocations are counted (GenerationStats.StepAllocs).
const settleSteps = 2

// Generate feeds prompt after what the cache holds, then yields each token
// it generates until MaxTokens, a stop token, the end of the context or
// ctx's end; an error ends the sequence as its last pair. Each step
// allocates nothing.
func (g *Generator) Generate(ctx context.Context, prompt []int32, o Generation) iter.Seq2[int32, error] {
	return func(yield func(int32, error) bool) {
		stats := o.Stats
		if stats == nil {
			stats = new(GenerationStats)
		}
		*stats = GenerationStats{PromptTokens: len(prompt)}
		start := time.Now()
		logits, err := g.Prefill(ctx, prompt, o.PromptLogits)
		stats.Prefill = time.Since(start)
		if err != nil {
			yield(0, err)
			return
		}
		recent := make([]int32, 0, len(prompt)+min(max(o.MaxTokens, 0), int(g.context))+1)
		recent = append(recent, prompt...)
		var ms runtime.MemStats
		var allocs uint64
		defer func() {
			if stats.Steps > 0 {
				stats.Decode = time.Since(start)
			}
			if o.CountAllocs && stats.Steps > settleSteps {
				runtime.ReadMemStats(&ms)
				stats.StepAllocs, stats.AllocSteps = ms.Mallocs-allocs, stats.Steps-settleSteps
			}
		}()
		for n := 0; o.MaxTokens <= 0 || n < o.MaxTokens; n++ {
			var id int32
			if o.Sampler != nil {
				if id, err = o.Sampler.Sample(logits, recent); err != nil {
					yield(0, err)
					return
				}
			} else {
				id = int32(argmax(logits))
			}
			if slices.Contains(o.Stop, id) {
				return
			}
			stats.GeneratedTokens++
			if !yield(id, nil) {
				return
			}
			if len(recent) == cap(recent) {
				recent = append(recent[:0], recent[len(recent)/2:]...)
			}
			recent = append(recent, id)
			if g.pos >= g.context || o.MaxTokens > 0 && n+1 == o.MaxTokens {
				return
			}
			if stats.Steps == 0 {
				start = time.Now()
			}
			if logits, err = g.Step(ctx, id); err != nil {
				yield(0, err)
				return
			}
			if stats.Steps++; o.CountAllocs && stats.Steps == settleSteps {
				runtime.ReadMemStats(&ms)
				allocs = ms.Mallocs
			}
		}
	}
}

// argmax is the index of the largest value, the first on ties.
func argmax(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// errGeneratorClosed is the error of a run on a closed generator.
var errGeneratorClosed = errors.New("generate: the generator is closed")

// Close releases the generator's plans and arena: the logits it returned
// become invalid (they are in the arena). Close may be called more than
// once; the generator's runs fail afterwards.
func (g *Generator) Close() error {
	for _, p := range g.plans() {
		if p != nil {
			p.close()
		}
	}
	g.decode, g.prompts = nil, nil
	var errs []error
	if g.lane != nil {
		errs = append(errs, g.lane.Close())
		g.lane = nil
	}
	if g.weights != nil {
		errs = append(errs, g.weights.Close())
		g.weights = nil
	}
	return errors.Join(errs...)
}
