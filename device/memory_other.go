//go:build !linux

package device

// HostMemory is the machine's physical memory in bytes, or 0 when unknown.
func HostMemory() int64 { return 0 }
