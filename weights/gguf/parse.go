package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"sort"
	"unicode/utf8"

	"github.com/berth-ml/berth/weights/ggml"
)

// Limits on what a file may declare.
const (
	// MaxDims is the most dimensions a tensor may have (ggml's
	// GGML_MAX_DIMS).
	MaxDims = 4
	// MaxNesting is how deep arrays of arrays may nest.
	MaxNesting = 8
	// MaxAlignment bounds general.alignment.
	MaxAlignment = 1 << 30
	// DefaultAlignment is the alignment of tensor data when the file
	// does not set general.alignment.
	DefaultAlignment = 32
	// maxElements bounds the elements of one tensor (2⁶²), so that
	// element counts and byte sizes stay well inside an int64.
	maxElements = 1 << 62
)

// The fewest bytes a tensor info (name length, dimension count, type,
// offset) and a key-value pair (key length, type, a one-byte value) take.
const (
	minTensorInfo = 8 + 4 + 4 + 8
	minKeyValue   = 8 + 4 + 1
)

// reader walks the header; every read checks what is left first.
type reader struct {
	data []byte
	pos  int
}

func (r *reader) left() int { return len(r.data) - r.pos }

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: "+format, append([]any{r.pos}, args...)...)
}

// take returns the next n bytes.
func (r *reader) take(n int, what string) ([]byte, error) {
	if n < 0 || n > r.left() {
		return nil, r.errorf("%s needs %d bytes, %d are left", what, n, r.left())
	}
	b := r.data[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return b, nil
}

func (r *reader) u32(what string) (uint32, error) {
	b, err := r.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b, err := r.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// text reads a string's bytes: its length, then that many bytes of UTF-8.
func (r *reader) text(what string) ([]byte, error) {
	n, err := r.u64(what + "'s length")
	if err != nil {
		return nil, err
	}
	if n > uint64(r.left()) {
		return nil, r.errorf("%s of %d bytes, only %d are left", what, n, r.left())
	}
	at := r.pos
	b, _ := r.take(int(n), what)
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("at byte %d: %s %s is not valid UTF-8", at, what, quote(b))
	}
	return b, nil
}

func parse(data []byte) (*File, error) {
	r := &reader{data: data}
	if len(data) < 4 || string(data[:4]) != "GGUF" {
		return nil, fmt.Errorf("not a GGUF file: it starts with %q, not \"GGUF\"", data[:min(4, len(data))])
	}
	r.pos = 4
	version, err := r.u32("the version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, fmt.Errorf("GGUF version 1 is not supported (versions 2 and 3 are)")
	case bits.ReverseBytes32(version) >= 1 && bits.ReverseBytes32(version) <= 3:
		return nil, fmt.Errorf("big-endian GGUF files are not supported")
	default:
		return nil, fmt.Errorf("unsupported GGUF version %d", version)
	}
	nTensors, err := r.u64("the tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := r.u64("the metadata count")
	if err != nil {
		return nil, err
	}
	// Check both counts against what is left before reading anything.
	if nKV > uint64(r.left()/minKeyValue) {
		return nil, r.errorf("%d metadata entries cannot fit in the %d bytes left", nKV, r.left())
	}
	if nTensors > uint64(r.left()/minTensorInfo) {
		return nil, r.errorf("%d tensors cannot fit in the %d bytes left", nTensors, r.left())
	}
	f := &File{
		Version:   version,
		Alignment: DefaultAlignment,
		values:    make(map[string]Value, min(nKV, 256)),
		byName:    make(map[string]*Tensor, min(nTensors, 1024)),
	}
	for range nKV {
		key, err := r.text("a metadata key")
		if err != nil {
			return nil, err
		}
		name := string(key)
		if _, dup := f.values[name]; dup {
			return nil, r.errorf("metadata key %q appears twice", name)
		}
		kind, err := r.u32("a metadata type")
		if err != nil {
			return nil, err
		}
		v, err := r.value(Kind(kind), 0)
		if err != nil {
			return nil, fmt.Errorf("metadata %q: %w", name, err)
		}
		f.keys = append(f.keys, name)
		f.values[name] = v
	}
	if v, ok := f.values["general.alignment"]; ok {
		neg, a, isInt := v.integer()
		if !isInt || neg || a == 0 || a&(a-1) != 0 || a > MaxAlignment {
			return nil, fmt.Errorf("general.alignment is %s %v, not a power of two from 1 to 2^30", article(v), v)
		}
		f.Alignment = int64(a)
	}
	f.tensors = make([]*Tensor, 0, min(nTensors, 1024))
	for i := range nTensors {
		t, err := r.tensorInfo()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if _, dup := f.byName[t.Name]; dup {
			return nil, fmt.Errorf("tensor %d: the name %q appears twice", i, t.Name)
		}
		f.tensors = append(f.tensors, t)
		f.byName[t.Name] = t
	}
	// The data section starts at the next multiple of the alignment.
	f.DataOffset = (int64(r.pos) + f.Alignment - 1) / f.Alignment * f.Alignment
	if err := f.place(data); err != nil {
		return nil, err
	}
	return f, nil
}

// tensorInfo reads one tensor's name, shape, type and offset.
func (r *reader) tensorInfo() (*Tensor, error) {
	name, err := r.text("the name")
	if err != nil {
		return nil, err
	}
	t := &Tensor{Name: string(name)}
	nd, err := r.u32("the dimension count")
	if err != nil {
		return nil, err
	}
	if nd > MaxDims {
		return nil, r.errorf("%q has %d dimensions, at most %d are allowed", t.Name, nd, MaxDims)
	}
	t.Shape = make([]int64, nd)
	// bound, the product of the dimensions counting a 0 as 1, keeps every
	// partial product (Elements, Rows) inside maxElements.
	elements, bound := uint64(1), uint64(1)
	for d := range t.Shape {
		n, err := r.u64("a dimension")
		if err != nil {
			return nil, err
		}
		hi, lo := bits.Mul64(bound, max(n, 1))
		if hi != 0 || lo > maxElements {
			return nil, r.errorf("%q: dimension %d of the shape (%d) takes it beyond 2^62 elements", t.Name, d, n)
		}
		t.Shape[d], elements, bound = int64(n), elements*n, lo
	}
	id, err := r.u32("the type")
	if err != nil {
		return nil, err
	}
	t.Type = ggml.Type(id)
	if !t.Type.Valid() {
		return nil, r.errorf("%q has an unknown ggml type id %d", t.Name, id)
	}
	// Rows are whole blocks, so the size is rows times the row's size.
	row := int64(1)
	if nd > 0 {
		row = t.Shape[0]
	}
	rowSize, err := t.Type.RowSize(row)
	if err != nil {
		return nil, fmt.Errorf("%q of shape %v: %w", t.Name, t.Shape, err)
	}
	if row > 0 {
		hi, lo := bits.Mul64(uint64(rowSize), elements/uint64(row))
		if hi != 0 || lo > math.MaxInt64 {
			return nil, fmt.Errorf("%q of shape %v: its size overflows", t.Name, t.Shape)
		}
		t.Size = int64(lo)
	}
	off, err := r.u64("the offset")
	if err != nil {
		return nil, err
	}
	if off > math.MaxInt64 {
		return nil, r.errorf("%q: offset %d is out of range", t.Name, off)
	}
	t.Offset = int64(off)
	return t, nil
}

// place checks that each tensor lies, aligned, inside the data section
// without overlapping another, and gives it its window of data.
func (f *File) place(data []byte) error {
	size := int64(len(data))
	for _, t := range f.tensors {
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("tensor %q: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if f.DataOffset > size || t.Offset > size-f.DataOffset || t.Size > size-f.DataOffset-t.Offset {
			return fmt.Errorf("tensor %q: its %d bytes at offset %d of the data section (byte %d) lie beyond the end of the file (%d bytes)",
				t.Name, t.Size, t.Offset, f.DataOffset+t.Offset, size)
		}
		start := f.DataOffset + t.Offset
		t.data = data[start : start+t.Size : start+t.Size]
	}
	order := make([]*Tensor, 0, len(f.tensors))
	for _, t := range f.tensors {
		if t.Size > 0 {
			order = append(order, t)
		}
	}
	sort.Slice(order, func(i, j int) bool { return order[i].Offset < order[j].Offset })
	for i := 1; i < len(order); i++ {
		a, b := order[i-1], order[i]
		if a.Offset+a.Size > b.Offset {
			return fmt.Errorf("tensors %q (bytes %d to %d of the data section) and %q (from %d) overlap",
				a.Name, a.Offset, a.Offset+a.Size, b.Name, b.Offset)
		}
	}
	return nil
}

// value reads one value of the given kind.
func (r *reader) value(k Kind, depth int) (Value, error) {
	if k == Array {
		elem, err := r.u32("the array's element type")
		if err != nil {
			return Value{}, err
		}
		n, err := r.u64("the array's length")
		if err != nil {
			return Value{}, err
		}
		return r.array(Kind(elem), n, depth+1)
	}
	if k == String {
		b, err := r.text("the string")
		if err != nil {
			return Value{}, err
		}
		return Value{kind: String, x: string(b)}, nil
	}
	size := k.size()
	if size == 0 {
		return Value{}, r.errorf("unknown value type %d", uint32(k))
	}
	b, err := r.take(size, "a "+k.String())
	if err != nil {
		return Value{}, err
	}
	v := Value{kind: k}
	switch k {
	case Uint8:
		v.x = b[0]
	case Int8:
		v.x = int8(b[0])
	case Uint16:
		v.x = binary.LittleEndian.Uint16(b)
	case Int16:
		v.x = int16(binary.LittleEndian.Uint16(b))
	case Uint32:
		v.x = binary.LittleEndian.Uint32(b)
	case Int32:
		v.x = int32(binary.LittleEndian.Uint32(b))
	case Float32:
		v.x = math.Float32frombits(binary.LittleEndian.Uint32(b))
	case Uint64:
		v.x = binary.LittleEndian.Uint64(b)
	case Int64:
		v.x = int64(binary.LittleEndian.Uint64(b))
	case Float64:
		v.x = math.Float64frombits(binary.LittleEndian.Uint64(b))
	case Bool:
		if b[0] > 1 {
			return Value{}, fmt.Errorf("at byte %d: a bool is %d, not 0 or 1", r.pos-1, b[0])
		}
		v.x = b[0] == 1
	}
	return v, nil
}

// array reads n elements of the given kind, after checking that they can
// fit in what is left of the file.
func (r *reader) array(elem Kind, n uint64, depth int) (Value, error) {
	if depth > MaxNesting {
		return Value{}, r.errorf("arrays nest more than %d deep", MaxNesting)
	}
	size := elem.size()
	if size == 0 {
		return Value{}, r.errorf("unknown array element type %d", uint32(elem))
	}
	if n > uint64(r.left()/size) {
		return Value{}, r.errorf("an array of %d %s elements cannot fit in the %d bytes left", n, elem, r.left())
	}
	count := int(n)
	v := Value{kind: Array, elem: elem}
	switch elem {
	case String:
		x, err := r.strings(count)
		if err != nil {
			return Value{}, err
		}
		v.x = x
	case Array:
		x := make([]Value, count)
		for i := range x {
			e, err := r.value(Array, depth)
			if err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
			x[i] = e
		}
		v.x = x
	case Bool:
		b, _ := r.take(count, "")
		x := make([]bool, count)
		for i, c := range b {
			if c > 1 {
				return Value{}, fmt.Errorf("at byte %d: element %d of a bool array is %d, not 0 or 1", r.pos-count+i, i, c)
			}
			x[i] = c == 1
		}
		v.x = x
	default:
		b, _ := r.take(count*size, "")
		v.x = numbers(elem, b, count)
	}
	return v, nil
}

// strings reads count strings with one allocation for their bytes: it
// checks every length and the UTF-8 first, then copies the bytes once and
// slices the copy.
func (r *reader) strings(count int) ([]string, error) {
	start := r.pos
	for i := range count {
		n, err := r.u64("a string's length")
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		if n > uint64(r.left()) {
			return nil, r.errorf("element %d: a string of %d bytes, only %d are left", i, n, r.left())
		}
		if b, _ := r.take(int(n), ""); !utf8.Valid(b) {
			return nil, fmt.Errorf("at byte %d: element %d: %s is not valid UTF-8", r.pos-len(b), i, quote(b))
		}
	}
	blob := string(r.data[start:r.pos])
	x := make([]string, count)
	p := 0
	for i := range x {
		n := int(binary.LittleEndian.Uint64(r.data[start+p:]))
		x[i] = blob[p+8 : p+8+n]
		p += 8 + n
	}
	return x, nil
}

// numbers decodes count little-endian numbers of the kind from b.
func numbers(k Kind, b []byte, count int) any {
	le := binary.LittleEndian
	switch k {
	case Uint8:
		return append([]uint8{}, b...)
	case Int8:
		return decode(b, count, 1, func(b []byte) int8 { return int8(b[0]) })
	case Uint16:
		return decode(b, count, 2, le.Uint16)
	case Int16:
		return decode(b, count, 2, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case Uint32:
		return decode(b, count, 4, le.Uint32)
	case Int32:
		return decode(b, count, 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case Float32:
		return decode(b, count, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case Uint64:
		return decode(b, count, 8, le.Uint64)
	case Int64:
		return decode(b, count, 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case Float64:
		return decode(b, count, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	}
	return nil
}

// decode returns the count values of size bytes each at b, as one reads.
func decode[T any](b []byte, count, size int, one func([]byte) T) []T {
	x := make([]T, count)
	for i := range x {
		x[i] = one(b[size*i:])
	}
	return x
}
