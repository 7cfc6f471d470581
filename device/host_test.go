package device

import (
	"testing"
	"unsafe"
)

func TestHostBufferAlignment(t *testing.T) {
	for _, tc := range []struct{ size, align int64 }{
		{0, 64}, {1, 64}, {63, 64}, {4096, 64}, {100, 256}, {7, 8},
	} {
		h, err := NewHostBuffer(tc.size, tc.align)
		if err != nil {
			t.Fatalf("NewHostBuffer(%d, %d): %v", tc.size, tc.align, err)
		}
		if h.Size() != tc.size {
			t.Errorf("size %d, want %d", h.Size(), tc.size)
		}
		if tc.size > 0 && uintptr(unsafe.Pointer(&h.Bytes()[0]))%uintptr(tc.align) != 0 {
			t.Errorf("buffer of %d bytes not aligned to %d", tc.size, tc.align)
		}
		if cap(h.Bytes()) != int(tc.size) {
			t.Errorf("cap %d lets writes run past the buffer", cap(h.Bytes()))
		}
	}
}

func TestHostBufferRejects(t *testing.T) {
	for _, tc := range []struct{ size, align int64 }{
		{-1, 64}, {10, 3}, {10, 4}, {MaxHostBytes + 1, 64},
	} {
		if _, err := NewHostBuffer(tc.size, tc.align); err == nil {
			t.Errorf("NewHostBuffer(%d, %d) succeeded", tc.size, tc.align)
		}
	}
}
