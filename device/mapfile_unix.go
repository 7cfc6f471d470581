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
