package cpu

import (
	"testing"
	"unsafe"

	"github.com/berth-ml/berth/device"
)

func TestWeightFloats(t *testing.T) {
	for _, n := range []int{1, 100, device.HugePageBytes/4 - 1, device.HugePageBytes / 4, 3*device.HugePageBytes/4 + 5} {
		w := weightFloats(n)
		if len(w) != n || cap(w) != n {
			t.Fatalf("weightFloats(%d): len %d cap %d", n, len(w), cap(w))
		}
		if n*4 >= device.HugePageBytes && uintptr(unsafe.Pointer(&w[0]))%alignment != 0 {
			t.Errorf("weightFloats(%d) at %p, not %d-byte aligned", n, &w[0], alignment)
		}
		for i, v := range w {
			if v != 0 {
				t.Fatalf("weightFloats(%d)[%d] = %v, not zero", n, i, v)
			}
			w[i] = float32(i)
		}
	}
}
