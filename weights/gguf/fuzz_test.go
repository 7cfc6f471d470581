package gguf

import (
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// FuzzGGUF parses arbitrary bytes: errors are fine, panics and tensors
// outside the data are not. Seeded with the fixtures and hand-made files.
//
//	go test -run XXX -fuzz FuzzGGUF ./weights/gguf
func FuzzGGUF(f *testing.F) {
	weightstest.Seed(f, hostileFiles(), fixtures, "small.gguf", "nested.gguf")
	f.Add(goodFile().bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		for _, key := range file.Keys() {
			v, _ := file.Value(key)
			_ = v.String()
			file.Strings(key)
			file.Ints(key)
			file.Floats(key)
			file.Uint(key)
			file.Int(key)
		}
		for _, tt := range file.Tensors() {
			if int64(len(tt.Bytes())) != tt.Size || tt.Offset%file.Alignment != 0 ||
				file.DataOffset+tt.Offset+tt.Size > int64(len(data)) {
				t.Fatalf("tensor %q: %d bytes at %d, file of %d", tt.Name, tt.Size, tt.Offset, len(data))
			}
			if tt.Type.CanDequantize() && tt.Elements() <= 1<<16 {
				if err := ggml.Dequantize(tt.Type, make([]float32, tt.Elements()), tt.Bytes()); err != nil {
					t.Fatalf("tensor %q: %v", tt.Name, err)
				}
			}
		}
	})
}
