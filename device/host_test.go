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

func TestHostBufferHugePages(t *testing.T) {
	for _, size := range []int64{HugePageBytes - 1, HugePageBytes, 3*HugePageBytes + 100} {
		h, err := NewHostBuffer(size, 64)
		if err != nil {
			t.Fatal(err)
		}
		b := h.Bytes()
		if int64(len(b)) != size || int64(cap(b)) != size {
			t.Fatalf("len %d cap %d, want %d", len(b), cap(b), size)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("byte %d of %d is %d, not zero", i, size, b[i])
			}
			b[i] = byte(i)
		}
		addr := uintptr(unsafe.Pointer(&b[0]))
		huge := size >= HugePageBytes && hugePagesOffered()
		if got := addr%HugePageBytes == 0; huge && !got {
			t.Errorf("buffer of %d bytes at %#x not on a huge page boundary", size, addr)
		}
		if huge {
			checkHugeAdvice(t, addr, size)
		}
	}
}
