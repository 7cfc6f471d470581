// Package raw reinterprets byte buffers as typed slices without copying.
//
// Arena slots and weights are 64-byte (at least element-size) aligned byte
// ranges; kernels view them as []float32, []int64, … through these helpers.
// The caller guarantees alignment; a misaligned buffer panics
// rather than reading garbage.
package raw
