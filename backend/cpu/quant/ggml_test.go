package quant

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/weights/ggml"
)

// vecdot is where scripts/gen_quant_fixtures.py writes what ggml's CPU
// backend (its AVX2 build) makes of one set of activations and weights.
var vecdot = filepath.Join("..", "..", "..", "testdata", "ggml", "vecdot")

type vecdotCase struct {
	Type           string `json:"type"`
	Weights        string `json:"weights"`
	Activations    string `json:"activations"`
	ActivationType string `json:"activation_type"`
	Y              string `json:"y"`
}

func readVecdot(t *testing.T) (m, k, n int, x []float32, cases []vecdotCase) {
	t.Helper()
	var man struct {
		M, K, N int
		X       string
		Cases   []vecdotCase
	}
	b, err := os.ReadFile(filepath.Join(vecdot, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatal(err)
	}
	return man.M, man.K, man.N, readF32s(t, man.X), man.Cases
}

func readBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vecdot, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readF32s(t *testing.T, name string) []float32 {
	b := readBytes(t, name)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// The activations are quantised exactly as ggml quantises them: the same
// values and scales (Q8_0 and Q8_1 as quantize_row_q8_0/q8_1 of ggml's
// AVX2 code, ties to even; Q8_K as quantize_row_q8_K) and the same sums.
func TestActivationsMatchGGML(t *testing.T) {
	m, k, _, x, _ := readVecdot(t)
	for _, tt := range []struct {
		name      string
		kind      kind
		blockSize int // of ggml's block
	}{
		{"q8_0", kindQ8_0, 34},
		{"q8_1", kindQ8_0, 36},
		{"q8_K", kindQ8_K, 292},
	} {
		ref := readBytes(t, tt.name+".act")
		a := make([]byte, actStride(tt.kind, k))
		bad := 0
		for i := range m {
			row := x[i*k : (i+1)*k]
			if tt.kind == kindQ8_K {
				quantizeQ8_K(a, row)
				q, d, sums := qkRow(a, k)
				for b := range k / 256 {
					blk := ref[(i*k/256+b)*292:][:292]
					if math.Float32bits(d[b]) != binary.LittleEndian.Uint32(blk) {
						t.Errorf("%s row %d block %d: d = %g, ggml %g", tt.name, i, b, d[b], math.Float32frombits(binary.LittleEndian.Uint32(blk)))
					}
					for j := range 256 {
						if q[256*b+j] != blk[4+j] && bad < 5 {
							bad++
							t.Errorf("%s row %d: q[%d] = %d (x = %g), ggml %d", tt.name, i, 256*b+j, int8(q[256*b+j]), row[256*b+j], int8(blk[4+j]))
						}
					}
					for g := range 8 {
						want := int16(binary.LittleEndian.Uint16(blk[260+4*g:])) + int16(binary.LittleEndian.Uint16(blk[262+4*g:]))
						if sums[8*b+g] != want {
							t.Errorf("%s row %d block %d: sum %d = %d, ggml %d", tt.name, i, b, g, sums[8*b+g], want)
						}
					}
				}
				continue
			}
			quantizeQ8_0(a, row, false)
			q, d, _ := q8Row(a, k)
			off := tt.blockSize - 32 // the values follow d (and s)
			for b := range k / 32 {
				blk := ref[(i*k/32+b)*tt.blockSize:][:tt.blockSize]
				if h := dtype.F16FromF32(d[b]); h != binary.LittleEndian.Uint16(blk) {
					t.Errorf("%s row %d block %d: d = %#04x, ggml %#04x", tt.name, i, b, h, binary.LittleEndian.Uint16(blk))
				}
				for j := range 32 {
					if q[32*b+j] != blk[off+j] && bad < 5 {
						bad++
						t.Errorf("%s row %d: q[%d] = %d (x = %g), ggml %d", tt.name, i, 32*b+j, int8(q[32*b+j]), row[32*b+j], int8(blk[off+j]))
					}
				}
			}
		}
	}
}

// The products are ggml's (vec_dot), up to float32 rounding: within 1e-5
// of the terms' magnitude where the activations are the same; ggml keeps
// Q8_1's block sums as f16 and rounds x to f16 or bf16 for F16 and BF16
// weights, which berth does not, so those are further apart.
func TestMatMulMatchesGGML(t *testing.T) {
	m, k, n, x, cases := readVecdot(t)
	tols := map[string]float64{"q8_0": 1e-5, "q8_K": 1e-5, "q8_1": 1e-3, "f16": 1e-3, "bf16": 4e-3}
	for _, c := range cases {
		typ, err := ggml.ParseType(c.Type)
		if err != nil {
			t.Fatal(err)
		}
		w := readBytes(t, c.Weights)
		want := readF32s(t, c.Y)
		ref, mag := reference(t, typ, dequantizedX(typ, x, m, k), m, k, w, n)
		worst := 0.0
		for _, path := range Paths(typ) {
			y := run(t, typ, path, x, m, k, w, n)
			for i := range y {
				e := math.Abs(float64(y[i]-want[i])) / mag[i]
				worst = max(worst, e)
				if e > tols[c.ActivationType] {
					t.Errorf("%s %s: y[%d] = %g, ggml %g (float64 reference %g)", typ, path, i, y[i], want[i], ref[i])
				}
			}
		}
		t.Logf("%-5s (%s): largest difference from ggml %.2g of the terms' magnitude", typ, c.ActivationType, worst)
	}
}
