package berth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// Session owns one activation arena and runs the executable in it.
type Session struct {
	exe     *Executable
	s       backend.Session // set for an executable of fixed shapes
	inputs  [][]byte        // where a run reads each graph input (s.Inputs)
	outputs []Tensor        // graph outputs, viewing s.Outputs
	open    *openSession    // set for an executable whose shapes are open
	// reshaped runs the inputs whose declared scalars come with other
	// shapes: a session of the executable's model with open shapes, opened
	// with the first such run.
	reshaped *Session
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
	return e.newSession(nil)
}

// newSession is NewSession; lane, when not nil and large enough, holds
// the session's arena (shared with the other plans of an open session or
// a generator, which run in turn).
func (e *Executable) newSession(lane backend.Lane) (*Session, error) {
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
	bs, err := e.x.NewSession(lane)
	if lane != nil && errors.Is(err, backend.ErrLaneTooSmall) {
		bs, err = e.x.NewSession(nil)
	}
	if err != nil {
		if !e.dev.Caps().Host {
			err = fmt.Errorf("%s session: %w", e.dev.Name(), err)
		}
		return nil, err
	}
	s := &Session{exe: e, s: bs, inputs: bs.Inputs()}
	g := e.g
	s.outputs = make([]Tensor, len(g.Outputs))
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		s.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: bs.Outputs()[i]}
	}
	return s, nil
}

// Arena exposes the session's arena (for tools and tests): for a model
// with open shapes, that of the plan of the last run, and nil before its
// first run. On the CPU it is an *arena.Host; on a GPU its reads and
// writes copy through the host.
func (s *Session) Arena() arena.Arena {
	if s.open != nil {
		if s.open.last == nil {
			return nil
		}
		return s.open.last.s.Arena()
	}
	return s.s.Arena()
}

// Close stops the session's workers and frees its arena. The outputs of
// its last run and its input buffers become invalid: on the CPU a large
// arena is a mapping of its own, which Close unmaps, so that reading
// them afterwards faults (Clone what you keep).
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
		return s.s.Close()
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

// StepTime is how long one step of a profiled run took: on the CPU a
// step that runs the elementwise nodes after it as its epilogue lists
// them in its Op too, as "Conv+Add+Relu"; on a GPU a step is a kernel or
// a library call, run and timed one at a time after the run.
type StepTime = backend.StepTime

// Profile runs like Run and also times each step. It allocates the
// timings; it is for finding where the time goes, not for the hot path.
func (s *Session) Profile(ctx context.Context, inputs ...Tensor) ([]StepTime, error) {
	if s.open != nil {
		if _, err := s.Run(ctx, inputs...); err != nil {
			return nil, err
		}
		return s.open.last.s.Profile(ctx, s.open.last.feeds...)
	}
	times := make([]time.Duration, s.s.Steps())
	if _, err := s.run(ctx, inputs, times); err != nil {
		return nil, err
	}
	return s.s.Profile(times), nil
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
	if err := s.s.Run(ctx, times); err != nil {
		return nil, err
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
var ErrKernel = backend.ErrKernel

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
// it runs, and a closed session none any more: InputBuffers returns nil
// for them.
func (s *Session) InputBuffers() []Tensor {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.open != nil || closed {
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
