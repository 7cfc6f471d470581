package cuda

import (
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/ir"
)

// TestDNNConvBuild (no GPU needed): where cuDNN is installed, under BF16,
// a convolution whose output a Relu reads (held in bfloat16, its bias
// left to the Relu) is one cuDNN launch reading 16-bit x and w and writing
// 16-bit y, its geometry as the node's; one whose output is the graph's
// (float32, its own bias) keeps the GEMM path, and so does one under F16
// (no bfloat16 outputs there) or without cuDNN. The convolutions on cuDNN
// write channels-last (their readers are generated kernels): the graph's
// input is laid out so in the scratch first, its channels padded to a
// multiple of 8, unless channels-last activations are turned off.
func TestDNNConvBuild(t *testing.T) {
	defer func(on bool) { nhwcOn = on }(nhwcOn)
	for _, tc := range []struct {
		name       string
		k          iconvCase
		prec       Precision
		dnn, nhwc  bool
		want       bool
		channelsIn int64 // the convolution's C
	}{
		{"3×3, relu", iconvCases[4], BF16, true, true, true, 64},
		{"stem, relu", iconvCases[1], BF16, true, true, true, 16},
		{"stem, relu, NCHW", iconvCases[1], BF16, true, false, true, 3},
		{"strided 1×1, graph output", iconvCases[5], BF16, true, true, false, 0},
		{"3×3, relu, f16", iconvCases[4], F16, true, true, false, 0},
		{"3×3, relu, no cuDNN", iconvCases[4], BF16, false, true, false, 0},
	} {
		nhwcOn = tc.nhwc
		g := iconvGraph(tc.k).g
		hs := &halves{prec: tc.prec, shadow: map[ir.TensorID]int{}, dry: true, mma: true, dnn: tc.dnn}
		fz := analyzeFusion(g, true, hs, acceptsHalf(g, 132, hs))
		hs.stored = fz.half
		c, err := buildNodeWith(g, 0, 132, true, new([][]byte), hs, fz)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var conv *driver.DNNConv
		var args []arg
		for _, l := range c.launches {
			if l.dnn != nil {
				conv, args = l.dnn, l.args
			}
		}
		if (conv != nil) != tc.want {
			t.Errorf("%s: cuDNN %v, want %v (%d launches)", tc.name, conv != nil, tc.want, len(c.launches))
			continue
		}
		if conv == nil {
			continue
		}
		k := tc.k
		oh := (k.h+2*k.pad-k.dil*(k.kh-1)-1)/k.stride + 1
		want := driver.DNNConv{N: int32(k.n), C: int32(k.c), H: int32(k.h), W: int32(k.w), K: int32(k.oc), R: int32(k.kh), S: int32(k.kw),
			PadH: int32(k.pad), PadW: int32(k.pad), StrideH: int32(k.stride), StrideW: int32(k.stride), DilH: int32(k.dil), DilW: int32(k.dil),
			Groups: int32(k.group), OH: int32(oh), OW: int32((k.w+2*k.pad-k.dil*(k.kw-1)-1)/k.stride + 1), T: driver.R16BF}
		want.C, want.NHWC = int32(tc.channelsIn), tc.nhwc
		if *conv != want {
			t.Errorf("%s: %+v, want %+v", tc.name, *conv, want)
		}
		if len(args) != 3 || !args[2].half || args[1].kind != argExtra {
			t.Errorf("%s: arguments %+v, want x, the weights' 16-bit copy and a 16-bit y", tc.name, args)
		}
		if tc.nhwc && (len(c.launches) != 2 || !strings.HasPrefix(c.launches[0].kernel, "to_nhwc") || args[0].kind != argScratch ||
			c.scratch != 2*k.n*k.h*k.w*tc.channelsIn) {
			t.Errorf("%s: %d launches, x %+v, scratch %d: want to_nhwc into the scratch first", tc.name, len(c.launches), args[0], c.scratch)
		}
	}
}
