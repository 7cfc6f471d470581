//go:build unix

package device

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// canMap: NewHostBuffer maps large buffers of their own.
const canMap = true

// mapHost maps size bytes (size > 0), anonymous, private and zero, at a
// multiple of align. An alignment beyond the page size maps align bytes
// more and unmaps the slack on either side, so that the mapping is the
// buffer's pages and nothing else.
func mapHost(size, align int64) (*HostBuffer, error) {
	page := int64(unix.Getpagesize())
	length := (size + page - 1) / page * page
	total := length
	if align > page {
		total += align - page
	}
	mem, err := unix.MmapPtr(-1, 0, nil, uintptr(total), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes: %w", total, err)
	}
	skip := (align - int64(uintptr(mem))%align) % align
	if skip > 0 {
		_ = unix.MunmapPtr(mem, uintptr(skip))
	}
	if tail := total - skip - length; tail > 0 {
		_ = unix.MunmapPtr(unsafe.Add(mem, skip+length), uintptr(tail))
	}
	start := unsafe.Add(mem, skip)
	return &HostBuffer{b: unsafe.Slice((*byte)(start), size), mem: start, n: uintptr(length)}, nil
}

// unmapHost unmaps what mapHost mapped.
func unmapHost(mem unsafe.Pointer, n uintptr) error { return unix.MunmapPtr(mem, n) }
