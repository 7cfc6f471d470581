package driver

import (
	"testing"
	"unsafe"
)

// TestLaunchConfigLayout checks LaunchConfig against CUlaunchConfig and
// CUlaunchAttribute as cuda.h lays them out on 64-bit Linux: the driver
// reads the fields at these offsets.
func TestLaunchConfigLayout(t *testing.T) {
	var c LaunchConfig
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"gridDimX", unsafe.Offsetof(c.grid), 0},
		{"blockDimX", unsafe.Offsetof(c.block), 12},
		{"sharedMemBytes", unsafe.Offsetof(c.shared), 24},
		{"hStream", unsafe.Offsetof(c.stream), 32},
		{"attrs", unsafe.Offsetof(c.attrs), 40},
		{"numAttrs", unsafe.Offsetof(c.numAttrs), 48},
		{"CUlaunchAttribute.value", unsafe.Offsetof(c.attr.value), 8},
		{"sizeof(CUlaunchAttribute)", unsafe.Sizeof(c.attr), 72},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
	n := NewLaunchConfig()
	if n.attrs != uintptr(unsafe.Pointer(&n.attr)) {
		t.Errorf("NewLaunchConfig: attrs does not point at its attribute")
	}
	if n.numAttrs != 1 || n.attr.id != attributeProgrammaticSerialization || *(*int32)(unsafe.Pointer(&n.attr.value[0])) != 1 {
		t.Errorf("NewLaunchConfig: %d attributes, id %d, value %d; want one, %d, 1", n.numAttrs, n.attr.id, *(*int32)(unsafe.Pointer(&n.attr.value[0])), attributeProgrammaticSerialization)
	}
}
