package berth

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Device names where a model runs.
type Device string

// The devices.
const (
	CPU  Device = "cpu"
	CUDA Device = "cuda"
)

// ErrNoDevice is returned when the requested device is not available.
var ErrNoDevice = errors.New("device not available")

// Options tune compilation. The zero value is a sensible default.
type Options struct {
	// Threads is the number of threads each session's kernels use;
	// 0 means GOMAXPROCS.
	Threads int
	// MemoryLimit bounds what one session needs: its activation arena
	// plus the weights as they are held at run time. Compile fails, before
	// allocating anything, when the plan exceeds it. 0 means the
	// machine's physical memory; a negative value means no limit. On
	// CUDA it bounds device memory (one session's arena plus the device
	// weights) and only a positive value applies.
	MemoryLimit int64
	// Precision of the matrix products on a GPU (FP32 by default; the
	// environment variable BERTH_CUDA_PRECISION, where set, overrides it).
	// The CPU backend ignores it.
	Precision Precision
	// FileOrder runs the nodes in the model file's order instead of the
	// schedule, among several, whose arena is smallest.
	FileOrder bool
	// NoInPlace gives every node's outputs bytes apart from its inputs,
	// even where an elementwise node could overwrite an input that dies
	// with it. With FileOrder, it gives the plan of a runtime without
	// memory-aware passes, to compare results and sizes with.
	NoInPlace bool
	// NoFusion runs every node as a step of its own instead of applying
	// the elementwise nodes that follow a MatMul, Gemm or Conv to each
	// tile of its output. With NoBlocking, results are the same bit for
	// bit (without it, fusion lets more activations be held in NCHW16c,
	// whose products round differently); fusion saves the passes over
	// memory, and the planner sees each fused chain as one step, whose
	// intermediate values take no bytes.
	NoFusion bool
	// NoBlocking keeps every activation in NCHW instead of holding those
	// between convolutions with sixteen channels of a position side by
	// side (NCHW16c) where every kernel that writes or reads them can (a
	// ResNet's 1×1 and Winograd 3×3 layers then read and write their
	// activations in runs of whole cache lines). Results agree to
	// rounding: the products sum in another order.
	NoBlocking bool
	// NoPairs runs each depthwise convolution as a step of its own
	// instead of together with the pointwise convolution whose output it
	// reads, a group of channels at a time, where those planes are large
	// (MobileNetV2's and EfficientNet's expansions at 112² and 56²: each
	// worker computes a group's planes into a buffer of its own and reads
	// them back from its cache, and the expansion's whole output never
	// exists). Results are the same bit for bit; pairs take less arena.
	NoPairs bool
	// NoAttention runs attention's scores, softmax and second product as
	// three steps instead of one that takes each head from its scores to
	// its output on one worker, the scores in that worker's cache (see
	// cpu.FuseAttention). Results are the same bit for bit; the fused
	// step's scores take no arena.
	NoAttention bool

	// Dims fixes open dimensions of the model's inputs ahead of time, by
	// the symbol the file names them with ("batch": 1). A model whose
	// every symbol is fixed (and whose shapes depend on no input's
	// values) is compiled at once, as one with static shapes is.
	Dims map[string]int64
	// MaxDims bounds open dimensions, by symbol: a run whose inputs give
	// a symbol a larger size fails with an error naming the symbol and
	// its bound, before anything is compiled or allocated for it.
	MaxDims map[string]int64
	// weights, when set, holds the kernels' packed weights: the plans of
	// one model with open shapes share what they pack alike.
	weights *cpu.WeightStore
	// template, when set, is the plan at the bound of a model with open
	// shapes, whose offsets a plan for smaller shapes takes (reusePlan).
	template *planTemplate
	// cudaWeights holds, for all the plans of a model with open shapes
	// on CUDA, the constants read from its file; cudaBound is the plan at
	// its bound, whose offsets the others keep where they can.
	cudaWeights *cuda.WeightStore
	cudaBound   *cuda.Executable
	// perRun makes an open model's executable plan every run for its
	// inputs, even where the options fix every shape (it serves a
	// fixed-shape model's runs whose declared scalars come with other
	// shapes).
	perRun bool

	// Plans bounds how many plans, one per set of input shapes (and, for
	// a model whose shapes depend on input values, per set of those
	// values), a session of a model with open shapes keeps; past it the
	// least recently used is released. 0 means DefaultPlans.
	Plans int
}

// DefaultPlans is how many specialised plans a session of a model with
// open shapes keeps unless Options.Plans says otherwise.
const DefaultPlans = 4

// ErrMemoryLimit is returned when a compiled model would not fit the
// memory limit.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// Alignment of every slot in a CPU arena, in bytes.
const Alignment = 64

// Executable is a compiled model: kernels bound to a verified memory plan
// and a read-only weight region shared by all its sessions.
type Executable struct {
	model   *Model
	g       *ir.Graph
	device  Device
	threads int

	cuda *cuda.Executable // set when compiled for CUDA
	open *openExec        // set when shapes are settled per run
	// owned are the specialised models the executable was compiled from
	// and closes with itself.
	owned   []*Model
	kernels []cpu.Kernel
	problem *plan.Problem
	index   []int // ir.TensorID → problem tensor (-1: constant)
	scratch []int // node → problem tensor of its scratch (-1: none)
	plan    *plan.Plan
	layout  *arena.Layout // slots by ir.TensorID

	weights     [][]byte // ir.TensorID → aligned constant bytes
	weightBytes int64    // constant bytes the kernels read
	packedBytes int64    // of which copied into the packed region
	packed      *device.HostBuffer
	store       *cpu.WeightStore // the kernels' packed weights
	planTime    time.Duration

	// blocked marks the activations held in NCHW16c (blockLayouts), by
	// ir.TensorID; nil when none are.
	blocked []bool

	fusions   map[int]*fusion   // node → its fused kernel
	prologues map[int]*prologue // node → the chain it applies to its input
	merged    map[int]*merged   // node → the steps it runs with (pairUp, attend)
	// folds maps each tensor of a Transpose folded into a merged step to
	// the tensor the step binds in its place (attend).
	folds    map[ir.TensorID]ir.TensorID
	absorbed []bool // node → runs inside another node's step

	// opts are the options a fixed-shape executable was compiled with,
	// and reshaped the executable of its model with open shapes, compiled
	// (with them) the first time an input declared a scalar comes with
	// another shape (see Session.bind).
	opts     Options
	reshaped *Executable

	mu     sync.Mutex
	closed bool
}

// Compile prepares m to run on dev.
//
// A model with open shapes (see Model.Open) is compiled for the shapes
// opts.Dims fixes when it fixes them all; otherwise Compile checks the
// options and returns an executable whose sessions compile a plan for
// each set of input shapes they are run with, keep up to opts.Plans of
// them and reuse each for every later run of the same shapes.
func Compile(m *Model, dev Device, opts Options) (*Executable, error) {
	if m.open != nil {
		return compileOpen(m, dev, opts)
	}
	if err := checkSymbols(nil, opts); err != nil {
		return nil, err
	}
	e, err := compileStatic(m, dev, opts)
	if err == nil {
		e.opts = opts
	}
	if errors.Is(err, ir.ErrValueDependent) && m.reopen != nil {
		// A kernel needs the value of an input (a CumSum's axis fed as
		// one): specialise on it per run.
		om, oerr := m.reopen()
		if oerr != nil {
			return nil, err
		}
		if e, err = compileOpen(om, dev, opts); err != nil {
			om.Close()
			return nil, err
		}
		e.owned = append(e.owned, om)
	}
	return e, err
}

func compileStatic(m *Model, dev Device, opts Options) (*Executable, error) {
	switch dev {
	case CPU, "":
		if err := checkTensorSizes(opts.MemoryLimit, m.graph); err != nil {
			return nil, err
		}
	case CUDA:
		if opts.MemoryLimit > 0 {
			if err := checkTensorSizes(opts.MemoryLimit, m.graph); err != nil {
				return nil, err
			}
		}
		ce, err := compileCUDA(m, opts)
		if err != nil {
			return nil, err
		}
		p, pl := ce.Plan()
		if opts.MemoryLimit > 0 {
			// The device arena of one session plus the device weights.
			if err := checkLimit(opts.MemoryLimit, p, pl, m.graph, ce.WeightBytes()); err != nil {
				ce.Close()
				return nil, err
			}
		}
		return &Executable{model: m, g: m.graph, device: CUDA, cuda: ce, problem: p, plan: pl, weightBytes: ce.WeightBytes()}, nil
	default:
		return nil, fmt.Errorf("compile: unknown device %q (want cpu or cuda)", dev)
	}
	g := m.graph
	e := &Executable{model: m, g: g, device: CPU, threads: opts.Threads}
	if e.threads <= 0 {
		e.threads = runtime.GOMAXPROCS(0)
	}
	scratch := make([]int64, len(g.Nodes))
	e.kernels = make([]cpu.Kernel, len(g.Nodes))
	// One store for the kernels' packed weights: the small ones lie together
	// in huge pages.
	bopts := cpu.BuildOptions{Threads: e.threads, Weights: opts.weights}
	if bopts.Weights == nil {
		bopts.Weights = new(cpu.WeightStore)
	}
	e.store = bopts.Weights
	if m.src != nil {
		bopts.Release, bopts.Read = m.src.Release, m.src.ReadInto
	}
	for i := range g.Nodes {
		k, s, err := cpu.BuildWith(g, &g.Nodes[i], bopts)
		if err != nil {
			return nil, err
		}
		e.kernels[i], scratch[i] = k, s
		if pk, ok := k.(cpu.Prepacked); ok && m.src != nil {
			// The kernel holds its own copy: the file's pages can go.
			for j, id := range g.Nodes[i].Inputs {
				if id != ir.NoTensor && g.Tensor(id).IsConst() && pk.Prepacked(j) {
					m.src.Release(g.Tensor(id).Data)
				}
			}
		}
	}
	p, index, err := plan.FromGraph(g, scratch)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	// The plan is measured against the file's order of the model as given,
	// every node a step of its own.
	fileLoad, err := plan.FileOrderLoad(p, Alignment)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if !opts.NoFusion {
		e.fuse(p, index, scratch)
	}
	if !opts.NoBlocking {
		if err := e.blockLayouts(scratch); err != nil {
			return nil, fmt.Errorf("compile: %w", err)
		}
	}
	if !opts.NoFusion && !opts.NoPairs {
		e.pairUp(p, index, scratch)
	}
	if !opts.NoFusion && !opts.NoAttention {
		if e.merged == nil {
			e.merged = make(map[int]*merged)
		}
		e.attend(p, index, scratch)
	}
	if !opts.NoInPlace {
		// Concat inputs written straight into the output, Split and
		// Slice outputs read from the input: in place too.
		if err := plan.SharePieces(p); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	popts := plan.Options{Alignment: Alignment, FileOrder: opts.FileOrder, NoInPlace: opts.NoInPlace}
	var pl *plan.Plan
	if t := opts.template; t != nil {
		// The plan at the bound serves this shape where the steps are
		// the same and every tensor fits its slot there.
		e.overwriteAs(p, t.problem)
		pl = reusePlan(p, t.problem, t.plan, popts)
	}
	if pl == nil {
		var err error
		if pl, err = plan.Build(p, popts); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		if !opts.NoFusion && !opts.NoInPlace {
			pl = e.pruneOverwrites(p, pl, popts)
		}
	}
	e.planTime = time.Since(start)
	if err := plan.Verify(p, pl); err != nil {
		return nil, fmt.Errorf("plan failed verification: %w", err)
	}
	pl.FileOrderLoadBytes = fileLoad
	used, anyAlign, wbytes := e.runTimeWeights()
	if err := checkLimit(opts.MemoryLimit, p, pl, g, wbytes); err != nil {
		return nil, err
	}
	e.problem, e.index, e.plan, e.weightBytes = p, index, pl, wbytes
	e.layout = &arena.Layout{Slots: make([]arena.Slot, len(g.Tensors)), Bytes: pl.ArenaBytes, Alignment: Alignment}
	for id := range g.Tensors {
		e.layout.Slots[id] = arena.Slot{Offset: -1, Size: -1}
		if j := index[id]; j >= 0 {
			e.layout.Slots[id] = arena.Slot{Offset: pl.Offsets[j], Size: p.Tensors[j].Size}
		}
	}
	e.scratch = scratchTensors(p, index, g, scratch)
	if err := e.placeWeights(used, anyAlign); err != nil {
		return nil, err
	}
	if m.src != nil {
		// Compiling read what it packed; runs read back only the rest.
		m.releaseFile()
	}
	return e, nil
}

// checkLimit refuses plans whose arena plus weights exceed the limit. The
// error names the step at which the most bytes are live and the largest
// tensors live there, which is where the model would have to give.
func checkLimit(limit int64, p *plan.Problem, pl *plan.Plan, g *ir.Graph, w int64) error {
	if limit == 0 {
		limit = device.HostMemory()
	}
	if limit <= 0 {
		return nil
	}
	if pl.ArenaBytes <= limit-min(w, limit) {
		return nil
	}
	peak := ""
	if pl.PeakStep >= 0 && pl.PeakStep < len(pl.Order) {
		st := &p.Steps[pl.Order[pl.PeakStep]]
		const shown = 4
		var live []string
		for _, id := range pl.PeakTensors[:min(shown, len(pl.PeakTensors))] {
			live = append(live, fmt.Sprintf("%q (%d bytes)", p.Tensors[id].Name, p.Tensors[id].Size))
		}
		if more := len(pl.PeakTensors) - shown; more > 0 {
			live = append(live, fmt.Sprintf("and %d more", more))
		}
		peak = fmt.Sprintf("; the peak, %d bytes, is at node %q (%s), where %s are live",
			pl.LoadBytes, st.Name, st.Op, strings.Join(live, ", "))
	}
	return fmt.Errorf("compile: %w: the activation arena needs %d bytes and the weights %d, the limit is %d%s",
		ErrMemoryLimit, pl.ArenaBytes, w, limit, peak)
}

// checkTensorSizes refuses, before any kernel is built, a graph one of
// whose activations alone is larger than the limit: no plan of it fits,
// and the kernels of such a tensor may build tables as long as its
// dimensions (a Tile's or a Pad's index per output position).
func checkTensorSizes(limit int64, g *ir.Graph) error {
	if limit == 0 {
		limit = device.HostMemory()
	}
	if limit <= 0 {
		return nil
	}
	for id := range g.Tensors {
		t := &g.Tensors[id]
		if t.IsConst() || t.Shape.Validate() != nil {
			continue
		}
		if b := t.Bytes(); b > limit {
			by := ""
			if t.Producer >= 0 && t.Producer < len(g.Nodes) {
				n := &g.Nodes[t.Producer]
				by = fmt.Sprintf(", the output of node %q (%s),", n.Name, n.Op)
			}
			return fmt.Errorf("compile: %w: tensor %q%s is %s%v, %d bytes; the limit is %d",
				ErrMemoryLimit, t.Name, by, t.DType, t.Shape, b, limit)
		}
	}
	return nil
}

// scratchTensors finds, for each node with scratch, the problem tensor
// FromGraph added for it: the one output of the node's step that is not an
// ir tensor.
func scratchTensors(p *plan.Problem, index []int, g *ir.Graph, scratch []int64) []int {
	isIR := make([]bool, len(p.Tensors))
	for _, j := range index {
		if j >= 0 {
			isIR[j] = true
		}
	}
	out := make([]int, len(g.Nodes))
	for i := range out {
		out[i] = -1
		if scratch[i] <= 0 {
			continue
		}
		for _, t := range p.Steps[i].Outputs {
			if !isIR[t] {
				out[i] = t
			}
		}
	}
	return out
}

// runTimeWeights finds the constants kernels read at run time (a
// constant that every reader packed into a layout of its own at build time
// is not one) and the bytes the weights take: those constants and the
// kernels' packed copies. anyAlign marks the constants every run-time
// reader only copies byte by byte, which need no aligned copy.
func (e *Executable) runTimeWeights() (used, anyAlign []bool, bytes int64) {
	g := e.g
	used, anyAlign = make([]bool, len(g.Tensors)), make([]bool, len(g.Tensors))
	for i := range anyAlign {
		anyAlign[i] = true
	}
	for i := range g.Nodes {
		pk, _ := e.kernels[i].(cpu.Prepacked)
		br, _ := e.kernels[i].(cpu.ByteReader)
		if pk != nil {
			bytes += pk.PackedBytes()
		}
		for j, in := range g.Nodes[i].Inputs {
			if in == ir.NoTensor || !g.Tensor(in).IsConst() || pk != nil && pk.Prepacked(j) {
				continue
			}
			used[in] = true
			if br == nil || !br.ReadsBytes(j) {
				anyAlign[in] = false
			}
		}
	}
	for id, u := range used {
		if u {
			bytes += int64(len(g.Tensors[id].Data))
		}
	}
	return used, anyAlign, bytes
}

// placeWeights gives every constant in used its bytes for run time: its
// own in the mapped file when they are aligned or every reader copies them
// byte by byte (anyAlign), else an aligned copy in the packed region.
func (e *Executable) placeWeights(used, anyAlign []bool) error {
	g := e.g
	var need int64
	for id, u := range used {
		if !u {
			continue
		}
		d := g.Tensors[id].Data
		if !raw.Aligned(d, Alignment) && !anyAlign[id] {
			need += roundUp(int64(len(d)), Alignment)
		}
	}
	e.weights = make([][]byte, len(g.Tensors))
	// The plans of an open model share their aligned copies (the store's),
	// a lone plan has a region of its own.
	shared := e.store != nil && e.store.Shared
	if need > 0 && !shared {
		buf, err := device.NewHostBuffer(need, Alignment)
		if err != nil {
			return fmt.Errorf("weights: %w", err)
		}
		e.packed = buf
	}
	var off int64
	for id, u := range used {
		if !u {
			continue
		}
		d := g.Tensors[id].Data
		if raw.Aligned(d, Alignment) || anyAlign[id] {
			e.weights[id] = d
			continue
		}
		var dst []byte
		if shared {
			dst = e.store.Aligned(d)
		} else {
			dst = e.packed.Bytes()[off : off+int64(len(d)) : off+int64(len(d))]
			copy(dst, d)
			off += roundUp(int64(len(d)), Alignment)
		}
		if e.model.src != nil {
			e.model.src.Release(d) // read from the copy from now on
		}
		e.weights[id] = dst
		e.packedBytes += int64(len(d))
	}
	return nil
}

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }

// Close releases what the executable holds outside Go's heap: on CUDA,
// the device weights. Its sessions must be closed first; NewSession fails
// afterwards. Close is safe to call more than once.
func (e *Executable) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	var err error
	if e.cuda != nil {
		err = e.cuda.Close()
	}
	if e.open != nil {
		e.open.close()
	}
	if e.reshaped != nil {
		if cerr := e.reshaped.Close(); err == nil {
			err = cerr
		}
	}
	for _, m := range e.owned {
		if cerr := m.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// reshapedExec returns the executable that runs e's model with open
// shapes, compiling it the first time: it serves the runs whose inputs
// declared scalars come with other shapes.
func (e *Executable) reshapedExec() (*Executable, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errors.New("the executable is closed")
	}
	if e.reshaped != nil {
		return e.reshaped, nil
	}
	om, err := e.model.reopen()
	if err != nil {
		return nil, err
	}
	opts := e.opts
	opts.perRun = true
	x, err := compileOpen(om, e.device, opts)
	if err != nil {
		om.Close()
		return nil, err
	}
	x.owned = append(x.owned, om)
	e.reshaped = x
	return x, nil
}

// Device is where the executable runs.
func (e *Executable) Device() Device { return e.device }

// Model is the model the executable was compiled from.
func (e *Executable) Model() *Model { return e.model }

// Inputs describes the graph inputs in order.
func (e *Executable) Inputs() []TensorInfo { return e.model.Inputs() }

// Outputs describes the graph outputs in order.
func (e *Executable) Outputs() []TensorInfo { return e.model.Outputs() }

// ArenaBytes is the size of each session's activation arena. For an
// executable whose shapes are settled per run it is that of the plan at
// the bound (Options.MaxDims), in which every plan of a session runs, and
// 0 without a bound, when each plan has an arena of its own (see
// Session.Executable).
func (e *Executable) ArenaBytes() int64 {
	if e.open != nil && e.open.atBound != nil {
		return e.open.atBound.exe.ArenaBytes()
	}
	if e.plan == nil {
		return 0
	}
	return e.plan.ArenaBytes
}

// Open reports whether the executable's shapes are settled per run.
func (e *Executable) Open() bool { return e.open != nil }

// WeightBytes is the memory the weights take at run time: the constants
// kernels read as they run, and the copies kernels packed for themselves.
func (e *Executable) WeightBytes() int64 { return e.weightBytes }

// PackedWeightBytes is how much of the weights had to be copied into an
// aligned region because the file did not hold them aligned.
func (e *Executable) PackedWeightBytes() int64 { return e.packedBytes }

// Plan returns the memory plan and the problem it solves (read-only):
// for an executable whose shapes are settled per run, the plan at the
// bound, or nils without one.
func (e *Executable) Plan() (*plan.Problem, *plan.Plan) {
	if e.open != nil && e.open.atBound != nil {
		return e.open.atBound.exe.Plan()
	}
	return e.problem, e.plan
}

// PlanTime is how long building the memory plan took.
func (e *Executable) PlanTime() time.Duration { return e.planTime }

// Layout is the arena layout by tensor ID.
func (e *Executable) Layout() *arena.Layout { return e.layout }
