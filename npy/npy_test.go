package npy

import (
	"bytes"
	"fmt"
	"github.com/berth-ml/berth/internal/testenv"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		dt    ir.DType
		shape ir.Shape
	}{
		{ir.Float32, ir.Shape{2, 3}},
		{ir.Float64, ir.Shape{4}},
		{ir.Int64, ir.Shape{}},
		{ir.Int8, ir.Shape{1, 2, 3, 4}},
		{ir.Bool, ir.Shape{5}},
		{ir.Float16, ir.Shape{0, 3}},
	} {
		a := &Array{DType: tc.dt, Shape: tc.shape, Data: make([]byte, tc.shape.Bytes(tc.dt))}
		for i := range a.Data {
			a.Data[i] = byte(i * 7)
			if tc.dt == ir.Bool {
				a.Data[i] &= 1
			}
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		if (buf.Len()-len(a.Data))%64 != 0 {
			t.Errorf("%s%v: data does not start on a 64-byte boundary", tc.dt, tc.shape)
		}
		b, err := Read(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if err != nil {
			t.Fatalf("%s%v: %v", tc.dt, tc.shape, err)
		}
		if b.DType != a.DType || !b.Shape.Equal(a.Shape) || !bytes.Equal(b.Data, a.Data) {
			t.Errorf("%s%v: read back %s%v", tc.dt, tc.shape, b.DType, b.Shape)
		}
	}
}

// The fixtures were written by NumPy itself, so they check the reader
// against an independent writer.
func TestReadNumPyFiles(t *testing.T) {
	files, _ := filepath.Glob("../testdata/models/*/input_*.npy")
	if len(files) == 0 {
		testenv.Require(t, "../testdata/models/resnet/input_0.npy", "run scripts/gen_fixtures.py")
	}
	for _, f := range files {
		a, err := ReadFile(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if int64(len(a.Data)) != a.Shape.Bytes(a.DType) {
			t.Errorf("%s: %d bytes for %s%v", f, len(a.Data), a.DType, a.Shape)
		}
	}
}

func header(h string) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	b.Write([]byte{1, 0, byte(len(h)), byte(len(h) >> 8)})
	b.WriteString(h)
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "too short"},
		{"bad magic", []byte("\x93NUMPZ\x01\x00\x00\x00"), "bad magic"},
		{"version", []byte("\x93NUMPY\x09\x00\x00\x00"), "version"},
		{"truncated header", header("{'descr': '<f4'")[:15], "truncated"},
		{"no brace", header("'descr': '<f4'"), "malformed"},
		{"unknown type", header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), "unsupported element type"},
		{"fortran", header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }"), "C-ordered"},
		{"negative dim", header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"), "negative"},
		{"huge dims", header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000, 1000000000), }"), "elements"},
		{"claims more data", header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000, 1000), }"), "needs 4000000 bytes"},
		{"bad dim", header("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }"), "bad dimension"},
		{"no shape", header("{'descr': '<f4', 'fortran_order': False, }"), "no shape"},
	} {
		_, err := Read(bytes.NewReader(tc.file), int64(len(tc.file)))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func ExampleWrite() {
	var buf bytes.Buffer
	a := &Array{DType: ir.Int64, Shape: ir.Shape{2}, Data: ir.Int64Bytes([]int64{7, 9})}
	if err := Write(&buf, a); err != nil {
		panic(err)
	}
	b, _ := Read(&buf, -1)
	v, _ := (&ir.Tensor{DType: b.DType, Shape: b.Shape, Data: b.Data}).Int64s()
	fmt.Println(b.DType, b.Shape, v)
	// Output: int64 [2] [7 9]
}
