package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDNNConv probes cuDNN (ProbeDNN), then runs convolutions of
// bfloat16 operands through it (padding, strides, dilations, groups,
// both layouts, the fused bias, addend and ReLU) and checks them against float64
// sums of the same operands: relative L2 ≤ 4e-3, the output's rounding to
// bfloat16 (2⁻⁸ relative at most).
func TestDNNConv(t *testing.T) {
	d := openOrSkip(t)
	if err := LoadDNN(); errors.Is(err, ErrUnavailable) {
		t.Skipf("no cuDNN here: %v", err)
	}
	if err := d.Do(ProbeDNN); err != nil {
		t.Fatalf("ProbeDNN: %v", err)
	}
	cases := []DNNConv{
		{N: 2, C: 8, H: 9, W: 7, K: 16, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1},
		{N: 3, C: 16, H: 14, W: 14, K: 32, R: 1, S: 1, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 1},
		{N: 1, C: 3, H: 23, W: 23, K: 8, R: 7, S: 7, PadH: 3, PadW: 3, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 1},
		{N: 2, C: 8, H: 10, W: 12, K: 8, R: 3, S: 3, PadH: 2, PadW: 2, StrideH: 1, StrideW: 1, DilH: 2, DilW: 2, Groups: 2},
		// Channels-last, as the backend runs convolutions between
		// channels-last activations.
		{N: 2, C: 16, H: 9, W: 7, K: 24, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 2, StrideW: 1, DilH: 1, DilW: 1, Groups: 1, NHWC: true},
		{N: 2, C: 8, H: 23, W: 21, K: 16, R: 7, S: 7, PadH: 3, PadW: 3, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 1, NHWC: true},
		{N: 3, C: 32, H: 6, W: 6, K: 8, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1, NHWC: true},
		// The fused epilogue: bias, an addend (Z set: one is made), ReLU.
		{N: 2, C: 16, H: 9, W: 7, K: 24, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1, NHWC: true,
			Fused: true, ReLU: true},
		{N: 3, C: 32, H: 6, W: 6, K: 16, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1, NHWC: true,
			Fused: true, ReLU: true, Z: 1},
		{N: 3, C: 32, H: 6, W: 6, K: 16, R: 1, S: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1, Groups: 1, NHWC: true,
			Fused: true, Z: 1},
		{N: 2, C: 8, H: 9, W: 7, K: 16, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1, Groups: 1,
			Fused: true, ReLU: true},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		c.T = R16BF
		c.OH = (c.H+2*c.PadH-c.DilH*(c.R-1)-1)/c.StrideH + 1
		c.OW = (c.W+2*c.PadW-c.DilW*(c.S-1)-1)/c.StrideW + 1
		cg := c.C / c.Groups
		x, w := make([]float32, c.N*c.C*c.H*c.W), make([]float32, c.K*cg*c.R*c.S)
		xb, wb := make([]byte, 2*len(x)), make([]byte, 2*len(w))
		for _, v := range []struct {
			f []float32
			b []byte
		}{{x, xb}, {w, wb}} {
			for i := range v.f {
				f, h := bf16(float32(r.NormFloat64()))
				v.f[i] = f
				v.b[2*i], v.b[2*i+1] = byte(h), byte(h>>8)
			}
		}
		yb := make([]byte, 2*c.N*c.K*c.OH*c.OW)
		// The epilogue's bias and addend, 16-bit values.
		bias, z := make([]float32, c.K), make([]float32, c.N*c.K*c.OH*c.OW)
		biasb, zb := make([]byte, 2*len(bias)), make([]byte, 2*len(z))
		for i := range bias {
			f, h := bf16(float32(r.NormFloat64()))
			bias[i] = f
			biasb[2*i], biasb[2*i+1] = byte(h), byte(h>>8)
		}
		addend := c.Z != 0
		for i := range z {
			if addend {
				f, h := bf16(float32(r.NormFloat64()))
				z[i] = f
				zb[2*i], zb[2*i+1] = byte(h), byte(h>>8)
			}
		}
		algo := int32(-1)
		err := withDNN(d, func(s Stream, h DNN) (err error) {
			const ws = 32 << 20
			var px, pw, py, pws, pb, pz Ptr
			for _, a := range []struct {
				p *Ptr
				b []byte
			}{{&px, xb}, {&pw, wb}, {&py, yb}, {&pb, biasb}, {&pz, zb}} {
				if *a.p, err = Alloc(int64(len(a.b))); err != nil {
					return err
				}
				defer Free(*a.p)
				if err := CopyToDevice(*a.p, a.b); err != nil {
					return err
				}
			}
			if pws, err = Alloc(ws); err != nil {
				return err
			}
			defer Free(pws)
			c.X, c.Wt, c.Y = px, pw, py
			if c.Fused {
				c.Bias = pb
				if addend {
					c.Z = pz
				}
			}
			p, err := h.Plan(&c, pws, ws)
			if err != nil {
				return err
			}
			defer p.Close()
			algo = p.Algorithm
			if err := p.Run(); err != nil {
				return err
			}
			if err := s.Synchronize(); err != nil {
				return err
			}
			return CopyFromDevice(yb, py)
		})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		var num, den float64
		kg := c.K / c.Groups
		// at is the offset of element (a, b, i, j) of an A×B×I×J tensor,
		// (a, i, j, b) channels-last.
		at := func(a, b, i, j, B, I, J int32) int32 {
			if c.NHWC {
				return ((a*I+i)*J+j)*B + b
			}
			return ((a*B+b)*I+i)*J + j
		}
		for n := range c.N {
			for k := range c.K {
				g := k / kg
				for oh := range c.OH {
					for ow := range c.OW {
						var sum float64
						for ci := range cg {
							for i := range c.R {
								for j := range c.S {
									ih, iw := oh*c.StrideH-c.PadH+i*c.DilH, ow*c.StrideW-c.PadW+j*c.DilW
									if ih < 0 || ih >= c.H || iw < 0 || iw >= c.W {
										continue
									}
									sum += float64(x[at(n, g*cg+ci, ih, iw, c.C, c.H, c.W)]) * float64(w[at(k, ci, i, j, cg, c.R, c.S)])
								}
							}
						}
						o := at(n, k, oh, ow, c.K, c.OH, c.OW)
						if c.Fused {
							sum += float64(bias[k]) + float64(z[o])
							if c.ReLU {
								sum = max(sum, 0)
							}
						}
						got := float64(math.Float32frombits(uint32(yb[2*o])<<16 | uint32(yb[2*o+1])<<24))
						num += (got - sum) * (got - sum)
						den += sum * sum
					}
				}
			}
		}
		rel := math.Sqrt(num / den)
		t.Logf("%d×%d×%d×%d → %d, %d×%d, NHWC %v, fused %v (ReLU %v, addend %v), algorithm %d: rel L2 %.3g",
			c.N, c.C, c.H, c.W, c.K, c.R, c.S, c.NHWC, c.Fused, c.ReLU, addend, algo, rel)
		if !(rel <= 4e-3) {
			t.Errorf("%+v: rel L2 %.3g > 4e-3", c, rel)
		}
	}
}

// BenchmarkDNNStem times a ResNet stem's convolution at batch 32 (7×7,
// stride 2, 224² → 112², 64 filters) in the layouts cuDNN could be handed
// it: NCHW with three channels, channels-last with the channels as they
// are or padded with zeros to 4, 8 or 16.
func BenchmarkDNNStem(b *testing.B) {
	for _, v := range []struct {
		name string
		c    int32
		nhwc bool
	}{{"nchw-3", 3, false}, {"nhwc-3", 3, true}, {"nhwc-4", 4, true}, {"nhwc-8", 8, true}, {"nhwc-16", 16, true}} {
		b.Run(v.name, func(b *testing.B) {
			benchDNN(b, DNNConv{N: 32, C: v.c, H: 224, W: 224, K: 64, R: 7, S: 7, PadH: 3, PadW: 3, StrideH: 2, StrideW: 2, DilH: 1, DilW: 1,
				Groups: 1, OH: 112, OW: 112, T: R16BF, NHWC: v.nhwc})
		})
	}
}

// BenchmarkDNNFused times a ResNet block's 3×3 convolution at batch 32
// (64 channels, 56², channels-last) alone and with the fused epilogue:
// bias and ReLU, and bias, addend and ReLU.
func BenchmarkDNNFused(b *testing.B) {
	c := DNNConv{N: 32, C: 64, H: 56, W: 56, K: 64, R: 3, S: 3, PadH: 1, PadW: 1, StrideH: 1, StrideW: 1, DilH: 1, DilW: 1,
		Groups: 1, OH: 56, OW: 56, T: R16BF, NHWC: true}
	b.Run("plain", func(b *testing.B) { benchDNN(b, c) })
	c.Fused, c.ReLU = true, true
	b.Run("bias-relu", func(b *testing.B) { benchDNN(b, c) })
	c.Z = 1
	b.Run("bias-addend-relu", func(b *testing.B) { benchDNN(b, c) })
}

// benchDNN times c (Z set: with an addend) on operands of zeros.
func benchDNN(b *testing.B, c DNNConv) {
	d := openOrSkip(b)
	if err := LoadDNN(); err != nil {
		b.Skipf("no cuDNN here: %v", err)
	}
	err := withDNN(d, func(s Stream, h DNN) (err error) {
		const ws = 256 << 20
		var px, pw, py, pws, pb, pz Ptr
		for _, a := range []struct {
			p *Ptr
			n int64
		}{{&px, 2 * int64(c.N*c.C*c.H*c.W)}, {&pw, 2 * int64(c.K*c.C*c.R*c.S)}, {&py, 2 * int64(c.N*c.K*c.OH*c.OW)}, {&pws, ws},
			{&pb, 4 * int64(c.K)}, {&pz, 2 * int64(c.N*c.K*c.OH*c.OW)}} {
			if *a.p, err = Alloc(a.n); err != nil {
				return err
			}
			defer Free(*a.p)
		}
		c.X, c.Wt, c.Y = px, pw, py
		if c.Fused {
			c.Bias = pb
			if c.Z != 0 {
				c.Z = pz
			}
		}
		p, err := h.Plan(&c, pws, ws)
		if err != nil {
			return err
		}
		defer p.Close()
		for range 3 {
			if err := p.Run(); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		// b.N runs, the timer stopped after the stream is done.
		b.ResetTimer()
		for range b.N {
			if err := p.Run(); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		b.StopTimer()
		b.ReportMetric(float64(p.Algorithm), "algorithm")
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// withDNN runs f on d's thread with a new stream and a cuDNN handle on
// it, destroyed after.
func withDNN(d *Device, f func(s Stream, h DNN) error) error {
	return d.Do(func() error {
		s, err := NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		h, err := NewDNN(s)
		if err != nil {
			return err
		}
		defer h.Destroy()
		return f(s, h)
	})
}
