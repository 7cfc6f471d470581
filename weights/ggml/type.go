package ggml

import (
	"fmt"
	"math/bits"
)

// Type is a ggml tensor type, numbered as ggml's enum ggml_type.
type Type uint32

// The ggml types. Ids 4, 5, 31–33 and 36–38 belonged to types ggml has
// removed; they, and ids from TypeCount on, are not valid.
const (
	F32     Type = 0
	F16     Type = 1
	Q4_0    Type = 2
	Q4_1    Type = 3
	Q5_0    Type = 6
	Q5_1    Type = 7
	Q8_0    Type = 8
	Q8_1    Type = 9
	Q2_K    Type = 10
	Q3_K    Type = 11
	Q4_K    Type = 12
	Q5_K    Type = 13
	Q6_K    Type = 14
	Q8_K    Type = 15
	IQ2_XXS Type = 16
	IQ2_XS  Type = 17
	IQ3_XXS Type = 18
	IQ1_S   Type = 19
	IQ4_NL  Type = 20
	IQ3_S   Type = 21
	IQ2_S   Type = 22
	IQ4_XS  Type = 23
	I8      Type = 24
	I16     Type = 25
	I32     Type = 26
	I64     Type = 27
	F64     Type = 28
	IQ1_M   Type = 29
	BF16    Type = 30
	TQ1_0   Type = 34
	TQ2_0   Type = 35
	MXFP4   Type = 39
	NVFP4   Type = 40
	Q1_0    Type = 41
	Q2_0    Type = 42

	// TypeCount is one more than the largest type id.
	TypeCount Type = 43
)

// traits are a type's name, its elements per block and bytes per block,
// as ggml's type traits give them.
type traits struct {
	name        string
	block, size int64
}

var table = [TypeCount]traits{
	F32:     {"f32", 1, 4},
	F16:     {"f16", 1, 2},
	Q4_0:    {"q4_0", 32, 18},
	Q4_1:    {"q4_1", 32, 20},
	Q5_0:    {"q5_0", 32, 22},
	Q5_1:    {"q5_1", 32, 24},
	Q8_0:    {"q8_0", 32, 34},
	Q8_1:    {"q8_1", 32, 36},
	Q2_K:    {"q2_K", 256, 84},
	Q3_K:    {"q3_K", 256, 110},
	Q4_K:    {"q4_K", 256, 144},
	Q5_K:    {"q5_K", 256, 176},
	Q6_K:    {"q6_K", 256, 210},
	Q8_K:    {"q8_K", 256, 292},
	IQ2_XXS: {"iq2_xxs", 256, 66},
	IQ2_XS:  {"iq2_xs", 256, 74},
	IQ3_XXS: {"iq3_xxs", 256, 98},
	IQ1_S:   {"iq1_s", 256, 50},
	IQ4_NL:  {"iq4_nl", 32, 18},
	IQ3_S:   {"iq3_s", 256, 110},
	IQ2_S:   {"iq2_s", 256, 82},
	IQ4_XS:  {"iq4_xs", 256, 136},
	I8:      {"i8", 1, 1},
	I16:     {"i16", 1, 2},
	I32:     {"i32", 1, 4},
	I64:     {"i64", 1, 8},
	F64:     {"f64", 1, 8},
	IQ1_M:   {"iq1_m", 256, 56},
	BF16:    {"bf16", 1, 2},
	TQ1_0:   {"tq1_0", 256, 54},
	TQ2_0:   {"tq2_0", 256, 66},
	MXFP4:   {"mxfp4", 32, 17},
	NVFP4:   {"nvfp4", 64, 36},
	Q1_0:    {"q1_0", 128, 18},
	Q2_0:    {"q2_0", 64, 18},
}

// Valid reports whether t is a type ggml knows.
func (t Type) Valid() bool { return t < TypeCount && table[t].block != 0 }

// String is ggml's name of the type ("q4_K"), or "type(N)" for an id
// ggml does not know.
func (t Type) String() string {
	if !t.Valid() {
		return fmt.Sprintf("type(%d)", uint32(t))
	}
	return table[t].name
}

// ParseType returns the type of the given ggml name ("f16", "q4_K").
func ParseType(name string) (Type, error) {
	for t := range TypeCount {
		if t.Valid() && table[t].name == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("ggml: unknown type name %q", name)
}

// BlockSize is the number of elements in one block of the type (1 for
// the plain types); 0 if the type is not valid.
func (t Type) BlockSize() int64 {
	if !t.Valid() {
		return 0
	}
	return table[t].block
}

// TypeSize is the number of bytes one block of the type takes; 0 if the
// type is not valid.
func (t Type) TypeSize() int64 {
	if !t.Valid() {
		return 0
	}
	return table[t].size
}

// RowSize is the number of bytes n elements of the type take. n must be
// a non-negative multiple of the block size, and the size must fit in an
// int64.
func (t Type) RowSize(n int64) (int64, error) {
	if !t.Valid() {
		return 0, fmt.Errorf("ggml: unknown type id %d", uint32(t))
	}
	blk := table[t].block
	if n < 0 || n%blk != 0 {
		return 0, fmt.Errorf("ggml: %d elements are not whole blocks of %s (%d elements each)", n, t, blk)
	}
	hi, lo := bits.Mul64(uint64(n/blk), uint64(table[t].size))
	if hi != 0 || lo > 1<<63-1 {
		return 0, fmt.Errorf("ggml: %d elements of %s overflow a byte count", n, t)
	}
	return int64(lo), nil
}

// CanDequantize reports whether Dequantize converts the type.
func (t Type) CanDequantize() bool {
	switch t {
	case F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K:
		return true
	}
	return false
}
