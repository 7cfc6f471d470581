package driver

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// Result is a CUresult; every non-zero value is an error.
type Result int32

func (r Result) Error() string {
	name, desc := "CUDA_ERROR", ""
	if fn := lib.cuGetErrorName; fn != 0 {
		var p uintptr
		if callRaw(fn, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 && p != 0 {
			name = goString(p)
		}
	}
	if fn := lib.cuGetErrorString; fn != 0 {
		var p uintptr
		if callRaw(fn, uintptr(r), uintptr(unsafe.Pointer(&p))) == 0 && p != 0 {
			desc = goString(p)
		}
	}
	if desc != "" {
		return fmt.Sprintf("%s (%d): %s", name, int32(r), desc)
	}
	return fmt.Sprintf("%s (%d)", name, int32(r))
}

// Common results.
const (
	ErrorOutOfMemory Result = 2
	ErrorNoDevice    Result = 100
)

// ErrUnavailable wraps every failure to find or load the CUDA libraries.
var ErrUnavailable = errors.New("CUDA is not available")

// symbols resolved from libcuda.so.1.
var lib struct {
	cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName,
	cuDeviceGetAttribute, cuDeviceTotalMem, cuDevicePrimaryCtxRetain,
	cuDevicePrimaryCtxRelease, cuCtxSetCurrent, cuCtxSynchronize,
	cuMemAlloc, cuMemFree, cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD, cuMemcpyHtoDAsync,
	cuMemcpyDtoHAsync, cuMemsetD8, cuMemAllocHost, cuMemFreeHost, cuMemHostRegister, cuMemHostUnregister,
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel,
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize,
	cuGetErrorName, cuGetErrorString uintptr
}

var (
	loadOnce sync.Once
	loadErr  error
	// handle is libcuda.so.1 once Load succeeded (for optional symbols).
	handle uintptr
)

// Load opens libcuda.so.1 and initialises the driver. It is safe to call
// more than once; every call returns the first call's result.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

func load() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: berth's CUDA backend needs Linux", ErrUnavailable)
	}
	h, err := openLibrary("libcuda.so.1")
	if err != nil {
		msg := "cannot open libcuda.so.1; is the NVIDIA driver installed?"
		if s := strings.TrimSpace(err.Error()); s != "" {
			msg += " (" + s + ")"
		}
		return fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	syms := []symbolRef{
		{&lib.cuInit, "cuInit"}, {&lib.cuDriverGetVersion, "cuDriverGetVersion"},
		{&lib.cuDeviceGetCount, "cuDeviceGetCount"}, {&lib.cuDeviceGet, "cuDeviceGet"},
		{&lib.cuDeviceGetName, "cuDeviceGetName"}, {&lib.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&lib.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&lib.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&lib.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&lib.cuCtxSetCurrent, "cuCtxSetCurrent"}, {&lib.cuCtxSynchronize, "cuCtxSynchronize"},
		{&lib.cuMemAlloc, "cuMemAlloc_v2"}, {&lib.cuMemFree, "cuMemFree_v2"},
		{&lib.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&lib.cuMemcpyDtoH, "cuMemcpyDtoH_v2"}, {&lib.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
		{&lib.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"}, {&lib.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&lib.cuMemsetD8, "cuMemsetD8_v2"},
		{&lib.cuMemAllocHost, "cuMemAllocHost_v2"}, {&lib.cuMemFreeHost, "cuMemFreeHost"},
		{&lib.cuMemHostRegister, "cuMemHostRegister_v2"}, {&lib.cuMemHostUnregister, "cuMemHostUnregister"},
		{&lib.cuModuleLoadData, "cuModuleLoadData"}, {&lib.cuModuleUnload, "cuModuleUnload"},
		{&lib.cuModuleGetFunction, "cuModuleGetFunction"}, {&lib.cuLaunchKernel, "cuLaunchKernel"},
		{&lib.cuStreamCreate, "cuStreamCreate"}, {&lib.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&lib.cuStreamSynchronize, "cuStreamSynchronize"},
		{&lib.cuGetErrorName, "cuGetErrorName"}, {&lib.cuGetErrorString, "cuGetErrorString"},
	}
	if missing, err := resolve(h, syms); err != nil {
		return fmt.Errorf("%w: libcuda.so.1 lacks %s: %v", ErrUnavailable, missing, err)
	}
	if r := callRaw(lib.cuInit, 0); r != 0 {
		return fmt.Errorf("%w: cuInit: %v", ErrUnavailable, Result(r))
	}
	handle = h
	return nil
}

// callRaw calls a C function returning an int status. Like SyscallN it
// moves whatever its uintptr arguments point to onto the heap, so a stack
// move during the call cannot leave C writing to a stale address.
//
//go:uintptrescapes
func callRaw(fn uintptr, args ...uintptr) int32 {
	r := cCall(fn, args...)
	return int32(r)
}

// call is callRaw with the status as an error.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) error {
	if r := callRaw(fn, args...); r != 0 {
		return Result(r)
	}
	return nil
}

// goString copies a NUL-terminated C string.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); i < 1<<16; i++ {
		c := *(*byte)(unsafe.Add(unsafe.Pointer(nil), p+i))
		if c == 0 {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// cString returns a NUL-terminated copy of s.
func cString(s string) []byte { return append([]byte(s), 0) }

// DriverVersion is the CUDA version the driver supports, e.g. 13000.
func DriverVersion() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var v int32
	err := call(lib.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))
	return int(v), err
}

// DeviceCount is the number of CUDA devices.
func DeviceCount() (int, error) {
	if err := Load(); err != nil {
		return 0, err
	}
	var n int32
	err := call(lib.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), err
}

// symbolRef is a symbol to resolve and where its address goes.
type symbolRef struct {
	p    *uintptr
	name string
}

// resolve fills every ref from the library h, and names the first symbol
// it lacks.
func resolve(h uintptr, refs []symbolRef) (missing string, err error) {
	for _, r := range refs {
		p, err := symbol(h, r.name)
		if err != nil {
			return r.name, err
		}
		*r.p = p
	}
	return "", nil
}

// openFirst opens the first of names that opens (what names the library
// in errors) and resolves refs in it. It returns the name opened; every
// error wraps ErrUnavailable.
func openFirst(what string, names []string, refs []symbolRef) (string, error) {
	var h uintptr
	var err error
	opened := ""
	for _, name := range names {
		if h, err = openLibrary(name); err == nil {
			opened = name
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("%w: cannot open %s (%v): %v", ErrUnavailable, what, names, err)
	}
	if missing, err := resolve(h, refs); err != nil {
		return opened, fmt.Errorf("%w: %s lacks %s: %v", ErrUnavailable, opened, missing, err)
	}
	return opened, nil
}
