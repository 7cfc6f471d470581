//go:build !unix

package device

import (
	"fmt"
	"io"
	"os"
)

// mapFile reads the file into memory where no mmap is available.
func mapFile(f *os.File, size int) ([]byte, func([]byte) error, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	return data, nil, nil
}

// releasePages does nothing where the file was read into memory.
func releasePages([]byte) {}
