package gguf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/weights/ggml"
)

// FuzzGGUF parses arbitrary bytes: errors are fine, panics and tensors
// outside the data are not. Seeded with the fixtures and hand-made files.
//
//	go test -run XXX -fuzz FuzzGGUF ./weights/gguf
func FuzzGGUF(f *testing.F) {
	for _, name := range []string{"small.gguf", "nested.gguf"} {
		data, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(goodFile().bytes())
	for _, h := range hostileFiles() {
		f.Add(h.data)
	}
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
