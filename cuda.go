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
// BERTH_CUDA_PRECISION in the environment sets the GEMMs' precision: tf32
// lets the float32 GEMMs use the TF32 tensor cores (see cuda.TF32); bf16
// and f16 run them on 16-bit weights and activations with float32
// accumulation (cuda.BF16, cuda.F16); the default is plain float32.
func compileCUDA(m *Model, o Options) (*cuda.Executable, error) {
	opts := cuda.Options{Precision: o.Precision, Weights: o.cudaWeights, Bound: o.cudaBound}
	if env := os.Getenv("BERTH_CUDA_PRECISION"); env != "" {
		p, err := ParsePrecision(env)
		if err != nil {
			return nil, fmt.Errorf("compile for cuda: BERTH_CUDA_PRECISION: %w", err)
		}
		opts.Precision = p
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

// cudaAvailable reports, as an error wrapping ErrNoDevice, that CUDA is
// absent.
func cudaAvailable() error {
	if _, err := cuda.Device(); err != nil {
		return fmt.Errorf("compile for cuda: %w: %v", ErrNoDevice, err)
	}
	return nil
}

// Precision is the arithmetic of the matrix products (MatMul, Gemm, Conv)
// on a GPU; the CPU backend always computes in float32.
type Precision = cuda.Precision

// The precisions.
const (
	FP32 = cuda.FP32 // float32 throughout (the default)
	TF32 = cuda.TF32 // float32 operands on the TF32 tensor cores
	BF16 = cuda.BF16 // bfloat16 weights and activations, float32 accumulation
	F16  = cuda.F16  // IEEE half weights and activations, float32 accumulation
)

// ParsePrecision reads a precision as the command line and
// BERTH_CUDA_PRECISION spell it: fp32, tf32, bf16 or f16.
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
// host buffers: on lane where it is not nil and exe fits it, else on a
// lane of its own.
func newCUDASession(g *ir.Graph, exe *cuda.Executable, lane *cuda.Lane) (*cudaSession, error) {
	var s *cuda.Session
	var err error
	if lane != nil {
		s, err = exe.NewSessionOn(lane)
	}
	if lane == nil || errors.Is(err, cuda.ErrLaneTooSmall) {
		s, err = exe.NewSession()
	}
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
