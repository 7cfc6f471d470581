package berth

import (
	"fmt"
	"unsafe"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// DType is a tensor element type.
type DType = ir.DType

// The element types.
const (
	Float32  = ir.Float32
	Float16  = ir.Float16
	BFloat16 = ir.BFloat16
	Float64  = ir.Float64
	Int8     = ir.Int8
	Int16    = ir.Int16
	Int32    = ir.Int32
	Int64    = ir.Int64
	Uint8    = ir.Uint8
	Uint16   = ir.Uint16
	Uint32   = ir.Uint32
	Uint64   = ir.Uint64
	Bool     = ir.Bool
)

// Tensor is a named n-dimensional array: its element type, shape and
// little-endian bytes.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte
}

// TensorInfo describes a graph input or output.
type TensorInfo struct {
	Name  string
	DType DType
	// Shape is the tensor's shape. A dimension known only at run time is
	// -1, and Symbols names it; Shape is nil when the file declares no
	// shape at all.
	Shape []int64
	// Symbols names each open dimension of Shape by the symbol the file
	// gives it ("batch", "seq"; "" for a known size or an open dimension
	// the file leaves unnamed). Nil when no dimension is open.
	Symbols []string `json:",omitempty"`
	// Sequence marks a sequence of tensors, fed and returned element by
	// element as NAME[0], NAME[1], …; DType, Shape and Symbols are then
	// those of its elements.
	Sequence bool `json:",omitempty"`
}

// Elem is the set of Go element types a Tensor can be built from.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~bool
}

func dtypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case uint16:
		return Uint16
	case uint32:
		return Uint32
	case uint64:
		return Uint64
	case bool:
		return Bool
	}
	return ir.Undefined
}

// NewTensor builds a tensor from Go values, copying them. It fails when the
// number of values does not match the shape.
func NewTensor[T Elem](name string, shape []int64, values []T) (Tensor, error) {
	s := ir.Shape(shape)
	if err := s.Validate(); err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: %w", name, err)
	}
	if s.Elements() != int64(len(values)) {
		return Tensor{}, fmt.Errorf("tensor %q: %d values for shape %v", name, len(values), s)
	}
	var z T
	n := len(values) * int(unsafe.Sizeof(z))
	data := make([]byte, n)
	if n > 0 {
		copy(data, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), n))
	}
	return Tensor{Name: name, DType: dtypeOf[T](), Shape: s.Clone(), Data: data}, nil
}

// Float32s returns the tensor's values converted to float32 (a copy).
func (t Tensor) Float32s() ([]float32, error) {
	n := ir.Shape(t.Shape).Elements()
	if int64(len(t.Data)) != n*int64(t.DType.Size()) {
		return nil, fmt.Errorf("tensor %q: %d bytes for %s%v", t.Name, len(t.Data), t.DType, ir.Shape(t.Shape))
	}
	out := make([]float32, n)
	if err := arena.DecodeF32(out, t.DType, alignedCopy(t.Data)); err != nil {
		return nil, err
	}
	return out, nil
}

// alignedCopy returns b itself when it is 8-byte aligned, else an aligned
// copy, so typed views of it are safe.
func alignedCopy(b []byte) []byte {
	if raw.Aligned(b, 8) {
		return b
	}
	w := make([]uint64, (len(b)+7)/8)
	c := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(b))
	copy(c, b)
	return c
}

// Clone returns a deep copy of t, for keeping an output past the next Run.
func (t Tensor) Clone() Tensor {
	t.Shape = append([]int64(nil), t.Shape...)
	t.Data = append([]byte(nil), t.Data...)
	return t
}

// String summarises the tensor: name, type and shape.
func (t Tensor) String() string {
	return fmt.Sprintf("%s %s%v", t.Name, t.DType, ir.Shape(t.Shape))
}

func infoOf(g *ir.Graph, id ir.TensorID) TensorInfo {
	t := g.Tensor(id)
	return TensorInfo{Name: t.Name, DType: t.DType, Shape: t.Shape.Clone()}
}
