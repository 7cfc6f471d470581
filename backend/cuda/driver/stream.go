package driver

import (
	"errors"
	"runtime"
	"sync"
	"unsafe"
)

// Stream is a CUDA stream (CUstream).
type Stream uintptr

// Graph is an executable CUDA graph (CUgraphExec).
type Graph uintptr

// graphLib holds the graph entry points, resolved on first use: a driver
// without them still runs kernels one launch at a time.
var graphLib struct {
	once                                                                sync.Once
	err                                                                 error
	beginCapture, endCapture, instantiate, launch, execDestroy, destroy uintptr
}

// ErrNoGraphs is returned where the driver lacks CUDA graphs.
var ErrNoGraphs = errors.New("the CUDA driver does not support graph capture")

func loadGraphs() error {
	graphLib.once.Do(func() {
		if err := Load(); err != nil {
			graphLib.err = err
			return
		}
		if _, err := resolve(handle, []symbolRef{
			{&graphLib.beginCapture, "cuStreamBeginCapture_v2"}, {&graphLib.endCapture, "cuStreamEndCapture"},
			{&graphLib.instantiate, "cuGraphInstantiateWithFlags"}, {&graphLib.launch, "cuGraphLaunch"},
			{&graphLib.execDestroy, "cuGraphExecDestroy"}, {&graphLib.destroy, "cuGraphDestroy"},
		}); err != nil {
			graphLib.err = ErrNoGraphs
		}
	})
	return graphLib.err
}

// The functions below must run on the owner thread (inside Device.Do).

// NewStream creates a stream that does not synchronise with the legacy
// default stream.
func NewStream() (Stream, error) {
	var s Stream
	err := call(lib.cuStreamCreate, uintptr(unsafe.Pointer(&s)), 1) // CU_STREAM_NON_BLOCKING
	return s, err
}

// Destroy releases the stream once its work is done.
func (s Stream) Destroy() error { return call(lib.cuStreamDestroy, uintptr(s)) }

// Synchronize waits for the stream's work.
func (s Stream) Synchronize() error { return call(lib.cuStreamSynchronize, uintptr(s)) }

// CopyToDeviceAsync queues a copy of src to dst on the stream. From
// pageable memory the bytes are staged before it returns, so src may be
// reused at once.
func (s Stream) CopyToDeviceAsync(dst Ptr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	err := call(lib.cuMemcpyHtoDAsync, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), uintptr(s))
	runtime.KeepAlive(src)
	return err
}

// CopyFromDeviceAsync queues a copy of len(dst) bytes from src on the
// stream. Into pageable memory it returns when the copy is done.
func (s Stream) CopyFromDeviceAsync(dst []byte, src Ptr) error {
	if len(dst) == 0 {
		return nil
	}
	err := call(lib.cuMemcpyDtoHAsync, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)), uintptr(s))
	runtime.KeepAlive(dst)
	return err
}

// Capture records the work that record queues on the stream into a graph
// and instantiates it. The stream is left out of capture mode whatever
// happens.
func (s Stream) Capture(record func() error) (Graph, error) {
	if err := loadGraphs(); err != nil {
		return 0, err
	}
	if err := call(graphLib.beginCapture, uintptr(s), 1); err != nil { // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
		return 0, err
	}
	rerr := record()
	var g uintptr
	eerr := call(graphLib.endCapture, uintptr(s), uintptr(unsafe.Pointer(&g)))
	if rerr != nil || eerr != nil {
		if g != 0 {
			callRaw(graphLib.destroy, g)
		}
		return 0, errors.Join(rerr, eerr)
	}
	defer callRaw(graphLib.destroy, g)
	var exec Graph
	if err := call(graphLib.instantiate, uintptr(unsafe.Pointer(&exec)), g, 0); err != nil {
		return 0, err
	}
	return exec, nil
}

// Launch queues the graph on the stream.
func (g Graph) Launch(s Stream) error { return call(graphLib.launch, uintptr(g), uintptr(s)) }

// Destroy frees an instantiated graph.
func (g Graph) Destroy() error {
	if g == 0 {
		return nil
	}
	return call(graphLib.execDestroy, uintptr(g))
}

// AllocHost allocates n bytes of page-locked host memory, which copies on
// a stream read and write directly (and a graph may capture).
func AllocHost(n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	var p unsafe.Pointer
	if err := call(lib.cuMemAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost releases memory from AllocHost.
func FreeHost(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return call(lib.cuMemFreeHost, uintptr(unsafe.Pointer(&b[0])))
}

// NewPinned returns n bytes of Go memory, page-aligned and page-locked
// (registered with the driver), which copies on a stream read and write
// directly, like AllocHost's. Unlike AllocHost's memory it stays valid
// Go memory after Unpin: slices of it may outlive the session that
// pinned it.
func NewPinned(n int64) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	const page = 4096
	n = (n + page - 1) / page * page
	raw := make([]byte, n+page)
	skip := int((page - uintptr(unsafe.Pointer(&raw[0]))%page) % page)
	b := raw[skip : skip+int(n) : skip+int(n)]
	if err := call(lib.cuMemHostRegister, uintptr(unsafe.Pointer(&b[0])), uintptr(n), 0); err != nil {
		return nil, err
	}
	return b, nil
}

// Unpin unregisters memory from NewPinned; it stays valid Go memory.
func Unpin(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return call(lib.cuMemHostUnregister, uintptr(unsafe.Pointer(&b[0])))
}
