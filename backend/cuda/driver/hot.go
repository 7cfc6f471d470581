package driver

import (
	"unsafe"
)

// Args is an argument block for the calls a run makes again and again
// (a graph launch, a stream synchronisation, a kernel launch, a GEMM). The
// variadic path of a C call allocates its argument slice on every call;
// a block made once with NewArgs and passed whole allocates nothing. A
// block serves one call at a time: keep one per session, used on the
// owner thread.
type Args []uintptr

// NewArgs returns a block big enough for every call here.
func NewArgs() Args { return make(Args, 24) }

// callArgs calls fn with the arguments a. a must live on the heap (make
// it with NewArgs), and whatever its words point to must stay alive
// across the call; then nothing is allocated.
func callArgs(fn uintptr, a Args) int32 {
	r := cCall(fn, a...)
	return int32(r)
}

func status(r int32) error {
	if r != 0 {
		return Result(r)
	}
	return nil
}

// LaunchWith is Launch through the argument block a.
func (g Graph) LaunchWith(s Stream, a Args) error {
	a[0], a[1] = uintptr(g), uintptr(s)
	return status(callArgs(graphLib.launch, a[:2]))
}

// SynchronizeWith is Synchronize through the argument block a.
func (s Stream) SynchronizeWith(a Args) error {
	a[0] = uintptr(s)
	return status(callArgs(lib.cuStreamSynchronize, a[:1]))
}

// CopyToDeviceAsyncWith is CopyToDeviceAsync through the argument block
// a. src must be page-locked and stay alive until the copy is done.
func (s Stream) CopyToDeviceAsyncWith(a Args, dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	a[0], a[1], a[2], a[3] = uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), uintptr(s)
	return status(callArgs(lib.cuMemcpyHtoDAsync, a[:4]))
}

// CopyFromDeviceAsyncWith is CopyFromDeviceAsync through the argument
// block a. dst must be page-locked and stay alive until the copy is done.
func (s Stream) CopyFromDeviceAsyncWith(a Args, dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	a[0], a[1], a[2], a[3] = uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)), uintptr(s)
	return status(callArgs(lib.cuMemcpyDtoHAsync, a[:4]))
}

// LaunchWith is Launch through the argument block a. params (one pointer
// to each argument's value) must live on the heap.
func (f Function) LaunchWith(a Args, grid, block [3]uint32, sharedBytes uint32, stream uintptr, params []unsafe.Pointer) error {
	var pp uintptr
	if len(params) > 0 {
		pp = uintptr(unsafe.Pointer(&params[0]))
	}
	a[0] = uintptr(f)
	a[1], a[2], a[3] = uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2])
	a[4], a[5], a[6] = uintptr(block[0]), uintptr(block[1]), uintptr(block[2])
	a[7], a[8], a[9], a[10] = uintptr(sharedBytes), stream, pp, 0
	return status(callArgs(lib.cuLaunchKernel, a[:11]))
}
