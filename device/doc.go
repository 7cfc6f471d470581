// Package device holds the memory buffers that berth computes on and reads
// weights from: aligned host memory, read-only memory-mapped files (the
// "DISK" region that weights are read from in place), and, later, device
// memory of accelerators.
//
// MapFile maps a file read-only. On Unix systems the bytes are the kernel's
// page cache, shared by every process that maps the same file and never
// copied onto the Go heap; elsewhere the file is read into memory once.
//
// NewHostBuffer allocates aligned, zeroed host memory. On Unix systems a
// buffer of MapThreshold (1 MiB) or more is an anonymous private mapping
// outside Go's heap: its pages take memory only once touched, and its
// owner gives them all back at once with Free, after which its bytes
// must not be used (they fault). Smaller buffers, and every buffer
// elsewhere, are Go's memory, as are those of NewHeapBuffer, for bytes
// handed on with no owner to free them. On Linux a buffer of
// HugePageBytes or more is backed by transparent huge pages where the
// kernel offers them, so that sweeping it costs few TLB entries.
package device
