// Package cuda compiles an ir.Graph for an NVIDIA GPU and runs it.
//
// Compile builds the same static memory plan as the CPU backend (256-byte
// slots), uploads every constant once into one device weight region, and
// records for each node the kernel launches it needs with their arguments.
// The kernels are CUDA C compiled at run time by NVRTC, one module per
// family of operators, cached in memory for the process and on disk by the
// SHA-256 of their source and the GPU architecture. A Session owns one
// device arena of exactly the plan's size; Run copies the inputs into their
// slots, launches every kernel in plan order on one stream and copies the
// outputs back with a single synchronisation.
//
// The CUDA libraries are loaded at run time (see package driver): without
// them Compile returns an error wrapping driver.ErrUnavailable.
package cuda
