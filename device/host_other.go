//go:build !unix

package device

import (
	"errors"
	"unsafe"
)

// canMap is false: every buffer is Go's memory.
const canMap = false

// mapHost is never called where canMap is false.
func mapHost(size, align int64) (*HostBuffer, error) {
	return nil, errors.New("no anonymous mappings on this system")
}

// unmapHost has nothing to unmap.
func unmapHost(mem unsafe.Pointer, n uintptr) error { return nil }
