package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxElements bounds the number of elements of any one tensor. Shapes whose
// element count would exceed it are rejected before anything is allocated.
const MaxElements = 1 << 40

// Shape is a static tensor shape; a scalar has an empty shape.
type Shape []int64

// Elements returns the number of elements of s. It is 1 for a scalar.
// Shapes are validated (see Validate) before use, so the product cannot
// overflow.
func (s Shape) Elements() int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}

// Validate checks that every dimension is non-negative and that the element
// count stays within MaxElements without overflow. Every dimension is
// bounded by MaxElements too, that of an empty tensor included, so that
// arithmetic over the dimensions (strides, a kernel's tables along an
// axis) stays within int64.
func (s Shape) Validate() error {
	n := int64(1)
	for i, d := range s {
		if d < 0 {
			return fmt.Errorf("dimension %d is negative (%d)", i, d)
		}
		if d > MaxElements {
			return fmt.Errorf("dimension %d is %d, more than %d elements", i, d, int64(MaxElements))
		}
		if d != 0 && n > MaxElements/d {
			return fmt.Errorf("shape %v has more than %d elements", s, int64(MaxElements))
		}
		n *= d
	}
	return nil
}

// Bytes returns the byte size of a tensor of this shape and type.
func (s Shape) Bytes(d DType) int64 { return s.Elements() * int64(d.Size()) }

// Rank is the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// Equal reports whether two shapes are identical.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it.
func (s Shape) Clone() Shape {
	if s == nil {
		return Shape{}
	}
	return append(Shape{}, s...)
}

// Strides returns the row-major element strides of s.
func (s Shape) Strides() []int64 {
	st := make([]int64, len(s))
	acc := int64(1)
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// String formats the shape as [d0,d1,...].
func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Broadcast returns the numpy broadcast of a and b.
func Broadcast(a, b Shape) (Shape, error) {
	n := max(len(a), len(b))
	out := make(Shape, n)
	for i := 0; i < n; i++ {
		da, db := int64(1), int64(1)
		if j := i - (n - len(a)); j >= 0 {
			da = a[j]
		}
		if j := i - (n - len(b)); j >= 0 {
			db = b[j]
		}
		switch {
		case da == db:
			out[i] = da
		case da == 1:
			out[i] = db
		case db == 1:
			out[i] = da
		default:
			return nil, fmt.Errorf("shapes %v and %v do not broadcast", a, b)
		}
	}
	return out, nil
}

// NormAxis maps a possibly negative axis into [0, rank) and checks it.
func NormAxis(axis int64, rank int) (int, error) {
	if axis < 0 {
		axis += int64(rank)
	}
	if axis < 0 || axis >= int64(rank) {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	return int(axis), nil
}
