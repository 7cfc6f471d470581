package device

import (
	"fmt"
	"math"
	"os"
	"unsafe"
)

// MappedFile is a file mapped read-only into memory.
//
// It keeps the file open until Close (ReadInto reads through it). The
// bytes returned by Bytes stay valid until Close; reading them after
// Close faults (on Unix the pages are unmapped). Writing to them is never
// allowed: the mapping is read-only and a write faults.
type MappedFile struct {
	path   string
	file   *os.File // open while mapped, for ReadInto; nil for an empty file
	data   []byte
	unmap  func([]byte) error // nil when data is ordinary heap memory
	closed bool
}

// MapFile maps the file at path read-only. An empty file is not mapped:
// its Bytes is an empty, non-nil slice.
func MapFile(path string) (*MappedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("map %s: not a regular file", path)
	}
	size := fi.Size()
	if size < 0 || uint64(size) > math.MaxInt {
		return nil, fmt.Errorf("map %s: file of %d bytes is too large to map", path, size)
	}
	m := &MappedFile{path: path}
	if size == 0 {
		m.data = []byte{}
		return m, nil
	}
	data, unmap, err := mapFile(f, int(size))
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	m.data, m.unmap, m.file, keep = data, unmap, f, true
	return m, nil
}

// Path is the path the file was mapped from.
func (m *MappedFile) Path() string { return m.path }

// Bytes returns the file's contents. It is nil after Close.
func (m *MappedFile) Bytes() []byte { return m.data }

// Size is the file's length in bytes (0 after Close).
func (m *MappedFile) Size() int64 { return int64(len(m.data)) }

// Close releases the mapping. It is safe to call more than once.
func (m *MappedFile) Close() error {
	if m == nil || m.closed {
		return nil
	}
	m.closed = true
	data, unmap, f := m.data, m.unmap, m.file
	m.data, m.unmap, m.file = nil, nil, nil
	if f != nil {
		f.Close()
	}
	if unmap != nil {
		if err := unmap(data); err != nil {
			return fmt.Errorf("unmap %s: %w", m.path, err)
		}
	}
	return nil
}

// ReadInto copies b, a window of Bytes, into dst (len(dst) ≥ len(b)) by
// reading the file rather than the mapping, so that the pages of b do not
// become part of the process's resident memory (the system may map a
// large block of the file for one small read through the mapping). It
// reports whether it did; on false dst holds nothing useful and b is
// still readable. It does not allocate.
func (m *MappedFile) ReadInto(dst, b []byte) bool {
	if m == nil || m.closed || m.file == nil || len(b) == 0 || len(dst) < len(b) {
		return false
	}
	off, ok := m.offsetOf(b)
	if !ok {
		return false
	}
	n, err := m.file.ReadAt(dst[:len(b)], int64(off))
	return err == nil && n == len(b)
}

// offsetOf is where b starts in the mapping, if b lies inside it.
func (m *MappedFile) offsetOf(b []byte) (uintptr, bool) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.data)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base > uintptr(len(m.data)) || uintptr(len(b)) > uintptr(len(m.data))-(p-base) {
		return 0, false
	}
	return p - base, true
}

// Release tells the system that the pages of the mapping wholly inside b
// (a window of Bytes) are not needed now: they leave the process's
// resident memory, and a later read maps them again from the file, with
// the same contents. It is a hint; bytes outside the mapping, or a
// mapping that is ordinary memory, are left alone.
func (m *MappedFile) Release(b []byte) {
	if m == nil || m.closed || m.unmap == nil || len(b) == 0 || len(m.data) == 0 {
		return
	}
	off, ok := m.offsetOf(b)
	if !ok {
		return
	}
	page := uintptr(os.Getpagesize())
	lo := (off + page - 1) / page * page
	hi := (off + uintptr(len(b))) / page * page
	if hi > lo {
		releasePages(m.data[lo:hi])
	}
}
