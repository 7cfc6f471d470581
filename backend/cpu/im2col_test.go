package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// im2colGeom is a 2-D convolution geometry for the im2col tests.
type im2colGeom struct {
	c, h, w int // input channels and size
	kh, kw  int
	sh, sw  int  // strides
	dh, dw  int  // dilations
	pt, pl  int  // leading pads
	pb, pr  int  // trailing pads
	kc, nc  int  // k slice depth and widest column block
	oneD    bool // a 1-D convolution (h = 1)
}

// im2colKernel builds the convKernel fields that im2col reads for g, as
// buildConv sets them, and sizes the padded area; ok is false where the
// output is empty.
func im2colKernel(g im2colGeom) (k *convKernel, ok bool) {
	oh := (g.h+g.pt+g.pb-(g.kh-1)*g.dh-1)/g.sh + 1
	ow := (g.w+g.pl+g.pr-(g.kw-1)*g.dw-1)/g.sw + 1
	if g.h+g.pt+g.pb-(g.kh-1)*g.dh-1 < 0 || g.w+g.pl+g.pr-(g.kw-1)*g.dw-1 < 0 {
		return nil, false
	}
	k = &convKernel{c: g.c, cg: g.c, g: 1}
	k.in = [3]int{1, g.h, g.w}
	k.out = [3]int{1, oh, ow}
	k.kern = [3]int{1, g.kh, g.kw}
	k.stride = [3]int{1, g.sh, g.sw}
	k.dil = [3]int{1, g.dh, g.dw}
	k.pad = [3]int{0, g.pt, g.pl}
	k.inSp, k.outSp = g.h*g.w, oh*ow
	k.kvol = g.kh * g.kw
	k.kdim = g.c * k.kvol
	k.kc = min(g.kc, k.kdim)
	k.nc = min(g.nc, roundUp(k.outSp, gemmNR))
	k.per = roundUp(packedBSize(k.kc, k.nc), alignment/4)
	if n := k.im2colPadFloats(); n > 0 {
		k.padOff = roundUp(packedBSize(k.kc, k.nc)+gemmNR, alignment/4)
		k.per = k.padOff + roundUp(n, alignment/4)
	}
	return k, true
}

// TestIm2colPadded checks that im2colPadded writes the same packed blocks,
// bit for bit, as the general loops, over kernels of 1 to 7 taps a side,
// strides 1 and 2, dilations, asymmetric pads, odd and even sizes, output
// rows narrower and wider than a panel, channels up to 40, k slices that
// cut kernels, and column blocks that start mid-row or are narrower than
// a panel; with the AVX2 row copies and the Go ones.
func TestIm2colPadded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var geoms []im2colGeom
	// Fixed shapes of the networks, then random ones.
	geoms = append(geoms,
		im2colGeom{c: 64, h: 56, w: 56, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, kc: 192, nc: 256},
		im2colGeom{c: 40, h: 14, w: 14, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, kc: 256, nc: 256},
		im2colGeom{c: 3, h: 60, w: 60, kh: 7, kw: 7, sh: 2, sw: 2, dh: 1, dw: 1, pt: 3, pl: 3, pb: 3, pr: 3, kc: 147, nc: 256},
		im2colGeom{c: 16, h: 7, w: 7, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, kc: 144, nc: 64},
		im2colGeom{c: 8, h: 28, w: 28, kh: 1, kw: 1, sh: 2, sw: 2, dh: 1, dw: 1, kc: 8, nc: 256},
		im2colGeom{c: 5, h: 1, w: 60, kh: 1, kw: 5, sh: 1, sw: 1, dh: 1, dw: 1, pl: 2, pr: 2, kc: 25, nc: 64, oneD: true},
	)
	for range 400 {
		g := im2colGeom{
			c: 1 + rng.IntN(40), h: 1 + rng.IntN(60), w: 1 + rng.IntN(60),
			kh: 1 + rng.IntN(7), kw: 1 + rng.IntN(7),
			sh: 1 + rng.IntN(2), sw: 1 + rng.IntN(2), dh: 1, dw: 1,
			pt: rng.IntN(4), pl: rng.IntN(4), pb: rng.IntN(4), pr: rng.IntN(4),
			kc: 1 + rng.IntN(convKC), nc: gemmNR * (1 + rng.IntN(16)),
		}
		if rng.IntN(6) == 0 {
			g.dh, g.dw = 1+rng.IntN(3), 1+rng.IntN(3)
		}
		if rng.IntN(8) == 0 {
			g.h, g.kh, g.sh, g.dh, g.pt, g.pb, g.oneD = 1, 1, 1, 1, 0, 0, true
		}
		geoms = append(geoms, g)
	}
	saved := dwAsm
	defer func() { dwAsm = saved }()
	padded, cases := 0, 0
	for gi, g := range geoms {
		k, ok := im2colKernel(g)
		if !ok {
			continue
		}
		if k.padOff == 0 {
			continue
		}
		padded++
		x := make([]float32, k.c*k.inSp)
		for i := range x {
			x[i] = float32(i%97) + 0.25*float32(i/97) + 1
		}
		want := make([]float32, k.per)
		got := make([]float32, k.per)
		for tc := range 12 {
			dwAsm = saved && tc%2 == 0
			// A block: the first, the last, or one that starts anywhere.
			var j0, ncb, k0, kb int
			switch tc % 4 {
			case 0:
				j0, ncb = 0, min(k.nc, k.outSp)
			case 1:
				ncb = min(k.nc, k.outSp)
				j0 = k.outSp - ncb
			default:
				j0 = rng.IntN(k.outSp)
				ncb = 1 + rng.IntN(min(k.nc, k.outSp-j0))
			}
			switch tc % 3 {
			case 0:
				k0, kb = 0, k.kc
			case 1:
				kb = k.kc
				k0 = k.kdim - kb
			default:
				k0 = rng.IntN(k.kdim)
				kb = 1 + rng.IntN(min(k.kc, k.kdim-k0))
			}
			n := ceilDiv(ncb, gemmNR) * kb * gemmNR
			for i := range want {
				want[i] = float32(math.NaN())
				got[i] = float32(math.Inf(1))
			}
			k.im2colGeneral(want, x, j0, ncb, k0, kb)
			if !k.im2colPadded(got, x, j0, ncb, k0, kb) {
				t.Fatalf("geometry %d %+v: im2colPadded refused block j0=%d ncb=%d k0=%d kb=%d", gi, g, j0, ncb, k0, kb)
			}
			cases++
			for i := range n {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("geometry %d %+v, block j0=%d ncb=%d k0=%d kb=%d, asm=%v: float %d (panel %d, row %d, column %d) = %v, want %v",
						gi, g, j0, ncb, k0, kb, dwAsm, i, i/(kb*gemmNR), i%(kb*gemmNR)/gemmNR, i%gemmNR, got[i], want[i])
				}
			}
		}
	}
	if padded < len(geoms)/2 {
		t.Errorf("only %d of %d geometries take the padded path", padded, len(geoms))
	}
	t.Logf("%d geometries, %d padded, %d blocks compared", len(geoms), padded, cases)
}

// BenchmarkIm2col measures one block's im2col, general loops against the
// padded path (GB/s counts the packed floats written).
func BenchmarkIm2col(b *testing.B) {
	cases := []struct {
		name string
		g    im2colGeom
	}{
		{"3x3 64 56²", im2colGeom{c: 64, h: 56, w: 56, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, kc: 192, nc: 256}},
		{"3x3 256 14²", im2colGeom{c: 256, h: 14, w: 14, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, kc: 256, nc: 256}},
		{"7x7s2 3 224²", im2colGeom{c: 3, h: 224, w: 224, kh: 7, kw: 7, sh: 2, sw: 2, dh: 1, dw: 1, pt: 3, pl: 3, pb: 3, pr: 3, kc: 147, nc: 256}},
	}
	for _, c := range cases {
		k, _ := im2colKernel(c.g)
		x := make([]float32, k.c*k.inSp)
		buf := make([]float32, k.per)
		ncb := min(k.nc, k.outSp)
		j0 := min(k.outSp-ncb, 3*k.out[2]+5)
		for _, padded := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/padded=%v", c.name, padded), func(b *testing.B) {
				if padded && k.padOff == 0 {
					b.Skip("no padded area")
				}
				b.SetBytes(int64(4 * ncb * k.kc))
				for b.Loop() {
					if padded {
						k.im2colPadded(buf, x, j0, ncb, 0, k.kc)
					} else {
						k.im2colGeneral(buf, x, j0, ncb, 0, k.kc)
					}
				}
			})
		}
	}
}
