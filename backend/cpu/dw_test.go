package cpu

import (
	"fmt"
	"testing"
)

// dwShapes are the depthwise layers of MobileNet-v2 and EfficientNet-B0
// that dominate their depthwise time.
var dwShapes = []struct {
	name               string
	c, h, k, stride, p int64
}{
	{"mbv2 f1 3x3 s1 32 112²", 32, 112, 3, 1, 1},
	{"mbv2 f2 3x3 s2 96 112²", 96, 112, 3, 2, 1},
	{"mbv2 f3 3x3 s1 144 56²", 144, 56, 3, 1, 1},
	{"mbv2 f4 3x3 s2 144 56²", 144, 56, 3, 2, 1},
	{"mbv2 f12 3x3 s1 576 14²", 576, 14, 3, 1, 1},
	{"mbv2 f15 3x3 s1 960 7²", 960, 7, 3, 1, 1},
	{"effb0 5x5 s2 144 56²", 144, 56, 5, 2, 2},
	{"effb0 5x5 s1 240 28²", 240, 28, 5, 1, 2},
	{"effb0 5x5 s1 672 14²", 672, 14, 5, 1, 2},
	{"effb0 5x5 s2 672 14²", 672, 14, 5, 2, 2},
	{"effb0 5x5 s1 1152 7²", 1152, 7, 5, 1, 2},
}

// TestDepthwiseBands checks dwBandPlane, the assembly path of 3×3 and 5×5
// depthwise filters with strides 1 and 2, against the reference loop: pads
// 0 to 3 (symmetric or not), odd and even sizes, planes from 1×1 to 112×112
// (several bands, the last one partial), mixed strides, channel multipliers
// 1 and 2, batches, with and without bias, on 1 to 3 threads, on the AVX2
// kernel and, where the machine has it, the AVX-512 one (with the
// row-vector kernels depthwiseRows3, depthwiseRows5, depthwiseSplit3 and
// depthwiseSplit5 on narrow planes). Rows wider than dwMaxPitch take the
// row-by-row path instead. It is skipped without the assembly kernel, where
// the Go code that TestDepthwiseFast covers runs instead.
func TestDepthwiseBands(t *testing.T) {
	if !dwAsm {
		t.Skip("no assembly depthwise kernel")
	}
	type geo struct {
		name string
		h, w int64
		k    int64
		s    [2]int64
		pads []int64
	}
	geos := []geo{
		{"3x3 s1 p1 7²", 7, 7, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1 p1 112²", 112, 112, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1 p0 odd", 15, 21, 3, [2]int64{1, 1}, ints64(0, 0, 0, 0)},
		{"3x3 s1 p2 even", 10, 16, 3, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"3x3 s2 p1 112²", 112, 112, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		// No bands (stride 3), but sixteen channels at a time with
		// AVX-512: without it, the Go loops, whatever scratch is there.
		{"3x3 s3 small plane", 9, 9, 3, [2]int64{3, 3}, ints64(1, 1, 1, 1)},
		{"3x3 s2 p1 odd", 13, 27, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		{"3x3 s2 p0 even", 14, 30, 3, [2]int64{2, 2}, ints64(0, 0, 0, 0)},
		{"3x3 s2 p2 7²", 7, 7, 3, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"3x3 s2 asymmetric", 14, 14, 3, [2]int64{2, 2}, ints64(0, 0, 1, 1)},
		{"3x3 s2,1", 12, 19, 3, [2]int64{2, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1,2", 11, 20, 3, [2]int64{1, 2}, ints64(1, 2, 1, 0)},
		{"5x5 s1 p2 7²", 7, 7, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1 p2 56²", 56, 56, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1 p2 27x30", 27, 30, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1 p0 odd", 11, 13, 5, [2]int64{1, 1}, ints64(0, 0, 0, 0)},
		{"5x5 s1 p1", 9, 12, 5, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"5x5 s2 p2 112²", 112, 112, 5, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"5x5 s2 p2 odd", 15, 29, 5, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"5x5 s2 p1 even", 14, 14, 5, [2]int64{2, 2}, ints64(1, 1, 2, 2)},
		{"5x5 s2 p3 small", 5, 6, 5, [2]int64{2, 2}, ints64(3, 3, 3, 3)},
		{"5x5 s2,1", 16, 18, 5, [2]int64{2, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1,2", 17, 33, 5, [2]int64{1, 2}, ints64(2, 1, 2, 2)},
		{"3x3 1×1 plane", 1, 1, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"5x5 trailing clip", 20, 22, 5, [2]int64{2, 2}, ints64(2, 2, 0, 0)},
		{"3x3 s2 wider than dwMaxPitch", 3, 2*dwMaxPitch + 40, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		// Row vectors: planes at most sixteen columns wide, one row or
		// several a vector.
		{"3x3 s1 p1 14²", 14, 14, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"5x5 s1 p2 14²", 14, 14, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"3x3 s1 p1 9x13", 9, 13, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1 p1 5x16", 5, 16, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"5x5 s1 p2 10x5", 10, 5, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1 p2 1x8", 1, 8, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"5x5 s1 p2 11x2", 11, 2, 5, [2]int64{1, 1}, ints64(2, 2, 2, 2)},
		{"3x3 s1 p1 5x70", 5, 70, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1 p1 2x81", 2, 81, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s2 p1 28²", 28, 28, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		{"3x3 s2 p1 9x32", 9, 32, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		{"3x3 s2 p1 6x5", 6, 5, 3, [2]int64{2, 2}, ints64(1, 1, 1, 1)},
		{"5x5 s2 p2 14²", 14, 14, 5, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"5x5 s2 p2 11x31", 11, 31, 5, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"5x5 s2 p2 3x2", 3, 2, 5, [2]int64{2, 2}, ints64(2, 2, 2, 2)},
		{"5x5 s2 p2,1 uneven", 12, 17, 5, [2]int64{2, 2}, ints64(2, 2, 1, 1)},
		{"3x3 s1 p1 4x3", 4, 3, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
		{"3x3 s1 wider than dwMaxPitch", 3, dwMaxPitch + 7, 3, [2]int64{1, 1}, ints64(1, 1, 1, 1)},
	}
	var cases []convCase
	for _, g := range geos {
		for _, v := range []struct {
			n, c, mult   int64
			bias, constW bool
		}{
			{1, 3, 1, true, true},
			{2, 2, 2, false, false},
			// Several groups of sixteen channels per worker (the
			// channel-blocked path's interleaved weights and its
			// padding zeroed once per worker), on small planes only.
			{1, 37, 1, false, true},
			{2, 40, 1, true, true},
			{1, 20, 1, true, false}, // weights interleaved at run time
		} {
			if v.c > 16 && g.h*g.w > 400 {
				continue
			}
			k := ints64(g.k, g.k)
			cases = append(cases, convCase{
				name: fmt.Sprintf("%s/n=%d mult=%d bias=%v", g.name, v.n, v.mult, v.bias),
				x:    ints64(v.n, v.c, g.h, g.w), m: v.c * v.mult, group: v.c,
				kern: k, strides: g.s[:], dil: ints64(1, 1), pads: g.pads,
				bias: v.bias, constW: v.constW,
			})
		}
	}
	testConvsWith(t, cases, &dw512, "avx512")
}

// TestDepthwiseBandsTaken checks that the shapes of dwShapes run through
// dwBandPlane where the assembly kernel exists, with a scratch area of a
// few rows per worker, or, narrow enough, as row vectors (depthwiseRows3,
// depthwiseRows5, depthwiseSplit3, depthwiseSplit5).
func TestDepthwiseBandsTaken(t *testing.T) {
	if !dwAsm {
		t.Skip("no assembly depthwise kernel")
	}
	for _, c := range dwShapes {
		g, n := convNode(1, c.c, c.h, c.h, c.c, c.k, c.stride, c.p, c.c, true)
		k, scratch, err := BuildFor(g, n, 2)
		if err != nil {
			t.Fatal(err)
		}
		ck, ok := k.(*convKernel)
		if !ok {
			t.Fatalf("%s: %T, not a convolution kernel", c.name, k)
		}
		// Planes at most sixteen columns wide of unit stride, 3×3
		// filters of stride 2 and padding 1 (and of stride 1 on planes
		// wider than depthwiseRowsWide3Min), and 5×5 ones of
		// stride 2 from at most thirty-two columns, run as row vectors
		// on AVX-512, with no scratch.
		narrow := c.stride == 1 && (c.h <= depthwiseChannelsLanes || c.k == 3 && c.p == 1 && c.h > depthwiseRowsWide3Min) || c.stride == 2 && (c.k == 3 && c.p == 1 || c.h <= 2*depthwiseChannelsLanes)
		if rows, got := dw512 && narrow, ck.rowVectors(); rows || got {
			if !rows || !got || scratch != 0 {
				t.Errorf("%s: row vectors %v (want %v), scratch %d bytes", c.name, got, rows, scratch)
			}
			continue
		}
		if ck.dwPer == 0 {
			t.Errorf("%s: depthwise bands not taken", c.name)
			continue
		}
		// At most 4 sub-arrays of a band of ~dwBandOut floats (plus
		// the filter's rows), and the band's output; or, for planes
		// small enough to run sixteen channels at a time, sixteen
		// interleaved padded input planes and output planes (rows at
		// most a padded input row apart).
		limit := int64(2*(5*dwBandOut+4*(c.h+8)*(c.k+8))) * 4
		if o, hp := (c.h+2*c.p-c.k)/c.stride+1, c.h+2*c.p; ck.depthwiseChannelsFits() {
			limit = max(limit, int64(2*depthwiseChannelsLanes*(hp*hp+o*hp+c.k*c.k+1+16))*4)
		}
		if scratch > limit {
			t.Errorf("%s: scratch %d bytes, want at most %d", c.name, scratch, limit)
		}
	}
}
