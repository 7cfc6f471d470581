package gguf

import (
	"fmt"
	"strings"
)

// Kind is the type of a metadata value, numbered as GGUF's gguf_type.
type Kind uint32

// The GGUF value types.
const (
	Uint8 Kind = iota
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Float32
	Bool
	String
	Array
	Uint64
	Int64
	Float64
	numKinds
)

var kindNames = [numKinds]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

// String is the kind's name ("uint32", "array").
func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint32(k))
}

// size is the number of bytes a scalar of the kind takes in the file, or
// the fewest a string (its length) or an array (type and count) can take.
func (k Kind) size() int {
	switch k {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64, String:
		return 8
	case Array:
		return 12
	}
	return 0
}

// Value is one metadata value.
type Value struct {
	kind Kind
	elem Kind // of an array's elements
	x    any
}

// Kind is the value's type.
func (v Value) Kind() Kind { return v.kind }

// Elem is the type of an array's elements (Array for an array of arrays);
// it is meaningless for other values.
func (v Value) Elem() Kind { return v.elem }

// Len is the number of elements of an array, or 0.
func (v Value) Len() int {
	switch x := v.x.(type) {
	case []uint8:
		return len(x)
	case []int8:
		return len(x)
	case []uint16:
		return len(x)
	case []int16:
		return len(x)
	case []uint32:
		return len(x)
	case []int32:
		return len(x)
	case []float32:
		return len(x)
	case []bool:
		return len(x)
	case []string:
		return len(x)
	case []uint64:
		return len(x)
	case []int64:
		return len(x)
	case []float64:
		return len(x)
	case []Value:
		return len(x)
	}
	return 0
}

// Interface returns the value as Go holds it: uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64 or float64 for a
// scalar; a slice of one of those for an array, or []Value for an array of
// arrays. The slices are the Value's own; do not modify them.
func (v Value) Interface() any { return v.x }

// String formats the value for people, eliding the middle of long arrays.
func (v Value) String() string {
	if v.kind != Array {
		if s, ok := v.x.(string); ok {
			return fmt.Sprintf("%q", s)
		}
		return fmt.Sprint(v.x)
	}
	n := v.Len()
	var b strings.Builder
	fmt.Fprintf(&b, "[%d×%s:", n, v.elem)
	for i := 0; i < n; i++ {
		if n > 8 && i == 4 {
			b.WriteString(" …")
			i = n - 3
		}
		b.WriteByte(' ')
		b.WriteString(v.index(i).String())
	}
	b.WriteByte(']')
	return b.String()
}

// index returns element i of an array.
func (v Value) index(i int) Value {
	switch x := v.x.(type) {
	case []uint8:
		return Value{kind: Uint8, x: x[i]}
	case []int8:
		return Value{kind: Int8, x: x[i]}
	case []uint16:
		return Value{kind: Uint16, x: x[i]}
	case []int16:
		return Value{kind: Int16, x: x[i]}
	case []uint32:
		return Value{kind: Uint32, x: x[i]}
	case []int32:
		return Value{kind: Int32, x: x[i]}
	case []float32:
		return Value{kind: Float32, x: x[i]}
	case []bool:
		return Value{kind: Bool, x: x[i]}
	case []string:
		return Value{kind: String, x: x[i]}
	case []uint64:
		return Value{kind: Uint64, x: x[i]}
	case []int64:
		return Value{kind: Int64, x: x[i]}
	case []float64:
		return Value{kind: Float64, x: x[i]}
	case []Value:
		return x[i]
	}
	return Value{}
}

// integer returns a scalar integer as a sign and magnitude.
func (v Value) integer() (neg bool, mag uint64, ok bool) {
	signed := func(i int64) (bool, uint64, bool) {
		if i < 0 {
			return true, uint64(-(i + 1)) + 1, true
		}
		return false, uint64(i), true
	}
	switch x := v.x.(type) {
	case uint8:
		return false, uint64(x), true
	case uint16:
		return false, uint64(x), true
	case uint32:
		return false, uint64(x), true
	case uint64:
		return false, x, true
	case int8:
		return signed(int64(x))
	case int16:
		return signed(int64(x))
	case int32:
		return signed(int64(x))
	case int64:
		return signed(x)
	}
	return false, 0, false
}

// float returns a scalar number as a float64.
func (v Value) float() (float64, bool) {
	switch x := v.x.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if neg, mag, ok := v.integer(); ok {
		if neg {
			return -float64(mag), true
		}
		return float64(mag), true
	}
	return 0, false
}
