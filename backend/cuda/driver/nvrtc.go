package driver

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

var rtc struct {
	create, destroy, compile, logSize, log, cubinSize, cubin, errString, version uintptr
}

var (
	rtcOnce sync.Once
	rtcErr  error
)

// nvrtcNames are the names NVRTC is installed under, newest first.
var nvrtcNames = []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"}

func loadNVRTC() error {
	rtcOnce.Do(func() {
		_, rtcErr = openFirst("NVRTC", nvrtcNames, []symbolRef{
			{&rtc.create, "nvrtcCreateProgram"}, {&rtc.destroy, "nvrtcDestroyProgram"},
			{&rtc.compile, "nvrtcCompileProgram"}, {&rtc.logSize, "nvrtcGetProgramLogSize"},
			{&rtc.log, "nvrtcGetProgramLog"}, {&rtc.cubinSize, "nvrtcGetCUBINSize"},
			{&rtc.cubin, "nvrtcGetCUBIN"}, {&rtc.errString, "nvrtcGetErrorString"},
			{&rtc.version, "nvrtcVersion"},
		})
	})
	return rtcErr
}

// rtcError describes an nvrtcResult.
func rtcError(what string, r int32) error {
	msg := fmt.Sprintf("nvrtc error %d", r)
	if rtc.errString != 0 {
		p := cCall(rtc.errString, uintptr(r))
		msg = goString(p)
	}
	return fmt.Errorf("%s: %s", what, msg)
}

// Compile compiles CUDA C++ source with NVRTC into a cubin for compute
// capability major.minor. The error carries the compiler's log.
func Compile(src, name string, major, minor int, options ...string) ([]byte, error) {
	if err := loadNVRTC(); err != nil {
		return nil, err
	}
	var prog uintptr
	csrc, cname := cString(src), cString(name)
	if r := callRaw(rtc.create, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0); r != 0 {
		return nil, rtcError("nvrtcCreateProgram", r)
	}
	defer callRaw(rtc.destroy, uintptr(unsafe.Pointer(&prog)))
	opts := append([]string{fmt.Sprintf("--gpu-architecture=sm_%d%d", major, minor)}, options...)
	copts := make([][]byte, len(opts))
	ptrs := make([]uintptr, len(opts))
	for i, o := range opts {
		copts[i] = cString(o)
		ptrs[i] = uintptr(unsafe.Pointer(&copts[i][0]))
	}
	r := callRaw(rtc.compile, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(copts)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	if r != 0 {
		return nil, fmt.Errorf("%w\n%s", rtcError("compiling "+name, r), programLog(prog))
	}
	var size uintptr
	if r := callRaw(rtc.cubinSize, prog, uintptr(unsafe.Pointer(&size))); r != 0 {
		return nil, rtcError("nvrtcGetCUBINSize", r)
	}
	cubin := make([]byte, size)
	if size > 0 {
		if r := callRaw(rtc.cubin, prog, uintptr(unsafe.Pointer(&cubin[0]))); r != 0 {
			return nil, rtcError("nvrtcGetCUBIN", r)
		}
	}
	return cubin, nil
}

func programLog(prog uintptr) string {
	var size uintptr
	if callRaw(rtc.logSize, prog, uintptr(unsafe.Pointer(&size))) != 0 || size <= 1 {
		return ""
	}
	b := make([]byte, size)
	if callRaw(rtc.log, prog, uintptr(unsafe.Pointer(&b[0]))) != 0 {
		return ""
	}
	return string(b[:size-1])
}
