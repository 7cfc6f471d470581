package device

import (
	"fmt"
	"sync"
	"unsafe"
)

// HostBuffer is a zeroed host allocation whose first byte is aligned to a
// chosen power of two.
//
// A buffer of MapThreshold bytes or more made by NewHostBuffer on a Unix
// system is an anonymous private mapping of its own, outside Go's heap:
// the kernel zeroes each page as it is first touched, so the pages a
// program never touches take no memory, and Free gives the whole mapping
// back at once. Its bytes are valid until Free and only until then:
// reading or writing them afterwards faults. Whoever owns the buffer
// frees it once nothing can read the bytes any more; a buffer never freed
// keeps its memory for the life of the process, as an unclosed file keeps
// its descriptor. Smaller buffers, those of NewHeapBuffer and those on
// other systems are Go's memory, which the garbage collector reclaims
// once nothing references it, freed or not.
type HostBuffer struct {
	mu sync.Mutex // serialises Free
	b  []byte     // nil once freed
	// mem and n are the mapping that holds b, nil and 0 for Go's memory.
	mem unsafe.Pointer
	n   uintptr
}

// MapThreshold is the size from which NewHostBuffer maps a buffer of its
// own instead of taking it from Go's heap (1 MiB). Below it a mapping's
// cost (a few system calls, and a kernel memory area each, of which Linux
// lets a process hold some 65,000 by default) buys little: the bytes are
// few, and the heap serves them from memory it already holds. From it on,
// the heap's drawbacks grow with the size: it zeroes memory it reuses,
// touching every page, and gives freed memory back to the system only
// gradually, while the arena of a plan made for a generous bound may take
// gigabytes of which a run touches a few pages. It lies below
// HugePageBytes, so every buffer of NewHostBuffer that huge pages back is
// a mapping.
const MapThreshold = 1 << 20

// HugePageBytes is the size of the huge pages that back large host
// buffers (2 MiB, x86-64's and most arm64 kernels').
const HugePageBytes = 2 << 20

// MaxHostBytes bounds a single host allocation (1 TiB); it only stops
// absurd sizes, the real budget is the caller's.
const MaxHostBytes = 1 << 40

// NewHostBuffer allocates size bytes aligned to align (a power of two, at
// least 8). A buffer of MapThreshold bytes or more is a mapping of its own
// where the system has them (see HostBuffer), which its owner frees.
//
// Where the system offers them (Linux with transparent huge pages set to
// "always" or "madvise"), a buffer of HugePageBytes or more starts on a
// huge page boundary, and its whole huge pages are backed by huge pages
// as they are first touched: weights and activations that a run sweeps
// then take one TLB entry per 2 MiB instead of 512, which matters most
// for weights streamed from memory. The buffer's tail, short of a huge
// page, keeps small pages, so resident memory stays the buffer's own.
func NewHostBuffer(size, align int64) (*HostBuffer, error) {
	if err := checkHost(size, align); err != nil {
		return nil, err
	}
	if size < MapThreshold || !canMap {
		return newHeapBuffer(size, align), nil
	}
	huge := hugeAligned(size, align)
	if huge {
		align = HugePageBytes
	}
	h, err := mapHost(size, align)
	if err != nil {
		return nil, fmt.Errorf("host buffer: %w", err)
	}
	if huge {
		adviseHugePages(h.b)
	}
	return h, nil
}

// NewHeapBuffer allocates size bytes aligned to align, as NewHostBuffer
// does, but always on Go's heap: for bytes that are handed on with no
// owner to free them (a kernel's packed weights, a folded constant),
// which stay valid as long as anything references them. Free only drops
// the buffer's own reference.
func NewHeapBuffer(size, align int64) (*HostBuffer, error) {
	if err := checkHost(size, align); err != nil {
		return nil, err
	}
	return newHeapBuffer(size, align), nil
}

// checkHost refuses a negative or absurd size and an alignment that is
// not a power of two of at least 8.
func checkHost(size, align int64) error {
	if size < 0 {
		return fmt.Errorf("host buffer: negative size %d", size)
	}
	if align < 8 || align&(align-1) != 0 {
		return fmt.Errorf("host buffer: alignment %d is not a power of two ≥ 8", align)
	}
	if size > MaxHostBytes {
		return fmt.Errorf("host buffer: %d bytes exceeds the limit of %d", size, int64(MaxHostBytes))
	}
	return nil
}

// hugeAligned reports whether a buffer of size bytes aligned to align
// starts on a huge page and is advised to take huge pages.
func hugeAligned(size, align int64) bool {
	return size >= HugePageBytes && align <= HugePageBytes && hugePagesOffered()
}

// newHeapBuffer allocates a checked size and alignment on Go's heap. The
// bytes of the allocation before and after a buffer backed by huge pages
// are returned to the system (backWithHugePages).
func newHeapBuffer(size, align int64) *HostBuffer {
	if size == 0 {
		return &HostBuffer{b: []byte{}}
	}
	huge := hugeAligned(size, align)
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
	return &HostBuffer{b: raw[skip : skip+size : skip+size]}
}

// Bytes returns the whole buffer; nil once it is freed.
func (h *HostBuffer) Bytes() []byte { return h.b }

// Size is the usable length in bytes (0 once freed).
func (h *HostBuffer) Size() int64 { return int64(len(h.b)) }

// Free releases the buffer: a mapping is unmapped at once, Go's memory is
// left to the garbage collector. Afterwards Bytes is nil, and the bytes
// it returned before must not be used: those of a mapping fault. Free
// may be called more than once (and on a nil buffer); only the first
// call does anything. It must not run while the bytes are in use.
func (h *HostBuffer) Free() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	mem, n := h.mem, h.n
	h.b, h.mem, h.n = nil, nil, 0
	if mem == nil {
		return nil
	}
	if err := unmapHost(mem, n); err != nil {
		return fmt.Errorf("host buffer: unmap %d bytes: %w", n, err)
	}
	return nil
}

// mapped reports whether the buffer is a mapping of its own.
func (h *HostBuffer) mapped() bool { return h.mem != nil }
