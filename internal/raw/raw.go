package raw

import "unsafe"

func cast[T any](b []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(b) < size {
		return nil
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p)%uintptr(unsafe.Alignof(zero)) != 0 {
		panic("raw: misaligned buffer")
	}
	return unsafe.Slice((*T)(p), len(b)/size)
}

// F32 views b as float32 values.
func F32(b []byte) []float32 { return cast[float32](b) }

// F64 views b as float64 values.
func F64(b []byte) []float64 { return cast[float64](b) }

// I64 views b as int64 values.
func I64(b []byte) []int64 { return cast[int64](b) }

// I32 views b as int32 values.
func I32(b []byte) []int32 { return cast[int32](b) }

// I16 views b as int16 values.
func I16(b []byte) []int16 { return cast[int16](b) }

// I8 views b as int8 values.
func I8(b []byte) []int8 { return cast[int8](b) }

// U16 views b as uint16 values (also the bit patterns of f16 and bf16).
func U16(b []byte) []uint16 { return cast[uint16](b) }

// U32 views b as uint32 values.
func U32(b []byte) []uint32 { return cast[uint32](b) }

// U64 views b as uint64 values.
func U64(b []byte) []uint64 { return cast[uint64](b) }

// Bytes views a typed slice as its bytes.
func Bytes[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// Aligned reports whether b starts at a multiple of align bytes.
func Aligned(b []byte, align uintptr) bool {
	return len(b) == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%align == 0
}

// SameStart reports whether two non-empty buffers start at the same
// address.
func SameStart(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}
