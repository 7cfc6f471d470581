package llm

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// MaxPrompt is the longest prompt Graph builds: its causal mask alone
// is MaxPrompt² float32 values (1 GiB).
const MaxPrompt = 1 << 14

// Graph builds the forward pass of the decoder whose weights are w (its
// config c) over a prompt of t tokens from position 0 (see the package
// comment). The graph's matrix weights are windows of the file's bytes:
// the file must stay open while the graph is in use.
func Graph(w Weights, c Config, t int64) (*ir.Graph, error) {
	if t <= 0 || t > c.Context {
		return nil, fmt.Errorf("%d tokens: the model takes 1 to %d (its context length)", t, c.Context)
	}
	if t > MaxPrompt {
		// The prompt's graph holds its causal mask and each layer's
		// attention scores whole (t² values a head).
		return nil, fmt.Errorf("%d tokens: a prompt takes at most %d", t, MaxPrompt)
	}
	b := newBuilder(w, c, t)
	return b.decoder(true)
}

// StepGraph builds one step of the decoder with a cache of keys and
// values for context positions: t tokens (input "tokens", int64[t]) at
// the positions from pos (input "pos", int64[1], read at run time) on,
// each attending to the cache's rows before it and to itself. Its state
// (ir.Graph.State) is each layer's cache of keys and of values,
// float32[context, KVHeads·HeadDim] ("cache.L.k", "cache.L.v"), which a
// step updates at its positions. Its output "logits" is float32[t,
// vocab], or the last token's alone ([1, vocab]) unless allLogits.
func StepGraph(w Weights, c Config, t, context int64, allLogits bool) (*ir.Graph, error) {
	if context <= 0 || context > c.Context {
		return nil, fmt.Errorf("a context of %d: the model takes 1 to %d positions", context, c.Context)
	}
	if t <= 0 || t > context {
		return nil, fmt.Errorf("%d tokens: a step takes 1 to %d (the context)", t, context)
	}
	b := newBuilder(w, c, t)
	b.context = context
	b.pos = b.g.NewTensor("pos", ir.Int64, ir.Shape{1}, nil)
	b.g.Inputs = append(b.g.Inputs, b.pos)
	width := c.KVHeads * c.HeadDim
	for l := range c.Layers {
		for _, kv := range []string{"k", "v"} {
			id := b.g.NewTensor(fmt.Sprintf("cache.%d.%s", l, kv), ir.Float32, ir.Shape{context, width}, nil)
			b.g.Inputs = append(b.g.Inputs, id)
			b.g.State = append(b.g.State, id)
		}
	}
	return b.decoder(allLogits)
}

// CacheBytes is the bytes of the cache of keys and values StepGraph
// keeps for context positions.
func CacheBytes(c Config, context int64) int64 {
	return 2 * 4 * c.Layers * context * c.KVHeads * c.HeadDim
}

func newBuilder(w Weights, c Config, t int64) *builder {
	b := &builder{g: &ir.Graph{Name: c.Arch, Opsets: map[string]int64{"": ir.LatestOpset}}, w: w, c: c, t: t, pos: ir.NoTensor}
	b.tokens = b.g.NewTensor("tokens", ir.Int64, ir.Shape{t}, nil)
	b.g.Inputs = []ir.TensorID{b.tokens}
	return b
}

// cached reports whether the graph attends over a cache (StepGraph).
func (b *builder) cached() bool { return b.pos != ir.NoTensor }

// decoder adds the layers and the output projection.
func (b *builder) decoder(allLogits bool) (*ir.Graph, error) {
	c := b.c
	h := b.gather("token_embd.weight", b.tokens)
	if c.Arch == "gpt2" {
		return b.finish(b.gpt2(h), allLogits)
	}
	cos, sin := b.rotary()
	mask := ir.NoTensor
	if !b.cached() {
		mask = b.causalMask()
	}
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		x := b.rmsNorm(h, p+"attn_norm.weight")
		q := b.project(x, p+"attn_q")
		k := b.project(x, p+"attn_k")
		v := b.project(x, p+"attn_v")
		a := b.attention(l, q, k, v, cos, sin, mask)
		h = b.op("Add", nil, h, b.matmul(a, p+"attn_output.weight"))
		x = b.rmsNorm(h, p+"ffn_norm.weight")
		gate := b.matmul(x, p+"ffn_gate.weight")
		up := b.matmul(x, p+"ffn_up.weight")
		silu := b.op("Mul", nil, gate, b.op("Sigmoid", nil, gate))
		h = b.op("Add", nil, h, b.matmul(b.op("Mul", nil, silu, up), p+"ffn_down.weight"))
	}
	return b.finish(h, allLogits)
}

// finish adds the final normalisation and the output projection of h
// (output.weight, or the embedding where the file ties them), of its last
// row alone unless allLogits, and returns the graph.
func (b *builder) finish(h ir.TensorID, allLogits bool) (*ir.Graph, error) {
	if !allLogits && b.t > 1 {
		h = b.op("Slice", nil, h, b.int64s(b.t-1), b.int64s(b.t), b.int64s(0))
	}
	if b.c.Arch == "gpt2" {
		h = b.layerNorm(h, "output_norm")
	} else {
		h = b.rmsNorm(h, "output_norm.weight")
	}
	out := "output.weight"
	if _, ok := b.w.Tensor(out); !ok {
		out = "token_embd.weight" // tied to the embedding
	}
	logits := b.matmul(h, out)
	if b.err != nil {
		return nil, b.err
	}
	b.g.Tensor(logits).Name = "logits"
	b.g.Outputs = []ir.TensorID{logits}
	return b.g, nil
}

// gpt2 is GPT-2's layers over the token embeddings h: learned positions,
// LayerNorm before attention and the feed-forward, one fused query, key
// and value projection, the tanh GELU, biases everywhere. It returns the
// normalised output.
func (b *builder) gpt2(h ir.TensorID) ir.TensorID {
	c := b.c
	h = b.op("Add", nil, h, b.gather("position_embd.weight", b.positions()))
	for l := range c.Layers {
		p := fmt.Sprintf("blk.%d.", l)
		x := b.layerNorm(h, p+"attn_norm")
		qkv := b.project(x, p+"attn_qkv")
		split := func(i int64) ir.TensorID {
			return b.op("Slice", nil, qkv, b.int64s(i*c.Dim), b.int64s((i+1)*c.Dim), b.int64s(-1))
		}
		mask := ir.NoTensor
		if !b.cached() {
			mask = b.causalMask()
		}
		a := b.attention(l, split(0), split(1), split(2), ir.NoTensor, ir.NoTensor, mask)
		h = b.op("Add", nil, h, b.project(a, p+"attn_output"))
		x = b.layerNorm(h, p+"ffn_norm")
		h = b.op("Add", nil, h, b.project(b.geluTanh(b.project(x, p+"ffn_up")), p+"ffn_down"))
	}
	return h
}

// layerNorm is LayerNorm over the last axis with name.weight and
// name.bias.
func (b *builder) layerNorm(x ir.TensorID, name string) ir.TensorID {
	attrs := ir.Attrs{"axis": {Kind: ir.AttrInt, Int: -1}, "epsilon": {Kind: ir.AttrFloat, Float: float32(b.c.NormEps)}}
	return b.op("LayerNormalization", attrs, x, b.vector(name+".weight", b.c.Dim), b.vector(name+".bias", b.c.Dim))
}

// geluTanh is GELU's tanh approximation (GPT-2's, and ggml's):
// x/2 · (1 + tanh(√(2/π) · (x + 0.044715·x³))).
func (b *builder) geluTanh(x ir.TensorID) ir.TensorID {
	scalar := func(v float64) ir.TensorID {
		return b.floats(fmt.Sprintf("c_%d", len(b.g.Tensors)), ir.Shape{}, []float32{float32(v)})
	}
	x3 := b.op("Mul", nil, b.op("Mul", nil, x, x), x)
	inner := b.op("Mul", nil, b.op("Add", nil, x, b.op("Mul", nil, x3, scalar(0.044715))), scalar(math.Sqrt(2/math.Pi)))
	t := b.op("Add", nil, b.op("Tanh", nil, inner), scalar(1))
	return b.op("Mul", nil, b.op("Mul", nil, x, t), scalar(0.5))
}

// builder adds nodes to g; the first error sticks in err and later calls
// do nothing of use.
type builder struct {
	g      *ir.Graph
	w      Weights
	c      Config
	t      int64
	tokens ir.TensorID
	// pos is the first position's input in a step over a cache of
	// context rows (StepGraph), and ir.NoTensor in a prompt's graph.
	pos     ir.TensorID
	context int64
	err     error
}

func (b *builder) fail(err error) ir.TensorID {
	if b.err == nil {
		b.err = err
	}
	return b.g.NewTensor("", ir.Float32, nil, nil)
}

// op adds a node of one output and returns the output.
func (b *builder) op(op string, attrs ir.Attrs, inputs ...ir.TensorID) ir.TensorID {
	return b.opIn("", op, attrs, inputs...)
}

func (b *builder) opIn(domain, op string, attrs ir.Attrs, inputs ...ir.TensorID) ir.TensorID {
	i := len(b.g.Nodes)
	y := b.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("%s_%d", op, i), Producer: i})
	b.g.Nodes = append(b.g.Nodes, ir.Node{Name: fmt.Sprintf("%s_%d", op, i), Op: op, Domain: domain, Inputs: inputs, Outputs: []ir.TensorID{y}, Attrs: attrs})
	return y
}

func (b *builder) floats(name string, shape ir.Shape, v []float32) ir.TensorID {
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return b.g.NewTensor(name, ir.Float32, shape, data)
}

func (b *builder) int64s(v ...int64) ir.TensorID {
	data := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(data[8*i:], uint64(x))
	}
	return b.g.NewTensor(fmt.Sprintf("shape_%d", len(b.g.Tensors)), ir.Int64, ir.Shape{int64(len(v))}, data)
}

// tensor returns the weight name, checking its ggml shape (-1: any).
func (b *builder) tensor(name string, ne ...int64) *Tensor {
	t, ok := b.w.Tensor(name)
	if !ok {
		b.fail(fmt.Errorf("the file has no tensor %s", name))
		return nil
	}
	if len(t.Shape) != len(ne) {
		b.fail(fmt.Errorf("%s has shape %v, want %v", t.Name, t.Shape, ne))
		return nil
	}
	for i, d := range ne {
		if d >= 0 && t.Shape[i] != d {
			b.fail(fmt.Errorf("%s has shape %v, want %v", t.Name, t.Shape, ne))
			return nil
		}
	}
	if !t.Format.CanDequantize() {
		b.fail(fmt.Errorf("%s: its type is not supported", t.Name))
		return nil
	}
	return &t
}

// packed is the bytes of t as the uint8 constant a packed operator reads.
func (b *builder) packed(t *Tensor) ir.TensorID {
	return b.g.NewTensor(t.Name, ir.Uint8, ir.Shape{int64(len(t.Data))}, t.Data)
}

// gather looks the rows of ids up in the table name (vocab rows of Dim).
func (b *builder) gather(name string, ids ir.TensorID) ir.TensorID {
	t := b.tensor(name, b.c.Dim, -1)
	if t == nil {
		return b.fail(b.err)
	}
	attrs := ir.Attrs{
		"format": {Kind: ir.AttrString, String: t.Format.String()},
		"rows":   {Kind: ir.AttrInt, Int: t.Shape[1]},
		"cols":   {Kind: ir.AttrInt, Int: t.Shape[0]},
	}
	return b.opIn(ir.BerthDomain, "PackedGather", attrs, b.packed(t), ids)
}

// matmul multiplies x[…, k] by the weight name (rows of k values).
func (b *builder) matmul(x ir.TensorID, name string) ir.TensorID {
	t := b.tensor(name, -1, -1)
	if t == nil {
		return b.fail(b.err)
	}
	attrs := ir.Attrs{
		"format": {Kind: ir.AttrString, String: t.Format.String()},
		"rows":   {Kind: ir.AttrInt, Int: t.Shape[1]},
	}
	return b.opIn(ir.BerthDomain, "PackedMatMul", attrs, x, b.packed(t))
}

// project is the projection name.weight of x, plus name.bias where the
// file has one (qwen2's query, key and value).
func (b *builder) project(x ir.TensorID, name string) ir.TensorID {
	y := b.matmul(x, name+".weight")
	if _, ok := b.w.Tensor(name + ".bias"); ok {
		y = b.op("Add", nil, y, b.vector(name+".bias", -1))
	}
	return y
}

// vector is the file's 1-D tensor name as float32 (n values; -1: any).
func (b *builder) vector(name string, n int64) ir.TensorID {
	t := b.tensor(name, n)
	if t == nil {
		return b.fail(b.err)
	}
	v := make([]float32, t.Shape[0])
	switch t.Format {
	case ggml.F32, ggml.F16, ggml.BF16:
		if err := ggml.Dequantize(t.Format, v, t.Data); err != nil {
			return b.fail(fmt.Errorf("%s: %w", t.Name, err))
		}
	default:
		return b.fail(fmt.Errorf("%s is %s, want f32, f16 or bf16", t.Name, t.Format))
	}
	return b.floats(name, ir.Shape{t.Shape[0]}, v)
}

// rmsNorm is x / sqrt(mean(x²) + ε) · w, over the last axis: one
// operator of berth's (RMSNorm).
func (b *builder) rmsNorm(x ir.TensorID, weight string) ir.TensorID {
	attrs := ir.Attrs{"epsilon": {Kind: ir.AttrFloat, Float: float32(b.c.NormEps)}}
	return b.opIn(ir.BerthDomain, "RMSNorm", attrs, x, b.vector(weight, b.c.Dim))
}

// positions is the tokens' positions: 0 to t-1 in a prompt's graph, and
// from the input pos on in a step's.
func (b *builder) positions() ir.TensorID {
	pos := make([]int64, b.t)
	for i := range pos {
		pos[i] = int64(i)
	}
	if !b.cached() {
		return b.int64s(pos...)
	}
	return b.op("Add", nil, b.pos, b.int64s(pos...))
}

// rotary returns the cosines and sines of the rotary embedding at the
// tokens' positions: [t, 1, HeadDim/2, 1] for adjacent pairs,
// [t, 1, HeadDim/2] for halves (Config.RopeHalves). A step over a cache
// looks them up at its run's positions in a table of the whole context.
func (b *builder) rotary() (cos, sin ir.TensorID) {
	half := b.c.HeadDim / 2
	n := b.t
	if b.cached() {
		n = b.context
	}
	cv, sv := make([]float32, n*half), make([]float32, n*half)
	for p := range n {
		for i := range half {
			theta := float64(p) * math.Pow(b.c.RopeBase, -2*float64(i)/float64(b.c.HeadDim))
			cv[p*half+i], sv[p*half+i] = float32(math.Cos(theta)), float32(math.Sin(theta))
		}
	}
	shape := ir.Shape{b.t, 1, half, 1}
	if b.c.RopeHalves {
		shape = ir.Shape{b.t, 1, half}
	}
	if !b.cached() {
		return b.floats("rope_cos", shape, cv), b.floats("rope_sin", shape.Clone(), sv)
	}
	at := func(name string, v []float32) ir.TensorID {
		table := b.floats(name, ir.Shape{n, half}, v)
		rows := b.op("Gather", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: 0}}, table, b.positions())
		return b.op("Reshape", nil, rows, b.int64s(shape...))
	}
	return at("rope_cos", cv), at("rope_sin", sv)
}

// causalMask is 0 where a position may attend and the lowest float32
// where it attends to a later one: [t, t].
func (b *builder) causalMask() ir.TensorID {
	v := make([]float32, b.t*b.t)
	for i := range b.t {
		for j := i + 1; j < b.t; j++ {
			v[i*b.t+j] = -math.MaxFloat32
		}
	}
	return b.floats("causal_mask", ir.Shape{b.t, b.t}, v)
}

// rotate applies the rotary embedding to x [t, heads, HeadDim]: one
// operator of berth's (Rotary), on adjacent pairs as ggml's normal order
// or on halves (Config.RopeHalves, rotate_half).
func (b *builder) rotate(x ir.TensorID, cos, sin ir.TensorID) ir.TensorID {
	var halves int64
	if b.c.RopeHalves {
		halves = 1
	}
	return b.opIn(ir.BerthDomain, "Rotary", ir.Attrs{"halves": {Kind: ir.AttrInt, Int: halves}}, x, cos, sin)
}

// attention is causal grouped-query attention of layer l's q [t,
// Heads·HeadDim] over k and v [t, KVHeads·HeadDim], q and k rotated first
// unless cos is ir.NoTensor: [t, Heads·HeadDim]. In a step over a cache,
// k and v are written into the layer's cache at the step's positions and
// q attends over the cache.
func (b *builder) attention(l int64, q, k, v, cos, sin, mask ir.TensorID) ir.TensorID {
	c := b.c
	heads := func(x ir.TensorID, n int64) ir.TensorID {
		return b.op("Reshape", nil, x, b.int64s(b.t, n, c.HeadDim))
	}
	perm := func(p ...int64) ir.Attrs { return ir.Attrs{"perm": {Kind: ir.AttrInts, Ints: p}} }
	q, k = heads(q, c.Heads), heads(k, c.KVHeads)
	if cos != ir.NoTensor {
		q, k = b.rotate(q, cos, sin), b.rotate(k, cos, sin)
	}
	if b.cached() {
		flat := func(x ir.TensorID, n int64) ir.TensorID {
			return b.op("Reshape", nil, x, b.int64s(b.t, n*c.HeadDim))
		}
		state := b.g.State[2*l : 2*l+2]
		kc := b.opIn(ir.BerthDomain, "CacheWrite", nil, state[0], flat(k, c.KVHeads), b.pos)
		vc := b.opIn(ir.BerthDomain, "CacheWrite", nil, state[1], v, b.pos)
		attrs := ir.Attrs{
			"heads":    {Kind: ir.AttrInt, Int: c.Heads},
			"kv_heads": {Kind: ir.AttrInt, Int: c.KVHeads},
			"scale":    {Kind: ir.AttrFloat, Float: float32(1 / math.Sqrt(float64(c.HeadDim)))},
		}
		return b.opIn(ir.BerthDomain, "CachedAttention", attrs, flat(q, c.Heads), kc, vc, b.pos)
	}
	q = b.op("Transpose", perm(1, 0, 2), q)
	k = b.op("Transpose", perm(1, 0, 2), k)
	v = b.op("Transpose", perm(1, 0, 2), heads(v, c.KVHeads))
	if g := c.Heads / c.KVHeads; g > 1 {
		// Query head h reads key-value head h / g.
		share := func(x ir.TensorID) ir.TensorID {
			x = b.op("Reshape", nil, x, b.int64s(c.KVHeads, 1, b.t, c.HeadDim))
			x = b.op("Expand", nil, x, b.int64s(c.KVHeads, g, b.t, c.HeadDim))
			return b.op("Reshape", nil, x, b.int64s(c.Heads, b.t, c.HeadDim))
		}
		k, v = share(k), share(v)
	}
	scale := b.floats(fmt.Sprintf("scale_%d", len(b.g.Tensors)), ir.Shape{}, []float32{float32(1 / math.Sqrt(float64(c.HeadDim)))})
	s := b.op("MatMul", nil, q, b.op("Transpose", perm(0, 2, 1), k))
	s = b.op("Add", nil, b.op("Mul", nil, s, scale), mask)
	p := b.op("Softmax", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: -1}}, s)
	o := b.op("Transpose", perm(1, 0, 2), b.op("MatMul", nil, p, v))
	return b.op("Reshape", nil, o, b.int64s(b.t, c.Heads*c.HeadDim))
}
