package cpu

import "testing"

// TestFusePairTakes checks which kernel pairs fusePair runs together: an
// expansion onto planes of at least 56² and the depthwise convolution on
// its output, not smaller planes, other channel counts, other
// convolutions or an epilogue that reads another activation. The pair's
// results are checked in the berth package (TestPairs): the same bits
// as the two kernels' own.
func TestFusePairTakes(t *testing.T) {
	build := func(c convCase) Kernel {
		cg := buildConvCase(c, randF32)
		k, _, err := BuildFor(cg.tg.g, cg.n, 2)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	pointwise := func(c, m, h int) Kernel { return build(squareConv(1, c, m, h, h, 1, 1, 0)) }
	depthwise := func(c, h, k, stride int) Kernel {
		cc := squareConv(1, c, c, h, h, k, stride, k/2)
		cc.group = int64(c)
		return build(cc)
	}
	residual := func() Kernel {
		cg := buildConvCase(squareConv(1, 16, 96, 56, 56, 1, 1, 0), randF32)
		k, _, err := BuildFor(cg.tg.g, cg.n, 2)
		if err != nil {
			t.Fatal(err)
		}
		return fuseResidualRelu(t, cg, k, 2)
	}
	cases := []struct {
		name   string
		pw, dw Kernel
		want   bool
	}{
		{"56² 3×3", pointwise(16, 96, 56), depthwise(96, 56, 3, 1), true},
		{"112² 3×3 s2", pointwise(16, 96, 112), depthwise(96, 112, 3, 2), true},
		{"56² 5×5 s2", pointwise(24, 144, 56), depthwise(144, 56, 5, 2), true},
		{"28²", pointwise(32, 192, 28), depthwise(192, 28, 3, 1), false},
		{"channels not a multiple of twelve", pointwise(16, 100, 56), depthwise(100, 56, 3, 1), false},
		{"other channels", pointwise(16, 96, 56), depthwise(48, 56, 3, 1), false},
		{"3×3 first", build(squareConv(1, 16, 96, 58, 58, 3, 1, 0)), depthwise(96, 56, 3, 1), false},
		{"dense second", pointwise(16, 96, 56), build(squareConv(1, 96, 96, 56, 56, 3, 1, 1)), false},
		{"residual", residual(), depthwise(96, 56, 3, 1), false},
	}
	for _, c := range cases {
		_, bytes, ok := fusePair(c.pw, c.dw, 3, 1, 1<<20, 1<<20, 2)
		if ok != c.want {
			t.Errorf("%s: fusePair %v, want %v", c.name, ok, c.want)
		}
		if ok && bytes < 2<<20 {
			t.Errorf("%s: %d bytes of scratch, want both kernels' 2 MiB at least", c.name, bytes)
		}
	}
}

// TestPairGroups checks the channel groups of pairs: twelve-channel
// pairs of panels whose planes stay within pairGroupBytes, a multiple of
// the threads where one is near.
func TestPairGroups(t *testing.T) {
	cases := []struct{ pairs, sp, threads, want int }{
		{8, 112 * 112, 2, 8},  // 96 channels at 112²: a pair of panels a group
		{12, 56 * 56, 2, 4},   // 144 at 56²: 36 channels a group, two groups each
		{8, 56 * 56, 2, 2},    // 96 at 56²: 48 channels a group
		{12, 56 * 56, 3, 3},   // three threads: one group of 48 each
		{20, 56 * 56, 2, 10},  // 240 at 56²: 24 channels a group
		{1, 224 * 224, 2, 1},  // one pair, larger than the bound
		{8, 112 * 112, 16, 8}, // fewer groups than threads
	}
	for _, c := range cases {
		if got := pairGroups(c.pairs, c.sp, c.threads); got != c.want {
			t.Errorf("pairGroups(%d, %d, %d) = %d, want %d", c.pairs, c.sp, c.threads, got, c.want)
		}
	}
}
