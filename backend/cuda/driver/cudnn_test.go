package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDNNConv probes cuDNN (ProbeDNN), then runs convolutions of
// bfloat16 operands through it
// (padding, strides, dilations, groups) and checks them against float64
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
		algo := int32(-1)
		err := d.Do(func() error {
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
			const ws = 32 << 20
			var px, pw, py, pws Ptr
			for _, a := range []struct {
				p *Ptr
				n int64
			}{{&px, int64(len(xb))}, {&pw, int64(len(wb))}, {&py, int64(len(yb))}, {&pws, ws}} {
				if *a.p, err = Alloc(a.n); err != nil {
					return err
				}
				defer Free(*a.p)
			}
			if err := CopyToDevice(px, xb); err != nil {
				return err
			}
			if err := CopyToDevice(pw, wb); err != nil {
				return err
			}
			c.X, c.Wt, c.Y = px, pw, py
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
									sum += float64(x[((n*c.C+g*cg+ci)*c.H+ih)*c.W+iw]) * float64(w[((k*cg+ci)*c.R+i)*c.S+j])
								}
							}
						}
						at := ((n*c.K+k)*c.OH+oh)*c.OW + ow
						got := float64(math.Float32frombits(uint32(yb[2*at])<<16 | uint32(yb[2*at+1])<<24))
						num += (got - sum) * (got - sum)
						den += sum * sum
					}
				}
			}
		}
		rel := math.Sqrt(num / den)
		t.Logf("%d×%d×%d×%d → %d, %d×%d, algorithm %d: rel L2 %.3g", c.N, c.C, c.H, c.W, c.K, c.R, c.S, algo, rel)
		if !(rel <= 4e-3) {
			t.Errorf("%+v: rel L2 %.3g > 4e-3", c, rel)
		}
	}
}
