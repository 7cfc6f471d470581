package berth

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/plan"
)

// Alignment of every slot in a CPU arena, in bytes.
const Alignment = cpu.Alignment

// foldNode computes a node whose inputs are all constants, for constant
// folding (passes.Prepare): with the CPU's kernels, whatever the device
// the model runs on.
var foldNode = cpu.Evaluate

// compileCPU compiles m's prepared graph for the CPU (cpu.Compile),
// refusing, before anything is allocated for it, a plan whose arena and
// weights exceed opts.MemoryLimit.
func compileCPU(m *Model, opts Options) (*Executable, error) {
	if err := checkTensorSizes(opts.MemoryLimit, m.graph); err != nil {
		return nil, err
	}
	g := m.graph
	copts := cpu.Options{
		Threads:   opts.Threads,
		FileOrder: opts.FileOrder,
		NoInPlace: opts.NoInPlace,
		Tuning:    opts.CPU,
		Weights:   opts.weights,
		Bound:     opts.bound,
		Check: func(p *plan.Problem, pl *plan.Plan, w int64) error {
			return checkLimit(opts.MemoryLimit, p, pl, g, w)
		},
	}
	if m.src != nil {
		copts.Release, copts.Read = m.src.Release, m.src.ReadInto
	}
	ce, err := cpu.Compile(g, copts)
	if err != nil {
		return nil, err
	}
	if m.src != nil {
		// Compiling read what it packed; runs read back only the rest.
		m.releaseFile()
	}
	e := &Executable{model: m, g: g, device: CPU, cpu: ce, layout: ce.Layout(),
		weightBytes: ce.WeightBytes(), packedBytes: ce.PackedWeightBytes(), planTime: ce.PlanTime()}
	e.problem, e.plan = ce.Plan()
	return e, nil
}

// newCPUSession opens a session of e, compiled for the CPU: on workers
// when they are not nil (the caller closes them), its arena in buf when
// buf is large enough.
func newCPUSession(e *Executable, workers *cpu.Workers, buf *device.HostBuffer) (*Session, error) {
	cs, err := e.cpu.NewSession(workers, buf)
	if err != nil {
		return nil, err
	}
	s := &Session{exe: e, cpu: cs, arena: cs.Arena(), inputs: cs.Inputs()}
	g := e.g
	s.outputs = make([]Tensor, len(g.Outputs))
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		s.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: cs.Outputs()[i]}
	}
	return s, nil
}

// cpuRunError is the error of a CPU run that failed: a kernel's failure
// wraps ErrKernel, a cancellation is the context's error.
func cpuRunError(err error) error {
	var ke *cpu.KernelError
	if errors.As(err, &ke) {
		return fmt.Errorf("%w: %v", ErrKernel, err)
	}
	return err
}
