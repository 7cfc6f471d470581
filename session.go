package berth

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// step is one kernel bound to its session's buffers.
type step struct {
	node    int // index in the graph's nodes
	kernel  cpu.Kernel
	in, out [][]byte
	scratch []byte
}

// Session owns one activation arena and runs the executable in it.
type Session struct {
	exe     *Executable
	arena   *arena.Host
	workers *cpu.Workers
	steps   []step
	inputs  [][]byte     // graph input slots
	outputs []Tensor     // graph outputs, viewing the arena
	cuda    *cudaSession // set for a CUDA executable
	open    *openSession // set for an executable whose shapes are open
	// reshaped runs the inputs whose declared scalars come with other
	// shapes: a session of the executable's model with open shapes, opened
	// with the first such run.
	reshaped *Session
	// borrowed marks workers the session shares with others of an open
	// session and does not close.
	borrowed bool
	mu       sync.Mutex
	closed   bool
}

// ErrBusy is returned by Run when the session is already running; use one
// session per goroutine.
var ErrBusy = errors.New("session is already running")

// ErrClosed is returned by Run on a closed session.
var ErrClosed = errors.New("session is closed")

// NewSession allocates an arena and binds every kernel to its slots. A
// session of an executable whose shapes are open allocates nothing yet:
// each set of input shapes it runs with gets its plan, arena and kernels
// at its first run.
func (e *Executable) NewSession() (*Session, error) {
	return e.newSession(nil, nil, nil)
}

// newSession is NewSession; workers, when not nil, are shared with the
// caller, which closes them, and buf (on the CPU) or lane (on CUDA), when
// large enough, holds the arena (shared with the other plans of an open
// session, which run in turn).
func (e *Executable) newSession(workers *cpu.Workers, buf *device.HostBuffer, lane *cuda.Lane) (*Session, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, errors.New("new session: the executable is closed")
	}
	if e.open != nil {
		os, err := e.open.newSession()
		if err != nil {
			return nil, err
		}
		return &Session{exe: e, open: os}, nil
	}
	if e.cuda != nil {
		cs, err := newCUDASession(e.g, e.cuda, lane)
		if err != nil {
			return nil, err
		}
		return &Session{exe: e, cuda: cs, inputs: cs.inputs}, nil
	}
	var a *arena.Host
	var err error
	if buf != nil && buf.Size() >= e.layout.Bytes {
		a, err = arena.NewHostIn(e.layout, buf)
	} else {
		a, err = arena.NewHost(e.layout)
	}
	if err != nil {
		return nil, err
	}
	s := &Session{exe: e, arena: a}
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
	s.steps = make([]step, 0, len(e.plan.Order))
	for _, i := range e.plan.Order {
		if e.absorbed != nil && e.absorbed[i] {
			continue
		}
		st := step{node: i, kernel: e.kernels[i]}
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
	s.outputs = make([]Tensor, len(g.Outputs))
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		s.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: a.Slot(id)}
	}
	s.workers, s.borrowed = workers, workers != nil
	if workers == nil {
		s.workers = cpu.NewWorkers(e.threads)
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
		regs, err := device.NewHostBuffer(int64(f.regs), Alignment)
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

// Arena exposes the session's arena (for tools and tests): for a model
// with open shapes, that of the plan of the last run. It is nil for a CUDA
// session, whose arena lives on the device, and before an open session's
// first run.
func (s *Session) Arena() arena.Arena {
	if s.open != nil {
		if s.open.last == nil {
			return nil
		}
		return s.open.last.s.Arena()
	}
	if s.arena == nil {
		return nil
	}
	return s.arena
}

// Close stops the session's workers. The outputs of its last run become
// invalid.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		if s.reshaped != nil {
			s.reshaped.Close()
		}
		if s.open != nil {
			return s.open.close()
		}
		if s.cuda != nil {
			return s.cuda.close()
		}
		if !s.borrowed {
			s.workers.Close()
		}
	}
	return nil
}

// Run feeds the inputs, runs every kernel in plan order and returns the
// outputs. Inputs bind to the graph inputs by name when every one is named,
// otherwise by position. The returned tensors view the session's arena:
// they are valid until the next Run or Close (Clone them to keep them).
// Cancelling ctx stops the run between two kernels (and between two
// iterations of a Loop). Run allocates nothing.
//
// An input the model declares a scalar may come with any shape (a sample
// rate as [1]), as ONNX Runtime lets it: the run computes with the shape
// given, in a plan made for it the first time (as a model with open
// shapes does).
func (s *Session) Run(ctx context.Context, inputs ...Tensor) (outs []Tensor, err error) {
	return s.run(ctx, inputs, nil)
}

// StepTime is how long one step of a profiled run took.
type StepTime struct {
	Node string // the node's name
	// Op is the node's operator; a step that runs the elementwise nodes
	// after it as its epilogue lists them too, as "Conv+Add+Relu".
	Op   string
	Time time.Duration
}

// Profile runs like Run and also times each step. It allocates the
// timings; it is for finding where the time goes, not for the hot path.
// CUDA sessions do not support it.
func (s *Session) Profile(ctx context.Context, inputs ...Tensor) ([]StepTime, error) {
	if s.open != nil {
		if _, err := s.Run(ctx, inputs...); err != nil {
			return nil, err
		}
		return s.open.last.s.Profile(ctx, s.open.last.feeds...)
	}
	if s.cuda != nil {
		return nil, errors.New("profile: not supported on CUDA sessions")
	}
	times := make([]time.Duration, len(s.steps))
	if _, err := s.run(ctx, inputs, times); err != nil {
		return nil, err
	}
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
	return out, nil
}

// run is Run, timing each step into times unless it is nil.
func (s *Session) run(ctx context.Context, inputs []Tensor, times []time.Duration) (outs []Tensor, err error) {
	if !s.mu.TryLock() {
		return nil, ErrBusy
	}
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.open != nil {
		return s.open.run(ctx, inputs)
	}
	if err := s.bind(inputs); err != nil {
		if errors.Is(err, errReshaped) {
			return s.runReshaped(ctx, inputs)
		}
		return nil, err
	}
	if s.cuda != nil {
		return s.cuda.run()
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
			outs, err = nil, s.stepError(step, r)
			if r == cpu.ErrCanceled {
				err = ctx.Err()
			}
		}
	}()
	for step = range s.steps {
		if err := ctx.Err(); err != nil {
			return nil, err
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
	return s.outputs, nil
}

// errReshaped is bind's answer for inputs whose declared scalars come
// with other shapes.
var errReshaped = errors.New("a declared scalar comes with another shape")

// runReshaped runs inputs whose declared scalars come with other shapes in
// a session of the model with open shapes, which plans for the shapes
// given (compiled and opened with the first such run).
func (s *Session) runReshaped(ctx context.Context, inputs []Tensor) ([]Tensor, error) {
	if s.reshaped == nil {
		x, err := s.exe.reshapedExec()
		if err != nil {
			return nil, err
		}
		if s.reshaped, err = x.NewSession(); err != nil {
			return nil, err
		}
	}
	return s.reshaped.Run(ctx, inputs...)
}

// ErrKernel is returned when a kernel fails during Run: a memory fault on
// the mapped model file or an internal error.
var ErrKernel = errors.New("kernel failed")

func (s *Session) stepError(step int, r any) error {
	if step < 0 || step >= len(s.steps) {
		return fmt.Errorf("%w: %v", ErrKernel, r)
	}
	n := &s.exe.g.Nodes[s.steps[step].node]
	if _, fault := r.(interface{ Addr() uintptr }); fault {
		return fmt.Errorf("%w: node %q (%s): %v (was the model file truncated or rewritten while in use?)", ErrKernel, n.Name, n.Op, r)
	}
	return fmt.Errorf("%w: node %q (%s): %v", ErrKernel, n.Name, n.Op, r)
}

// bind checks the inputs against the graph's and copies them into their
// slots.
func (s *Session) bind(inputs []Tensor) error {
	g := s.exe.g
	if len(inputs) != len(g.Inputs) {
		return s.countError(inputs)
	}
	named := true
	for i := range inputs {
		named = named && inputs[i].Name != ""
	}
	for i, id := range g.Inputs {
		want := g.Tensor(id)
		k := i
		if named {
			k = -1
			for j := range inputs {
				if inputs[j].Name == want.Name {
					k = j
					break
				}
			}
			if k < 0 {
				return s.countError(inputs)
			}
		}
		in := &inputs[k]
		if in.DType == want.DType && len(want.Shape) == 0 && len(in.Shape) != 0 && s.exe.model.reopen != nil {
			// A declared scalar fed with another shape (a sample rate
			// as [1]): ONNX Runtime takes it, and so does the model
			// planned for that shape.
			return errReshaped
		}
		if in.DType != want.DType || !want.Shape.Equal(in.Shape) {
			return fmt.Errorf("input %q: expected %s%v, got %s%v", want.Name, want.DType, want.Shape, in.DType, ir.Shape(in.Shape))
		}
		if int64(len(in.Data)) != want.Bytes() {
			return fmt.Errorf("input %q: expected %d bytes of data for %s%v, got %d", want.Name, want.Bytes(), want.DType, want.Shape, len(in.Data))
		}
		if raw.SameStart(in.Data, s.inputs[i]) {
			continue // the caller filled the session's own buffer
		}
		copy(s.inputs[i], in.Data)
	}
	return nil
}

// Plans is how many plans the session keeps: for a model with open
// shapes, one per set of input shapes (and values) it runs with, up to
// Options.Plans; otherwise 1.
func (s *Session) Plans() int {
	if s.open != nil {
		return len(s.open.plans)
	}
	return 1
}

// Executable is the executable the session's last run used: for a model
// with open shapes, the one compiled for that run's shapes (nil before
// the first run); otherwise the session's own.
func (s *Session) Executable() *Executable {
	if s.open != nil {
		if s.open.last == nil {
			return nil
		}
		return s.open.last.exe
	}
	return s.exe
}

// InputBuffers returns the session's own buffers for the graph inputs, in
// order, named and shaped. A caller that writes an input straight into its
// buffer and passes these tensors to Run saves Run the copy. On CUDA they
// are pinned host memory that a run only reads, so they keep their
// contents from run to run; on the CPU they are the input's slots in the
// arena, whose bytes later steps of a run may reuse once the input has
// been read, so fill them before every run.
//
// A session of a model with open shapes has no buffers of its own until
// it runs: InputBuffers returns nil for it.
func (s *Session) InputBuffers() []Tensor {
	if s.open != nil {
		return nil
	}
	g := s.exe.g
	out := make([]Tensor, len(g.Inputs))
	for i, id := range g.Inputs {
		t := g.Tensor(id)
		out[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: s.inputs[i]}
	}
	return out
}

// countError names the inputs that are missing or not expected.
func (s *Session) countError(inputs []Tensor) error {
	g := s.exe.g
	var missing, extra []string
	for _, id := range g.Inputs {
		name := g.Tensor(id).Name
		found := false
		for _, in := range inputs {
			found = found || in.Name == name
		}
		if !found {
			missing = append(missing, name)
		}
	}
	for _, in := range inputs {
		found := false
		for _, id := range g.Inputs {
			found = found || g.Tensor(id).Name == in.Name
		}
		if !found && in.Name != "" {
			extra = append(extra, in.Name)
		}
	}
	switch {
	case len(missing) > 0 && len(inputs) < len(g.Inputs):
		return fmt.Errorf("missing input(s) %q: the model takes %d, got %d", missing, len(g.Inputs), len(inputs))
	case len(extra) > 0:
		return fmt.Errorf("unexpected input(s) %q; the model's inputs are %q", extra, inputNames(g))
	case len(missing) > 0:
		return fmt.Errorf("missing input(s) %q", missing)
	}
	return fmt.Errorf("the model takes %d input(s) %q, got %d", len(g.Inputs), inputNames(g), len(inputs))
}

func inputNames(g *ir.Graph) []string {
	names := make([]string, len(g.Inputs))
	for i, id := range g.Inputs {
		names[i] = g.Tensor(id).Name
	}
	return names
}
