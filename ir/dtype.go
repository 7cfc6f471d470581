package ir

import "fmt"

// DType is the element type of a tensor.
type DType uint8

// The element types berth knows. The zero value is Undefined.
const (
	Undefined DType = iota
	Float32
	Float16
	BFloat16
	Float64
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Bool
)

var dtypeInfo = [...]struct {
	name string
	size int
}{
	Undefined: {"undefined", 0},
	Float32:   {"float32", 4},
	Float16:   {"float16", 2},
	BFloat16:  {"bfloat16", 2},
	Float64:   {"float64", 8},
	Int8:      {"int8", 1},
	Int16:     {"int16", 2},
	Int32:     {"int32", 4},
	Int64:     {"int64", 8},
	Uint8:     {"uint8", 1},
	Uint16:    {"uint16", 2},
	Uint32:    {"uint32", 4},
	Uint64:    {"uint64", 8},
	Bool:      {"bool", 1},
}

// Size is the number of bytes one element occupies (0 for Undefined).
func (d DType) Size() int {
	if int(d) >= len(dtypeInfo) {
		return 0
	}
	return dtypeInfo[d].size
}

// String is the lower-case numpy-style name of the type.
func (d DType) String() string {
	if int(d) >= len(dtypeInfo) {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypeInfo[d].name
}

// Valid reports whether d is a known, defined element type.
func (d DType) Valid() bool { return d != Undefined && int(d) < len(dtypeInfo) }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool {
	return d == Float32 || d == Float16 || d == BFloat16 || d == Float64
}

// IsInt reports whether d is a signed or unsigned integer type.
func (d DType) IsInt() bool { return d >= Int8 && d <= Uint64 }

// IsSigned reports whether d is a signed integer or floating-point type.
func (d DType) IsSigned() bool { return d.IsFloat() || (d >= Int8 && d <= Int64) }
