// Package conformance checks the CPU kernels against ONNX's conformance
// data (the Debian package libonnx-testdata). It holds tests only; they
// import the model through package onnx and fold every node through the
// kernels, so they also exercise those packages together.
package conformance
