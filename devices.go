package berth

import (
	"fmt"
	"os"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/backend/cuda"
)

// This file is the only one of the package that names a device's
// package: every other part of the pipeline reaches a device through the
// backend contract.

// Device names where a model runs.
type Device string

// The devices.
const (
	CPU  Device = "cpu"
	CUDA Device = "cuda"
)

// ErrNoDevice is returned when the requested device is not available.
var ErrNoDevice = backend.ErrUnavailable

// Alignment of every slot in a CPU arena, in bytes.
const Alignment = cpu.Alignment

// CPUTuning is the CPU compiler's switches (see cpu.Tuning).
type CPUTuning = cpu.Tuning

// foldNode computes a node whose inputs are all constants, for constant
// folding (passes.Prepare): with the CPU's kernels, whatever the device
// the model runs on.
var foldNode = cpu.Evaluate

// backendOf is the backend that compiles for dev, tuned as opts says.
//
// On CUDA, BERTH_CUDA_PRECISION in the environment sets the GEMMs'
// precision over opts.Precision: tf32 lets the float32 GEMMs use the TF32
// tensor cores; bf16 and f16 run them on 16-bit weights and activations
// with float32 accumulation; the default is plain float32.
func backendOf(dev Device, opts *Options) (backend.Device, error) {
	switch dev {
	case CPU, "":
		return cpu.Backend{Tuning: opts.CPU}, nil
	case CUDA:
		if env := os.Getenv("BERTH_CUDA_PRECISION"); env != "" {
			p, err := ParsePrecision(env)
			if err != nil {
				return nil, fmt.Errorf("compile for cuda: BERTH_CUDA_PRECISION: %w", err)
			}
			opts.Precision = p
		}
		return cuda.Backend{}, nil
	}
	if b, ok := testDevices[dev]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("compile: unknown device %q (want cpu or cuda)", dev)
}

// testDevices are devices the package's tests add (a CPU that refuses
// what the GPU refuses, say); nil otherwise.
var testDevices map[Device]backend.Device

// Precision is the arithmetic of the matrix products (MatMul, Gemm, Conv)
// on a GPU; the CPU backend always computes in float32.
type Precision = backend.Precision

// The precisions.
const (
	FP32 = backend.FP32 // float32 throughout (the default)
	TF32 = backend.TF32 // float32 operands on the TF32 tensor cores
	BF16 = backend.BF16 // bfloat16 weights and activations, float32 accumulation
	F16  = backend.F16  // IEEE half weights and activations, float32 accumulation
)

// ParsePrecision reads a precision as the command line and
// BERTH_CUDA_PRECISION spell it: fp32, tf32, bf16 or f16.
func ParsePrecision(s string) (Precision, error) { return backend.ParsePrecision(s) }
