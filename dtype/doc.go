// Package dtype converts between float32 and the 16-bit float formats
// (IEEE half precision and bfloat16), rounding to nearest even, one value at
// a time or in bulk.
package dtype
