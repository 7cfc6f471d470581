package cuda

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// Backend is CUDA device 0 behind the backend contract.
type Backend struct{}

var _ backend.Device = Backend{}

// Name is "cuda".
func (Backend) Name() string { return "cuda" }

// Available reports, wrapping backend.ErrUnavailable, why CUDA cannot run
// here.
func (Backend) Available() error {
	if _, err := Device(); err != nil {
		return fmt.Errorf("%w: %v", backend.ErrUnavailable, err)
	}
	return nil
}

// Caps: device memory, Alignment.
func (Backend) Caps() backend.Caps { return backend.Caps{Alignment: Alignment} }

// NewWeights makes a store for the constants that lie in files (see
// NewWeightStoreOf).
func (Backend) NewWeights(files [][]byte) backend.Weights { return NewWeightStoreOf(files) }

// Compile compiles g for device 0 (see Compile). Without CUDA the error
// wraps backend.ErrUnavailable.
func (Backend) Compile(g *ir.Graph, o backend.Options) (backend.Executable, error) {
	opts := Options{Precision: o.Precision, Check: o.Check}
	var err error
	if opts.Weights, err = backend.Own[*WeightStore](o.Weights, "compile: weights"); err != nil {
		return nil, err
	}
	bound, err := backend.Own[Compiled](o.Bound, "compile: a bound")
	if err != nil {
		return nil, err
	}
	opts.Bound = bound.Executable
	e, err := Compile(g, opts)
	if errors.Is(err, driver.ErrUnavailable) {
		return nil, fmt.Errorf("%w: %v", backend.ErrUnavailable, err)
	}
	if err != nil {
		return nil, err
	}
	return Compiled{e}, nil
}

// NewLane makes a lane for the sessions of exes (see NewLaneFor).
func (Backend) NewLane(exes []backend.Executable, from backend.Lane, keep int64) (backend.Lane, error) {
	es := make([]*Executable, len(exes))
	for i, x := range exes {
		c, err := backend.Own[Compiled](x, "new lane: an executable")
		if err != nil {
			return nil, err
		}
		es[i] = c.Executable
	}
	f, err := backend.Own[*Lane](from, "new lane: a lane")
	if err != nil {
		return nil, err
	}
	l, err := NewLaneFor(es, f, keep)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Compiled is an Executable behind the backend contract.
type Compiled struct{ *Executable }

var _ backend.Executable = Compiled{}

// NewSession makes a session on lane (a *Lane), or on a lane of its own
// where lane is nil: its inputs and outputs are its page-locked staging.
func (c Compiled) NewSession(lane backend.Lane) (backend.Session, error) {
	l, err := backend.Own[*Lane](lane, "new session: a lane")
	if err != nil {
		return nil, err
	}
	var s *Session
	if l == nil {
		s, err = c.Executable.NewSession()
	} else {
		s, err = c.NewSessionOn(l)
	}
	if err != nil {
		return nil, err
	}
	return Staged{s}, nil
}

// Staged is a Session behind the backend contract: a run reads its inputs
// from the page-locked staging and leaves its outputs there.
type Staged struct{ *Session }

var _ backend.Session = Staged{}

// Inputs are the staging of the graph inputs.
func (s Staged) Inputs() [][]byte { return s.inView }

// Outputs are the staging of the graph outputs.
func (s Staged) Outputs() [][]byte { return s.outView }

// Run runs the graph on the staged inputs (RunStaged). With times, each
// kernel is then run again one at a time and timed (StepTimes), which
// leaves the outputs as they are.
func (s Staged) Run(ctx context.Context, times []time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.RunStaged(); err != nil {
		return fmt.Errorf("%w: %v", backend.ErrKernel, err)
	}
	if times == nil {
		return nil
	}
	steps, err := s.StepTimes(1)
	if err != nil {
		return fmt.Errorf("%w: %v", backend.ErrKernel, err)
	}
	for i, st := range steps {
		times[i] = st.Time
	}
	return nil
}

// Steps is how many kernels (and cuBLAS calls) a run launches.
func (s Staged) Steps() int { return len(s.exe.steps) }

// Profile names the steps that Run timed into times.
func (s Staged) Profile(times []time.Duration) []backend.StepTime {
	e := s.exe
	out := make([]backend.StepTime, len(e.steps))
	for i, st := range e.steps {
		n := &e.g.Nodes[st.node]
		out[i] = backend.StepTime{Node: n.Name, Op: n.Op, Time: times[i]}
	}
	return out
}

// Arena is the session's device arena: reads and writes copy through the
// host.
func (s Staged) Arena() arena.Arena {
	a, err := arena.NewRemote(s.exe.Layout(), deviceMemory{s.Session})
	if err != nil {
		return nil
	}
	return a
}

// deviceMemory is a session's arena as arena.Memory: synchronous copies
// after the session's stream has finished.
type deviceMemory struct{ s *Session }

func (m deviceMemory) Size() int64 { return m.s.bytes }

func (m deviceMemory) CopyOut(dst []byte, off int64) error {
	return m.s.exe.dev.Do(func() error {
		if err := m.s.stream.Synchronize(); err != nil {
			return err
		}
		return driver.CopyFromDevice(dst, m.s.arena+driver.Ptr(off))
	})
}

func (m deviceMemory) CopyIn(off int64, src []byte) error {
	return m.s.exe.dev.Do(func() error {
		if err := m.s.stream.Synchronize(); err != nil {
			return err
		}
		return driver.CopyToDevice(m.s.arena+driver.Ptr(off), src)
	})
}

// Layout is each tensor's slot in a session's arena.
func (e *Executable) Layout() *arena.Layout {
	return backend.LayoutOf(e.g, e.index, e.problem, e.plan, Alignment)
}

// PackedWeightBytes is 0: the device holds its own copy of every weight
// (WeightBytes).
func (e *Executable) PackedWeightBytes() int64 { return 0 }

// WorkspaceBytes is the device memory a lane gives cuBLAS (and cuBLASLt)
// where the executable's steps call them, and cuDNN where they run
// convolutions on it.
func (e *Executable) WorkspaceBytes() int64 {
	var n int64
	if e.usesBLAS {
		n += blasWorkspace
	}
	for _, st := range e.steps {
		if st.dnn != nil {
			return n + dnnWorkspace
		}
	}
	return n
}

// PlanTime is how long building the memory plan took.
func (e *Executable) PlanTime() time.Duration { return e.planTime }

// FrontTime is how long the part of the compile that needs no device
// took: the graph's rewrites, fusion, the launches' arguments and the
// plan.
func (e *Executable) FrontTime() time.Duration { return e.frontTime }
