package npy

import (
	"bytes"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// FuzzRead feeds arbitrary bytes to the reader: it must return an array
// whose data matches its header, or an error, and never panic.
func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, &Array{DType: ir.Float32, Shape: ir.Shape{2, 3}, Data: make([]byte, 24)})
	f.Add(buf.Bytes())
	buf.Reset()
	Write(&buf, &Array{DType: ir.Int64, Shape: ir.Shape{}, Data: make([]byte, 8)})
	f.Add(buf.Bytes())
	f.Add([]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '|b1'}"))
	f.Add([]byte("\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (999999999999,), }"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := Read(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		if int64(len(a.Data)) != a.Shape.Bytes(a.DType) {
			t.Fatalf("%d data bytes for %s%v", len(a.Data), a.DType, a.Shape)
		}
		if len(a.Data) > len(b) {
			t.Fatalf("read %d data bytes from a %d-byte file", len(a.Data), len(b))
		}
	})
}
