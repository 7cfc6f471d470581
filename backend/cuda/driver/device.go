package driver

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Ptr is a device address (CUdeviceptr).
type Ptr uint64

// Device is one GPU with its primary context, owned by a goroutine locked
// to one OS thread. All context work goes through Do.
type Device struct {
	Ordinal int
	Name    string
	// Major and Minor are the compute capability (9.0 for Hopper).
	Major, Minor int
	// SMs is the number of multiprocessors.
	SMs int
	// TotalMem is the device memory in bytes.
	TotalMem int64

	dev    int32
	ctx    uintptr
	work   chan job
	closed bool
}

// Attribute numbers of cuDeviceGetAttribute.
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
)

// Open makes device ordinal ready: it starts the owner goroutine, retains
// the primary context and makes it current on the owner's thread.
func Open(ordinal int) (*Device, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("%w: no CUDA device %d (%d found)", ErrUnavailable, ordinal, n)
	}
	d := &Device{Ordinal: ordinal, work: make(chan job)}
	ready := make(chan error)
	go d.own(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// own is the owner goroutine: it locks its OS thread, sets up the context
// there and then runs submitted work until Close.
func (d *Device) own(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := d.setup()
	ready <- err
	if err != nil {
		return
	}
	for j := range d.work {
		j.done <- run(j.fn)
	}
	callRaw(lib.cuDevicePrimaryCtxRelease, uintptr(d.dev))
}

func (d *Device) setup() error {
	if err := call(lib.cuDeviceGet, uintptr(unsafe.Pointer(&d.dev)), uintptr(d.Ordinal)); err != nil {
		return fmt.Errorf("cuDeviceGet: %w", err)
	}
	name := make([]byte, 256)
	if err := call(lib.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(d.dev)); err != nil {
		return fmt.Errorf("cuDeviceGetName: %w", err)
	}
	d.Name = goString(uintptr(unsafe.Pointer(&name[0])))
	for _, a := range []struct {
		attr int
		dst  *int
	}{{attrComputeMajor, &d.Major}, {attrComputeMinor, &d.Minor}, {attrMultiprocessorCount, &d.SMs}} {
		var v int32
		if err := call(lib.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a.attr), uintptr(d.dev)); err != nil {
			return fmt.Errorf("cuDeviceGetAttribute(%d): %w", a.attr, err)
		}
		*a.dst = int(v)
	}
	var mem uint64
	if err := call(lib.cuDeviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(d.dev)); err != nil {
		return fmt.Errorf("cuDeviceTotalMem: %w", err)
	}
	d.TotalMem = int64(mem)
	if err := call(lib.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&d.ctx)), uintptr(d.dev)); err != nil {
		return fmt.Errorf("cuDevicePrimaryCtxRetain: %w", err)
	}
	if err := call(lib.cuCtxSetCurrent, d.ctx); err != nil {
		return fmt.Errorf("cuCtxSetCurrent: %w", err)
	}
	return nil
}

// ErrClosed is returned by Do on a closed device.
var ErrClosed = errors.New("CUDA device is closed")

// job is one call of Do: the function and where its result goes.
type job struct {
	fn   func() error
	done chan error
}

// doneChans recycles the result channels of Do, so that a call allocates
// nothing.
var doneChans = sync.Pool{New: func() any { return make(chan error, 1) }}

// Do runs fn on the device's owner thread, where the context is current,
// and returns its error. A panic in fn is returned as an error. Do itself
// allocates nothing.
func (d *Device) Do(fn func() error) error {
	if d.closed {
		return ErrClosed
	}
	done := doneChans.Get().(chan error)
	d.work <- job{fn, done}
	err := <-done
	doneChans.Put(done)
	return err
}

// run calls fn, turning a panic into an error.
func run(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("CUDA call panicked: %v", r)
		}
	}()
	return fn()
}

// Close stops the owner goroutine and releases the primary context. Memory
// and modules must be freed before.
func (d *Device) Close() {
	if !d.closed {
		d.closed = true
		close(d.work)
	}
}

// The functions below must run on the owner thread (inside Do).

// Alloc allocates n bytes of device memory (256-byte aligned).
func Alloc(n int64) (Ptr, error) {
	var p Ptr
	if n <= 0 {
		return 0, nil
	}
	err := call(lib.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n))
	return p, err
}

// Free releases device memory from Alloc.
func Free(p Ptr) error {
	if p == 0 {
		return nil
	}
	return call(lib.cuMemFree, uintptr(p))
}

// CopyToDevice copies src to the device address dst.
func CopyToDevice(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	err := call(lib.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
	runtime.KeepAlive(src)
	return err
}

// CopyFromDevice copies len(dst) bytes from the device address src.
func CopyFromDevice(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	err := call(lib.cuMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
	runtime.KeepAlive(dst)
	return err
}

// CopyDevice copies n bytes from the device address src to dst.
func CopyDevice(dst, src Ptr, n int64) error {
	if n <= 0 {
		return nil
	}
	return call(lib.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n))
}

// Memset sets n bytes at p to v.
func Memset(p Ptr, v byte, n int64) error {
	return call(lib.cuMemsetD8, uintptr(p), uintptr(v), uintptr(n))
}

// Synchronize waits for all work of the current context.
func Synchronize() error { return call(lib.cuCtxSynchronize) }

// Module is loaded device code.
type Module uintptr

// Function is a kernel of a module.
type Function uintptr

// LoadModule loads a cubin or PTX image.
func LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, errors.New("cuModuleLoadData: empty image")
	}
	var m Module
	err := call(lib.cuModuleLoadData, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&image[0])))
	runtime.KeepAlive(image)
	return m, err
}

// Unload frees a module.
func (m Module) Unload() error { return call(lib.cuModuleUnload, uintptr(m)) }

// Function looks up a kernel by its (extern "C") name.
func (m Module) Function(name string) (Function, error) {
	var f Function
	cname := cString(name)
	err := call(lib.cuModuleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&cname[0])))
	runtime.KeepAlive(cname)
	if err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// Launch runs f on a grid of blocks on the given stream (0: the default
// stream). params points to the kernel's arguments, one pointer to each.
func (f Function) Launch(grid, block [3]uint32, sharedBytes uint32, stream uintptr, params []unsafe.Pointer) error {
	var pp uintptr
	if len(params) > 0 {
		pp = uintptr(unsafe.Pointer(&params[0]))
	}
	err := call(lib.cuLaunchKernel, uintptr(f),
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(sharedBytes), stream, pp, 0)
	runtime.KeepAlive(params)
	return err
}
