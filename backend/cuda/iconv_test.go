package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// iconvCase is one convolution for iconv: input N×C×H×W, OC outputs, a
// KH×KW window with strides, pads and dilations.
type iconvCase struct {
	n, c, h, w, oc, kh, kw, stride, pad, dil int64
	group                                    int64
	relu                                     bool  // a Relu reads the output (16 bits out under BF16)
	then                                     int64 // outputs of a 3×3 convolution after the Relu (which reads it in 16 bits), or 0
}

func (k iconvCase) String() string {
	return fmt.Sprintf("%dx%dx%dx%d→%d k%dx%d s%d p%d d%d g%d", k.n, k.c, k.h, k.w, k.oc, k.kh, k.kw, k.stride, k.pad, k.dil, k.group)
}

func iconvGraph(k iconvCase) *tg {
	g := newTG(17)
	x := g.input(ir.Float32, k.n, k.c, k.h, k.w)
	at := ir.Attrs{"strides": ints(k.stride, k.stride), "pads": ints(k.pad, k.pad, k.pad, k.pad), "dilations": ints(k.dil, k.dil)}
	if k.group != 1 {
		at["group"] = intv(k.group)
	}
	g.node("Conv", at, 1, x, g.constant(ir.Float32, k.oc, k.c/k.group, k.kh, k.kw), g.constant(ir.Float32, k.oc))
	if k.relu {
		g.node("Relu", nil, 1, g.g.Outputs[0])
	}
	if k.then > 0 {
		g.node("Conv", ir.Attrs{"pads": ints(1, 1, 1, 1)}, 1, g.g.Outputs[0], g.constant(ir.Float32, k.then, k.oc, 3, 3), g.constant(ir.Float32, k.then))
	}
	return g
}

var iconvCases = []iconvCase{
	{2, 5, 9, 11, 40, 3, 3, 1, 1, 1, 1, false, 0},    // K = 45: no whole 16-byte rows of weights
	{1, 3, 37, 37, 16, 7, 7, 2, 3, 1, 1, true, 0},    // a stem
	{2, 16, 7, 7, 136, 1, 1, 1, 0, 1, 1, true, 0},    // two blocks of output channels
	{3, 8, 12, 10, 24, 3, 3, 2, 2, 2, 1, false, 0},   // strides, dilations
	{4, 64, 14, 14, 128, 3, 3, 1, 1, 1, 1, true, 64}, // a ResNet block's shapes, the second reading 16 bits
	{2, 32, 28, 28, 64, 1, 1, 2, 0, 1, 1, false, 0},  // a strided 1×1 (downsampling)
}

// TestImplicitConvBuild: with implicitConv, a one-group convolution
// under 16 bits on the tensor cores is one iconv launch over the output's
// tiles; a grouped one, or one without the tensor cores, is not.
func TestImplicitConvBuild(t *testing.T) {
	old := implicitConv
	implicitConv = true
	defer func() { implicitConv = old }()
	for _, tc := range []struct {
		k    iconvCase
		mma  bool
		want bool
	}{
		{iconvCases[0], true, true},
		{iconvCases[4], true, true},
		{iconvCases[0], false, false},
		{iconvCase{2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 2, false, 0}, true, false},
	} {
		g := iconvGraph(tc.k)
		hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}, dry: true, mma: tc.mma}
		c, err := buildNodeWith(g.g, 0, 132, true, new([][]byte), hs, nil)
		if err != nil {
			t.Fatalf("%v: %v", tc.k, err)
		}
		got := len(c.launches) == 1 && strings.HasPrefix(c.launches[0].kernel, "iconv_")
		if got != tc.want {
			t.Errorf("%v mma=%v: iconv %v, want %v (%d launches)", tc.k, tc.mma, got, tc.want, len(c.launches))
			continue
		}
		if got {
			np := tc.k.n * ((tc.k.h+2*tc.k.pad-tc.k.dil*(tc.k.kh-1)-1)/tc.k.stride + 1) * ((tc.k.w+2*tc.k.pad-tc.k.dil*(tc.k.kw-1)-1)/tc.k.stride + 1)
			if l := c.launches[0]; int64(l.grid[0]) != ceilDiv(np, iconvTile) || int64(l.grid[1]) != ceilDiv(tc.k.oc, iconvTile) {
				t.Errorf("%v: grid %v for %d positions and %d channels", tc.k, l.grid, np, tc.k.oc)
			}
		}
	}
}

// TestImplicitConvMatchesCPU runs each case through iconv on the GPU, in
// both 16-bit precisions, against the CPU backend (within 1e-2 relative
// L2, as the other 16-bit GEMM operands).
func TestImplicitConvMatchesCPU(t *testing.T) {
	requireGPU(t)
	old := implicitConv
	implicitConv = true
	defer func() { implicitConv = old }()
	for _, k := range iconvCases {
		for _, prec := range []Precision{BF16, F16} {
			g := iconvGraph(k)
			want := evalGraph(t, g)
			exe, s := openSession(t, g.g, Options{Precision: prec})
			got := [][]byte{make([]byte, len(want[0]))}
			for i := range got[0] {
				got[0][i] = 0xFF
			}
			if err := s.Run(g.in, got); err != nil {
				t.Fatalf("%v %s: %v", k, prec, err)
			}
			if rel := relL2Bytes(got[0], want[0]); !(rel <= 1e-2) {
				t.Errorf("%v %s: rel L2 %.3g > 1e-2", k, prec, rel)
			}
			s.Close()
			exe.Close()
		}
	}
}
