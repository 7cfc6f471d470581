package onnxpb

// Regenerates onnx.pb.go from onnx.proto; see the package documentation.
//go:generate protoc --go_out=. --go_opt=paths=source_relative onnx.proto
