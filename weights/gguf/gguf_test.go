package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/llmtest"
	"github.com/berth-ml/berth/weights/ggml"
	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// fixtures holds files that scripts/gen_ggml_fixtures.py wrote, checked
// there against ggml's own gguf reader and writer.
var fixtures = filepath.Join("..", "..", "testdata", "gguf")

type manifestFile struct {
	Version    uint32   `json:"version"`
	Alignment  int64    `json:"alignment"`
	DataOffset int64    `json:"data_offset"`
	Keys       []string `json:"keys"`
	// Tensors have the fields llmtest.Tensor reads for a GGUF tensor.
	Tensors []llmtest.Tensor `json:"tensors"`
}

func readManifest(t *testing.T) map[string]manifestFile {
	t.Helper()
	var m struct {
		Files map[string]manifestFile `json:"files"`
	}
	weightstest.ReadJSON(t, filepath.Join(fixtures, "manifest.json"), &m)
	return m.Files
}

// openLaidOut opens the file at path for the rest of the test and checks
// its version, alignment and data offset.
func openLaidOut(t *testing.T, path string, version uint32, alignment, dataOffset int64) *File {
	t.Helper()
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if f.Version != version || f.Alignment != alignment || f.DataOffset != dataOffset {
		t.Errorf("version %d, alignment %d, data at %d; want %d, %d, %d",
			f.Version, f.Alignment, f.DataOffset, version, alignment, dataOffset)
	}
	return f
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Both fixture files agree with what the script wrote: layout, keys,
// tensors, their bytes, and their dequantisation agrees with ggml's.
func TestFixtures(t *testing.T) {
	for name, want := range readManifest(t) {
		t.Run(name, func(t *testing.T) {
			f := openLaidOut(t, filepath.Join(fixtures, name), want.Version, want.Alignment, want.DataOffset)
			if !reflect.DeepEqual(f.Keys(), want.Keys) {
				t.Errorf("keys %q, want %q", f.Keys(), want.Keys)
			}
			if len(f.Tensors()) != len(want.Tensors) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors()), len(want.Tensors))
			}
			for i, w := range want.Tensors {
				tt := f.Tensors()[i]
				if byName, ok := f.Tensor(w.Name); !ok || byName != tt {
					t.Errorf("Tensor(%q) is not the %d-th tensor", w.Name, i)
				}
				checkTensor(t, i, tt, w)
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	f, err := Open(filepath.Join(fixtures, "small.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	check := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	s, err := f.String("general.name")
	check("general.name", s, "berth fixture ✓", err)
	s, err = f.String("test.empty_string")
	check("test.empty_string", s, "", err)
	u, err := f.Uint("test.u8")
	check("test.u8", u, uint64(200), err)
	u, err = f.Uint("test.u16")
	check("test.u16", u, uint64(60000), err)
	u, err = f.Uint("test.u32")
	check("test.u32", u, uint64(4000000000), err)
	u, err = f.Uint("test.u64")
	check("test.u64", u, uint64(1<<63+5), err)
	u, err = f.Uint("general.alignment")
	check("general.alignment", u, uint64(64), err)
	i, err := f.Int("test.i8")
	check("test.i8", i, int64(-100), err)
	i, err = f.Int("test.i16")
	check("test.i16", i, int64(-30000), err)
	i, err = f.Int("test.i32")
	check("test.i32", i, int64(-2000000000), err)
	i, err = f.Int("test.i64")
	check("test.i64", i, int64(-1<<62), err)
	i, err = f.Int("test.u32")
	check("test.u32 as Int", i, int64(4000000000), err)
	x, err := f.Float("test.f32")
	check("test.f32", x, 0.5, err)
	x, err = f.Float("test.f64")
	check("test.f64", x, math.Pi, err)
	x, err = f.Float("test.i8")
	check("test.i8 as Float", x, -100.0, err)
	b, err := f.Bool("test.bool")
	check("test.bool", b, true, err)
	ss, err := f.Strings("tokenizer.ggml.tokens")
	check("tokens", ss, []string{"<s>", "</s>", "hello", "wörld", "▁the", "", "日本語", "▁▁"}, err)
	fs, err := f.Floats("tokenizer.ggml.scores")
	check("scores", fs, []float64{0, -0.25, -0.5, -0.75, -1, -1.25, -1.5, -1.75}, err)
	is, err := f.Ints("tokenizer.ggml.token_type")
	check("token types", is, []int64{3, 3, 1, 1, 1, 2, 1, 6}, err)
	v, _ := f.Value("test.bools")
	check("test.bools", v.Interface(), []bool{true, false, true}, nil)
	v, _ = f.Value("test.u64s")
	check("test.u64s", v.Interface(), []uint64{0, 1, 1<<64 - 1}, nil)
	v, _ = f.Value("tokenizer.ggml.scores")
	check("scores as float32", v.Interface(), []float32{0, -0.25, -0.5, -0.75, -1, -1.25, -1.5, -1.75}, nil)
	fs, err = f.Floats("test.f64s")
	check("test.f64s", fs, []float64{1.5, -2.25}, err)
	v, _ = f.Value("test.empty_u8s")
	if v.Kind() != Array || v.Elem() != Uint8 || v.Len() != 0 {
		t.Errorf("test.empty_u8s: %s of %s, %d long", v.Kind(), v.Elem(), v.Len())
	}

	wrong := []struct {
		what string
		get  func() error
		err  string
	}{
		{"missing", func() error { _, err := f.String("general.missing"); return err }, `no such metadata key: "general.missing"`},
		{"string of u8", func() error { _, err := f.String("test.u8"); return err }, `"test.u8" is a uint8, not a string`},
		{"uint of i8", func() error { _, err := f.Uint("test.i8"); return err }, `"test.i8" is negative (-100)`},
		{"uint of string", func() error { _, err := f.Uint("general.name"); return err }, "is a string, not an integer"},
		{"int of u64", func() error { _, err := f.Int("test.u64"); return err }, "does not fit an int64"},
		{"int of f32", func() error { _, err := f.Int("test.f32"); return err }, "is a float32, not an integer"},
		{"float of bool", func() error { _, err := f.Float("test.bool"); return err }, "is a bool, not a number"},
		{"bool of u8", func() error { _, err := f.Bool("test.u8"); return err }, "is a uint8, not a bool"},
		{"strings of f32s", func() error { _, err := f.Strings("tokenizer.ggml.scores"); return err }, "is an array of float32, not an array of string"},
		{"strings of string", func() error { _, err := f.Strings("general.name"); return err }, "is a string, not an array of string"},
		{"ints of strings", func() error { _, err := f.Ints("tokenizer.ggml.tokens"); return err }, "not an array of integers"},
		{"ints of big u64s", func() error { _, err := f.Ints("test.u64s"); return err }, "element 2 (18446744073709551615) does not fit an int64"},
		{"floats of bools", func() error { _, err := f.Floats("test.bools"); return err }, "is an array of bool, not an array of numbers"},
		{"floats of scalar", func() error { _, err := f.Floats("test.f32"); return err }, "is a float32, not an array of numbers"},
	}
	for _, w := range wrong {
		err := w.get()
		if err == nil || !strings.Contains(err.Error(), w.err) {
			t.Errorf("%s: %v, want an error with %q", w.what, err, w.err)
		}
	}
	if _, err := f.Uint("no.such.key"); !errors.Is(err, ErrNoKey) {
		t.Errorf("a missing key gives %v, not ErrNoKey", err)
	}
}

func TestNestedArrays(t *testing.T) {
	f, err := Open(filepath.Join(fixtures, "nested.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, ok := f.Value("test.nested")
	if !ok || v.Kind() != Array || v.Elem() != Array || v.Len() != 3 {
		t.Fatalf("test.nested: %v", v)
	}
	outer := v.Interface().([]Value)
	want := [][]string{{"a", "b"}, {"ç"}, {}}
	for i, e := range outer {
		if e.Elem() != String || !reflect.DeepEqual(e.Interface(), want[i]) {
			t.Errorf("element %d: %v, want %q", i, e, want[i])
		}
	}
	v, _ = f.Value("test.nested_ints")
	if got := v.String(); got != "[2×array: [2×int16: 1 -2] [1×int16: 3]]" {
		t.Errorf("test.nested_ints formats as %s", got)
	}
	one, ok := f.Tensor("one")
	if !ok || !reflect.DeepEqual(one.Shape, []int64{2, 1}) || one.Rows() != 1 {
		t.Fatalf("tensor one: %+v", one)
	}
	got := make([]float32, 2)
	if err := ggml.Dequantize(one.Type, got, one.Bytes()); err != nil || got[0] != 1.5 || got[1] != -2 {
		t.Errorf("tensor one holds %v (%v)", got, err)
	}
}

// Version 2 files differ from version 3 only in the number.
func TestVersion2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "small.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	data[4] = 2
	f, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 2 || len(f.Tensors()) != 10 {
		t.Errorf("version %d, %d tensors", f.Version, len(f.Tensors()))
	}
}

func TestClose(t *testing.T) {
	f, err := Open(filepath.Join(fixtures, "small.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := f.Tensor("cube")
	if len(w.Bytes()) != 96 {
		t.Fatalf("cube has %d bytes", len(w.Bytes()))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Bytes() != nil {
		t.Error("a tensor's bytes outlive Close")
	}
	if s, err := f.String("general.architecture"); err != nil || s != "llama" {
		t.Errorf("metadata after Close: %q, %v", s, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.gguf")
	if err := os.WriteFile(bad, header(3, 1<<60, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, err string }{
		{filepath.Join(dir, "missing.gguf"), "no such file"},
		{dir, "not a regular file"},
		{bad, "bad.gguf: at byte 24: 1152921504606846976 tensors cannot fit in the 0 bytes left"},
	}
	for _, tt := range tests {
		if _, err := Open(tt.path); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Open(%s): %v, want an error with %q", tt.path, err, tt.err)
		}
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); err == nil || !strings.Contains(err.Error(), "not a GGUF file") {
		t.Errorf("empty file: %v", err)
	}
}

func TestValueString(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{Value{kind: Uint32, x: uint32(7)}, "7"},
		{Value{kind: String, x: "a\"b"}, `"a\"b"`},
		{Value{kind: Bool, x: true}, "true"},
		{Value{kind: Array, elem: String, x: []string{"x", "y"}}, `[2×string: "x" "y"]`},
		{Value{kind: Array, elem: Int32, x: []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, "[10×int32: 0 1 2 3 … 7 8 9]"},
		{Value{kind: Array, elem: Float32, x: []float32{}}, "[0×float32:]"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v formats as %s, want %s", tt.v.x, got, tt.want)
		}
	}
	if Kind(42).String() != "kind(42)" || Float64.String() != "float64" {
		t.Error("kind names")
	}
}

// A string array's elements share one allocation.
func TestStringArrayAllocations(t *testing.T) {
	tokens := make([][]byte, 1000)
	for i := range tokens {
		tokens[i] = str(strings.Repeat("t", i%7))
	}
	data := gguf{kvs: [][]byte{kv("tokenizer.ggml.tokens", Array, arr(String, 1000, tokens...))}}.bytes()
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := Parse(data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 20 {
		t.Errorf("parsing 1000 strings takes %v allocations", allocs)
	}
}

// checkTensor compares the i-th tensor of a file with its manifest
// entry w: name, type, shape, offset, size, the SHA-256 of its bytes and
// of their float32 dequantisation.
func checkTensor(t *testing.T, i int, tt *Tensor, w llmtest.Tensor) {
	t.Helper()
	if tt.Name != w.Name || tt.Type.String() != w.Type || !reflect.DeepEqual(tt.Shape, w.NE) ||
		tt.Offset != w.Offset || tt.Size != w.Bytes || int64(len(tt.Bytes())) != w.Bytes {
		t.Errorf("tensor %d: %s %s %v at %d, %d bytes; want %s %s %v at %d, %d bytes",
			i, tt.Name, tt.Type, tt.Shape, tt.Offset, tt.Size, w.Name, w.Type, w.NE, w.Offset, w.Bytes)
		return
	}
	if hash(tt.Bytes()) != w.SHA256 {
		t.Errorf("%s: the bytes differ from the manifest's", tt.Name)
	}
	values := make([]float32, tt.Elements())
	if err := ggml.Dequantize(tt.Type, values, tt.Bytes()); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, 0, 4*len(values))
	for _, v := range values {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	if hash(raw) != w.Dequantised {
		t.Errorf("%s: dequantised values differ from the manifest's", tt.Name)
	}
	if tt.Elements() != tt.Rows()*tt.Shape[0] {
		t.Errorf("%s: %d elements in %d rows of %d", tt.Name, tt.Elements(), tt.Rows(), tt.Shape[0])
	}
}
