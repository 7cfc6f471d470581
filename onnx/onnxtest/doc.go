// Package onnxtest builds hostile model and input files for tests: each a
// case that berth must refuse with a clear error, without a panic, within
// seconds and without a large allocation.
package onnxtest
