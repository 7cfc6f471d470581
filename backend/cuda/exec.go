package cuda

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/passes"
	"github.com/berth-ml/berth/plan"
)

// Alignment of every slot in a device arena and of every constant in the
// weight region, in bytes.
const Alignment = 256

// Options tune Compile. The zero value is a sensible default.
type Options struct {
	// CacheDir keeps compiled kernels between processes; "" means
	// os.UserCacheDir()/berth/cuda.
	CacheDir string
	// NoDiskCache compiles every kernel module afresh in each process.
	NoDiskCache bool
	// NoGraphs launches the kernels one by one in every run instead of
	// replaying a CUDA graph captured when the session is made.
	NoGraphs bool
	// NoBLAS runs MatMul, Gemm and Conv on berth's own GEMM kernel even
	// where cuBLAS is installed.
	NoBLAS bool
	// Precision of the GEMMs (MatMul, Gemm, Conv) that cuBLAS runs.
	Precision Precision
	// NoFusion compiles every node on its own: no elementwise groups, no
	// Conv bias left to its readers, no activations held in 16 bits
	// (see fuse.go), no step nodes fused (step.go). BERTH_CUDA_FUSION=0 in
	// the environment does the same.
	NoFusion bool
	// Weights, when set, holds the constants read from the model file:
	// executables of the model for other shapes compiled with the same
	// store upload them once.
	Weights *WeightStore
	// Check, when set, is handed the verified plan and the bytes the
	// weights take on the device before any is uploaded; an error it
	// returns is Compile's (a memory limit).
	Check func(p *plan.Problem, pl *plan.Plan, weightBytes int64) error
	// Bound is the executable of the same model at the bound of its
	// shapes. Where this graph's steps are its steps and every tensor
	// fits its slot there, the plan keeps its offsets (plan.Refit), so
	// that sessions of both can share one arena (NewSessionOn).
	Bound *Executable
}

// Precision is the arithmetic of the GEMMs (MatMul, Gemm, Conv) that
// cuBLAS runs. At BF16 and F16 constant weights are kept as 16-bit shadow
// copies in the weight region (rounded to nearest even at compile time),
// activations are rounded into the node's planned scratch by a small
// kernel before each GEMM; with fusion (fuse.go) producers write GEMM
// operands in 16 bits directly, and a GEMM whose output only generated
// elementwise kernels read writes it in 16 bits, as autocast does. F16
// has more mantissa and less range than BF16: values beyond ±65504 become
// infinite.
type Precision = backend.Precision

// The precisions.
const (
	FP32 = backend.FP32
	TF32 = backend.TF32
	BF16 = backend.BF16
	F16  = backend.F16
)

// dnnProbe is whether cuDNN plans a convolution on this process's device
// (driver.ProbeDNN), asked once.
var dnnProbe struct {
	once sync.Once
	ok   bool
}

// dnnWorks reports whether convolutions may go to cuDNN on d: it loads,
// and plans one.
func dnnWorks(d *driver.Device) bool {
	dnnProbe.once.Do(func() {
		dnnProbe.ok = driver.LoadDNN() == nil && d.Do(driver.ProbeDNN) == nil
	})
	return dnnProbe.ok
}

// blasWorkspace is the device workspace each session gives cuBLAS.
const blasWorkspace = 32 << 20

// dnnWorkspace is the device workspace each lane gives cuDNN where its
// sessions have convolutions on it: the fastest algorithms of some
// (ResNet-50's stem, at batch 32) ask for tens of megabytes.
const dnnWorkspace = 256 << 20

// blasOn reports whether cuBLAS is installed and not turned off
// (BERTH_CUDA_BLAS=0 runs the products on berth's own GEMM, as NoBLAS).
func blasOn() bool { return os.Getenv("BERTH_CUDA_BLAS") != "0" && driver.LoadBLAS() == nil }

// region says which device buffer an address lies in.
type region uint8

const (
	inArena   region = iota
	inWeights        // the executable's own weights
	inWords
	inDevice // a device address of its own (a WeightStore's copy)
)

// boundArg is an argument with its address resolved to a region and offset.
type boundArg struct {
	region region
	off    int64
	words  []uint64
}

// step is one launch ready to bind to a session's arena.
type step struct {
	node        int
	fn          driver.Function
	kernel      string // the kernel fn is
	grid, block [3]uint32
	shared      uint32
	args        []boundArg
	blas        *blasGemm       // a cuBLAS GEMM instead of a kernel
	dnn         *driver.DNNConv // a cuDNN convolution instead of a kernel (args x, w, y[, bias[, z]])
	early       bool            // launched early (driver.LaunchEarlyWith)
}

// library reports whether the step calls a library (cuBLAS, cuBLASLt,
// cuDNN) instead of launching a kernel.
func (st *step) library() bool { return st.blas != nil || st.dnn != nil }

// planned reports whether a session plans the step with its library
// (planLibraries): a cuBLASLt product or a cuDNN convolution.
func (st *step) planned() bool { return st.dnn != nil || st.blas != nil && st.blas.epilogue != 0 }

// Executable is a graph compiled for the GPU: kernels, their launch
// parameters in plan order, a verified memory plan and the weights in
// device memory, shared by all its sessions.
type Executable struct {
	dev     *driver.Device
	g       *ir.Graph
	problem *plan.Problem
	plan    *plan.Plan
	index   []int   // ir.TensorID → problem tensor (-1: constant)
	scratch []int64 // each node's scratch, in bytes (boundScratch)
	// folded says of each node whether its product left its parts to the
	// readers of its output (fusion.parts), which a compile with this
	// executable as Options.Bound keeps.
	folded []bool
	steps  []step

	weights     driver.Ptr
	weightBytes int64

	inputs  []int64  // arena offset of each graph input (-1: none, or state)
	reused  []bool   // each graph input whose bytes the plan gives to a later tensor
	state   []bool   // by graph input: state (ir.Graph.State), kept in the arena
	outputs []output // where each graph output is read from

	planTime  time.Duration
	frontTime time.Duration // of the compile, in front
	noGraphs  bool
	usesBLAS  bool
	precision Precision
	fused     FusionStats

	mu     sync.Mutex
	closed bool
}

// output is a graph output: an arena slot, or a constant known on the host.
type output struct {
	off   int64
	bytes int64
	data  []byte // a constant output
}

// Compile compiles g (shape-inferred and folded, constants with Data) for
// CUDA device 0. Unsupported operators or types are errors naming the node;
// without CUDA the error wraps driver.ErrUnavailable.
func Compile(g *ir.Graph, opts Options) (exe *Executable, err error) {
	d, err := Device()
	if err != nil {
		return nil, err
	}
	t := target{sms: d.SMs, major: d.Major, blas: !opts.NoBLAS && blasOn()}
	if t.blas && opts.Precision.Half() && fusionOn(opts) {
		// BERTH_CUDA_LT=0 keeps the products and their Adds apart.
		t.lt = os.Getenv("BERTH_CUDA_LT") != "0" && driver.LoadLt() == nil
		// BERTH_CUDA_DNN=0 keeps convolutions off cuDNN.
		t.dnn = os.Getenv("BERTH_CUDA_DNN") != "0" && dnnWorks(d)
	}
	frontStart := time.Now()
	f, err := front(g, opts, t)
	if err != nil {
		return nil, err
	}
	frontTime := time.Since(frontStart)
	g, p, pl, index, built, scratch, extras, hs := f.g, f.p, f.pl, f.index, f.built, f.scratch, f.extras, f.hs
	e := &Executable{dev: d, g: g, problem: p, plan: pl, index: index, scratch: scratch, folded: f.folded(), noGraphs: opts.NoGraphs, precision: opts.Precision, planTime: f.planTime, frontTime: frontTime}
	if fz := f.fz; fz != nil {
		e.fused = fz.stats()
		for _, n := range g.Nodes {
			if n.Op == "Attend" && n.Domain == cudaDomain {
				e.fused.Attentions++
			}
		}
	}
	scratchOf := f.scratchOf

	// The weight region: every constant a launch reads, then the extras;
	// those of the model file that a store holds lie there instead.
	constOff := make(map[ir.TensorID]int64)
	constAt := make(map[ir.TensorID]driver.Ptr)
	extraOff := make([]int64, len(extras))
	extraAt := make(map[int]driver.Ptr)
	var wsize int64
	for _, c := range built {
		for _, l := range c.launches {
			for _, a := range l.args {
				if a.kind == argTensor && g.Tensor(a.id).IsConst() {
					if _, ok := constOff[a.id]; ok {
						continue
					}
					if _, ok := constAt[a.id]; ok {
						continue
					}
					if opts.Weights.holds(g.Tensor(a.id).Data) {
						constAt[a.id] = 0
						continue
					}
					constOff[a.id] = wsize
					wsize += plan.AlignUp(int64(len(g.Tensor(a.id).Data)), Alignment)
				}
			}
		}
	}
	for i, b := range extras {
		if hs != nil && hs.from[i] != nil {
			extraAt[i] = 0
			continue
		}
		extraOff[i] = wsize
		wsize += plan.AlignUp(int64(len(b)), Alignment)
	}
	// The weights this executable reads: its own region, and what it
	// reads of the store (shared with the model's other executables).
	e.weightBytes = wsize
	for id := range constAt {
		e.weightBytes += plan.AlignUp(int64(len(g.Tensor(id).Data)), Alignment)
	}
	for i := range extraAt {
		e.weightBytes += plan.AlignUp(hs.form[i].size(len(hs.from[i])), Alignment)
	}
	if opts.Check != nil {
		if err := opts.Check(p, pl, e.weightBytes); err != nil {
			return nil, err
		}
	}
	// Where the store has every copy already (a model's plans at other
	// shapes made them), no trip to the device's thread.
	missing := false
	for id := range constAt {
		p, ok := opts.Weights.placed(g.Tensor(id).Data, FP32, krscForm{})
		constAt[id], missing = p, missing || !ok
	}
	for i := range extraAt {
		p, ok := opts.Weights.placed(hs.from[i], hs.prec, hs.form[i])
		extraAt[i], missing = p, missing || !ok
	}
	if missing {
		err := d.Do(func() error {
			for id := range constAt {
				data := g.Tensor(id).Data
				p, err := opts.Weights.place(data, FP32, krscForm{}, func() []byte { return data })
				if err != nil {
					return err
				}
				constAt[id] = p
			}
			for i := range extraAt {
				f := hs.form[i]
				p, err := opts.Weights.place(hs.from[i], hs.prec, f, func() []byte { return f.bytes(hs.from[i], hs.prec) })
				if err != nil {
					return err
				}
				extraAt[i] = p
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	// Bind every launch's arguments to regions, in plan order.
	// Kernels marked early start before the one ahead of them ends where
	// the device has programmatic dependent launch (BERTH_CUDA_PDL=0: never).
	early := d.Major >= 9 && os.Getenv("BERTH_CUDA_PDL") != "0" && driver.EarlyLaunches()
	cacheDir := opts.CacheDir
	if cacheDir == "" {
		cacheDir = defaultCacheDir()
	}
	if opts.NoDiskCache {
		cacheDir = ""
	}
	for _, i := range pl.Order {
		for _, l := range built[i].launches {
			st := step{node: i, grid: l.grid, block: l.block, shared: l.shared, args: make([]boundArg, len(l.args)), blas: l.blas, dnn: l.dnn, early: l.early && early}
			for j, a := range l.args {
				switch a.kind {
				case argWords:
					st.args[j] = boundArg{region: inWords, words: a.words}
				case argTensor:
					if p, ok := constAt[a.id]; ok {
						st.args[j] = boundArg{region: inDevice, off: int64(p) + a.off}
					} else if g.Tensor(a.id).IsConst() {
						st.args[j] = boundArg{region: inWeights, off: constOff[a.id] + a.off}
					} else {
						st.args[j] = boundArg{region: inArena, off: pl.Offsets[index[a.id]] + a.off}
					}
				case argScratch:
					t := scratchOf[i]
					if t < 0 {
						return nil, fmt.Errorf("node %q (%s): internal error: no scratch planned", g.Nodes[i].Name, g.Nodes[i].Op)
					}
					st.args[j] = boundArg{region: inArena, off: pl.Offsets[t] + a.off}
				case argScratchOf:
					// readScratches checked that the node has one.
					st.args[j] = boundArg{region: inArena, off: pl.Offsets[scratchOf[a.node]] + a.off}
				case argExtra:
					if p, ok := extraAt[int(a.id)]; ok {
						st.args[j] = boundArg{region: inDevice, off: int64(p) + a.off}
					} else {
						st.args[j] = boundArg{region: inWeights, off: extraOff[a.id] + a.off}
					}
				}
			}
			if l.elideIfAlias && st.args[0].region == st.args[1].region && st.args[0].region != inWords && st.args[0].off == st.args[1].off {
				continue
			}
			if st.library() {
				// cuDNN has a handle and a workspace of its own
				// (planLibraries), not cuBLAS's.
				e.usesBLAS = e.usesBLAS || l.blas != nil
				e.steps = append(e.steps, st)
				continue
			}
			f, err := function(d, l.module, l.kernel, cacheDir)
			if err != nil {
				return nil, fmt.Errorf("node %q (%s): %w", g.Nodes[i].Name, g.Nodes[i].Op, err)
			}
			st.fn, st.kernel = f, l.kernel
			e.steps = append(e.steps, st)
		}
	}
	e.steps = quantiseInAttention(e.steps)

	// Graph inputs and outputs.
	// State (the plan puts it at the arena's first bytes) stays on the
	// device from run to run: it is neither staged nor copied in.
	e.inputs = make([]int64, len(g.Inputs))
	e.state = make([]bool, len(g.Inputs))
	for k, id := range g.Inputs {
		e.inputs[k] = -1
		e.state[k] = slices.Contains(g.State, id)
		if j := index[id]; j >= 0 && !e.state[k] {
			e.inputs[k] = pl.Offsets[j]
		}
	}
	e.reused = reusedInputs(g, p, pl, index, e.state)
	e.outputs = make([]output, len(g.Outputs))
	for k, id := range g.Outputs {
		t := g.Tensor(id)
		if t.IsConst() {
			e.outputs[k] = output{off: -1, bytes: int64(len(t.Data)), data: t.Data}
			continue
		}
		e.outputs[k] = output{off: pl.Offsets[index[id]], bytes: t.Bytes()}
	}

	// Upload the weights, one allocation for all (none where a store holds
	// them all: no trip to the device's thread).
	if wsize == 0 {
		return e, nil
	}
	err = d.Do(func() error {
		w, err := driver.Alloc(wsize)
		if err != nil {
			return fmt.Errorf("allocating %d bytes of weights: %w", wsize, err)
		}
		for id, off := range constOff {
			if err := driver.CopyToDevice(w+driver.Ptr(off), g.Tensor(id).Data); err != nil {
				driver.Free(w)
				return fmt.Errorf("uploading weights: %w", err)
			}
		}
		for i, b := range extras {
			if _, ok := extraAt[i]; ok {
				continue
			}
			if err := driver.CopyToDevice(w+driver.Ptr(extraOff[i]), b); err != nil {
				driver.Free(w)
				return fmt.Errorf("uploading weights: %w", err)
			}
		}
		e.weights = w
		return nil
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// target is what the front of Compile (front) needs to know of the
// device and its libraries.
type target struct {
	sms   int  // multiprocessors
	major int  // major version of the compute capability
	blas  bool // cuBLAS runs the GEMMs (installed, not turned off)
	// lt and dnn say, for 16-bit products with fusion, that cuBLASLt and
	// cuDNN are installed and not turned off (BERTH_CUDA_LT=0,
	// BERTH_CUDA_DNN=0).
	lt, dnn bool
}

// fusionOn reports whether Compile fuses with opts (Options.NoFusion,
// BERTH_CUDA_FUSION=0).
func fusionOn(opts Options) bool {
	return !opts.NoFusion && os.Getenv("BERTH_CUDA_FUSION") != "0"
}

// compiled is what front leaves for Compile to bind to the device: the
// graph as the rewrites left it, each node's launches and scratch, the
// constants made at compile time, the 16-bit operands' state, the fusion
// decisions and the verified plan.
type compiled struct {
	g        *ir.Graph
	built    []*buildContext
	scratch  []int64
	extras   [][]byte
	hs       *halves
	fz       *fusion
	p        *plan.Problem
	index    []int
	pl       *plan.Plan
	planTime time.Duration
	// scratchOf is each node's scratch tensor of p (-1: none).
	scratchOf []int
	// refit is why plan.Refit did not serve, where opts.Bound was set
	// (nil: the plan is the bound's, refit).
	refit error
}

// front is the part of Compile that needs no device, for one as t
// describes: it rewrites g (recurrent nodes lowered, products and
// attention fused, …), decides the fusion, builds every node's launches,
// and plans the arena: opts.Bound's plan refit where it serves (its
// GEMMs split no further than that executable's scratch holds), else a
// plan placed afresh and verified. Groups the plan does not allow are
// built again node by node.
func front(g *ir.Graph, opts Options, t target) (*compiled, error) {
	// No recurrent kernels here: LSTM, GRU and RNN nodes run as the
	// products and elementwise nodes of their equations.
	g = passes.LowerRecurrent(g)
	fusing := fusionOn(opts)
	if fusing {
		g = fuseProducts(g)
	}
	useBLAS := t.blas
	var hs *halves
	if useBLAS && opts.Precision.Half() {
		hs = &halves{prec: opts.Precision, shadow: make(map[ir.TensorID]int), store: opts.Weights, from: make(map[int][]byte), mma: t.major >= 8}
		hs.lt = fusing && t.lt
		hs.dnn = fusing && t.dnn
		if fusing && hs.mma {
			g = fuseAttention(g)
		}
		if hs.dnn && nhwcOn {
			// Channels-last, a Concat of the channels is a copy of
			// its own: the two convolutions are cheaper (nhwc.go).
			g = passes.SplitPointwiseSums(g)
		}
		// BERTH_CUDA_CONVACT=0 keeps convolutions' bias, addend and
		// ReLU in generated kernels.
		if hs.dnn && os.Getenv("BERTH_CUDA_CONVACT") != "0" {
			g = fuseConvActs(g, hs, acceptsHalf(g, t.sms, hs))
		}
		if fusing {
			g = roundShared(g)
		}
		if hs.lt {
			g = fuseEpilogues(g)
			// BERTH_CUDA_QKV=0 keeps an attention's three projections
			// apart.
			if hs.mma && os.Getenv("BERTH_CUDA_QKV") != "0" {
				g = mergeProjections(g)
			}
		}
		if fusing {
			g = roundAtNorm(g)
		}
	}
	f := &compiled{g: g, built: make([]*buildContext, len(g.Nodes)), scratch: make([]int64, len(g.Nodes)), hs: hs}
	if fusing {
		f.fz = analyzeFusion(g, useBLAS, hs, acceptsHalf(g, t.sms, hs))
		if hs != nil {
			hs.stored = f.fz.half
		}
	}
	room := boundScratch(g, opts.Bound)
	build := func(i int) (*buildContext, error) {
		r, fold := int64(-1), int8(-1)
		if room != nil {
			r, fold = room[i], 0
			if opts.Bound.folded[i] {
				fold = 1
			}
		}
		return buildNodeIn(g, i, t.sms, useBLAS, &f.extras, hs, f.fz, r, fold)
	}
	for i := range g.Nodes {
		c, err := build(i)
		if err != nil {
			return nil, err
		}
		f.built[i], f.scratch[i] = c, c.scratch
	}
	var err error
	if f.p, f.index, err = problemOf(g, f.scratch); err != nil {
		return nil, err
	}
	f.scratchOf = plan.ScratchTensors(f.p, f.index, f.scratch)
	if err := readScratches(f.p, f.built, f.scratchOf); err != nil {
		return nil, err
	}
	// The kernels take their operands as __restrict__ pointers, so no
	// output may share bytes with an input: no in-place placement here.
	popts := plan.Options{Alignment: Alignment, NoInPlace: true}
	planStart := time.Now()
	if b := opts.Bound; b != nil {
		f.pl, f.refit = plan.Refit(f.p, b.problem, b.plan, popts)
	}
	// A plan Refit returns has passed plan.Verify; one built is checked.
	built := f.pl == nil
	if built {
		if f.pl, err = plan.Build(f.p, popts); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	f.planTime = time.Since(planStart)
	if built {
		if err := plan.Verify(f.p, f.pl); err != nil {
			return nil, fmt.Errorf("plan failed verification: %w", err)
		}
	}
	if fz := f.fz; fz != nil {
		// Groups whose kernel the plan does not allow run node by node.
		for _, i := range fz.checkGroups(g, f.p, f.pl, f.index, f.scratchOf) {
			c, err := build(i)
			if err != nil {
				return nil, err
			}
			if c.scratch != f.scratch[i] {
				return nil, fmt.Errorf("node %q (%s): internal error: scratch changed with fusion", g.Nodes[i].Name, g.Nodes[i].Op)
			}
			f.built[i] = c
		}
		// A group split there may read a product's parts at a step of
		// its own, before the sink the plan keeps them for.
		if err := scratchesLive(f.pl, f.built, f.scratchOf); err != nil {
			return nil, err
		}
		if src := fz.gen.finish(); src != nil {
			for _, c := range f.built {
				for j := range c.launches {
					if c.launches[j].module == fz.gen.src {
						c.launches[j].module = src
					}
				}
			}
		}
	}
	return f, nil
}

// folded is Executable.folded of f.
func (f *compiled) folded() []bool {
	out := make([]bool, len(f.g.Nodes))
	if f.fz != nil {
		for _, sp := range f.fz.parts {
			out[sp.node] = true
		}
	}
	return out
}

// boundScratch is the scratch each node took in b, the executable at the
// bound of g's shapes, where b's graph has g's nodes (the same operators
// in the same order); else nil. A node of g keeps within it (gemm), so
// that its scratch fits its slot in b's plan.
func boundScratch(g *ir.Graph, b *Executable) []int64 {
	if b == nil || b.g == nil || len(b.g.Nodes) != len(g.Nodes) || len(b.scratch) != len(g.Nodes) || len(b.folded) != len(g.Nodes) {
		return nil
	}
	for i := range g.Nodes {
		if n, m := &g.Nodes[i], &b.g.Nodes[i]; n.Op != m.Op || n.Domain != m.Domain {
			return nil
		}
	}
	return b.scratch
}

// readScratches adds to each step of p the scratch tensors (scratchOf:
// by node) of other nodes that its launches read (argScratchOf: the parts
// of a split product), so that the plan keeps them until then.
func readScratches(p *plan.Problem, built []*buildContext, scratchOf []int) error {
	for i, c := range built {
		for _, l := range c.launches {
			for _, a := range l.args {
				if a.kind != argScratchOf {
					continue
				}
				if a.node < 0 || a.node >= len(scratchOf) || scratchOf[a.node] < 0 {
					return fmt.Errorf("node %d: internal error: reads the scratch of node %d, which has none", i, a.node)
				}
				if t := scratchOf[a.node]; !slices.Contains(p.Steps[i].Inputs, t) {
					p.Steps[i].Inputs = append(p.Steps[i].Inputs, t)
				}
			}
		}
	}
	return nil
}

// scratchesLive checks that each launch reading another node's scratch
// (argScratchOf) runs after that node wrote it and while the plan pl
// keeps its slot (pl.Start and pl.End: readScratches made a later step
// read it), so that the launch reads it as that node left it.
func scratchesLive(pl *plan.Plan, built []*buildContext, scratchOf []int) error {
	pos := make([]int, len(built))
	for q, s := range pl.Order {
		pos[s] = q
	}
	for i, c := range built {
		for _, l := range c.launches {
			for _, a := range l.args {
				if a.kind != argScratchOf {
					continue
				}
				if t := scratchOf[a.node]; pl.Start[t] >= pos[i] || pl.End[t] < pos[i] {
					return fmt.Errorf("node %d: internal error: reads the scratch of node %d where the plan does not keep it", i, a.node)
				}
			}
		}
	}
	return nil
}

// problemOf is the planning problem of g (plan.FromGraph) with the state
// updates of this backend's own nodes marked, as FromGraph marks
// CacheWrite's.
func problemOf(g *ir.Graph, scratch []int64) (*plan.Problem, []int, error) {
	p, index, err := plan.FromGraph(g, scratch)
	if err != nil {
		return nil, nil, fmt.Errorf("plan: %w", err)
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		for _, u := range stateUpdates(n) {
			in, out := index[n.Inputs[u[0]]], index[n.Outputs[u[1]]]
			if in < 0 || out < 0 || p.Tensors[out].Size != p.Tensors[in].Size {
				return nil, nil, fmt.Errorf("node %q (%s): internal error: update %v of no state", n.Name, n.Op, u)
			}
			p.Tensors[out].SetAlias(in)
			p.Steps[i].Updates = append(p.Steps[i].Updates, out)
		}
	}
	return p, index, nil
}

// reusedInputs reports, for each graph input of g (but state), whether
// the plan pl of p lays another tensor over some of its bytes, which a
// run then overwrites once the input is read: kernels replayed without
// their inputs copied in again (KernelTime, StepTimes) would read what
// that tensor left there.
func reusedInputs(g *ir.Graph, p *plan.Problem, pl *plan.Plan, index []int, state []bool) []bool {
	reused := make([]bool, len(g.Inputs))
	for k, id := range g.Inputs {
		j := index[id]
		if j < 0 || state[k] {
			continue
		}
		lo, hi := pl.Offsets[j], pl.Offsets[j]+p.Tensors[j].Size
		for t := range p.Tensors {
			root := t
			for p.Tensors[root].Alias() >= 0 {
				root = p.Tensors[root].Alias()
			}
			if root == j || p.Tensors[t].Size == 0 {
				continue
			}
			if pl.Offsets[t] < hi && lo < pl.Offsets[t]+p.Tensors[t].Size {
				reused[k] = true
				break
			}
		}
	}
	return reused
}

// inputBytes is the staging graph input i takes: none for state.
func (e *Executable) inputBytes(i int) int64 {
	if e.state[i] {
		return 0
	}
	return e.g.Tensor(e.g.Inputs[i]).Bytes()
}

// StateSlots gives the arena offset and size of each state tensor
// (ir.Graph.State), in order: the arena's first bytes. A session's state
// lives there from run to run; the executables whose state lies alike
// share it when their sessions share a lane.
func (e *Executable) StateSlots() (offsets, sizes []int64) {
	for _, id := range e.g.State {
		j := e.index[id]
		offsets = append(offsets, e.plan.Offsets[j])
		sizes = append(sizes, e.problem.Tensors[j].Size)
	}
	return offsets, sizes
}

// StagingBytes is the page-locked staging a session of e takes: its
// inputs (state aside) and outputs.
func (e *Executable) StagingBytes() int64 { return e.stagingBytes() }

// ArenaBytes is the size of each session's device arena: the plan's.
func (e *Executable) ArenaBytes() int64 { return e.plan.ArenaBytes }

// WeightBytes is the size of the device weight region.
func (e *Executable) WeightBytes() int64 { return e.weightBytes }

// Launches is the number of kernel launches of one run.
func (e *Executable) Launches() int { return len(e.steps) }

// Plan returns the memory plan and the problem it solves (read-only).
func (e *Executable) Plan() (*plan.Problem, *plan.Plan) { return e.problem, e.plan }

// Fusion reports what fuse.go did to this executable.
func (e *Executable) Fusion() FusionStats { return e.fused }

// DeviceName names the GPU.
func (e *Executable) DeviceName() string { return e.dev.Name }

// Close frees the weights. Sessions must be closed before.
func (e *Executable) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	w := e.weights
	e.weights = 0
	if w == 0 {
		return nil
	}
	return e.dev.Do(func() error { return driver.Free(w) })
}

// Session runs the executable in the arena of its lane.
type Session struct {
	exe     *Executable
	lane    *Lane
	ownLane bool // made by NewSession: Close closes the lane too
	runs    int  // runs so far (the second captures the graph)
	pending bool // a run queued work it did not wait for (it failed)
	// noCapture is set when capture failed: the session launches one
	// by one.
	noCapture bool
	arena     driver.Ptr
	bytes     int64
	stream    driver.Stream
	graph     driver.Graph         // the captured launches; 0: launch one by one
	stage     []byte               // page-locked staging for the inputs and outputs (Go memory)
	inView    [][]byte             // each input's bytes in stage
	outView   [][]byte             // each output's bytes in stage
	inAt      []int64              // offset of each input in stage
	outAt     []int64              // offset of each output in stage
	params    [][]unsafe.Pointer   // per step, one pointer to each argument's value
	values    []uint64             // the device addresses the params point to
	blas      driver.BLAS          // the lane's cuBLAS handle, on its stream
	gemms     []driver.Args        // per step, the arguments of a cuBLAS GEMM (nil: a kernel)
	libs      []libraryCall        // per step, a cuBLASLt product or a cuDNN convolution (nil: none)
	hot       driver.Args          // the argument block of the calls each run makes
	config    *driver.LaunchConfig // the configuration of early launches
	run       func() error
	in        [][]byte
	out       [][]byte
	mu        sync.Mutex
	closed    bool
}

// ErrBusy is returned by Run when the session is already running.
var ErrBusy = errors.New("session is already running")

// ErrClosed is returned by Run on a closed session.
var ErrClosed = errors.New("session is closed")

// NewSession allocates a device arena of exactly the plan's size, a
// stream and page-locked staging (a Lane of its own) and binds every
// launch to them. Its second run captures all the launches of a run
// into one CUDA graph that later runs replay, unless Options.NoGraphs.
func (e *Executable) NewSession() (*Session, error) {
	l, err := e.newLane(e.plan.ArenaBytes, e.stagingBytes(), e.usesBLAS)
	if err != nil {
		return nil, err
	}
	s, err := e.NewSessionOn(l)
	if err != nil {
		l.Close()
		return nil, err
	}
	s.ownLane = true
	return s, nil
}

// A Lane is what sessions run on: a stream, a cuBLAS handle with its
// workspace, an arena and page-locked staging for inputs and outputs.
// Sessions of a model's executables for several shapes made on one lane
// (NewSessionOn) share all of it and run one at a time, so a session for
// a new shape allocates nothing on the device.
type Lane struct {
	dev    *driver.Device
	stream driver.Stream
	arena  driver.Ptr
	bytes  int64
	stage  []byte
	blas   driver.BLAS
	lt     driver.LtHandle // cuBLASLt's, made with the first session whose products need it
	dnn    driver.DNN      // cuDNN's, made with the first session whose convolutions need it
	dnnWS  driver.Ptr      // cuDNN's workspace (dnnWorkspace bytes), made with its handle
	work   driver.Ptr      // the workspace of cuBLAS and cuBLASLt (one stream: one at a time)
	prec   Precision       // the math mode the handle was set up for
	closed bool
}

// NewLane makes a lane for the sessions of bound (the executable at the
// bound of the model's shapes) and of the executables for shapes within
// it: an arena of bound's size and staging for its inputs and outputs.
func NewLane(bound *Executable) (*Lane, error) {
	return bound.newLane(bound.plan.ArenaBytes, bound.stagingBytes(), bound.usesBLAS)
}

// NewLaneFor makes a lane for the sessions of every executable of exes:
// an arena and staging of the largest's size. Where from is not nil, the
// first keep bytes of its arena (state, say) are copied into the new
// lane's.
func NewLaneFor(exes []*Executable, from *Lane, keep int64) (*Lane, error) {
	if len(exes) == 0 {
		return nil, errors.New("new lane: no executables")
	}
	var arena, staging int64
	blas := false
	for _, e := range exes {
		arena, staging = max(arena, e.plan.ArenaBytes), max(staging, e.stagingBytes())
		blas = blas || e.usesBLAS
	}
	l, err := exes[0].newLane(arena, staging, blas)
	if err != nil || from == nil || keep <= 0 {
		return l, err
	}
	if keep > from.bytes || keep > l.bytes {
		l.Close()
		return nil, fmt.Errorf("new lane: %d bytes to keep, the arenas hold %d and %d", keep, from.bytes, l.bytes)
	}
	err = l.dev.Do(func() error {
		if err := from.stream.Synchronize(); err != nil {
			return err
		}
		return driver.CopyDevice(l.arena, from.arena, keep)
	})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("new lane: %w", err)
	}
	return l, nil
}

func (e *Executable) newLane(arena, staging int64, blas bool) (*Lane, error) {
	l := &Lane{dev: e.dev, bytes: arena, prec: e.precision}
	err := e.dev.Do(func() error {
		var err error
		if l.arena, err = driver.Alloc(arena); err != nil {
			return fmt.Errorf("allocating the %d-byte arena: %w", arena, err)
		}
		if l.stream, err = driver.NewStream(); err != nil {
			return fmt.Errorf("creating a stream: %w", err)
		}
		if l.stage, err = driver.NewPinned(staging); err != nil {
			return fmt.Errorf("allocating %d bytes of pinned staging: %w", staging, err)
		}
		if blas {
			return l.setupBLAS()
		}
		return nil
	})
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// stagingBytes is the page-locked staging a session needs (stagingLayout).
func (e *Executable) stagingBytes() int64 {
	_, _, n := e.stagingLayout()
	return n
}

// stagingLayout lays out a session's staging: every input, then every
// output, each 64-byte aligned; it returns their offsets and the total.
func (e *Executable) stagingLayout() (inAt, outAt []int64, n int64) {
	inAt = make([]int64, len(e.inputs))
	for i := range e.g.Inputs {
		inAt[i] = n
		n += plan.AlignUp(e.inputBytes(i), 64)
	}
	outAt = make([]int64, len(e.outputs))
	for i, o := range e.outputs {
		outAt[i] = n
		n += plan.AlignUp(o.bytes, 64)
	}
	return inAt, outAt, n
}

// setupBLAS makes the lane's cuBLAS handle: on its stream, with a
// workspace of its own so that nothing is allocated during capture, in the
// lane's precision. It runs on the owner thread.
func (l *Lane) setupBLAS() error {
	h, err := driver.NewBLAS()
	if err != nil {
		return err
	}
	l.blas = h
	if l.work, err = driver.Alloc(blasWorkspace); err != nil {
		return fmt.Errorf("allocating cuBLAS's workspace: %w", err)
	}
	mode := driver.DefaultMath
	if l.prec == TF32 {
		mode = driver.TF32Math
	}
	if err := h.SetStream(l.stream); err != nil {
		return fmt.Errorf("cublasSetStream: %w", err)
	}
	if err := h.SetWorkspace(l.work, blasWorkspace); err != nil {
		return fmt.Errorf("cublasSetWorkspace: %w", err)
	}
	if err := h.SetMathMode(mode); err != nil {
		return fmt.Errorf("cublasSetMathMode: %w", err)
	}
	return nil
}

// Bytes is the size of the lane's arena.
func (l *Lane) Bytes() int64 { return l.bytes }

// Close frees the lane. Its sessions must be closed before.
func (l *Lane) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	return l.dev.Do(func() error {
		var errs []error
		if l.stream != 0 {
			errs = append(errs, l.stream.Synchronize())
		}
		errs = append(errs, l.dnn.Destroy(), driver.Free(l.dnnWS), l.lt.Destroy(), l.blas.Destroy(), driver.Free(l.work))
		if l.stream != 0 {
			errs = append(errs, l.stream.Destroy())
		}
		errs = append(errs, driver.Free(l.arena), driver.Unpin(l.stage))
		return errors.Join(errs...)
	})
}

// ErrLaneTooSmall is returned by NewSessionOn when the executable's plan,
// staging or precision does not fit the lane.
var ErrLaneTooSmall = backend.ErrLaneTooSmall

// NewSessionOn makes a session of e on the lane l: the arena, stream and
// staging are the lane's. The error wraps ErrLaneTooSmall where e's arena
// or staging is larger than the lane's.
func (e *Executable) NewSessionOn(l *Lane) (*Session, error) {
	if l.closed {
		return nil, errors.New("new session: the lane is closed")
	}
	inAt, outAt, staging := e.stagingLayout()
	if e.plan.ArenaBytes > l.bytes || staging > int64(len(l.stage)) || e.usesBLAS && l.blas != 0 && l.prec != e.precision {
		return nil, fmt.Errorf("new session: %w (arena %d bytes, the lane's %d)", ErrLaneTooSmall, e.plan.ArenaBytes, l.bytes)
	}
	if e.usesBLAS && l.blas == 0 {
		l.prec = e.precision
		if err := e.dev.Do(l.setupBLAS); err != nil {
			return nil, err
		}
	}
	s := &Session{exe: e, lane: l, arena: l.arena, bytes: l.bytes, stream: l.stream, stage: l.stage, blas: l.blas, inAt: inAt, outAt: outAt}
	s.inView = make([][]byte, len(e.inputs))
	for i := range e.g.Inputs {
		n := e.inputBytes(i)
		s.inView[i] = s.stage[s.inAt[i] : s.inAt[i]+n : s.inAt[i]+n]
	}
	s.outView = make([][]byte, len(e.outputs))
	for i, o := range e.outputs {
		s.outView[i] = s.stage[s.outAt[i] : s.outAt[i]+o.bytes : s.outAt[i]+o.bytes]
	}
	npointers := 0
	for _, st := range e.steps {
		if st.library() {
			continue
		}
		for _, a := range st.args {
			if a.region != inWords {
				npointers++
			}
		}
	}
	s.values = make([]uint64, npointers)
	s.params = make([][]unsafe.Pointer, len(e.steps))
	s.gemms = make([]driver.Args, len(e.steps))
	s.hot = driver.NewArgs()
	s.config = driver.NewLaunchConfig()
	k := 0
	for i, st := range e.steps {
		if st.planned() {
			continue // planned below, with the device
		}
		if b := st.blas; b != nil {
			s.gemms[i] = driver.NewArgs()
			sg := driver.Sgemm{
				TransA: b.transA, TransB: b.transB, M: int(b.m), N: int(b.n), K: int(b.k),
				A: s.addr(st.args[0]), B: s.addr(st.args[1]), C: s.addr(st.args[2]),
				LDA: int(b.lda), LDB: int(b.ldb), LDC: int(b.ldc),
				StrideA: b.strideA, StrideB: b.strideB, StrideC: b.strideC, Batch: int(b.batch),
				Alpha: &b.alpha, Beta: &b.beta,
			}
			if b.ab != driver.R32F {
				s.blas.GemmExArgs(&driver.GemmEx{Sgemm: sg, AB: b.ab, C: b.c}, s.gemms[i])
			} else {
				s.blas.SgemmArgs(&sg, s.gemms[i])
			}
			continue
		}
		ps := make([]unsafe.Pointer, len(st.args))
		for j, a := range st.args {
			switch a.region {
			case inWords:
				ps[j] = unsafe.Pointer(&a.words[0])
			case inArena:
				s.values[k] = uint64(s.arena) + uint64(a.off)
				ps[j] = unsafe.Pointer(&s.values[k])
				k++
			case inWeights:
				s.values[k] = uint64(e.weights) + uint64(a.off)
				ps[j] = unsafe.Pointer(&s.values[k])
				k++
			case inDevice:
				s.values[k] = uint64(a.off)
				ps[j] = unsafe.Pointer(&s.values[k])
				k++
			default:
				return nil, fmt.Errorf("new session: internal error: argument %d of step %d in region %d", j, i, a.region)
			}
		}
		s.params[i] = ps
	}
	if err := s.planLibraries(); err != nil {
		return nil, err
	}
	s.run = s.launchAll
	return s, nil
}

// A libraryCall is a step that a library plans once for the session and
// runs without allocating: a cuBLASLt product (driver.LtPlan) or a cuDNN
// convolution (driver.DNNPlan).
type libraryCall interface {
	Run() error
	Close()
}

// planLibraries makes the cuBLASLt plans of the products whose epilogue
// adds a bias (blasGemm.epilogue) and the cuDNN plans of the
// convolutions, and the lane's handles with the first of each. Our
// row-major Y = A·B is cuBLAS's column-major Yᵀ = Bᵀ·Aᵀ, so the bias, one
// value per column of Y, is one per row of cuBLAS's D, as the epilogue
// adds it.
func (s *Session) planLibraries() error {
	e := s.exe
	if !slices.ContainsFunc(e.steps, func(st step) bool { return st.planned() }) {
		return nil // no trip to the device's thread
	}
	err := e.dev.Do(func() error {
		for i, st := range e.steps {
			if !st.planned() {
				continue
			}
			b := st.blas
			if s.libs == nil {
				s.libs = make([]libraryCall, len(e.steps))
			}
			n := &e.g.Nodes[st.node]
			if st.dnn != nil {
				if s.lane.dnn == 0 {
					ws, err := driver.Alloc(dnnWorkspace)
					if err != nil {
						return fmt.Errorf("new session: allocating cuDNN's workspace: %w", err)
					}
					h, err := driver.NewDNN(s.stream)
					if err != nil {
						driver.Free(ws)
						return fmt.Errorf("new session: %w", err)
					}
					s.lane.dnn, s.lane.dnnWS = h, ws
				}
				c := *st.dnn
				c.X, c.Wt, c.Y = s.addr(st.args[0]), s.addr(st.args[1]), s.addr(st.args[2])
				if len(st.args) > 3 { // a ConvAct's bias, and its addend
					c.Bias = s.addr(st.args[3])
				}
				if len(st.args) > 4 {
					c.Z = s.addr(st.args[4])
				}
				p, err := s.lane.dnn.Plan(&c, s.lane.dnnWS, dnnWorkspace)
				if err != nil {
					return fmt.Errorf("new session: node %q (%s): %w", n.Name, n.Op, err)
				}
				s.libs[i] = p
				continue
			}
			if s.lane.lt == 0 {
				h, err := driver.NewLt()
				if err != nil {
					return fmt.Errorf("new session: %w", err)
				}
				s.lane.lt = h
			}
			d := s.addr(st.args[2])
			g := &driver.LtGemm{TransA: b.transA, TransB: b.transB, M: b.m, N: b.n, K: b.k,
				A: s.addr(st.args[0]), B: s.addr(st.args[1]), C: d, D: d, Bias: s.addr(st.args[3]), Bias32: !b.bias16,
				LDA: b.lda, LDB: b.ldb, LDC: b.ldc, Batch: 1, AB: b.ab, CD: b.c, Epilogue: b.epilogue}
			if len(st.args) > 4 {
				g.C = s.addr(st.args[4])
			}
			p, err := s.lane.lt.Plan(g, b.alpha, b.beta, s.lane.work, blasWorkspace, s.stream)
			if err != nil {
				return fmt.Errorf("new session: node %q (%s): %w", n.Name, n.Op, err)
			}
			s.libs[i] = p
		}
		return nil
	})
	if err != nil {
		s.closeLibraries()
	}
	return err
}

// closeLibraries frees the plans of planLibraries.
func (s *Session) closeLibraries() {
	libs := s.libs
	s.libs = nil
	if libs == nil {
		return
	}
	s.exe.dev.Do(func() error {
		for _, p := range libs {
			if p != nil {
				p.Close()
			}
		}
		return nil
	})
}

// gemm issues step i, a cuBLAS or cuBLASLt product or a cuDNN convolution.
func (s *Session) gemm(i int) error {
	if s.libs != nil && s.libs[i] != nil {
		return s.libs[i].Run()
	}
	return s.exe.steps[i].blas.run(s.gemms[i])
}

// addr is the device address of a bound pointer argument.
func (s *Session) addr(a boundArg) driver.Ptr {
	switch a.region {
	case inArena:
		return s.arena + driver.Ptr(a.off)
	case inWeights:
		return s.exe.weights + driver.Ptr(a.off)
	case inDevice:
		return driver.Ptr(a.off)
	}
	return 0
}

// Graphed reports whether the session replays a captured CUDA graph.
func (s *Session) Graphed() bool { return s.graph != 0 }

// ArenaBytes is the size of the session's device arena.
func (s *Session) ArenaBytes() int64 { return s.bytes }

// Staging returns the session's page-locked buffers for the raw bytes of
// each graph input and output, in graph order. RunStaged reads the inputs
// from them and leaves the outputs in them, sparing Run's two host
// copies. They are Go memory and stay readable after Close.
func (s *Session) Staging() (inputs, outputs [][]byte) { return s.inView, s.outView }

// RunStaged is Run with the inputs already in the Staging buffers and the
// outputs left there.
func (s *Session) RunStaged() error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.in, s.out = nil, nil
	return s.exe.dev.Do(s.run)
}

// Run copies the inputs (raw bytes of each graph input, in graph order)
// through pinned staging into their slots, launches every kernel in plan
// order on the session's stream (one graph launch when captured) and
// copies each graph output into outputs (raw bytes, in graph order). The
// stream is synchronised once per run.
func (s *Session) Run(inputs, outputs [][]byte) error {
	if !s.mu.TryLock() {
		return ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	e := s.exe
	if len(inputs) != len(e.inputs) {
		return fmt.Errorf("%d inputs, the graph takes %d", len(inputs), len(e.inputs))
	}
	if len(outputs) != len(e.outputs) {
		return fmt.Errorf("%d outputs, the graph has %d", len(outputs), len(e.outputs))
	}
	for i, id := range e.g.Inputs {
		if want := e.g.Tensor(id).Bytes(); int64(len(inputs[i])) != want && !e.state[i] {
			return fmt.Errorf("input %q: %d bytes, want %d", e.g.Tensor(id).Name, len(inputs[i]), want)
		}
	}
	for i, o := range e.outputs {
		if int64(len(outputs[i])) != o.bytes {
			return fmt.Errorf("output %q: %d bytes, want %d", e.g.Tensor(e.g.Outputs[i]).Name, len(outputs[i]), o.bytes)
		}
	}
	s.in, s.out = inputs, outputs
	err := e.dev.Do(s.run)
	s.in, s.out = nil, nil
	return err
}

// launchAll runs on the device's owner thread: it stages the inputs, runs
// the graph (or queues the copies and kernels one by one), waits once and
// hands the outputs over.
func (s *Session) launchAll() error {
	for i, in := range s.in {
		if !s.exe.state[i] {
			copy(s.inView[i], in)
		}
	}
	if s.graph == 0 && s.runs > 0 && !s.exe.noGraphs && !s.noCapture {
		// The second run captures the launches of one into a graph,
		// which this run and every later one replay. (The first run
		// launches them one by one: a session made for a shape that
		// runs once pays no capture.) Where capture fails the session
		// goes on launching one by one, and a real launch error shows
		// below.
		g, err := s.stream.Capture(s.queue)
		if err == nil {
			s.graph = g
		} else {
			s.noCapture = true
		}
	}
	s.runs++
	s.pending = true
	if s.graph != 0 {
		if err := s.graph.LaunchWith(s.stream, s.hot); err != nil {
			return fmt.Errorf("launching the graph: %w", err)
		}
	} else if err := s.queue(); err != nil {
		return err
	}
	if err := s.stream.SynchronizeWith(s.hot); err != nil {
		return err
	}
	s.pending = false
	for i, o := range s.exe.outputs {
		if o.data != nil {
			// A constant output: the staging may be shared (Lane).
			copy(s.outView[i], o.data)
		}
	}
	for i := range s.out {
		copy(s.out[i], s.outView[i])
	}
	return nil
}

// queue queues one run on the session's stream: the inputs from staging
// into their slots, every kernel in plan order, the outputs into staging.
func (s *Session) queue() error {
	if err := s.copyInputs(); err != nil {
		return err
	}
	if err := s.launchKernels(); err != nil {
		return err
	}
	return s.copyOutputs()
}

// copyInputs queues the copies of the inputs from staging into their slots.
func (s *Session) copyInputs() error { return s.copyInputsOf(nil) }

// copyReusedInputs queues the copies of the inputs whose slots later
// tensors take (Executable.reused): what replaying the kernels alone
// needs for them to read the inputs of the last run.
func (s *Session) copyReusedInputs() error { return s.copyInputsOf(s.exe.reused) }

// copyInputsOf queues the copies of the inputs which only marks (all of
// them where only is nil).
func (s *Session) copyInputsOf(only []bool) error {
	e := s.exe
	for i, off := range e.inputs {
		if off >= 0 && (only == nil || only[i]) {
			n := e.g.Tensor(e.g.Inputs[i]).Bytes()
			if err := s.stream.CopyToDeviceAsyncWith(s.hot, s.arena+driver.Ptr(off), s.stage[s.inAt[i]:s.inAt[i]+n]); err != nil {
				return fmt.Errorf("copying input %d: %w", i, err)
			}
		}
	}
	return nil
}

// copyOutputs queues the copies of the outputs from their slots into
// staging.
func (s *Session) copyOutputs() error {
	for i, o := range s.exe.outputs {
		if o.data == nil {
			if err := s.stream.CopyFromDeviceAsyncWith(s.hot, s.stage[s.outAt[i]:s.outAt[i]+o.bytes], s.arena+driver.Ptr(o.off)); err != nil {
				return fmt.Errorf("copying output %d: %w", i, err)
			}
		}
	}
	return nil
}

// queueKernelsAlone queues the kernels of a run, after the copies of the
// inputs whose slots later tensors take.
func (s *Session) queueKernelsAlone() error {
	if err := s.copyReusedInputs(); err != nil {
		return err
	}
	return s.launchKernels()
}

// launchKernels queues every kernel of a run on the session's stream.
func (s *Session) launchKernels() error {
	e := s.exe
	for i := range e.steps {
		st := &e.steps[i]
		if st.library() {
			if err := s.gemm(i); err != nil {
				n := &e.g.Nodes[st.node]
				return fmt.Errorf("node %q (%s): %w", n.Name, n.Op, err)
			}
			continue
		}
		var err error
		if st.early {
			err = st.fn.LaunchEarlyWith(s.hot, s.config, st.grid, st.block, st.shared, uintptr(s.stream), s.params[i])
		} else {
			err = st.fn.LaunchWith(s.hot, st.grid, st.block, st.shared, uintptr(s.stream), s.params[i])
		}
		if err != nil {
			n := &e.g.Nodes[st.node]
			return fmt.Errorf("node %q (%s): launch: %w", n.Name, n.Op, err)
		}
	}
	return nil
}

// KernelTime runs the kernels alone (no input or output copies, but for
// the inputs a later tensor of the plan overwrites, see reusedInputs),
// iters times back to back on the session's stream, and returns the mean
// time of one run: the device's share of Run. A graphed session replays a
// graph of them, captured for the measurement. The arena holds whatever
// the last run left.
func (s *Session) KernelTime(iters int) (time.Duration, error) {
	if !s.mu.TryLock() {
		return 0, ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return 0, ErrClosed
	}
	var d time.Duration
	err := s.exe.dev.Do(func() error {
		// The inputs whose slots later tensors take are copied in again
		// before every run of the kernels: kernels whose work follows an
		// input's value (the position of a decoding step) would otherwise
		// time the wrong work.
		once := s.queueKernelsAlone
		if s.graph != 0 {
			g, err := s.stream.Capture(s.queueKernelsAlone)
			if err != nil {
				return err
			}
			defer g.Destroy()
			once = func() error { return g.Launch(s.stream) }
		}
		for range 3 {
			if err := once(); err != nil {
				return err
			}
		}
		if err := s.stream.Synchronize(); err != nil {
			return err
		}
		start := time.Now()
		for range iters {
			if err := once(); err != nil {
				return err
			}
		}
		if err := s.stream.Synchronize(); err != nil {
			return err
		}
		d = time.Since(start) / time.Duration(max(iters, 1))
		return nil
	})
	return d, err
}

// Replays is where a graphed run's time goes, each part the mean of many
// on the device's owner thread.
type Replays struct {
	Run        time.Duration // the session's graph (input copies, kernels, output copies), launched and waited for
	BackToBack time.Duration // the graph launched back to back
	Copies     time.Duration // the input and output copies alone, queued and waited for
	Wait       time.Duration // a wait on the stream with nothing queued
	Hop        time.Duration // a call onto the owner thread that does nothing (Run makes one)
}

// Replays times the parts of a run of a graphed session iters times each.
// The inputs are those of the last run, still in staging.
func (s *Session) Replays(iters int) (Replays, error) {
	var r Replays
	if !s.mu.TryLock() {
		return r, ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return r, ErrClosed
	}
	if s.graph == 0 {
		return r, errors.New("replays: the session has no graph yet (run it twice)")
	}
	iters = max(iters, 1)
	timed := func(fn func() error, wait bool) (time.Duration, error) {
		for range 3 {
			if err := fn(); err != nil {
				return 0, err
			}
		}
		if err := s.stream.Synchronize(); err != nil {
			return 0, err
		}
		start := time.Now()
		for range iters {
			if err := fn(); err != nil {
				return 0, err
			}
			if wait {
				if err := s.stream.SynchronizeWith(s.hot); err != nil {
					return 0, err
				}
			}
		}
		if err := s.stream.Synchronize(); err != nil {
			return 0, err
		}
		return time.Since(start) / time.Duration(iters), nil
	}
	err := s.exe.dev.Do(func() error {
		graph := func() error { return s.graph.LaunchWith(s.stream, s.hot) }
		copies := func() error {
			if err := s.copyInputs(); err != nil {
				return err
			}
			return s.copyOutputs()
		}
		var err error
		for _, t := range []struct {
			d    *time.Duration
			fn   func() error
			wait bool
		}{
			{&r.Run, graph, true},
			{&r.BackToBack, graph, false},
			{&r.Copies, copies, true},
			{&r.Wait, func() error { return nil }, true},
		} {
			if *t.d, err = timed(t.fn, t.wait); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	start := time.Now()
	for range iters {
		s.exe.dev.Do(func() error { return nil })
	}
	r.Hop = time.Since(start) / time.Duration(iters)
	return r, nil
}

// Close frees the session's arena.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	g, st := s.graph, s.stream
	s.graph = 0
	var err error
	if g != 0 || s.pending {
		// (Else no work of the session is left queued: each run that
		// did not fail waited for its own before it returned.)
		err = s.exe.dev.Do(func() error { return errors.Join(g.Destroy(), st.Synchronize()) })
	}
	s.closeLibraries()
	if s.ownLane {
		err = errors.Join(err, s.lane.Close())
	}
	return err
}

// StepTime is the time of one step of a run (a kernel or a cuBLAS call).
type StepTime struct {
	Node int    // the node it belongs to, of the graph Compile rewrote (see Name)
	Name string // that node's name
	Op   string // the node's operator
	BLAS bool   // a cuBLAS GEMM (or cuBLASLt product, or cuDNN convolution)
	Time time.Duration
}

// StepTimes runs the steps of a run one at a time, waiting after each,
// iters times, and returns each step's fastest time. The times include
// a launch and a wait on the host (a few µs), so they find the large
// steps rather than measure the small ones. The arena holds whatever the
// last step left, the inputs those of the last run.
func (s *Session) StepTimes(iters int) ([]StepTime, error) {
	if !s.mu.TryLock() {
		return nil, ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	e := s.exe
	out := make([]StepTime, len(e.steps))
	err := e.dev.Do(func() error {
		for i := range e.steps {
			st := &e.steps[i]
			out[i] = StepTime{Node: st.node, Name: e.g.Nodes[st.node].Name, Op: e.g.Nodes[st.node].Op, BLAS: st.library(), Time: time.Duration(math.MaxInt64)}
		}
		for range max(iters, 1) {
			// The inputs whose slots later tensors take, again (see
			// KernelTime), before the clock starts.
			if err := s.copyReusedInputs(); err != nil {
				return err
			}
			if err := s.stream.SynchronizeWith(s.hot); err != nil {
				return err
			}
			for i := range e.steps {
				st := &e.steps[i]
				start := time.Now()
				var err error
				if st.library() {
					err = s.gemm(i)
				} else {
					err = st.fn.LaunchWith(s.hot, st.grid, st.block, st.shared, uintptr(s.stream), s.params[i])
				}
				if err == nil {
					err = s.stream.SynchronizeWith(s.hot)
				}
				if err != nil {
					return err
				}
				out[i].Time = min(out[i].Time, time.Since(start))
			}
		}
		return nil
	})
	return out, err
}
