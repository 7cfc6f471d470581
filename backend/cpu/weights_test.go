package cpu

import (
	"testing"
	"unsafe"

	"github.com/berth-ml/berth/device"
)

func TestWeightStore(t *testing.T) {
	huge := device.HugePageBytes / 4
	sizes := []int{0, 1, 100, 4096, huge - 16, huge - 15, huge, 3*huge + 5, 1 << 20, 7}
	for _, store := range []*WeightStore{nil, {}} {
		var got [][]float32
		// Each round carves about 2 MiB from the blocks: enough rounds
		// to fill more than one.
		for i := 0; i < weightBlockBytes/device.HugePageBytes+2; i++ {
			for _, n := range sizes {
				w := store.floats(n)
				if w == nil {
					t.Fatalf("floats(%d) is nil", n)
				}
				if len(w) != n || cap(w) != n {
					t.Fatalf("floats(%d): len %d cap %d", n, len(w), cap(w))
				}
				if n > 0 && uintptr(unsafe.Pointer(&w[0]))%alignment != 0 {
					t.Errorf("floats(%d) at %p, not %d-byte aligned", n, &w[0], alignment)
				}
				for j, v := range w {
					if v != 0 {
						t.Fatalf("floats(%d)[%d] = %v, not zero", n, j, v)
					}
					w[j] = float32(len(got))
				}
				got = append(got, w)
			}
		}
		// No two share a float: each still holds its own mark.
		for i, w := range got {
			for j, v := range w {
				if v != float32(i) {
					t.Fatalf("store %v: weights %d (%d floats) hold %v at %d", store != nil, i, len(w), v, j)
				}
			}
		}
	}
}
