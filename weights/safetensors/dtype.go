package safetensors

import "fmt"

// DType is the type of a tensor's elements.
type DType uint8

// The dtypes of the safetensors format that take whole bytes.
const (
	BOOL DType = iota + 1
	U8
	I8
	F8_E5M2
	F8_E4M3
	F8_E8M0
	I16
	U16
	F16
	BF16
	I32
	U32
	F32
	I64
	U64
	F64
	numDTypes
)

var dtypes = [numDTypes]struct {
	name string
	size int64
}{
	BOOL:    {"BOOL", 1},
	U8:      {"U8", 1},
	I8:      {"I8", 1},
	F8_E5M2: {"F8_E5M2", 1},
	F8_E4M3: {"F8_E4M3", 1},
	F8_E8M0: {"F8_E8M0", 1},
	I16:     {"I16", 2},
	U16:     {"U16", 2},
	F16:     {"F16", 2},
	BF16:    {"BF16", 2},
	I32:     {"I32", 4},
	U32:     {"U32", 4},
	F32:     {"F32", 4},
	I64:     {"I64", 8},
	U64:     {"U64", 8},
	F64:     {"F64", 8},
}

// String is the dtype's name as the format writes it ("BF16").
func (d DType) String() string {
	if d == 0 || d >= numDTypes {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return dtypes[d].name
}

// Size is the number of bytes one element takes.
func (d DType) Size() int64 {
	if d == 0 || d >= numDTypes {
		return 0
	}
	return dtypes[d].size
}

// ParseDType returns the dtype the format names name.
func ParseDType(name string) (DType, error) {
	for d := BOOL; d < numDTypes; d++ {
		if dtypes[d].name == name {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q", name)
}
