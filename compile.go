package berth

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

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
	// weights; the libraries' workspaces, Executable.WorkspaceBytes, lie
	// beside it) and only a positive value applies.
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
	// CPU switches the CPU compiler's rewrites off one by one, to compare
	// results and arenas with and without them; the zero value, every
	// rewrite on, is the fast one. The CUDA backend ignores it.
	CPU CPUTuning

	// Dims fixes open dimensions of the model's inputs ahead of time, by
	// the symbol the file names them with ("batch": 1). A model whose
	// every symbol is fixed (and whose shapes depend on no input's
	// values) is compiled at once, as one with static shapes is.
	Dims map[string]int64
	// MaxDims bounds open dimensions, by symbol: a run whose inputs give
	// a symbol a larger size fails with an error naming the symbol and
	// its bound, before anything is compiled or allocated for it.
	MaxDims map[string]int64
	// weights, when set, holds the weights of every plan of a model with
	// open shapes (from its device's NewWeights): what they pack or
	// upload alike, they share. bound, when set, is the plan at the
	// bound, whose offsets the plans for smaller shapes keep where they
	// can.
	weights backend.Weights
	bound   backend.Executable
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

// Executable is a compiled model: kernels bound to a verified memory plan
// and a read-only weight region shared by all its sessions.
type Executable struct {
	model  *Model
	g      *ir.Graph
	device Device

	x    backend.Executable // set when compiled for fixed shapes
	dev  backend.Device     // the backend that compiled x
	open *openExec          // set when shapes are settled per run
	// owned are the specialised models the executable was compiled from
	// and closes with itself.
	owned []*Model

	// What every device's plan reports: the plan and the problem it
	// solves, the arena's slots by ir.TensorID (on the CPU), the weights'
	// bytes at run time and how long planning took.
	problem     *plan.Problem
	plan        *plan.Plan
	layout      *arena.Layout
	weightBytes int64
	packedBytes int64
	workBytes   int64
	planTime    time.Duration

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

// compileStatic compiles m, whose shapes are all known, for dev,
// refusing, before anything is allocated for it, a plan whose arena and
// weights exceed opts.MemoryLimit.
func compileStatic(m *Model, dev Device, opts Options) (*Executable, error) {
	b, err := backendOf(dev, &opts)
	if err != nil {
		return nil, err
	}
	caps := b.Caps()
	limit := opts.MemoryLimit
	switch {
	case limit == 0 && caps.Host:
		limit = device.HostMemory()
	case limit <= 0:
		// Off the host only a limit given applies.
		limit = -1
	}
	g := m.graph
	tables, by := tableBytes(g)
	if err := checkTensorSizes(limit, g, tables, by); err != nil {
		return nil, err
	}
	bo := backend.Options{
		Threads: opts.Threads, Precision: opts.Precision, FileOrder: opts.FileOrder, NoInPlace: opts.NoInPlace,
		Weights: opts.weights, Bound: opts.bound,
		Check: func(p *plan.Problem, pl *plan.Plan, w int64) error {
			return checkLimit(limit, p, pl, w, tables)
		},
	}
	if m.src != nil && caps.Host {
		bo.Release, bo.Read = m.src.Release, m.src.ReadInto
	}
	x, err := b.Compile(g, bo)
	if err != nil {
		if !caps.Host {
			err = fmt.Errorf("compile for %s: %w", b.Name(), err)
		}
		return nil, err
	}
	if m.src != nil && caps.Host {
		// Compiling read what it packed; runs read back only the rest.
		m.releaseFile()
	}
	e := &Executable{model: m, g: g, device: dev, x: x, dev: b, layout: x.Layout(),
		weightBytes: x.WeightBytes(), packedBytes: x.PackedWeightBytes(), workBytes: x.WorkspaceBytes(), planTime: x.PlanTime()}
	e.problem, e.plan = x.Plan()
	return e, nil
}

// tableBytes is the sum of ir.TableBytes over g's nodes (saturating), and
// the node with the largest share.
func tableBytes(g *ir.Graph) (int64, *ir.Node) {
	var sum, most int64
	var by *ir.Node
	for i := range g.Nodes {
		b := ir.TableBytes(g, &g.Nodes[i])
		if b > most {
			most, by = b, &g.Nodes[i]
		}
		sum = addCapped(sum, b)
	}
	return sum, by
}

// addCapped is a+b for a, b ≥ 0, or math.MaxInt64 where that overflows.
func addCapped(a, b int64) int64 {
	if b > math.MaxInt64-a {
		return math.MaxInt64
	}
	return a + b
}

// checkLimit refuses plans whose arena plus weights w plus the kernels'
// index tables (tableBytes) exceed the limit. The error names the step
// at which the most bytes are live and the largest tensors live there,
// which is where the model would have to give.
func checkLimit(limit int64, p *plan.Problem, pl *plan.Plan, w, tables int64) error {
	if limit <= 0 {
		return nil
	}
	if pl.ArenaBytes <= limit-min(addCapped(w, tables), limit) {
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
	also := ""
	if tables > 0 {
		also = fmt.Sprintf(" and the index tables %d", tables)
	}
	return fmt.Errorf("compile: %w: the activation arena needs %d bytes and the weights %d%s, the limit is %d%s",
		ErrMemoryLimit, pl.ArenaBytes, w, also, limit, peak)
}

// checkTensorSizes refuses, before any kernel is built, a graph one of
// whose activations alone is larger than the limit, where no plan fits,
// or whose kernels' tables (tableBytes: tables bytes, the most by node
// by) would pass it together.
func checkTensorSizes(limit int64, g *ir.Graph, tables int64, by *ir.Node) error {
	if limit <= 0 {
		return nil
	}
	if tables > limit {
		return fmt.Errorf("compile: %w: the index tables of the graph's Pad, Tile and Resize nodes take %d bytes (node %q (%s) the most); the limit is %d",
			ErrMemoryLimit, tables, by.Name, by.Op, limit)
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
	if e.x != nil {
		err = e.x.Close()
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

// WorkspaceBytes is the memory a session's lane gives the libraries its
// steps call, beside the arena and the weights: on CUDA, cuBLAS's
// workspace (32 MB) where products run on it and cuDNN's (256 MB) where
// convolutions do; 0 on the CPU. Options.MemoryLimit does not count it.
func (e *Executable) WorkspaceBytes() int64 { return e.workBytes }

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
