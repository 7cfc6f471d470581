//go:build unix

package device

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps the first size bytes of f read-only and private.
func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, err
	}
	return data, unix.Munmap, nil
}

// releasePages drops the pages of b, a page-aligned part of a private
// read-only file mapping, from resident memory.
func releasePages(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }
