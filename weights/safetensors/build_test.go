package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// file builds a safetensors file from a header written as text, so that
// a test can write any part of it wrong, and the data section.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	return append(append(b, header...), data...)
}

// goodHeader is a valid header for a 2×2 F32 tensor "a" and a 3-element
// U8 tensor "b" in 19 bytes of data.
const goodHeader = `{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"b":{"dtype":"U8","shape":[3],"data_offsets":[16,19]}}`

func goodData() []byte { return make([]byte, 19) }

// writeFiles writes name → contents under dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
