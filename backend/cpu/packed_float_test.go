package cpu

import (
	"encoding/binary"
	"fmt"
	"github.com/berth-ml/berth/backend/cpu/vmath"
	"math"
	"testing"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// TestPackedFloatProducts checks PackedMatMul of float weights against
// float64 sums of the weights as stored, both where each output is a
// dot product (few activation rows) and where the weights are widened a
// chunk at a time for the GEMM (many rows; n not a whole number of
// chunks). A float32 sum of k terms is within about k·2⁻²⁴ of the sum of
// their magnitudes; the bound allows k+4 such steps.
func TestPackedFloatProducts(t *testing.T) {
	for _, format := range []ggml.Type{ggml.F16, ggml.BF16, ggml.F32} {
		for _, sh := range [][3]int{{1, 96, 70}, {5, 64, 300}, {40, 96, 300}, {64, 32, 600}} {
			m, k, n := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", format, m, k, n), func(t *testing.T) {
				x, wv := randF32(m*k), randF32(n*k)
				var wb []byte
				for i, v := range wv {
					switch format {
					case ggml.F16:
						h := dtype.F16FromF32(v)
						wv[i] = dtype.F32FromF16(h)
						wb = binary.LittleEndian.AppendUint16(wb, h)
					case ggml.BF16:
						h := dtype.BF16FromF32(v)
						wv[i] = dtype.F32FromBF16(h)
						wb = binary.LittleEndian.AppendUint16(wb, h)
					default:
						wb = binary.LittleEndian.AppendUint32(wb, math.Float32bits(v))
					}
				}
				tg := newTGraph(17)
				xi := tg.input("x", ir.Float32, int64(m), int64(k))
				wi := tg.constant("w", ir.Uint8, wb, int64(len(wb)))
				attrs := ir.Attrs{"format": {Kind: ir.AttrString, String: format.String()}, "rows": {Kind: ir.AttrInt, Int: int64(n)}}
				node := tg.node("PackedMatMul", attrs, []ir.TensorID{xi, wi}, out{ir.Float32, []int64{int64(m), int64(n)}})
				node.Domain = ir.BerthDomain
				for _, threads := range []int{1, 2} {
					y := raw.F32(exec(t, tg.g, node, threads, raw.Bytes(x))[0])
					for i := range m {
						for j := range n {
							var want, mag float64
							for l := range k {
								p := float64(x[i*k+l]) * float64(wv[j*k+l])
								want += p
								mag += math.Abs(p)
							}
							if d := math.Abs(float64(y[i*n+j]) - want); d > float64(k+4)*0x1p-24*mag {
								t.Fatalf("threads %d: y[%d][%d] = %g, want %g (|d| %.3g, bound %.3g)", threads, i, j, y[i*n+j], want, d, float64(k+4)*0x1p-24*mag)
							}
						}
					}
				}
			})
		}
	}
}

// TestWidenF16 checks the F16C widening of float products against
// ggml.Dequantize on every f16 value: zeros, denormals, infinities and
// NaNs included, bit for bit.
func TestWidenF16(t *testing.T) {
	if !vmath.Asm {
		t.Skip("no assembly on this CPU or build")
	}
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	want := make([]float32, len(src))
	if err := ggml.Dequantize(ggml.F16, want, raw.Bytes(src)); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, len(src))
	widenF16AVX2(&got[0], &src[0], len(src))
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("f16 %#04x: %#08x, ggml %#08x", i, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
}
