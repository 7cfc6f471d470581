package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/weights/internal/mapped"
)

const (
	// MaxHeaderBytes bounds a file's JSON header (100 MiB, as the
	// format's reference implementation does).
	MaxHeaderBytes = 100 << 20
	// MaxDims bounds a tensor's number of dimensions.
	MaxDims = 64
	// maxElements bounds the elements of one tensor (2⁶²).
	maxElements = 1 << 62
)

// Tensor describes one tensor and holds its bytes.
type Tensor struct {
	Name  string
	DType DType
	// Shape is row-major: the last dimension is the innermost. A scalar
	// has an empty shape.
	Shape []int64
	// Offset is where the tensor's bytes start in its file's data
	// section; Size is their length.
	Offset, Size int64

	data []byte
}

// Bytes returns the tensor's bytes, little-endian: a window into the
// file's mapping (or the slice given to Parse), valid until the file is
// closed. It is read-only; writing to it faults. After Close it is nil.
func (t *Tensor) Bytes() []byte { return t.data }

// Elements is the number of values the tensor holds.
func (t *Tensor) Elements() int64 { return mapped.Elements(t.Shape) }

// File is one parsed safetensors file.
type File struct {
	// Path is the file's path; empty for Parse.
	Path string
	// DataOffset is where the data section starts in the file.
	DataOffset int64

	metadata map[string]string
	tensors  []*Tensor
	byName   map[string]*Tensor
	mapped   *device.MappedFile
}

// OpenFile maps the safetensors file at path read-only and parses it.
func OpenFile(path string) (*File, error) {
	f, m, err := mapped.Open("safetensors", path, parse)
	if err != nil {
		return nil, err
	}
	f.Path, f.mapped = path, m
	return f, nil
}

// Parse parses a safetensors file held in memory. The tensors' bytes are
// windows of data, which must not change while the File is in use.
func Parse(data []byte) (*File, error) { return mapped.Parse("safetensors", data, parse) }

// Tensors returns the tensors in the order of their bytes in the file.
func (f *File) Tensors() []*Tensor { return f.tensors }

// Tensor returns the tensor of the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// Metadata returns the header's __metadata__ (empty if it has none). The
// map is the file's own; do not modify it.
func (f *File) Metadata() map[string]string { return f.metadata }

// Close releases the mapping of a file opened with OpenFile; the
// tensors' bytes are nil afterwards. It is safe to call more than once.
func (f *File) Close() error {
	for _, t := range f.tensors {
		t.data = nil
	}
	return mapped.Close(&f.mapped)
}

func parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("a file of %d bytes is too short to hold the header's length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderBytes {
		return nil, fmt.Errorf("a header of %d bytes is over the limit of %d", n, MaxHeaderBytes)
	}
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("a header of %d bytes, but the file holds only %d after its length", n, len(data)-8)
	}
	header := data[8 : 8+n]
	if !utf8.Valid(header) {
		return nil, errors.New("the header is not valid UTF-8")
	}
	if len(header) == 0 || header[0] != '{' {
		return nil, errors.New("the header does not start with '{'")
	}
	f := &File{DataOffset: int64(8 + n), metadata: map[string]string{}, byName: map[string]*Tensor{}}
	section := data[f.DataOffset:]
	dec := json.NewDecoder(bytes.NewReader(header))
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	seenMetadata := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		name := tok.(string) // keys of an object are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("header: %q: %w", name, err)
		}
		if name == "__metadata__" {
			if seenMetadata {
				return nil, errors.New("header: __metadata__ appears twice")
			}
			seenMetadata = true
			if err := json.Unmarshal(raw, &f.metadata); err != nil || f.metadata == nil {
				return nil, fmt.Errorf("header: __metadata__ is not an object of strings: %s", clip(raw))
			}
			continue
		}
		if _, dup := f.byName[name]; dup {
			return nil, fmt.Errorf("header: tensor %q appears twice", name)
		}
		t, err := entry(name, raw, section)
		if err != nil {
			return nil, fmt.Errorf("header: tensor %q: %w", name, err)
		}
		f.tensors = append(f.tensors, t)
		f.byName[name] = t
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("header: %v follows the JSON object", describe(tok, err))
	}
	if err := checkOverlaps(f.tensors); err != nil {
		return nil, err
	}
	return f, nil
}

// entry reads one tensor's dtype, shape and byte range and checks them
// against the data section.
func entry(name string, raw json.RawMessage, section []byte) (*Tensor, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("not an object: %s", clip(raw))
	}
	var dtypeName string
	if err := json.Unmarshal(fields["dtype"], &dtypeName); err != nil || fields["dtype"] == nil {
		return nil, fmt.Errorf("dtype %s is not a string", clip(fields["dtype"]))
	}
	dt, err := ParseDType(dtypeName)
	if err != nil {
		return nil, err
	}
	shape, err := integers(fields["shape"], "shape")
	if err != nil {
		return nil, err
	}
	if len(shape) > MaxDims {
		return nil, fmt.Errorf("%d dimensions, at most %d are allowed", len(shape), MaxDims)
	}
	offsets, err := integers(fields["data_offsets"], "data_offsets")
	if err != nil {
		return nil, err
	}
	if len(offsets) != 2 {
		return nil, fmt.Errorf("data_offsets has %d entries, not 2", len(offsets))
	}
	t := &Tensor{Name: name, DType: dt, Shape: make([]int64, len(shape))}
	elements, bound := uint64(1), uint64(1) // bound counts a 0 as 1
	for i, d := range shape {
		hi, lo := bits.Mul64(bound, max(d, 1))
		if hi != 0 || lo > maxElements {
			return nil, fmt.Errorf("the shape %v holds more than 2^62 elements", shape)
		}
		t.Shape[i], elements, bound = int64(d), elements*d, lo
	}
	hi, size := bits.Mul64(elements, uint64(dt.Size()))
	if hi != 0 || size > math.MaxInt64 {
		return nil, fmt.Errorf("the shape %v of %s takes more than 2^63 bytes", shape, dt)
	}
	begin, end := offsets[0], offsets[1]
	switch {
	case begin > end:
		return nil, fmt.Errorf("data_offsets [%d, %d] end before they begin", begin, end)
	case end > uint64(len(section)):
		return nil, fmt.Errorf("data_offsets [%d, %d] lie beyond the %d bytes of the data section", begin, end, len(section))
	case end-begin != size:
		return nil, fmt.Errorf("data_offsets [%d, %d] hold %d bytes, but %d elements of %s take %d", begin, end, end-begin, elements, dt, size)
	}
	t.Offset, t.Size = int64(begin), int64(size)
	t.data = section[begin:end:end]
	return t, nil
}

// integers reads a JSON array of non-negative integers.
func integers(raw json.RawMessage, what string) ([]uint64, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || raw == nil || items == nil {
		return nil, fmt.Errorf("%s %s is not an array", what, clip(raw))
	}
	out := make([]uint64, len(items))
	for i, item := range items {
		x, err := strconv.ParseUint(string(item), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s entry %s is not an integer from 0 to 2^64-1", what, clip(item))
		}
		out[i] = x
	}
	return out, nil
}

// checkOverlaps puts the tensors in the order of their bytes and checks
// that no two share a byte.
func checkOverlaps(ts []*Tensor) error {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Offset < ts[j].Offset })
	var prev *Tensor
	for _, t := range ts {
		if t.Size == 0 {
			continue
		}
		if prev != nil && prev.Offset+prev.Size > t.Offset {
			return fmt.Errorf("tensors %q (bytes %d to %d) and %q (from %d) overlap",
				prev.Name, prev.Offset, prev.Offset+prev.Size, t.Name, t.Offset)
		}
		prev = t
	}
	return nil
}

// clip shows at most 40 bytes of a piece of JSON.
func clip(raw []byte) string {
	if raw == nil {
		return "(missing)"
	}
	if len(raw) > 40 {
		return string(raw[:40]) + "…"
	}
	return string(raw)
}

func describe(tok json.Token, err error) string {
	if err != nil {
		return "something other than whitespace"
	}
	return fmt.Sprintf("%v", tok)
}
