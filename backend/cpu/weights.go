package cpu

import (
	"unsafe"

	"github.com/berth-ml/berth/device"
)

// weightFloats allocates n zeroed floats for weights that a kernel packs
// or transforms when it is built. From device.HugePageBytes on they take
// a host buffer, which huge pages back where the system offers them:
// weights that stream from memory on every run then cost a TLB entry per
// 2 MiB rather than per 4 KiB (ResNet-50's 7² convolutions ran 5–18 %
// faster with their weights cold).
func weightFloats(n int) []float32 {
	if n*4 < device.HugePageBytes {
		return make([]float32, n)
	}
	h, err := device.NewHostBuffer(int64(n)*4, alignment)
	if err != nil {
		return make([]float32, n)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(h.Bytes()))), n)
}
