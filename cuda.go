package berth

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/backend/cuda"
	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// compileCUDA compiles m's prepared graph for CUDA device 0. Where CUDA is
// absent the error wraps ErrNoDevice; an operator or type without CUDA
// kernels is an error naming the node.
func compileCUDA(m *Model, _ Options) (*cuda.Executable, error) {
	exe, err := cuda.Compile(m.graph, cuda.Options{})
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
// host buffers that stay valid until the next run.
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
	c := &cudaSession{s: s, inputs: make([][]byte, len(g.Inputs)), out: make([][]byte, len(g.Outputs)), outputs: make([]Tensor, len(g.Outputs))}
	for i, id := range g.Inputs {
		c.inputs[i] = make([]byte, g.Tensor(id).Bytes())
	}
	for i, id := range g.Outputs {
		t := g.Tensor(id)
		c.out[i] = make([]byte, t.Bytes())
		c.outputs[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone(), Data: c.out[i]}
	}
	return c, nil
}

// run runs the graph on the inputs already bound and returns the outputs.
func (c *cudaSession) run() ([]Tensor, error) {
	if err := c.s.Run(c.inputs, c.out); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrKernel, err)
	}
	return c.outputs, nil
}

// close frees the device arena.
func (c *cudaSession) close() error { return c.s.Close() }
