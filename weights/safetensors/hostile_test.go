package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/weights/internal/weightstest"
)

// hostile is a file that must be refused.
type hostile weightstest.Hostile

func hostileFiles() []hostile {
	one := func(entry string, n int) []byte { return file(`{"t":`+entry+`}`, make([]byte, n)) }
	return []hostile{
		{"empty", nil, "a file of 0 bytes is too short"},
		{"seven bytes", make([]byte, 7), "too short"},
		{"header of 2^64-1 bytes", binary.LittleEndian.AppendUint64(nil, 1<<64-1), "a header of 18446744073709551615 bytes is over the limit"},
		{"header over the limit", binary.LittleEndian.AppendUint64(nil, MaxHeaderBytes+1), "over the limit of 104857600"},
		{"header beyond the file", file(goodHeader, nil)[:40], "but the file holds only 32 after its length"},
		{"empty header", file("", nil), "does not start with '{'"},
		{"header starting with space", file(` {}`, nil), "does not start with '{'"},
		{"header an array", file(`[1]`, nil), "does not start with '{'"},
		{"bad UTF-8", file("{\"t\xff\":1}", nil), "not valid UTF-8"},
		{"not JSON", file(`{"a":`, nil), "header"},
		{"trailing garbage", file(`{}x`, nil), "follows the JSON object"},
		{"two objects", file(`{}{}`, nil), "follows the JSON object"},
		{"entry not an object", one(`[1]`, 0), `tensor "t": not an object`},
		{"no dtype", one(`{"shape":[1],"data_offsets":[0,4]}`, 4), "dtype (missing) is not a string"},
		{"dtype a number", one(`{"dtype":4,"shape":[1],"data_offsets":[0,4]}`, 4), "dtype 4 is not a string"},
		{"unknown dtype", one(`{"dtype":"F4","shape":[2],"data_offsets":[0,1]}`, 1), `unknown dtype "F4"`},
		{"lower-case dtype", one(`{"dtype":"f32","shape":[1],"data_offsets":[0,4]}`, 4), `unknown dtype "f32"`},
		{"no shape", one(`{"dtype":"F32","data_offsets":[0,4]}`, 4), "shape (missing) is not an array"},
		{"shape null", one(`{"dtype":"F32","shape":null,"data_offsets":[0,4]}`, 4), "shape null is not an array"},
		{"negative dimension", one(`{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}`, 4), "shape entry -1 is not an integer"},
		{"fractional dimension", one(`{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}`, 4), "shape entry 1.5"},
		{"dimension as text", one(`{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}`, 4), `shape entry "1"`},
		{"dimension of 2^64", one(`{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}`, 4), "shape entry 18446744073709551616"},
		{"shape overflows", one(`{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}`, 4), "holds more than 2^62 elements"},
		{"empty shape, huge dimensions", one(`{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}`, 0), "more than 2^62"},
		{"bytes overflow", one(`{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,4]}`, 4), "takes more than 2^63 bytes"},
		{"too many dimensions", one(`{"dtype":"U8","shape":[`+strings.Repeat("1,", MaxDims)+`1],"data_offsets":[0,1]}`, 1), "65 dimensions"},
		{"no offsets", one(`{"dtype":"F32","shape":[1]}`, 4), "data_offsets (missing)"},
		{"three offsets", one(`{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}`, 8), "data_offsets has 3 entries"},
		{"offsets reversed", one(`{"dtype":"F32","shape":[1],"data_offsets":[4,0]}`, 4), "end before they begin"},
		{"offsets beyond the data", one(`{"dtype":"F32","shape":[1],"data_offsets":[0,4]}`, 3), "lie beyond the 3 bytes of the data section"},
		{"offsets of 2^64-1", one(`{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551611,18446744073709551615]}`, 4), "lie beyond"},
		{"size mismatch", one(`{"dtype":"F32","shape":[2],"data_offsets":[0,4]}`, 8), "hold 4 bytes, but 2 elements of F32 take 8"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, make([]byte, 8)),
			`tensors "a" (bytes 0 to 8) and "b" (from 4) overlap`},
		{"overlap, out of order", file(`{"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, make([]byte, 8)),
			`tensors "a" (bytes 0 to 8) and "b" (from 4) overlap`},
		{"duplicate tensor", file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)),
			`tensor "a" appears twice`},
		{"metadata not strings", file(`{"__metadata__":{"n":1}}`, nil), `__metadata__ is not an object of strings: {"n":1}`},
		{"metadata null", file(`{"__metadata__":null}`, nil), "__metadata__ is not an object"},
		{"metadata twice", file(`{"__metadata__":{},"__metadata__":{}}`, nil), "__metadata__ appears twice"},
		{"deep nesting", file(`{"a":{"x":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`}}`, nil), "header"},
	}
}

func TestHostileFiles(t *testing.T) {
	if _, err := Parse(file(goodHeader, goodData())); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	weightstest.Refused(t, hostileFiles(), "safetensors: ", parseError)
}

func TestHostileClaimsAllocateLittle(t *testing.T) {
	weightstest.AllocateLittle(t, hostileFiles(), 1<<20, parseError)
}

// Every prefix of a valid file is refused, never a panic.
func TestTruncatedFiles(t *testing.T) {
	paths := []string{
		filepath.Join(fixtures, "single", "model.safetensors"),
		filepath.Join(fixtures, "sharded", "model-00001-of-00002.safetensors"),
	}
	for _, p := range paths {
		data := weightstest.ReadFile(t, p)
		if _, err := Parse(data); err != nil {
			t.Fatal(err)
		}
		for n := range len(data) {
			if _, err := Parse(data[:n]); err == nil {
				t.Errorf("%s cut to %d of %d bytes is accepted", p, n, len(data))
			}
		}
	}
}

// Folders whose index leads elsewhere, or disagrees with its shards.
func TestHostileFolders(t *testing.T) {
	shard := file(goodHeader, goodData())
	index := func(weightMap string) []byte { return []byte(`{"metadata":{},"weight_map":` + weightMap + `}`) }
	outside := t.TempDir()
	writeFiles(t, outside, map[string][]byte{"secret.safetensors": shard})

	tests := []struct {
		name  string
		files map[string][]byte
		link  [2]string // a symbolic link: name in the folder → target
		err   string
	}{
		{name: "dot-dot", files: map[string][]byte{IndexName: index(`{"a":"../x.safetensors","b":"../x.safetensors"}`)},
			err: `shard "../x.safetensors" is not a path inside the folder`},
		{name: "dot-dot inside", files: map[string][]byte{IndexName: index(`{"a":"sub/../../x.safetensors","b":"sub/../../x.safetensors"}`)},
			err: "is not a path inside the folder"},
		{name: "absolute", files: map[string][]byte{IndexName: index(`{"a":"` + filepath.Join(outside, "secret.safetensors") + `","b":"/etc/passwd"}`)},
			err: "is not a path inside the folder"},
		{name: "empty name", files: map[string][]byte{IndexName: index(`{"a":"","b":""}`)}, err: `shard "" is not a path`},
		{name: "symlink out", files: map[string][]byte{IndexName: index(`{"a":"s.safetensors","b":"s.safetensors"}`)},
			link: [2]string{"s.safetensors", filepath.Join(outside, "secret.safetensors")}, err: `shard "s.safetensors" leads outside the folder`},
		{name: "symlinked folder out", files: map[string][]byte{IndexName: index(`{"a":"sub/secret.safetensors","b":"sub/secret.safetensors"}`)},
			link: [2]string{"sub", outside}, err: "leads outside the folder"},
		{name: "missing shard", files: map[string][]byte{IndexName: index(`{"a":"x.safetensors","b":"x.safetensors"}`)},
			err: `shard "x.safetensors" does not exist`},
		{name: "tensor not in its shard", files: map[string][]byte{IndexName: index(`{"a":"x.safetensors","b":"x.safetensors","c":"x.safetensors"}`), "x.safetensors": shard},
			err: `places tensor "c" in shard "x.safetensors", which does not hold it`},
		{name: "tensor the index does not list", files: map[string][]byte{IndexName: index(`{"a":"x.safetensors"}`), "x.safetensors": shard},
			err: `shard "x.safetensors" holds tensor "b", which model.safetensors.index.json does not list`},
		{name: "tensor in another shard", files: map[string][]byte{IndexName: index(`{"a":"x.safetensors","b":"y.safetensors"}`), "x.safetensors": shard, "y.safetensors": shard},
			err: `shard "x.safetensors" holds tensor "b", which model.safetensors.index.json places in "y.safetensors"`},
		{name: "no weight_map", files: map[string][]byte{IndexName: []byte(`{"metadata":{}}`)}, err: "has no weight_map"},
		{name: "index not JSON", files: map[string][]byte{IndexName: []byte(`{"weight_map":`)}, err: "is not valid JSON"},
		{name: "index bad UTF-8", files: map[string][]byte{IndexName: []byte("{\"weight_map\":{\"a\":\"x\xff\"}}")}, err: "is not valid UTF-8"},
		{name: "weight_map of numbers", files: map[string][]byte{IndexName: index(`{"a":1}`)}, err: "cannot unmarshal number"},
		{name: "bad shard", files: map[string][]byte{IndexName: index(`{"a":"x.safetensors"}`), "x.safetensors": shard[:20]}, err: "x.safetensors: a header of"},
		{name: "no files", files: map[string][]byte{"README": []byte("hi")}, err: "holds no .safetensors file"},
		{name: "same tensor in two files", files: map[string][]byte{"x.safetensors": shard, "y.safetensors": shard}, err: `tensor "a" is in both`},
		{name: "two indexes", files: map[string][]byte{"a.safetensors.index.json": index(`{}`), "b.safetensors.index.json": index(`{}`)}, err: "several indexes"},
		{name: "config not an object", files: map[string][]byte{"x.safetensors": shard, "config.json": []byte(`[1]`)}, err: "config.json is not a JSON object"},
		{name: "config not JSON", files: map[string][]byte{"x.safetensors": shard, "config.json": []byte(`{`)}, err: "config.json is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tt.files)
			if tt.link[0] != "" {
				if err := os.Symlink(tt.link[1], filepath.Join(dir, tt.link[0])); err != nil {
					t.Skip("no symbolic links here:", err)
				}
			}
			c, err := Open(dir)
			if err == nil {
				c.Close()
				t.Fatalf("accepted, with %d tensors", len(c.Tensors()))
			}
			if !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "safetensors: ") {
				t.Errorf("error %q\ndoes not say %q", err, tt.err)
			}
		})
	}
}

// parseError is Parse's error.
func parseError(data []byte) error {
	_, err := Parse(data)
	return err
}
