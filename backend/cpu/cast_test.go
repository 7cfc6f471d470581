package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

var allTypes = []ir.DType{ir.Float32, ir.Float16, ir.BFloat16, ir.Float64,
	ir.Int8, ir.Int16, ir.Int32, ir.Int64, ir.Uint8, ir.Uint16, ir.Uint32, ir.Uint64, ir.Bool}

// encodeValue stores a float64 (exactly representable in dt, or truncated
// toward zero for integers) as dt.
func encodeValue(v float64, dt ir.DType) []byte {
	b := make([]byte, dt.Size())
	switch dt {
	case ir.Float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(float32(v)))
	case ir.Float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(v))
	case ir.Float16:
		binary.LittleEndian.PutUint16(b, dtype.F16FromF32(float32(v)))
	case ir.BFloat16:
		binary.LittleEndian.PutUint16(b, dtype.BF16FromF32(float32(v)))
	case ir.Bool:
		b[0] = b2u(v != 0)
	default:
		x := int64(math.Trunc(v))
		for i := range b {
			b[i] = byte(x >> (8 * i))
		}
	}
	return b
}

func TestCast(t *testing.T) {
	// Values exact in every float type (at most 8 significant bits) and in
	// range for every integer type.
	signedVals := []float64{0, 1, -1, 2.5, -2.75, 100, -128, 127, 0.5, -0.5, 3.75}
	unsignedVals := []float64{0, 1, 2.5, 100, 127, 0.5, 3.75, 255}
	for _, from := range allTypes {
		for _, to := range allTypes {
			vals := signedVals
			if from == ir.Bool || to == ir.Bool {
				vals = []float64{0, 1, 0, 1, 1}
			} else if !from.IsSigned() || !to.IsSigned() {
				vals = unsignedVals
			}
			if (from == ir.Int8 || to == ir.Int8) && !(from == ir.Bool || to == ir.Bool) {
				vals = []float64{0, 1, -1, 2.5, -2.75, 100, -128, 127}
				if !from.IsSigned() || !to.IsSigned() {
					vals = []float64{0, 1, 2.5, 100, 127}
				}
			}
			var in, want []byte
			for _, v := range vals {
				in = append(in, encodeValue(v, from)...)
				src := v
				if from.IsInt() {
					src = math.Trunc(v)
					if src == 0 {
						src = math.Copysign(0, 1) // an integer has no negative zero
					}
				}
				want = append(want, encodeValue(src, to)...)
			}
			tg := newTGraph(13)
			n := tg.node("Cast", ir.Attrs{"to": {Kind: ir.AttrInt, Int: 1}}, []ir.TensorID{tg.input("x", from, int64(len(vals)))}, out{to, []int64{int64(len(vals))}})
			got := exec(t, tg.g, n, 2, in)[0]
			if string(got) != string(want) {
				t.Errorf("Cast %s → %s: got %x, want %x", from, to, got, want)
			}
		}
	}
}

func TestCastRounding(t *testing.T) {
	// float32 → float16 / bfloat16 round to nearest even, through package dtype.
	x := randF32(5000)
	for i := range x {
		x[i] *= 70000
	}
	for _, to := range []ir.DType{ir.Float16, ir.BFloat16} {
		tg := newTGraph(13)
		n := tg.node("Cast", nil, []ir.TensorID{tg.input("x", ir.Float32, 5000)}, out{to, []int64{5000}})
		got := view[uint16](exec(t, tg.g, n, 3, f32Bytes(x))[0])
		for i, v := range x {
			want := dtype.F16FromF32(v)
			if to == ir.BFloat16 {
				want = dtype.BF16FromF32(v)
			}
			if got[i] != want {
				t.Fatalf("Cast %v → %s = %#x, want %#x", v, to, got[i], want)
			}
		}
	}
	// float → int truncates toward zero.
	tg := newTGraph(13)
	n := tg.node("Cast", nil, []ir.TensorID{tg.input("x", ir.Float32, 4)}, out{ir.Int32, []int64{4}})
	got := decodeInts(exec(t, tg.g, n, 1, f32Bytes([]float32{-2.9, 2.9, -0.5, 1e6 + 0.5}))[0], ir.Int32)
	if fmt.Sprint(got) != "[-2 2 0 1000000]" {
		t.Errorf("Cast float → int32 = %v", got)
	}
}
