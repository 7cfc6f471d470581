package cpu

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
)

// boundStep is one kernel bound to its session's buffers.
type boundStep struct {
	node    int // index in the graph's nodes
	kernel  Kernel
	in, out [][]byte
	scratch []byte
}

// Session owns one activation arena and runs an executable's steps in it
// on its workers. It is not safe for concurrent use.
type Session struct {
	exe     *Executable
	arena   *arena.Host
	lane    *Lane // whose arena and workers the session runs in
	workers *Workers
	// own is the lane the session made for itself and closes.
	own     *Lane
	closed  bool
	steps   []boundStep
	inputs  [][]byte // graph input slots
	outputs [][]byte // graph output slots
}

var _ backend.Session = (*Session)(nil)

// NewSession binds every kernel to its slots in the arena of lane (a
// *Lane) and runs on its workers; where lane is nil it makes a lane of its
// own, with an arena of the plan's size. The error wraps
// backend.ErrLaneTooSmall where the plan does not fit lane's arena.
func (e *Executable) NewSession(lane backend.Lane) (backend.Session, error) {
	l, err := backend.Own[*Lane](lane, "new session: a lane")
	if err != nil {
		return nil, err
	}
	var own *Lane
	if l == nil {
		if l, err = NewLane([]backend.Executable{e}, nil, 0); err != nil {
			return nil, err
		}
		own = l
	}
	s, err := e.newSession(l)
	if err != nil {
		if own != nil {
			own.Close()
		}
		return nil, err
	}
	s.own = own
	return s, nil
}

// newSession binds every kernel to its slots in l's arena.
func (e *Executable) newSession(l *Lane) (*Session, error) {
	if l.closed {
		return nil, errors.New("new session: the lane is closed")
	}
	if e.closed.Load() {
		return nil, errors.New("new session: the executable is closed")
	}
	if e.layout.Bytes > l.Bytes() {
		return nil, fmt.Errorf("new session: %w (arena %d bytes, the lane's %d)", backend.ErrLaneTooSmall, e.layout.Bytes, l.Bytes())
	}
	a, err := arena.NewHostIn(e.layout, l.buf)
	if err != nil {
		return nil, err
	}
	s := &Session{exe: e, arena: a, lane: l, workers: l.workers}
	slot := func(id ir.TensorID) []byte {
		if id == ir.NoTensor {
			return nil
		}
		if e.g.Tensor(id).IsConst() {
			return e.weights[id]
		}
		return a.Slot(id)
	}
	g := e.g
	s.steps = make([]boundStep, 0, len(e.plan.Order))
	for _, i := range e.plan.Order {
		if e.absorbed != nil && e.absorbed[i] {
			continue
		}
		st := boundStep{node: i, kernel: e.kernels[i]}
		if t := e.scratch[i]; t >= 0 {
			off, size := e.plan.Offsets[t], e.problem.Tensors[t].Size
			st.scratch = a.Bytes()[off : off+size : off+size]
		}
		var err error
		if st.in, st.out, err = e.stepSlots(i, slot); err != nil {
			return nil, err
		}
		if f := e.fusions[i]; f != nil {
			st.kernel = f.kernel
			if f.temp > 0 {
				// Overwrite mode's tile buffers follow the kernel's own
				// scratch in the step's planned scratch.
				st.out = append(st.out, st.scratch[f.tempAt:f.tempAt+f.temp:f.tempAt+f.temp])
				st.scratch = st.scratch[:f.kernelBytes:f.kernelBytes]
			}
		}
		if mg := e.merged[i]; mg != nil {
			// The absorbed steps' inputs and outputs follow; the
			// scratch is the merged step's.
			st.kernel = mg.kernel
			for _, d := range mg.more {
				in, out, err := e.stepSlots(d, slot)
				if err != nil {
					return nil, err
				}
				st.in, st.out = append(st.in, in...), append(st.out, out...)
			}
		}
		s.steps = append(s.steps, st)
	}
	s.inputs = make([][]byte, len(g.Inputs))
	for i, id := range g.Inputs {
		s.inputs[i] = a.Slot(id)
	}
	s.outputs = make([][]byte, len(g.Outputs))
	for i, id := range g.Outputs {
		s.outputs[i] = a.Slot(id)
	}
	return s, nil
}

// stepArity is how many inputs and outputs stepSlots gives node i's
// step.
func (e *Executable) stepArity(i int) (nIn, nOut int) {
	n := &e.g.Nodes[i]
	nIn, nOut = len(n.Inputs), len(n.Outputs)
	if f := e.fusions[i]; f != nil {
		nIn, nOut = nIn+len(f.ext), nOut+2
	}
	return nIn, nOut
}

// stepSlots is the inputs and outputs that node i's step binds, each slot as
// slot gives it: the node's inputs (a prologue's input in place of the
// first) and outputs, and, for a fused step, the epilogue's activations
// and then its result and registers (a few KiB per session, like a stack,
// outside the arena).
func (e *Executable) stepSlots(i int, slot func(ir.TensorID) []byte) (in, out [][]byte, err error) {
	n := &e.g.Nodes[i]
	for _, id := range e.nodeInputs(i) {
		in = append(in, slot(e.bound(id)))
	}
	for _, id := range n.Outputs {
		out = append(out, slot(e.bound(id)))
	}
	if f := e.fusions[i]; f != nil {
		for _, id := range f.ext {
			in = append(in, slot(id))
		}
		// On Go's heap: the steps keep the bytes, not the buffer.
		regs, err := device.NewHeapBuffer(int64(f.regs), Alignment)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, slot(f.result), regs.Bytes())
	}
	return in, out, nil
}

// bound is the tensor a step binds for id: id itself, or the other side
// of a Transpose folded into the step (folds).
func (e *Executable) bound(id ir.TensorID) ir.TensorID {
	if to, ok := e.folds[id]; ok {
		return to
	}
	return id
}

// Arena is the session's activation arena (an *arena.Host).
func (s *Session) Arena() arena.Arena { return s.arena }

// Inputs are the graph inputs' slots in the arena, in order: a run reads
// its inputs there.
func (s *Session) Inputs() [][]byte { return s.inputs }

// Outputs are the graph outputs' slots in the arena, in order: a run
// leaves its results there.
func (s *Session) Outputs() [][]byte { return s.outputs }

// Steps is how many steps a run runs.
func (s *Session) Steps() int { return len(s.steps) }

// Close closes the lane the session made for itself, if it made one,
// freeing its arena: the session's inputs and outputs must not be used
// afterwards, and Run fails. Close may be called more than once.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.own != nil {
		return s.own.Close()
	}
	return nil
}

// ErrClosed is Run's error on a session that is closed, or whose lane or
// executable is.
var ErrClosed = errors.New("run: the session, its lane or its executable is closed")

// KernelError is a kernel's failure during a run: a memory fault on the
// mapped model file or an internal error.
type KernelError struct {
	Node, Op string // the failing step's node; empty outside any step
	Value    any    // what the kernel panicked with
	Fault    bool   // a memory fault
}

func (e *KernelError) Error() string {
	switch {
	case e.Node == "" && e.Op == "":
		return fmt.Sprint(e.Value)
	case e.Fault:
		return fmt.Sprintf("node %q (%s): %v (was the model file truncated or rewritten while in use?)", e.Node, e.Op, e.Value)
	}
	return fmt.Sprintf("node %q (%s): %v", e.Node, e.Op, e.Value)
}

// Run runs every step in plan order on the inputs already in their slots,
// timing each step into times unless it is nil (len(times) ≥ Steps()).
// Cancelling ctx stops the run between two kernels (and between two
// iterations of a Loop) with ctx's error; a kernel that fails gives a
// *KernelError, wrapped in an error that wraps backend.ErrKernel. Run
// allocates nothing.
func (s *Session) Run(ctx context.Context, times []time.Duration) (err error) {
	if s.closed || s.lane.closed || s.exe.closed.Load() {
		// The arena, or the weights' aligned copies, may be unmapped.
		return ErrClosed
	}
	// A fault while reading the mapped model file (it was truncated or
	// rewritten under us) or a failing kernel becomes an error, not a
	// crash of the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	s.workers.Begin()
	defer s.workers.End()
	s.workers.SetDone(ctx.Done())
	defer s.workers.SetDone(nil)
	step := -1
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %w", backend.ErrKernel, s.stepError(step, r))
			if r == ErrCanceled {
				err = ctx.Err()
			}
		}
	}()
	for step = range s.steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		st := &s.steps[step]
		if times != nil {
			start := time.Now()
			st.kernel.Run(s.workers, st.in, st.out, st.scratch)
			times[step] = time.Since(start)
			continue
		}
		st.kernel.Run(s.workers, st.in, st.out, st.scratch)
	}
	return nil
}

func (s *Session) stepError(step int, r any) error {
	if step < 0 || step >= len(s.steps) {
		return &KernelError{Value: r}
	}
	n := &s.exe.g.Nodes[s.steps[step].node]
	_, fault := r.(interface{ Addr() uintptr })
	return &KernelError{Node: n.Name, Op: n.Op, Value: r, Fault: fault}
}

// StepTime is how long one step of a profiled run took.
type StepTime = backend.StepTime

// Profile names the steps of a run that Run timed into times.
func (s *Session) Profile(times []time.Duration) []StepTime {
	e, g := s.exe, s.exe.g
	out := make([]StepTime, len(s.steps))
	for i, st := range s.steps {
		n := &g.Nodes[st.node]
		op := n.Op
		if pr := e.prologues[st.node]; pr != nil {
			op = strings.Join(pr.ops, "+") + "+" + op
		}
		if f := e.fusions[st.node]; f != nil {
			op += "+" + strings.Join(f.ops, "+")
		}
		if mg := e.merged[st.node]; mg != nil {
			for _, d := range mg.more {
				op += "+" + g.Nodes[d].Op
				if f := e.fusions[d]; f != nil {
					op += "+" + strings.Join(f.ops, "+")
				}
			}
			for _, d := range mg.folded {
				op += "+" + g.Nodes[d].Op
			}
		}
		out[i] = StepTime{Node: n.Name, Op: op, Time: times[i]}
	}
	return out
}
