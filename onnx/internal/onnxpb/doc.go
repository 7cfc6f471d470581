// Package onnxpb holds the Go types generated from the ONNX protobuf schema:
// onnx.proto as ONNX 1.12 ships it (Debian's python3-onnx), with a
// go_package option added and nothing else changed.
//
// onnx.pb.go is generated; do not edit it. To regenerate it, install
// protoc (libprotoc 3.21) and the protoc-gen-go that matches the
// google.golang.org/protobuf version in go.mod, then run go generate here:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	cd onnx/internal/onnxpb && go generate
//
// go generate runs the command in gen.go:
//
//	protoc --go_out=. --go_opt=paths=source_relative onnx.proto
package onnxpb
