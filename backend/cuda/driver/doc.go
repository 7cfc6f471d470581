// Package driver binds the parts of the CUDA driver API (libcuda.so.1) and
// of NVRTC (libnvrtc.so) and cuBLAS (libcublas.so.13 or .12) that berth
// uses, at run time and without cgo.
//
// Load opens the libraries once; where they are absent it returns an error
// and nothing else in the package works, so a binary built with this
// package still runs on machines without a GPU. CUDA contexts are bound to
// OS threads: a Device owns one goroutine locked to its thread, and every
// call that needs the context runs there through Device.Do.
//
// Calls into C through purego's variadic path allocate their argument
// slice; the calls a run repeats (graph launch, stream wait, kernel
// launch, GEMM) take an Args block made once instead, and allocate
// nothing.
package driver
