package safetensors

import (
	"testing"

	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// FuzzSafetensors parses arbitrary bytes: errors are fine, panics and
// tensors outside the data are not. Seeded with the fixtures and
// hand-made files.
//
//	go test -run XXX -fuzz FuzzSafetensors ./weights/safetensors
func FuzzSafetensors(f *testing.F) {
	weightstest.Seed(f, hostileFiles(), fixtures, "single/model.safetensors", "sharded/model-00001-of-00002.safetensors", "sharded/model-00002-of-00002.safetensors")
	f.Add(file(goodHeader, goodData()))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			return
		}
		end := int64(-1)
		for _, tt := range file.Tensors() {
			if int64(len(tt.Bytes())) != tt.Size || tt.Size != tt.Elements()*tt.DType.Size() ||
				file.DataOffset+tt.Offset+tt.Size > int64(len(data)) {
				t.Fatalf("tensor %q: %d bytes at %d, file of %d", tt.Name, tt.Size, tt.Offset, len(data))
			}
			if tt.Size > 0 {
				if tt.Offset < end {
					t.Fatalf("tensor %q overlaps the one before", tt.Name)
				}
				end = tt.Offset + tt.Size
			}
		}
	})
}
