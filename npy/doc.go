// Package npy reads and writes NumPy's .npy array files (format versions
// 1.0, 2.0 and 3.0, C order, little-endian or single-byte types).
//
// Reading is defensive: the header is bounded, the declared shape is checked
// for overflow and against the bytes the file actually holds before any
// allocation, and anything malformed is an error, never a panic.
package npy
