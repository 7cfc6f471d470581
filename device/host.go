package device

import (
	"fmt"
	"unsafe"
)

// HostBuffer is a zeroed host allocation whose first byte is aligned to a
// chosen power of two.
type HostBuffer struct {
	b []byte
}

// NewHostBuffer allocates size bytes aligned to align (a power of two, at
// least 8).
//
// Where the system offers them (Linux with transparent huge pages set to
// "always" or "madvise"), a buffer of HugePageBytes or more starts on a
// huge page boundary, and its whole huge pages are backed by huge pages
// as they are first touched: weights and activations that a run sweeps
// then take one TLB entry per 2 MiB instead of 512, which matters most
// for weights streamed from memory. The bytes before and after the
// buffer in its allocation are returned to the system, so the resident
// memory stays the buffer's own.
func NewHostBuffer(size, align int64) (*HostBuffer, error) {
	if size < 0 {
		return nil, fmt.Errorf("host buffer: negative size %d", size)
	}
	if align < 8 || align&(align-1) != 0 {
		return nil, fmt.Errorf("host buffer: alignment %d is not a power of two ≥ 8", align)
	}
	if size > MaxHostBytes {
		return nil, fmt.Errorf("host buffer: %d bytes exceeds the limit of %d", size, int64(MaxHostBytes))
	}
	if size == 0 {
		return &HostBuffer{b: []byte{}}, nil
	}
	huge := size >= HugePageBytes && align <= HugePageBytes && hugePagesOffered()
	if huge {
		align = HugePageBytes
	}
	// Allocate in 8-byte words so the base is word aligned, then skip to
	// the requested alignment.
	words := make([]uint64, (size+align+7)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	skip := (align - int64(uintptr(unsafe.Pointer(&raw[0])))%align) % align
	if huge {
		backWithHugePages(raw, skip, size)
	}
	return &HostBuffer{b: raw[skip : skip+size : skip+size]}, nil
}

// HugePageBytes is the size of the huge pages that back large host
// buffers (2 MiB, x86-64's and most arm64 kernels').
const HugePageBytes = 2 << 20

// MaxHostBytes bounds a single host allocation (1 TiB); it only stops
// absurd sizes, the real budget is the caller's.
const MaxHostBytes = 1 << 40

// Bytes returns the whole buffer.
func (h *HostBuffer) Bytes() []byte { return h.b }

// Size is the usable length in bytes.
func (h *HostBuffer) Size() int64 { return int64(len(h.b)) }
