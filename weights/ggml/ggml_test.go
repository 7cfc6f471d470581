package ggml

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtures is where scripts/gen_ggml_fixtures.py writes ggml's own output.
var fixtures = filepath.Join("..", "..", "testdata", "ggml")

func readJSON(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// The table must be ggml's: every type ggml knows, with its name and sizes.
func TestTypesMatchGGML(t *testing.T) {
	var ref struct {
		Types []struct {
			ID        uint32 `json:"id"`
			Name      string `json:"name"`
			BlockSize int64  `json:"block_size"`
			TypeSize  int64  `json:"type_size"`
		} `json:"types"`
	}
	readJSON(t, "types.json", &ref)
	seen := map[Type]bool{}
	for _, r := range ref.Types {
		typ := Type(r.ID)
		seen[typ] = true
		if !typ.Valid() || typ.String() != r.Name || typ.BlockSize() != r.BlockSize || typ.TypeSize() != r.TypeSize {
			t.Errorf("type %d: have %q %d/%d, ggml has %q %d/%d", r.ID, typ, typ.BlockSize(), typ.TypeSize(), r.Name, r.BlockSize, r.TypeSize)
		}
	}
	for typ := range TypeCount + 3 {
		if typ.Valid() && !seen[typ] {
			t.Errorf("type %d (%s) is not one of ggml's", typ, typ)
		}
	}
}

func TestTypeProperties(t *testing.T) {
	tests := []struct {
		typ            Type
		name           string
		valid, dequant bool
	}{
		{F32, "f32", true, true},
		{F16, "f16", true, true},
		{BF16, "bf16", true, true},
		{Q4_K, "q4_K", true, true},
		{Q8_K, "q8_K", true, true},
		{Q2_K, "q2_K", true, false},
		{IQ4_XS, "iq4_xs", true, false},
		{I32, "i32", true, false},
		{4, "type(4)", false, false},
		{33, "type(33)", false, false},
		{TypeCount, "type(43)", false, false},
		{1 << 31, "type(2147483648)", false, false},
	}
	for _, tt := range tests {
		if tt.typ.String() != tt.name || tt.typ.Valid() != tt.valid || tt.typ.CanDequantize() != tt.dequant {
			t.Errorf("%d: String %q Valid %v CanDequantize %v, want %q %v %v", uint32(tt.typ), tt.typ, tt.typ.Valid(), tt.typ.CanDequantize(), tt.name, tt.valid, tt.dequant)
		}
		if tt.valid {
			if got, err := ParseType(tt.name); err != nil || got != tt.typ {
				t.Errorf("ParseType(%q) = %v, %v", tt.name, got, err)
			}
		} else if tt.typ.BlockSize() != 0 || tt.typ.TypeSize() != 0 {
			t.Errorf("%s has sizes", tt.typ)
		}
	}
	if _, err := ParseType("q4_k"); err == nil {
		t.Error("ParseType accepts a name in the wrong case")
	}
}

func TestRowSize(t *testing.T) {
	tests := []struct {
		typ  Type
		n    int64
		want int64
		err  string
	}{
		{F32, 0, 0, ""},
		{F32, 7, 28, ""},
		{BF16, 3, 6, ""},
		{Q4_0, 64, 36, ""},
		{Q4_K, 512, 288, ""},
		{Q6_K, 256, 210, ""},
		{Q4_0, 33, 0, "not whole blocks"},
		{Q4_K, -256, 0, "not whole blocks"},
		{Q8_0, 1<<63 - 32, 0, "overflow"},
		{Q8_0, 1 << 62, 1 << 57 * 34, ""},
		{F64, 1 << 61, 0, "overflow"},
		{F64, 1<<60 - 1, 8 * (1<<60 - 1), ""},
		{5, 1, 0, "unknown type id 5"},
	}
	for _, tt := range tests {
		got, err := tt.typ.RowSize(tt.n)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s.RowSize(%d) = %d, %v; want an error with %q", tt.typ, tt.n, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s.RowSize(%d) = %d, %v; want %d", tt.typ, tt.n, got, err, tt.want)
		}
	}
}

// Every case of the manifest: the bytes ggml quantised (or random blocks)
// and ggml's own float32 for them, compared bit for bit, whole and from
// every block boundary on.
func TestDequantizeMatchesGGML(t *testing.T) {
	var m struct {
		Cases []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			TypeID   uint32 `json:"type_id"`
			Elements int    `json:"elements"`
			Data     string `json:"data"`
			Expected string `json:"expected"`
		} `json:"cases"`
	}
	readJSON(t, "manifest.json", &m)
	covered := map[Type]bool{}
	for _, c := range m.Cases {
		t.Run(c.Name, func(t *testing.T) {
			typ, err := ParseType(c.Type)
			if err != nil || typ != Type(c.TypeID) {
				t.Fatalf("type %q (%d): %v", c.Type, c.TypeID, err)
			}
			covered[typ] = true
			src, err := os.ReadFile(filepath.Join(fixtures, c.Data))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(filepath.Join(fixtures, c.Expected))
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) != 4*c.Elements {
				t.Fatalf("%s holds %d bytes, want %d", c.Expected, len(raw), 4*c.Elements)
			}
			want := make([]uint32, c.Elements)
			for i := range want {
				want[i] = binary.LittleEndian.Uint32(raw[4*i:])
			}
			got := make([]float32, c.Elements)
			if err := Dequantize(typ, got, src); err != nil {
				t.Fatal(err)
			}
			compare(t, got, want, 0)
			// From a block boundary on, a few blocks.
			blk := int(typ.BlockSize())
			for first := 0; first < c.Elements; first += blk * 3 {
				n := min(2*blk, c.Elements-first)
				off, err := typ.RowSize(int64(first))
				if err != nil {
					t.Fatal(err)
				}
				part := make([]float32, n)
				if err := Dequantize(typ, part, src[off:]); err != nil {
					t.Fatal(err)
				}
				compare(t, part, want[first:first+n], first)
			}
		})
	}
	for typ := range TypeCount {
		if typ.CanDequantize() && !covered[typ] {
			t.Errorf("no fixture for %s", typ)
		}
	}
}

func compare(t *testing.T, got []float32, want []uint32, first int) {
	t.Helper()
	bad := 0
	for i, g := range got {
		if math.Float32bits(g) != want[i] {
			if bad < 5 {
				t.Errorf("element %d: %#08x (%g), ggml has %#08x (%g)", first+i, math.Float32bits(g), g, want[i], math.Float32frombits(want[i]))
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements differ", bad, len(got))
	}
}

func TestDequantizeErrors(t *testing.T) {
	tests := []struct {
		name string
		typ  Type
		n    int
		src  int
		err  string
	}{
		{"not whole blocks", Q4_0, 31, 100, "not whole blocks"},
		{"short source", Q4_K, 512, 287, "need 288 bytes, have 287"},
		{"short f16", F16, 3, 5, "need 6 bytes"},
		{"no dequantizer", Q2_K, 256, 84, "cannot dequantize q2_K"},
		{"unknown type", 99, 1, 100, "cannot dequantize type(99)"},
	}
	for _, tt := range tests {
		err := Dequantize(tt.typ, make([]float32, tt.n), make([]byte, tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.err)
		}
	}
	for typ := range TypeCount {
		if typ.CanDequantize() {
			if err := Dequantize(typ, nil, nil); err != nil {
				t.Errorf("%s: nothing to convert: %v", typ, err)
			}
		}
	}
}

func TestDequantizeDoesNotAllocate(t *testing.T) {
	for typ := range TypeCount {
		if !typ.CanDequantize() {
			continue
		}
		dst := make([]float32, 1024)
		n, _ := typ.RowSize(1024)
		src := make([]byte, n)
		if a := testing.AllocsPerRun(10, func() { _ = Dequantize(typ, dst, src) }); a != 0 {
			t.Errorf("%s: %v allocations per call", typ, a)
		}
	}
}

func BenchmarkDequantize(b *testing.B) {
	for _, typ := range []Type{F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K, Q6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			const n = 1 << 16
			dst := make([]float32, n)
			size, _ := typ.RowSize(n)
			src := make([]byte, size)
			b.SetBytes(4 * n)
			for b.Loop() {
				_ = Dequantize(typ, dst, src)
			}
		})
	}
}
