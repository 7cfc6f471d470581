package berth

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// compileCUDA compiles m's prepared graph for CUDA device 0. Where CUDA is
// absent the error wraps ErrNoDevice; an operator or type without CUDA
// kernels is an error naming the node.
//
// BERTH_CUDA_PRECISION=tf32 in the environment lets the float32 GEMMs use
// the TF32 tensor cores (see cuda.TF32); the default is plain float32.
func compileCUDA(m *Model, _ Options) (*cuda.Executable, error) {
	var opts cuda.Options
	switch p := strings.ToLower(os.Getenv("BERTH_CUDA_PRECISION")); p {
	case "", "fp32", "float32":
	case "tf32":
		opts.Precision = cuda.TF32
	default:
		return nil, fmt.Errorf("compile for cuda: BERTH_CUDA_PRECISION=%q: want fp32 or tf32", p)
	}
	exe, err := cuda.Compile(m.graph, opts)
	if errors.Is(err, driver.ErrUnavailable) {
		return nil, fmt.Errorf("compile for cuda: %w: %v", ErrNoDevice, err)
	}
	if err != nil {
		return nil, fmt.Errorf("compile for cuda: %w", err)
	}
	return exe, nil
}

// cudaSession runs a CUDA executable behind the root Session API: Session
// binds the caller's tensors into inputs (as it does into the CPU arena's
// slots), run moves them through the GPU and returns outputs, tensors over
// host buffers that stay valid until the next run. inputs and out are the
// device session's page-locked staging, so a run copies nothing on the
// host beyond the binding.
type cudaSession struct {
	s       *cuda.Session
	inputs  [][]byte // one host buffer per graph input
	out     [][]byte // one host buffer per graph output
	outputs []Tensor // the graph outputs, viewing out
}

// newCUDASession makes a device session of exe, whose graph is g, and its
// host buffers.
func newCUDASession(g *ir.Graph, exe *cuda.Executable) (*cudaSession, error) {
	s, err := exe.NewSession()
	if err != nil {
		return nil, fmt.Errorf("cuda session: %w", err)
	}
	in, out := s.Staging()
	c := &cudaSession{s: s, inputs: in, out: out, outputs: make([]Tensor, len(g.Outputs))}
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		c.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: c.out[i]}
	}
	return c, nil
}

// run runs the graph on the inputs already bound and returns the outputs.
func (c *cudaSession) run() ([]Tensor, error) {
	if err := c.s.RunStaged(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKernel, err)
	}
	return c.outputs, nil
}

// close frees the device arena.
func (c *cudaSession) close() error { return c.s.Close() }
