package safetensors

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// fixtures holds files written by scripts/gen_ggml_fixtures.py.
var fixtures = filepath.Join("..", "..", "testdata", "safetensors")

type manifestTensor struct {
	File   string  `json:"file"`
	Name   string  `json:"name"`
	DType  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	SHA256 string  `json:"sha256"`
}

func readManifest(t *testing.T) (single, sharded []manifestTensor) {
	t.Helper()
	var m struct {
		Single, Sharded []manifestTensor
	}
	weightstest.ReadJSON(t, filepath.Join(fixtures, "manifest.json"), &m)
	return m.Single, m.Sharded
}

func checkTensors(t *testing.T, c *Checkpoint, want []manifestTensor) {
	t.Helper()
	if len(c.Tensors()) != len(want) {
		t.Fatalf("%d tensors, want %d", len(c.Tensors()), len(want))
	}
	for i, w := range want {
		tt := c.Tensors()[i]
		if got, ok := c.Tensor(w.Name); !ok || got != tt {
			t.Errorf("Tensor(%q) is not the %d-th tensor (%s)", w.Name, i, tt.Name)
		}
		shape := tt.Shape
		if shape == nil {
			shape = []int64{}
		}
		if tt.Name != w.Name || tt.DType.String() != w.DType || !reflect.DeepEqual(shape, w.Shape) {
			t.Errorf("tensor %d: %s %s %v, want %s %s %v", i, tt.Name, tt.DType, tt.Shape, w.Name, w.DType, w.Shape)
		}
		sum := sha256.Sum256(tt.Bytes())
		if hex.EncodeToString(sum[:]) != w.SHA256 || int64(len(tt.Bytes())) != tt.Size || tt.Size != tt.Elements()*tt.DType.Size() {
			t.Errorf("%s: %d bytes that differ from the script's", tt.Name, len(tt.Bytes()))
		}
	}
}

func TestSingleFile(t *testing.T) {
	single, _ := readManifest(t)
	for _, path := range []string{filepath.Join(fixtures, "single"), filepath.Join(fixtures, "single", "model.safetensors")} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkTensors(t, c, single)
		if want := map[string]string{"format": "pt", "note": "ünïcode"}; !reflect.DeepEqual(c.Metadata(), want) {
			t.Errorf("metadata %v, want %v", c.Metadata(), want)
		}
		if c.Config() != nil {
			t.Errorf("a config where there is none: %s", c.Config())
		}
		f32, _ := c.Tensor("f32")
		if got := math.Float32frombits(binary.LittleEndian.Uint32(f32.Bytes()[4*5:])); got != 2.5 {
			t.Errorf("f32[1][1] = %v, want 2.5", got)
		}
		bf16, _ := c.Tensor("bf16")
		if got := binary.LittleEndian.Uint16(bf16.Bytes()[2:]); got != 0xc000 {
			t.Errorf("bf16[0][1] = %#04x, want 0xc000 (-2)", got)
		}
		scalar, _ := c.Tensor("scalar")
		if len(scalar.Shape) != 0 || scalar.Elements() != 1 || scalar.Size != 4 {
			t.Errorf("scalar: shape %v, %d bytes", scalar.Shape, scalar.Size)
		}
		empty, _ := c.Tensor("empty")
		if empty.Elements() != 0 || len(empty.Bytes()) != 0 {
			t.Errorf("empty: %d elements, %d bytes", empty.Elements(), len(empty.Bytes()))
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if f32.Bytes() != nil {
			t.Error("a tensor's bytes outlive Close")
		}
		if err := c.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestShardedFolder(t *testing.T) {
	_, sharded := readManifest(t)
	dir := filepath.Join(fixtures, "sharded")
	for _, path := range []string{dir, filepath.Join(dir, IndexName)} {
		c, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		checkTensors(t, c, sharded)
		if len(c.Files()) != 2 {
			t.Errorf("%d files mapped, want 2", len(c.Files()))
		}
		var config struct {
			Architectures []string `json:"architectures"`
			HiddenSize    int      `json:"hidden_size"`
		}
		if err := json.Unmarshal(c.Config(), &config); err != nil || config.HiddenSize != 8 || config.Architectures[0] != "LlamaForCausalLM" {
			t.Errorf("config %s: %v", c.Config(), err)
		}
		if c.Metadata()["format"] != "pt" {
			t.Errorf("metadata %v", c.Metadata())
		}
		c.Close()
	}
}

// Links that stay inside the folder, and shards in subfolders, are fine;
// a shard named by several tensors is mapped once.
func TestFolderLinksInside(t *testing.T) {
	dir := t.TempDir()
	shard := file(goodHeader, goodData())
	writeFiles(t, dir, map[string][]byte{
		"blobs/one":                     shard,
		"sub/two.safetensors":           file(`{"c":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]}}`, []byte{1}),
		IndexName:                       []byte(`{"weight_map":{"a":"x.safetensors","b":"x.safetensors","c":"sub/two.safetensors"}}`),
		"config.json":                   []byte(`{"model_type": "test"}`),
		"unrelated/other.safetensors":   shard,
		"unrelated/notes.txt":           []byte("…"),
		"sub/unlisted.safetensors.json": []byte("{}"),
	})
	if err := os.Symlink(filepath.Join("blobs", "one"), filepath.Join(dir, "x.safetensors")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var names []string
	for _, tt := range c.Tensors() {
		names = append(names, tt.Name)
	}
	if !reflect.DeepEqual(names, []string{"c", "a", "b"}) || len(c.Files()) != 2 {
		t.Errorf("tensors %q in %d files", names, len(c.Files()))
	}
	if string(c.Config()) != `{"model_type": "test"}` {
		t.Errorf("config %s", c.Config())
	}
}

// Without an index, every .safetensors file of the folder is read.
func TestFolderWithoutIndex(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{
		"b.safetensors": file(goodHeader, goodData()),
		"a.safetensors": file(`{"c":{"dtype":"I16","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)),
	})
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Tensors()) != 3 || c.Tensors()[0].Name != "c" || len(c.Files()) != 2 {
		t.Errorf("%d tensors, the first %q, %d files", len(c.Tensors()), c.Tensors()[0].Name, len(c.Files()))
	}
}

func TestParse(t *testing.T) {
	// Header padded with spaces, tensors listed out of the order of their
	// bytes, an empty tensor between two others.
	header := `{"b":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},"e":{"dtype":"F64","shape":[0,3],"data_offsets":[16,16]},"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}   `
	f, err := Parse(file(header, goodData()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tt := range f.Tensors() {
		names = append(names, tt.Name)
	}
	if !reflect.DeepEqual(names, []string{"a", "b", "e"}) {
		t.Errorf("order %q", names)
	}
	if f.DataOffset != int64(8+len(header)) || len(f.Metadata()) != 0 || f.Path != "" {
		t.Errorf("data at %d, metadata %v", f.DataOffset, f.Metadata())
	}
	if b, _ := f.Tensor("b"); b.Offset != 16 || b.Size != 3 {
		t.Errorf("b: %d bytes at %d", b.Size, b.Offset)
	}
	if f.Close() != nil {
		t.Error("Close of a parsed file")
	}
}

func TestDTypes(t *testing.T) {
	sizes := map[string]int64{"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2,
		"F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
	for name, size := range sizes {
		d, err := ParseDType(name)
		if err != nil || d.String() != name || d.Size() != size {
			t.Errorf("%s: %v %d %v", name, d, d.Size(), err)
		}
	}
	if DType(0).String() != "dtype(0)" || DType(200).Size() != 0 {
		t.Error("invalid dtypes")
	}
	if _, err := ParseDType("F4"); err == nil {
		t.Error("F4 (half a byte per element) is accepted")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string][]byte{"bad.safetensors": []byte("short")})
	tests := []struct{ path, err string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{filepath.Join(dir, "bad.safetensors"), "bad.safetensors: a file of 5 bytes is too short"},
		{filepath.Join(dir, "missing.safetensors.index.json"), "no such file"},
	}
	for _, tt := range tests {
		if _, err := Open(tt.path); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("Open(%s): %v, want an error with %q", tt.path, err, tt.err)
		}
	}
}
