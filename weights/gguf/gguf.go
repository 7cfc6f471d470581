package gguf

import (
	"errors"
	"fmt"
	"math"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/internal/mapped"
)

// File is a parsed GGUF file.
type File struct {
	// Version is the GGUF version, 2 or 3.
	Version uint32
	// Alignment is the alignment of tensor data in the file: the
	// general.alignment metadata, or DefaultAlignment.
	Alignment int64
	// DataOffset is where the data section starts in the file; tensor
	// offsets count from there.
	DataOffset int64

	keys    []string
	values  map[string]Value
	tensors []*Tensor
	byName  map[string]*Tensor
	mapped  *device.MappedFile
}

// Tensor describes one tensor of a file and holds its bytes.
type Tensor struct {
	Name string
	Type ggml.Type
	// Shape is in ggml's order: Shape[0] is the innermost dimension
	// (ne[0]), whose elements are adjacent in memory. It has at most
	// MaxDims entries; trailing dimensions of 1 may be left out.
	Shape []int64
	// Offset is where the tensor's bytes start in the data section.
	Offset int64
	// Size is the tensor's length in bytes.
	Size int64

	data []byte
}

// Bytes returns the tensor's bytes: a window into the file's mapping
// (or the slice given to Parse), valid until the file is closed. It is
// read-only; writing to it faults. After Close it is nil.
func (t *Tensor) Bytes() []byte { return t.data }

// Elements is the number of values the tensor holds.
func (t *Tensor) Elements() int64 { return mapped.Elements(t.Shape) }

// Rows is the number of rows of Shape[0] elements (the product of the
// other dimensions).
func (t *Tensor) Rows() int64 {
	n := int64(1)
	for i := 1; i < len(t.Shape); i++ {
		n *= t.Shape[i]
	}
	return n
}

// Open maps the GGUF file at path read-only and parses it.
func Open(path string) (*File, error) {
	f, m, err := mapped.Open("gguf", path, parse)
	if err != nil {
		return nil, err
	}
	f.mapped = m
	return f, nil
}

// Parse parses a GGUF file held in memory. The tensors' bytes are windows
// of data, which must not change while the File is in use.
func Parse(data []byte) (*File, error) { return mapped.Parse("gguf", data, parse) }

// Close releases the mapping of a file opened with Open; the tensors'
// bytes are nil afterwards. Metadata stay readable. It is safe to call
// more than once.
func (f *File) Close() error {
	for _, t := range f.tensors {
		t.data = nil
	}
	return mapped.Close(&f.mapped)
}

// Tensors returns the tensors in the order the file lists them.
func (f *File) Tensors() []*Tensor { return f.tensors }

// Tensor returns the tensor of the given name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	t, ok := f.byName[name]
	return t, ok
}

// Keys returns the metadata keys in the order of the file.
func (f *File) Keys() []string { return f.keys }

// Value returns the metadata value of key.
func (f *File) Value(key string) (Value, bool) {
	v, ok := f.values[key]
	return v, ok
}

// ErrNoKey is the error of a getter asked for a key the file lacks.
var ErrNoKey = errors.New("gguf: no such metadata key")

func (f *File) lookup(key string) (Value, error) {
	v, ok := f.values[key]
	if !ok {
		return Value{}, fmt.Errorf("%w: %q", ErrNoKey, key)
	}
	return v, nil
}

func wrongKind(key string, v Value, want string) error {
	return fmt.Errorf("gguf: metadata %q is %s, not %s", key, article(v), want)
}

// article names a value's type with its article: "a uint32", "an array
// of string".
func article(v Value) string {
	if v.kind == Array {
		return "an array of " + v.elem.String()
	}
	s := v.kind.String()
	if s[0] == 'i' || s[0] == 'a' {
		return "an " + s
	}
	return "a " + s
}

// get returns the value of key as as converts it, or an error: the file
// lacks the key, or as finds its value not what the caller wants.
func get[T any](f *File, key, want string, as func(Value) (T, bool)) (T, error) {
	var zero T
	v, err := f.lookup(key)
	if err != nil {
		return zero, err
	}
	x, ok := as(v)
	if !ok {
		return zero, wrongKind(key, v, want)
	}
	return x, nil
}

// asType is a value held as a T: a string, a bool, an array of strings.
func asType[T any](v Value) (T, bool) {
	x, ok := v.x.(T)
	return x, ok
}

// String returns a string value.
func (f *File) String(key string) (string, error) { return get(f, key, "a string", asType[string]) }

// Uint returns a non-negative integer value of any integer type.
func (f *File) Uint(key string) (uint64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	neg, mag, ok := v.integer()
	if !ok {
		return 0, wrongKind(key, v, "an integer")
	}
	if neg {
		return 0, fmt.Errorf("gguf: metadata %q is negative (%v)", key, v)
	}
	return mag, nil
}

// Int returns an integer value of any integer type that fits an int64.
func (f *File) Int(key string) (int64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return 0, err
	}
	i, ok := v.toInt()
	if !ok {
		if _, _, isInt := v.integer(); isInt {
			return 0, fmt.Errorf("gguf: metadata %q (%v) does not fit an int64", key, v)
		}
		return 0, wrongKind(key, v, "an integer")
	}
	return i, nil
}

// Float returns a number: a float32 or float64 value, or an integer.
func (f *File) Float(key string) (float64, error) { return get(f, key, "a number", Value.float) }

// Bool returns a bool value.
func (f *File) Bool(key string) (bool, error) { return get(f, key, "a bool", asType[bool]) }

// Strings returns an array of strings. The slice is the file's own; do
// not modify it.
func (f *File) Strings(key string) ([]string, error) {
	return get(f, key, "an array of string", asType[[]string])
}

// Ints returns an array of integers of any integer type, as int64s.
func (f *File) Ints(key string) ([]int64, error) {
	v, err := f.lookup(key)
	if err != nil {
		return nil, err
	}
	if v.kind != Array {
		return nil, wrongKind(key, v, "an array of integers")
	}
	out := make([]int64, v.Len())
	for i := range out {
		e := v.index(i)
		x, ok := e.toInt()
		if !ok {
			if _, _, isInt := e.integer(); isInt {
				return nil, fmt.Errorf("gguf: metadata %q: element %d (%v) does not fit an int64", key, i, e)
			}
			return nil, wrongKind(key, v, "an array of integers")
		}
		out[i] = x
	}
	return out, nil
}

// Floats returns an array of numbers of any numeric type, as float64s.
func (f *File) Floats(key string) ([]float64, error) {
	return get(f, key, "an array of numbers", Value.floats)
}

// floats is an array of numbers of any numeric type, as float64s.
func (v Value) floats() ([]float64, bool) {
	if v.kind != Array {
		return nil, false
	}
	out := make([]float64, v.Len())
	for i := range out {
		x, ok := v.index(i).float()
		if !ok {
			return nil, false
		}
		out[i] = x
	}
	return out, true
}

// toInt returns an integer scalar as an int64, if it fits.
func (v Value) toInt() (int64, bool) {
	neg, mag, ok := v.integer()
	switch {
	case !ok:
		return 0, false
	case neg && mag <= 1<<63:
		return int64(-mag), true
	case !neg && mag <= math.MaxInt64:
		return int64(mag), true
	}
	return 0, false
}

// quote shows at most 32 bytes of b, quoted.
func quote(b []byte) string {
	if len(b) > 32 {
		return fmt.Sprintf("%q…", b[:32])
	}
	return fmt.Sprintf("%q", b)
}
