package ir

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/dtype"
)

// Int64s decodes a constant integer (or bool) tensor into int64 values. It
// is meant for the small shape-like tensors that drive shape inference.
func (t *Tensor) Int64s() ([]int64, error) {
	if !t.IsConst() {
		return nil, fmt.Errorf("tensor %q is not a constant", t.Name)
	}
	n := t.Shape.Elements()
	if int64(len(t.Data)) != n*int64(t.DType.Size()) {
		return nil, fmt.Errorf("tensor %q holds %d bytes, want %d", t.Name, len(t.Data), n*int64(t.DType.Size()))
	}
	out := make([]int64, n)
	b := t.Data
	for i := range out {
		switch t.DType {
		case Int64:
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		case Int32:
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		case Int16:
			out[i] = int64(int16(binary.LittleEndian.Uint16(b[2*i:])))
		case Int8:
			out[i] = int64(int8(b[i]))
		case Uint64:
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		case Uint32:
			out[i] = int64(binary.LittleEndian.Uint32(b[4*i:]))
		case Uint16:
			out[i] = int64(binary.LittleEndian.Uint16(b[2*i:]))
		case Uint8, Bool:
			out[i] = int64(b[i])
		default:
			return nil, fmt.Errorf("tensor %q has type %s, want an integer type", t.Name, t.DType)
		}
	}
	return out, nil
}

// Float64s decodes a constant float32 or float64 tensor (or an integer one)
// into float64 values.
func (t *Tensor) Float64s() ([]float64, error) {
	switch t.DType {
	case Float32, Float64:
	default:
		v, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out, nil
	}
	if !t.IsConst() {
		return nil, fmt.Errorf("tensor %q is not a constant", t.Name)
	}
	n := t.Shape.Elements()
	if int64(len(t.Data)) != n*int64(t.DType.Size()) {
		return nil, fmt.Errorf("tensor %q holds %d bytes, want %d", t.Name, len(t.Data), n*int64(t.DType.Size()))
	}
	out := make([]float64, n)
	for i := range out {
		if t.DType == Float32 {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
		} else {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	}
	return out, nil
}

// Int64Bytes encodes int64 values as little-endian bytes, the layout of a
// constant Int64 tensor.
func Int64Bytes(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// EncodeFloat returns the little-endian bits of v as one value of type dt
// (the low dt.Size() bytes): floats rounded to the type, integers
// truncated towards zero and wrapped to the size, a bool 1 unless v is 0.
func EncodeFloat(v float64, dt DType) uint64 {
	switch dt {
	case Float32:
		return uint64(math.Float32bits(float32(v)))
	case Float64:
		return math.Float64bits(v)
	case Float16:
		return uint64(dtype.F16FromF32(float32(v)))
	case BFloat16:
		return uint64(dtype.BF16FromF32(float32(v)))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	case Uint64:
		return uint64(v)
	}
	return uint64(int64(v)) // two's complement, truncated to the size
}
