package cpu

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Alignment of every slot in a CPU arena, in bytes.
const Alignment = alignment

// Tuning switches the compiler's rewrites off one by one, to compare
// results and arenas with and without them; the zero value, every rewrite
// on, is the fast one.
type Tuning struct {
	// NoFusion runs every node as a step of its own instead of applying
	// the elementwise nodes that follow a MatMul, Gemm or Conv to each
	// tile of its output, and a BatchNormalization (+ Relu) as a
	// pointwise Conv packs its input. With NoBlocking, results are the
	// same bit for bit; fusion saves passes over memory, and the planner
	// sees each fused chain as one step.
	NoFusion bool
	// NoBlocking keeps every activation in NCHW instead of NCHW16c
	// (sixteen channels of a position side by side) where the kernels
	// that write and read it can take it so. Results agree to rounding:
	// the products sum in another order.
	NoBlocking bool
	// NoPairs runs each depthwise convolution as a step of its own
	// instead of with the pointwise convolution whose output it reads, a
	// group of channels at a time. Results are the same bit for bit;
	// pairs take less arena.
	NoPairs bool
	// NoAttention runs attention's scores, softmax and second product as
	// steps of their own instead of one per head on one worker. Results
	// are the same bit for bit; the fused step's scores take no arena.
	NoAttention bool
}

// Options are the settings of Compile. The zero value is a sensible
// default.
type Options struct {
	// Threads is the number of workers that run the kernels; 0 means
	// GOMAXPROCS.
	Threads int
	// FileOrder runs the nodes in the graph's order instead of the
	// schedule, among several, whose arena is smallest.
	FileOrder bool
	// NoInPlace gives every node's outputs bytes apart from its inputs.
	NoInPlace bool
	// Tuning switches rewrites off.
	Tuning

	// Weights, when set, holds the kernels' packed weights (see
	// WeightStore); without it the executable has a store of its own.
	Weights *WeightStore
	// Release and Read, when set, are the mapped file's (see
	// BuildOptions): Release is also handed every constant the kernels
	// copied, once they no longer read it.
	Release func(b []byte)
	Read    func(dst, src []byte) bool
	// Bound, when set, is the plan of the same model at larger shapes,
	// whose offsets the plan takes where its steps are the same and every
	// tensor fits its slot there (plan.Refit).
	Bound *Bound
	// Check, when set, is handed the verified plan and the bytes the
	// weights take at run time before any weight is placed; an error it
	// returns is Compile's (a memory limit).
	Check func(p *plan.Problem, pl *plan.Plan, weightBytes int64) error
}

// Bound is a plan of a model at the bound of its open shapes and the
// problem it solves.
type Bound struct {
	Problem *plan.Problem
	Plan    *plan.Plan
}

// Executable is a graph compiled for the CPU: a kernel per node, the
// rewrites that merge steps, a verified plan of the activation arena and
// the weights as the kernels read them at run time.
type Executable struct {
	g       *ir.Graph
	threads int
	kernels []Kernel
	problem *plan.Problem
	index   []int // ir.TensorID → problem tensor (-1: constant)
	scratch []int // node → problem tensor of its scratch (-1: none)
	plan    *plan.Plan
	layout  *arena.Layout // slots by ir.TensorID

	weights     [][]byte // ir.TensorID → aligned constant bytes
	weightBytes int64    // constant bytes the kernels read
	packedBytes int64    // of which copied into the packed region
	packed      *device.HostBuffer
	store       *WeightStore // the kernels' packed weights
	release     func([]byte) // Options.Release
	planTime    time.Duration
	// closed is set by Close, which frees packed: sessions fail to run.
	closed atomic.Bool

	// blocked marks the activations held in NCHW16c (blockLayouts), by
	// ir.TensorID; nil when none are.
	blocked []bool

	fusions   map[int]*fusion       // node → its fused kernel
	prologues map[int]*convPrologue // node → the chain it applies to its input
	merged    map[int]*merged       // node → the steps it runs with (pairUp, attend)
	// folds maps each tensor of a Transpose folded into a merged step to
	// the tensor the step binds in its place (attend).
	folds    map[ir.TensorID]ir.TensorID
	absorbed []bool // node → runs inside another node's step
}

// Compile builds a kernel for every node of g, whose shapes are all
// known, merges the steps the rewrites allow (fusion, blocked layouts,
// pairs, attention), plans the activation arena, verifies the plan and
// places the weights.
func Compile(g *ir.Graph, opts Options) (*Executable, error) {
	e := &Executable{g: g, threads: opts.Threads, release: opts.Release}
	if e.threads <= 0 {
		e.threads = runtime.GOMAXPROCS(0)
	}
	scratch := make([]int64, len(g.Nodes))
	e.kernels = make([]Kernel, len(g.Nodes))
	// One store for the kernels' packed weights: the small ones lie together
	// in huge pages.
	bopts := BuildOptions{Threads: e.threads, Weights: opts.Weights, Release: opts.Release, Read: opts.Read}
	if bopts.Weights == nil {
		bopts.Weights = new(WeightStore)
	}
	e.store = bopts.Weights
	for i := range g.Nodes {
		k, s, err := BuildWith(g, &g.Nodes[i], bopts)
		if err != nil {
			return nil, err
		}
		e.kernels[i], scratch[i] = k, s
		if pk, ok := k.(prepackedKernel); ok && opts.Release != nil {
			// The kernel holds its own copy: the file's pages can go.
			for j, id := range g.Nodes[i].Inputs {
				if id != ir.NoTensor && g.Tensor(id).IsConst() && pk.Prepacked(j) {
					opts.Release(g.Tensor(id).Data)
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
	markInPlace(p)
	if !opts.NoInPlace {
		// Concat inputs written straight into the output, Split and
		// Slice outputs read from the input: in place too.
		if err := plan.SharePieces(p); err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
	}
	popts := plan.Options{Alignment: Alignment, FileOrder: opts.FileOrder, NoInPlace: opts.NoInPlace}
	var pl *plan.Plan
	if b := opts.Bound; b != nil {
		// The plan at the bound serves this shape where the steps are
		// the same and every tensor fits its slot there.
		e.overwriteAs(p, b.Problem)
		pl = reusePlan(p, b.Problem, b.Plan, popts)
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
	if opts.Check != nil {
		if err := opts.Check(p, pl, wbytes); err != nil {
			return nil, err
		}
	}
	e.problem, e.index, e.plan, e.weightBytes = p, index, pl, wbytes
	e.layout = backend.LayoutOf(g, index, p, pl, Alignment)
	e.scratch = plan.ScratchTensors(p, index, scratch)
	if err := e.placeWeights(used, anyAlign); err != nil {
		return nil, err
	}
	return e, nil
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
		pk, _ := e.kernels[i].(prepackedKernel)
		br, _ := e.kernels[i].(byteReader)
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
			need += plan.AlignUp(int64(len(d)), Alignment)
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
			off += plan.AlignUp(int64(len(d)), Alignment)
		}
		if e.release != nil {
			e.release(d) // read from the copy from now on
		}
		e.weights[id] = dst
		e.packedBytes += int64(len(d))
	}
	return nil
}

// reusePlan returns the plan at the bound (tp, tpl) refit to p, the
// problem of the same model at shapes within the bound (plan.Refit), or
// nil where it does not serve: the steps differ, or a tensor does not fit
// its slot at the bound. Planning a shape within the bound this way takes
// no placement, and the plan never needs more than the bound's arena.
func reusePlan(p, tp *plan.Problem, tpl *plan.Plan, opts plan.Options) *plan.Plan {
	pl, err := plan.Refit(p, tp, tpl, opts)
	if err != nil {
		return nil
	}
	return pl
}

// overwriteAs takes overwrite mode back from the fused steps of p whose
// step in tp, the problem at the bound, does without it (as
// pruneOverwrites found there), so that p's steps match tp's.
func (e *Executable) overwriteAs(p, tp *plan.Problem) {
	if len(p.Steps) != len(tp.Steps) {
		return
	}
	for _, f := range e.fusions {
		if len(f.overwrite) == 0 || f.plain == nil || f.step >= len(p.Steps) {
			continue
		}
		if st := &p.Steps[f.step]; len(st.Overwrite) > 0 && len(tp.Steps[f.step].Overwrite) == 0 {
			st.Overwrite = nil
			if f.scratch >= 0 {
				p.Tensors[f.scratch].Size = f.kernelBytes
			}
			f.kernel, f.overwrite, f.temp, f.tempAt = f.plain, nil, 0, 0
		}
	}
}

// Graph is the graph the executable runs (read-only).
func (e *Executable) Graph() *ir.Graph { return e.g }

// Threads is the number of workers the kernels were built for.
func (e *Executable) Threads() int { return e.threads }

// Plan returns the memory plan and the problem it solves (read-only).
func (e *Executable) Plan() (*plan.Problem, *plan.Plan) { return e.problem, e.plan }

// Index maps each tensor of the graph to the problem's tensor (-1: a
// constant), read-only.
func (e *Executable) Index() []int { return e.index }

// Layout is the arena layout by tensor ID.
func (e *Executable) Layout() *arena.Layout { return e.layout }

// ArenaBytes is the size of each session's activation arena.
func (e *Executable) ArenaBytes() int64 { return e.plan.ArenaBytes }

// WeightBytes is the memory the weights take at run time: the constants
// kernels read as they run, and the copies kernels packed for themselves.
func (e *Executable) WeightBytes() int64 { return e.weightBytes }

// PackedWeightBytes is how much of the weights had to be copied into an
// aligned region because the file did not hold them aligned.
func (e *Executable) PackedWeightBytes() int64 { return e.packedBytes }

// WorkspaceBytes is 0: the CPU's kernels work in the arena.
func (e *Executable) WorkspaceBytes() int64 { return 0 }

// PlanTime is how long the rewrites and the memory plan took.
func (e *Executable) PlanTime() time.Duration { return e.planTime }
