package driver

import (
	"runtime"
	"sync"
	"unsafe"
)

// Early launches (programmatic dependent launch, sm_90 and later): a
// kernel launched with LaunchEarlyWith may start while the kernel ahead
// of it on the stream still runs, once every block of that kernel has
// executed griddepcontrol.launch_dependents; it must execute
// griddepcontrol.wait before it reads anything an earlier kernel writes,
// or writes anything an earlier kernel reads. Until then it can, say,
// load its weights. Stream capture keeps the relation as the graph's
// edge.

var earlyLib struct {
	once   sync.Once
	launch uintptr // cuLaunchKernelEx
}

// EarlyLaunches reports whether the driver has cuLaunchKernelEx (CUDA
// 11.8 on), which LaunchEarlyWith needs; whether a kernel can make use of
// it depends on the device (compute capability 9.0 on).
func EarlyLaunches() bool {
	earlyLib.once.Do(func() {
		if Load() != nil {
			return
		}
		resolve(handle, []symbolRef{{&earlyLib.launch, "cuLaunchKernelEx"}})
	})
	return earlyLib.launch != 0
}

// LaunchConfig is the configuration of an early launch (CUlaunchConfig
// with one CUlaunchAttribute after it, the programmatic stream
// serialisation, allowed). Make one with NewLaunchConfig and reuse it:
// launching through it allocates nothing.
type LaunchConfig struct {
	grid, block [3]uint32
	shared      uint32
	_           uint32
	stream      uintptr
	attrs       uintptr // &attr
	numAttrs    uint32
	_           uint32
	attr        launchAttribute
}

// launchAttribute is CUlaunchAttribute: an id and a 64-byte value.
type launchAttribute struct {
	id    uint32
	_     uint32
	value [64]byte
}

// attributeProgrammaticSerialization is
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const attributeProgrammaticSerialization = 6

// NewLaunchConfig returns a configuration for early launches.
func NewLaunchConfig() *LaunchConfig {
	c := &LaunchConfig{numAttrs: 1}
	c.attrs = uintptr(unsafe.Pointer(&c.attr)) // Go's heap does not move it
	c.attr.id = attributeProgrammaticSerialization
	*(*int32)(unsafe.Pointer(&c.attr.value[0])) = 1 // programmaticStreamSerializationAllowed
	return c
}

// LaunchEarlyWith is LaunchWith for a kernel that may start before the
// kernel ahead of it ends (see EarlyLaunches); c is a configuration from
// NewLaunchConfig, a the argument block, params as for LaunchWith.
func (f Function) LaunchEarlyWith(a Args, c *LaunchConfig, grid, block [3]uint32, sharedBytes uint32, stream uintptr, params []unsafe.Pointer) error {
	if !EarlyLaunches() {
		return f.LaunchWith(a, grid, block, sharedBytes, stream, params)
	}
	var pp uintptr
	if len(params) > 0 {
		pp = uintptr(unsafe.Pointer(&params[0]))
	}
	c.grid, c.block, c.shared, c.stream = grid, block, sharedBytes, stream
	a[0], a[1], a[2], a[3] = uintptr(unsafe.Pointer(c)), uintptr(f), pp, 0
	r := callArgs(earlyLib.launch, a[:4])
	runtime.KeepAlive(c)
	return status(r)
}
