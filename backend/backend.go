package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// Device compiles graphs for one kind of processor.
type Device interface {
	// Name is the device as users name it: "cpu", "cuda".
	Name() string
	// Available reports, as an error, why the device cannot run here.
	Available() error
	// Caps describes what the device's plans and arenas are like.
	Caps() Caps
	// Compile builds a kernel per node of g (shape-inferred, folded),
	// plans and verifies the arena and places the weights.
	Compile(g *ir.Graph, opts Options) (Executable, error)
	// NewWeights makes a store for the weights of one model, windows of
	// files, that the executables compiled with it (Options.Weights)
	// share: packed once, uploaded once.
	NewWeights(files [][]byte) Weights
	// NewLane makes a lane on which sessions of every executable of exes
	// fit (see Lane). Where from is not nil, the first keep bytes of its
	// arena (the state, say) are copied into the new lane's.
	NewLane(exes []Executable, from Lane, keep int64) (Lane, error)
}

// Caps describes a device.
type Caps struct {
	// Alignment of every arena slot, in bytes.
	Alignment int64
	// Host is set where the arena is host memory: a memory limit of 0
	// then means the machine's physical memory, and Session.Arena gives
	// the bytes themselves.
	Host bool
}

// Options are what every device honours when it compiles.
type Options struct {
	// Threads is how many threads a session's kernels use; 0 means
	// GOMAXPROCS.
	Threads int
	// Precision of the matrix products on devices that offer several.
	Precision Precision
	// FileOrder runs the nodes in the graph's order instead of the
	// schedule whose arena is smallest.
	FileOrder bool
	// NoInPlace gives every node's outputs bytes apart from its inputs.
	NoInPlace bool
	// Weights, when set, is the store (from the same device's NewWeights)
	// that holds the weights the executable reads.
	Weights Weights
	// Bound, when set, is the same model compiled at the bound of its
	// shapes: where this graph's steps are its steps and every tensor fits
	// its slot there, the plan keeps its offsets (plan.Refit), so that
	// sessions of both share one lane.
	Bound Executable
	// Check, when set, is handed the verified plan and the bytes the
	// weights take at run time before any weight is placed; an error it
	// returns is Compile's (a memory limit).
	Check func(p *plan.Problem, pl *plan.Plan, weightBytes int64) error
	// Release and Read, when set, are the mapped model file's: Release
	// is handed every constant a kernel copied, once nothing reads it
	// from the file; Read copies a window of the file and reports false
	// on a fault.
	Release func(b []byte)
	Read    func(dst, src []byte) bool
}

// Executable is a graph compiled for a device.
type Executable interface {
	// Plan is the memory plan and the problem it solves (read-only).
	Plan() (*plan.Problem, *plan.Plan)
	// Layout is each tensor's slot in a session's arena (see LayoutOf).
	Layout() *arena.Layout
	// ArenaBytes is the size of a session's arena.
	ArenaBytes() int64
	// WeightBytes is the memory the weights take at run time, those
	// held in a shared store included.
	WeightBytes() int64
	// PackedWeightBytes is how much of the weights had to be copied
	// because the file did not hold them as the kernels read them.
	PackedWeightBytes() int64
	// WorkspaceBytes is the memory a lane gives the libraries the
	// executable's steps call (cuBLAS's and cuDNN's workspaces), beside
	// the arena and the weights.
	WorkspaceBytes() int64
	// PlanTime is how long planning took.
	PlanTime() time.Duration
	// NewSession makes a session on lane, or on a lane of its own where
	// lane is nil. The error wraps ErrLaneTooSmall where the executable
	// does not fit lane.
	NewSession(lane Lane) (Session, error)
	// Close frees what the executable holds outside Go's heap. Its
	// sessions are closed before.
	Close() error
}

// Lane is what sessions run on: an arena (and a device's workers or
// stream, staging, library handles). Sessions of one model's executables
// for several shapes on one lane share all of it and run one at a time.
type Lane interface {
	// Bytes is the size of the lane's arena.
	Bytes() int64
	// Close frees the lane; its sessions are closed before.
	Close() error
}

// Session runs an executable in an arena.
type Session interface {
	// Inputs are the host buffers a run reads graph input i from, in
	// order (empty for an input that is state, which stays in the
	// arena); Outputs those it leaves graph output i in. Both stay put for
	// the session's life.
	Inputs() [][]byte
	Outputs() [][]byte
	// Run runs every step in plan order, timing each step into times
	// unless it is nil (len(times) ≥ Steps()). Cancelling ctx stops it
	// where the device can stop; a kernel's failure wraps ErrKernel. Run
	// allocates nothing.
	Run(ctx context.Context, times []time.Duration) error
	// Steps is how many steps a run times.
	Steps() int
	// Profile names the steps that Run timed into times.
	Profile(times []time.Duration) []StepTime
	// Arena is the session's arena.
	Arena() arena.Arena
	// Close frees what the session holds of its own.
	Close() error
}

// Weights is a store of a model's weights that executables share.
type Weights interface {
	// Close frees the store; the executables that use it are closed
	// before.
	Close() error
}

// StepTime is how long one step of a run took.
type StepTime struct {
	Node string // the node's name
	// Op is the node's operator; a step that runs other nodes with it
	// lists them too, as "Conv+Add+Relu".
	Op   string
	Time time.Duration
}

// ErrUnavailable is wrapped by the error of a device that cannot run here.
var ErrUnavailable = errors.New("device not available")

// ErrKernel is wrapped by the error of a run whose kernel failed.
var ErrKernel = errors.New("kernel failed")

// ErrLaneTooSmall is wrapped by NewSession's error where the executable
// does not fit the lane.
var ErrLaneTooSmall = errors.New("the executable does not fit the lane")

// Precision is the arithmetic of the matrix products (MatMul, Gemm, Conv)
// on devices that offer a choice.
type Precision uint8

// The precisions.
const (
	FP32 Precision = iota // float32 throughout (the default)
	TF32                  // float32 operands on TF32 tensor cores
	BF16                  // bfloat16 weights and activations, float32 accumulation
	F16                   // IEEE half weights and activations, float32 accumulation
)

// Half reports a 16-bit precision.
func (p Precision) Half() bool { return p == BF16 || p == F16 }

func (p Precision) String() string {
	switch p {
	case FP32:
		return "fp32"
	case TF32:
		return "tf32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("Precision(%d)", uint8(p))
}

// ParsePrecision reads a precision as the command line spells it: fp32,
// tf32, bf16 or f16.
func ParsePrecision(s string) (Precision, error) {
	switch strings.ToLower(s) {
	case "fp32", "float32", "f32":
		return FP32, nil
	case "tf32":
		return TF32, nil
	case "bf16", "bfloat16":
		return BF16, nil
	case "f16", "fp16", "float16":
		return F16, nil
	}
	return FP32, fmt.Errorf("unknown precision %q (want fp32, tf32, bf16 or f16)", s)
}

// LayoutOf is the arena layout of a plan: the slot of every tensor of g
// that the problem p holds (index maps ir.TensorID to p's tensors, -1 for
// none), by ir.TensorID.
func LayoutOf(g *ir.Graph, index []int, p *plan.Problem, pl *plan.Plan, alignment int64) *arena.Layout {
	l := &arena.Layout{Slots: make([]arena.Slot, len(g.Tensors)), Bytes: pl.ArenaBytes, Alignment: alignment}
	for id := range g.Tensors {
		l.Slots[id] = arena.Slot{Offset: -1, Size: -1}
		if j := index[id]; j >= 0 {
			l.Slots[id] = arena.Slot{Offset: pl.Offsets[j], Size: p.Tensors[j].Size}
		}
	}
	return l
}

// Own is x, a value a device made (its weights, an executable, a lane),
// as that device's own type T: nil gives T's zero value, another
// device's value an error naming what it is.
func Own[T any](x any, what string) (T, error) {
	var t T
	if x == nil {
		return t, nil
	}
	t, ok := x.(T)
	if !ok {
		return t, fmt.Errorf("%s of another device (%T)", what, x)
	}
	return t, nil
}
