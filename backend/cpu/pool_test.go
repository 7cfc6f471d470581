package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/berth-ml/berth/ir"
)

type poolCase struct {
	name             string
	x                []int64
	kern, strides    []int64
	dil              []int64 // nil: no attribute
	pads             []int64 // nil: none
	autoPad          string
	ceil, includePad bool
}

// poolOut is the output size, with PyTorch's rule for ceil mode.
func poolOut(in, k, s, d, pb, pe int64, ceil bool) int64 {
	num := in + pb + pe - ((k-1)*d + 1)
	o := num/s + 1
	if ceil && num%s != 0 {
		o++
		if (o-1)*s >= in+pb {
			o--
		}
	}
	return o
}

func TestPool(t *testing.T) {
	cases := []poolCase{
		{name: "2x2 s2", x: ints64(2, 3, 8, 8), kern: ints64(2, 2), strides: ints64(2, 2)},
		{name: "3x3 s2 p1", x: ints64(1, 4, 9, 10), kern: ints64(3, 3), strides: ints64(2, 2), pads: ints64(1, 1, 1, 1)},
		{name: "3x3 s2 p1 include pad", x: ints64(1, 4, 9, 10), kern: ints64(3, 3), strides: ints64(2, 2), pads: ints64(1, 1, 1, 1), includePad: true},
		{name: "ceil", x: ints64(1, 2, 7, 8), kern: ints64(3, 3), strides: ints64(2, 2), ceil: true},
		{name: "ceil pads include", x: ints64(1, 2, 10, 9), kern: ints64(3, 2), strides: ints64(3, 2), pads: ints64(1, 0, 1, 1), ceil: true, includePad: true},
		{name: "ceil pads exclude", x: ints64(1, 2, 10, 9), kern: ints64(3, 2), strides: ints64(3, 2), pads: ints64(1, 0, 1, 1), ceil: true},
		{name: "ceil drops last window", x: ints64(1, 2, 11, 9), kern: ints64(3, 2), strides: ints64(3, 2), pads: ints64(1, 0, 1, 1), ceil: true},
		{name: "ceil past pad include", x: ints64(1, 2, 8, 8), kern: ints64(3, 3), strides: ints64(2, 2), pads: ints64(1, 1, 1, 1), ceil: true, includePad: true},
		{name: "ceil past pad exclude", x: ints64(1, 2, 8, 8), kern: ints64(3, 3), strides: ints64(2, 2), pads: ints64(1, 1, 1, 1), ceil: true},
		{name: "asymmetric pads", x: ints64(1, 1, 6, 7), kern: ints64(2, 3), strides: ints64(1, 1), pads: ints64(0, 2, 1, 0)},
		{name: "SAME_UPPER", x: ints64(1, 2, 7, 7), kern: ints64(3, 3), strides: ints64(2, 2), autoPad: "SAME_UPPER"},
		{name: "SAME_LOWER", x: ints64(1, 2, 6, 7), kern: ints64(2, 2), strides: ints64(2, 2), autoPad: "SAME_LOWER", includePad: true},
		{name: "1-D", x: ints64(2, 3, 11), kern: ints64(3), strides: ints64(2), pads: ints64(1, 1)},
		{name: "3-D", x: ints64(1, 2, 5, 6, 5), kern: ints64(2, 3, 2), strides: ints64(2, 1, 2), pads: ints64(0, 1, 1, 1, 1, 0)},
		{name: "dilated", x: ints64(1, 2, 10, 10), kern: ints64(2, 3), strides: ints64(1, 2), dil: ints64(2, 2), pads: ints64(1, 1, 1, 1)},
		{name: "dilated ceil", x: ints64(1, 1, 9, 9), kern: ints64(2, 2), strides: ints64(2, 2), dil: ints64(2, 1), ceil: true},
		{name: "wide rows 3x3 s2 p1", x: ints64(1, 3, 20, 37), kern: ints64(3, 3), strides: ints64(2, 2), pads: ints64(1, 1, 1, 1)},
		{name: "wide rows 5x4 s1", x: ints64(1, 2, 9, 45), kern: ints64(5, 4), strides: ints64(1, 1), pads: ints64(0, 2, 1, 0)},
		{name: "kernel wider than the row", x: ints64(1, 2, 6, 3), kern: ints64(2, 5), strides: ints64(1, 1), pads: ints64(0, 2, 0, 2)},
	}
	for _, op := range []string{"MaxPool", "AveragePool"} {
		for _, c := range cases {
			if op == "AveragePool" && c.dil != nil {
				continue
			}
			t.Run(op+"/"+c.name, func(t *testing.T) { testPool(t, op, c) })
		}
	}
}

func testPool(t *testing.T, op string, c poolCase) {
	r := len(c.kern)
	dil := c.dil
	if dil == nil {
		dil = make([]int64, r)
		for i := range dil {
			dil[i] = 1
		}
	}
	pads := make([]int64, 2*r)
	copy(pads, c.pads)
	ys := ints64(c.x[0], c.x[1])
	for i := 0; i < r; i++ {
		in, k, s := c.x[2+i], c.kern[i], c.strides[i]
		switch c.autoPad {
		case "SAME_UPPER", "SAME_LOWER":
			o := (in + s - 1) / s
			total := max(0, (o-1)*s+(k-1)*dil[i]+1-in)
			pads[i], pads[r+i] = total/2, total-total/2
			if c.autoPad == "SAME_LOWER" {
				pads[i], pads[r+i] = pads[r+i], pads[i]
			}
		}
		ys = append(ys, poolOut(in, k, s, dil[i], pads[i], pads[r+i], c.ceil))
	}
	x := randF32(int(elems(c.x)))
	want := make([]float64, elems(ys))
	wantIdx := make([]int64, len(want))
	xst := strides(c.x)
	kvol := elems(c.kern)
	for o := range want {
		idx := unravel(int64(o), ys)
		best, arg, sum, cnt, padCnt := math.Inf(-1), int64(-1), 0.0, 0, 0
		for kk := int64(0); kk < kvol; kk++ {
			kidx := unravel(kk, c.kern)
			off := idx[0]*xst[0] + idx[1]*xst[1]
			inside, inPad := true, true
			for d := 0; d < r; d++ {
				p := idx[2+d]*c.strides[d] - pads[d] + kidx[d]*dil[d]
				if p < 0 || p >= c.x[2+d] {
					inside = false
				}
				if p >= c.x[2+d]+pads[r+d] {
					inPad = false
				}
				off += p * xst[2+d]
			}
			if inPad {
				padCnt++
			}
			if !inside {
				continue
			}
			v := float64(x[off])
			if v > best {
				best, arg = v, off
			}
			sum += v
			cnt++
		}
		if op == "MaxPool" {
			want[o], wantIdx[o] = best, arg
		} else if c.includePad {
			want[o] = sum / float64(padCnt)
		} else {
			want[o] = sum / float64(cnt)
		}
	}
	attrs := ir.Attrs{
		"kernel_shape": {Kind: ir.AttrInts, Ints: c.kern},
		"strides":      {Kind: ir.AttrInts, Ints: c.strides},
	}
	if c.ceil {
		attrs["ceil_mode"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
	}
	if c.includePad {
		attrs["count_include_pad"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
	}
	if c.dil != nil {
		attrs["dilations"] = ir.Attr{Kind: ir.AttrInts, Ints: c.dil}
	}
	if c.autoPad != "" {
		attrs["auto_pad"] = ir.Attr{Kind: ir.AttrString, String: c.autoPad}
	} else if c.pads != nil {
		attrs["pads"] = ir.Attr{Kind: ir.AttrInts, Ints: c.pads}
	}
	// MaxPool runs with and without its Indices output: without, float32
	// planes take the row-wise path (maxPlaneRows).
	for _, indices := range []bool{op == "MaxPool", false} {
		tg := newTGraph(12)
		outs := []out{{ir.Float32, ys}}
		if indices {
			outs = append(outs, out{ir.Int64, ys})
		}
		n := tg.node(op, attrs, []ir.TensorID{tg.input("x", ir.Float32, c.x...)}, outs...)
		for _, threads := range []int{1, 3} {
			got := exec(t, tg.g, n, threads, f32Bytes(x))
			near(t, "Y", asF32(got[0]), want, 1e-6, 1e-7)
			if indices {
				gi := asI64(got[1])
				for i := range gi {
					if gi[i] != wantIdx[i] {
						t.Fatalf("Indices[%d] = %d, want %d", i, gi[i], wantIdx[i])
					}
				}
			}
		}
		if op != "MaxPool" {
			break
		}
	}
}

func TestGlobalPool(t *testing.T) {
	// Planes of 25, 7, 1, 49 (many of them), 16 and 33 values (whole
	// steps of sixteen and tails), and 112².
	for _, shape := range [][]int64{{2, 3, 5, 5}, {1, 4, 7}, {2, 2, 1, 1}, {1, 1280, 7, 7}, {3, 5, 4, 4}, {1, 37, 3, 11}, {1, 3, 112, 112}} {
		for _, op := range []string{"GlobalAveragePool", "GlobalMaxPool"} {
			x := randF32(int(elems(shape)))
			ys := append([]int64(nil), shape...)
			for i := 2; i < len(ys); i++ {
				ys[i] = 1
			}
			sp := int(elems(shape[2:]))
			want := make([]float64, elems(ys))
			for p := range want {
				m, s := math.Inf(-1), 0.0
				for _, v := range x[p*sp : (p+1)*sp] {
					m = math.Max(m, float64(v))
					s += float64(v)
				}
				if op == "GlobalMaxPool" {
					want[p] = m
				} else {
					want[p] = s / float64(sp)
				}
			}
			tg := newTGraph(13)
			n := tg.node(op, nil, []ir.TensorID{tg.input("x", ir.Float32, shape...)}, out{ir.Float32, ys})
			near(t, fmt.Sprint(op, shape), asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0]), want, 1e-6, 1e-7)
		}
	}
}

// TestMaxInto wants maxInto to give the builtin max's bits for every pair
// of special and ordinary values (NaNs of several payloads, zeros of both
// signs, infinities) in every position of a vector and its tail.
func TestMaxInto(t *testing.T) {
	vals := []float32{
		float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002),
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		1, -1, 2.5, -3.25, math.SmallestNonzeroFloat32, -math.MaxFloat32,
	}
	var xs, ys []float32
	for _, a := range vals {
		for _, b := range vals {
			xs, ys = append(xs, a), append(ys, b)
		}
	}
	for _, n := range []int{0, 1, 7, 8, 9, 16, 23, len(xs)} {
		d := append([]float32(nil), xs[:n]...)
		maxInto(d, ys[:n])
		for i := range d {
			if want := max(xs[i], ys[i]); math.Float32bits(d[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d: max(%x, %x) = %x, want %x", n, math.Float32bits(xs[i]), math.Float32bits(ys[i]), math.Float32bits(d[i]), math.Float32bits(want))
			}
		}
	}
}

// TestMaxPool3s2 checks the AVX-512 3×3 stride-2 max pool (maxPool3s2)
// bit for bit against the builtin max taken as maxPlaneRows takes it
// (rows first, then columns, in order), on planes of NaNs of several
// payloads, zeros of both signs, infinities and ordinary values: odd and
// even sizes, rows of whole chunks only, of a chunk and a tail, of a tail
// only, and one value.
func TestMaxPool3s2(t *testing.T) {
	if !dw512 {
		t.Skip("the 3×3 stride-2 max pool kernel runs on AVX-512 only")
	}
	vals := []float32{
		float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00002),
		0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
	}
	for _, sh := range [][2]int64{{112, 112}, {9, 10}, {20, 37}, {56, 64}, {1, 1}, {2, 33}, {3, 31}, {7, 7}} {
		h, w := sh[0], sh[1]
		x := randF32(int(3 * h * w))
		for i := range x {
			if i%5 == 0 {
				x[i] = vals[(i/5)%len(vals)]
			}
		}
		oh, ow := (h+1)/2, (w+1)/2
		tg := newTGraph(13)
		n := tg.node("MaxPool", ir.Attrs{
			"kernel_shape": {Kind: ir.AttrInts, Ints: ints64(3, 3)},
			"strides":      {Kind: ir.AttrInts, Ints: ints64(2, 2)},
			"pads":         {Kind: ir.AttrInts, Ints: ints64(1, 1, 1, 1)},
		},
			[]ir.TensorID{tg.input("x", ir.Float32, 1, 3, h, w)}, out{ir.Float32, []int64{1, 3, oh, ow}})
		k, _, err := Build(tg.g, n)
		if err != nil {
			t.Fatal(err)
		}
		if !k.(*poolKernel).s2 {
			t.Fatalf("%dx%d: not built for maxPool3s2", h, w)
		}
		got := asF32(exec(t, tg.g, n, 2, f32Bytes(x))[0])
		for p := range 3 {
			xp := x[p*int(h*w):]
			for i := range int(oh) {
				for j := range int(ow) {
					var v [3]float32
					for c := range 3 {
						col := 2*j - 1 + c
						if col < 0 || col >= int(w) {
							continue
						}
						first := true
						for r := 2*i - 1; r <= 2*i+1; r++ {
							if r < 0 || r >= int(h) {
								continue
							}
							if a := xp[r*int(w)+col]; first {
								v[c], first = a, false
							} else {
								v[c] = max(v[c], a)
							}
						}
					}
					want := v[1]
					if j > 0 {
						want = max(v[0], v[1])
					}
					if 2*j+1 < int(w) {
						want = max(want, v[2])
					}
					if g := got[(p*int(oh)+i)*int(ow)+j]; math.Float32bits(g) != math.Float32bits(want) {
						t.Fatalf("%dx%d plane %d (%d,%d) = %x, want %x", h, w, p, i, j, math.Float32bits(g), math.Float32bits(want))
					}
				}
			}
		}
	}
}
