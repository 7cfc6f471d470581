package onnx

import (
	"testing"

	"google.golang.org/protobuf/proto"
)

// FuzzReadTensor feeds arbitrary bytes to the TensorProto reader: it must
// return a tensor whose data matches its type and shape, or an error.
func FuzzReadTensor(f *testing.F) {
	for _, tp := range [][]byte{
		mustMarshal(rawF32("x", []int64{2, 2}, 1, 2, 3, 4)),
		mustMarshal(rawF32("s", nil, 7)),
		{0x08, 0x02, 0x10, 0x07, 0x4a, 0x00},
	} {
		f.Add(tp)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tt, err := ReadTensor(b)
		if err != nil {
			return
		}
		if int64(len(tt.Data)) != tt.Bytes() {
			t.Fatalf("%d data bytes for %s%v", len(tt.Data), tt.DType, tt.Shape)
		}
		if err := tt.Shape.Validate(); err != nil {
			t.Fatal(err)
		}
	})
}

func mustMarshal(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
