package mapped

import (
	"fmt"

	"github.com/berth-ml/berth/device"
)

// Open maps the file at path read-only and parses its bytes, returning
// the file and the mapping it is to keep. If parsing fails the mapping is
// released. Errors start with the format's name, and those of parsing
// name the path.
func Open[F any](format, path string, parse func([]byte) (F, error)) (F, *device.MappedFile, error) {
	var zero F
	m, err := device.MapFile(path)
	if err != nil {
		return zero, nil, fmt.Errorf("%s: %w", format, err)
	}
	f, err := parse(m.Bytes())
	if err != nil {
		m.Close()
		return zero, nil, fmt.Errorf("%s: %s: %w", format, path, err)
	}
	return f, m, nil
}

// Parse parses a file held in memory; errors start with the format's
// name.
func Parse[F any](format string, data []byte, parse func([]byte) (F, error)) (F, error) {
	f, err := parse(data)
	if err != nil {
		var zero F
		return zero, fmt.Errorf("%s: %w", format, err)
	}
	return f, nil
}

// Close releases the mapping *m, if there is one, and forgets it, so
// that closing again does nothing.
func Close(m **device.MappedFile) error {
	mm := *m
	*m = nil
	return mm.Close()
}

// Elements is the number of values of a tensor of the given shape: the
// product of its dimensions, 1 for a scalar.
func Elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}
