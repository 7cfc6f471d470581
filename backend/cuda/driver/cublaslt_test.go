package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// bf16 is v rounded to bfloat16 (nearest even) and its bits.
func bf16(v float32) (float32, uint16) {
	b := math.Float32bits(v)
	b += 0x7fff + (b>>16)&1
	h := uint16(b >> 16)
	return math.Float32frombits(uint32(h) << 16), h
}

// TestLtEpilogues runs products with a bias and a GELU or ReLU in the
// epilogue through cuBLASLt, float32 and bfloat16 operands, one and three
// in a batch, bfloat16 outputs (whose bias is bfloat16 too: cuBLASLt
// refuses a float32 one there), and an addend C apart from D, and checks them against float64 sums of the same
// (rounded) operands: relative L2 ≤ 1e-5 (float32 sums of exact
// products: the difference is the order of the sums), ≤ 1e-4 after a
// GELU, whose tanh the GPU may approximate, ≤ 4e-3 where D holds
// bfloat16 (its rounding: 2⁻⁸ relative at most).
func TestLtEpilogues(t *testing.T) {
	d := openOrSkip(t)
	if err := LoadLt(); errors.Is(err, ErrUnavailable) {
		t.Skipf("no cuBLASLt here: %v", err)
	}
	gelu := func(x float64) float64 { // the tanh form cuBLASLt computes
		return 0.5 * x * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)))
	}
	cases := []struct {
		name     string
		m, n, k  int64
		batch    int64
		ab       DataType
		epilogue Epilogue
		act      func(float64) float64
		cd       DataType // D's type (and C's)
		bias32   bool     // a float32 bias whatever cd is
		addend   bool     // C is a tensor of its own, beta = 1
	}{
		{"f32 bias", 96, 40, 64, 1, R32F, EpilogueBias, func(x float64) float64 { return x }, R32F, false, false},
		{"f32 gelu bias", 128, 33, 80, 1, R32F, EpilogueGeluBias, gelu, R32F, false, false},
		{"f32 relu bias batched", 64, 24, 48, 3, R32F, EpilogueReluBias, func(x float64) float64 { return math.Max(x, 0) }, R32F, false, false},
		{"bf16 bias", 256, 64, 128, 1, R16BF, EpilogueBias, func(x float64) float64 { return x }, R32F, false, false},
		{"bf16 gelu bias batched", 128, 48, 96, 3, R16BF, EpilogueGeluBias, gelu, R32F, false, false},
		{"bf16 to bf16", 256, 64, 128, 1, R16BF, EpilogueBias, func(x float64) float64 { return x }, R16BF, false, false},
		{"bf16 bias and addend", 192, 80, 64, 1, R16BF, EpilogueBias, func(x float64) float64 { return x }, R32F, true, true},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Column-major A (M×K), B (K×N), D (M×N), each batch after the
			// last; float32 values exactly representable in the operand type.
			size := int64(4)
			if c.ab == R16BF {
				size = 2
			}
			a, b := make([]float32, c.batch*c.m*c.k), make([]float32, c.batch*c.k*c.n)
			ab, bb := make([]byte, int64(len(a))*size), make([]byte, int64(len(b))*size)
			fill := func(v []float32, raw []byte) {
				for i := range v {
					x := float32(r.NormFloat64())
					if c.ab == R16BF {
						x2, h := bf16(x)
						v[i] = x2
						raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
					} else {
						v[i] = x
						*(*float32)(unsafe.Pointer(&raw[4*i])) = x
					}
				}
			}
			fill(a, ab)
			fill(b, bb)
			bias := make([]float32, c.m)
			for i := range bias {
				bias[i] = float32(r.NormFloat64())
			}
			addend := make([]float32, c.batch*c.m*c.n)
			if c.addend {
				for i := range addend {
					addend[i] = float32(r.NormFloat64())
				}
			}
			dsize := int64(4)
			if c.cd == R16BF {
				dsize = 2
			}
			raw := make([]byte, int64(len(addend))*dsize)
			err := d.Do(func() error {
				h, err := NewLt()
				if err != nil {
					return err
				}
				defer h.Destroy()
				s, err := NewStream()
				if err != nil {
					return err
				}
				defer s.Destroy()
				const ws = 32 << 20
				var pa, pb, pc, pd, pbias, pws Ptr
				for _, x := range []struct {
					p *Ptr
					n int64
				}{{&pa, int64(len(ab))}, {&pb, int64(len(bb))}, {&pc, int64(4 * len(addend))}, {&pd, int64(len(raw))}, {&pbias, int64(4 * len(bias))}, {&pws, ws}} {
					if *x.p, err = Alloc(x.n); err != nil {
						return err
					}
					defer Free(*x.p)
				}
				for _, x := range []struct {
					p   Ptr
					src []byte
				}{{pa, ab}, {pb, bb}, {pc, f32Bytes(addend)}, {pbias, f32Bytes(bias)}} {
					if err := CopyToDevice(x.p, x.src); err != nil {
						return err
					}
				}
				pbias16 := pbias
				if c.cd == R16BF && !c.bias32 { // the bias in D's type
					b16 := make([]byte, 2*len(bias))
					for i, v := range bias {
						x, h := bf16(v)
						bias[i] = x
						b16[2*i], b16[2*i+1] = byte(h), byte(h>>8)
					}
					if err := CopyToDevice(pbias16, b16); err != nil {
						return err
					}
				}
				g := &LtGemm{TransA: OpN, TransB: OpN, M: c.m, N: c.n, K: c.k, A: pa, B: pb, C: pd, D: pd, Bias: pbias16,
					LDA: c.m, LDB: c.k, LDC: c.m, StrideA: c.m * c.k, StrideB: c.k * c.n, StrideC: c.m * c.n, Batch: c.batch,
					AB: c.ab, CD: c.cd, Epilogue: c.epilogue, Bias32: c.bias32}
				beta := float32(0)
				if c.addend {
					g.C, beta = pc, 1
				}
				p, err := h.Plan(g, 1, beta, pws, ws, s)
				if err != nil {
					return err
				}
				defer p.Close()
				if err := p.Run(); err != nil {
					return err
				}
				if err := s.Synchronize(); err != nil {
					return err
				}
				return CopyFromDevice(raw, pd)
			})
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(addend))
			for i := range got {
				if dsize == 2 {
					got[i] = math.Float32frombits(uint32(raw[2*i])<<16 | uint32(raw[2*i+1])<<24)
				} else {
					got[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
				}
			}
			var num, den float64
			for q := range c.batch {
				for j := range c.n {
					for i := range c.m {
						sum := float64(bias[i]) + float64(addend[q*c.m*c.n+j*c.m+i])
						for l := range c.k {
							sum += float64(a[q*c.m*c.k+l*c.m+i]) * float64(b[q*c.k*c.n+j*c.k+l])
						}
						want := c.act(sum)
						g := float64(got[q*c.m*c.n+j*c.m+i])
						num += (g - want) * (g - want)
						den += want * want
					}
				}
			}
			rel := math.Sqrt(num / den)
			tol := 1e-5
			if c.epilogue == EpilogueGeluBias {
				tol = 1e-4
			}
			if c.cd == R16BF {
				tol = 4e-3
			}
			t.Logf("rel L2 %.3g", rel)
			if !(rel <= tol) {
				t.Errorf("rel L2 %.3g > %g", rel, tol)
			}
		})
	}
}

// f32Bytes is v's bytes in native order.
func f32Bytes(v []float32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)) }
