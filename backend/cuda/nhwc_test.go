package cuda

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

// resnetGraph is a ResNet's shape in small: a stem (7×7, stride 2, three
// channels), a MaxPool, a bottleneck with its downsampling convolution, a
// GlobalAveragePool, Flatten and a classifier.
func resnetGraph(n, hw int64) *tg {
	g := newTG(17)
	x := g.input(ir.Float32, n, 3, hw, hw)
	conv := func(in ir.TensorID, oc, ic, k, stride int64) ir.TensorID {
		at := ir.Attrs{"strides": ints(stride, stride), "pads": ints(k/2, k/2, k/2, k/2)}
		g.node("Conv", at, 1, in, g.constant(ir.Float32, oc, ic, k, k), g.constant(ir.Float32, oc))
		return g.g.Outputs[0]
	}
	g.node("Relu", nil, 1, conv(x, 16, 3, 7, 2))
	g.node("MaxPool", ir.Attrs{"kernel_shape": ints(3, 3), "strides": ints(2, 2), "pads": ints(1, 1, 1, 1)}, 1, g.g.Outputs[0])
	p := g.g.Outputs[0]
	g.node("Relu", nil, 1, conv(p, 16, 16, 1, 1))
	g.node("Relu", nil, 1, conv(g.g.Outputs[0], 16, 16, 3, 1))
	y := conv(g.g.Outputs[0], 32, 16, 1, 1)
	down := conv(p, 32, 16, 1, 1)
	g.node("Add", nil, 1, y, down)
	g.node("Relu", nil, 1, g.g.Outputs[0])
	g.node("GlobalAveragePool", nil, 1, g.g.Outputs[0])
	g.node("Flatten", nil, 1, g.g.Outputs[0])
	g.node("Gemm", ir.Attrs{"transB": intv(1)}, 1, g.g.Outputs[0], g.constant(ir.Float32, 10, 32), g.constant(ir.Float32, 10))
	return g
}

// TestDecideNHWC (no GPU needed): under BF16 with convolutions on cuDNN,
// every four-axis activation between the stem and the pooling at the end
// that a kernel writes is held channels-last, the image and the pooled
// N×C×1×1 tensor are not;
// without cuDNN, under FP32, or turned off, none is.
func TestDecideNHWC(t *testing.T) {
	defer func(on bool) { nhwcOn = on }(nhwcOn)
	for _, tc := range []struct {
		name string
		prec Precision
		dnn  bool
		on   bool
		want bool
	}{
		{"bf16, cuDNN", BF16, true, true, true},
		{"bf16, turned off", BF16, true, false, false},
		{"bf16, no cuDNN", BF16, false, true, false},
	} {
		nhwcOn = tc.on
		g := resnetGraph(2, 32).g
		hs := &halves{prec: tc.prec, shadow: map[ir.TensorID]int{}, dry: true, mma: true, dnn: tc.dnn}
		fz := analyzeFusion(g, true, hs, acceptsHalf(g, 132, hs))
		var want []ir.TensorID
		for i, n := range g.Nodes {
			if n.Op == "GlobalAveragePool" {
				break
			}
			// The Add's output lies inside its group with the Relu.
			if tc.want && n.Op != "Add" {
				want = append(want, g.Nodes[i].Outputs[0])
			}
		}
		var got []ir.TensorID
		for id := range fz.nhwc {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: channels-last %v, want %v", tc.name, got, want)
		}
		// Every node builds; the convolutions run on cuDNN,
		// channels-last where their output is.
		hs.stored = fz.half
		for i, n := range g.Nodes {
			c, err := buildNodeWith(g, i, 132, true, new([][]byte), hs, fz)
			if err != nil {
				t.Fatalf("%s: node %d (%s): %v", tc.name, i, n.Op, err)
			}
			for _, l := range c.launches {
				if l.dnn != nil && l.dnn.NHWC != fz.nhwc[n.Outputs[0]] {
					t.Errorf("%s: node %d: NHWC %v, output channels-last %v", tc.name, i, l.dnn.NHWC, fz.nhwc[n.Outputs[0]])
				}
			}
		}
	}
}

// TestReadSpace checks the offsets a generated kernel computes from
// readSpace against a naive walk: for every element of the output in the
// order it is stored, the input's element at the same logical index (or
// its broadcast), each of the two layouts.
func TestReadSpace(t *testing.T) {
	g := newTG(17)
	shape := []int64{2, 5, 3, 4}
	y := g.input(ir.Float32, shape...)
	for _, xs := range [][]int64{{2, 5, 3, 4}, {5, 1, 1}, {1, 5, 3, 4}, {2, 1, 3, 1}, {}} {
		x := g.input(ir.Float32, xs...)
		for _, layouts := range [][2]bool{{false, false}, {true, true}, {true, false}, {false, true}} {
			fz := &fusion{nhwc: map[ir.TensorID]bool{x: layouts[0] && len(xs) == 4, y: layouts[1]}}
			space, st := fz.readSpace(g.g, x, y)
			terms, _ := indexTerms(space, st)
			// offset of logical index (n, c, h, w) in a tensor of shape s.
			offset := func(s []int64, nhwc bool, idx [4]int64) int64 {
				full := make([]int64, 4)
				for d := range 4 {
					full[d] = 1
				}
				copy(full[4-len(s):], s)
				for d := range 4 {
					if full[d] == 1 {
						idx[d] = 0
					}
				}
				if nhwc {
					return ((idx[0]*full[2]+idx[2])*full[3]+idx[3])*full[1] + idx[1]
				}
				return ((idx[0]*full[1]+idx[1])*full[2]+idx[2])*full[3] + idx[3]
			}
			for n := range shape[0] {
				for c := range shape[1] {
					for h := range shape[2] {
						for w := range shape[3] {
							idx := [4]int64{n, c, h, w}
							i := offset(shape, layouts[1], idx)
							if got, want := evalTerms(terms, i), offset(xs, fz.nhwc[x], idx); got != want {
								t.Fatalf("x %v, layouts %v: element %v (stored at %d) reads %d, want %d", xs, layouts, idx, i, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestKRSCForm checks the channels-last weights against the float32 ones
// they come from, rounded one by one, the padding zero.
func TestKRSCForm(t *testing.T) {
	f := krscForm{K: 3, C: 3, R: 2, S: 5, Cp: 8}
	data := make([]byte, 4*f.K*f.C*f.R*f.S)
	for i := range len(data) / 4 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)*0.37-7))
	}
	for _, p := range []Precision{BF16, F16} {
		got := f.bytes(data, p)
		if int64(len(got)) != f.size(len(data)) {
			t.Fatalf("%s: %d bytes, size says %d", p, len(got), f.size(len(data)))
		}
		round := dtype.BF16FromF32
		if p == F16 {
			round = dtype.F16FromF32
		}
		for k := range f.K {
			for r := range f.R {
				for s := range f.S {
					for c := range f.Cp {
						var want uint16
						if c < f.C {
							want = round(math.Float32frombits(binary.LittleEndian.Uint32(data[4*(((k*f.C+c)*f.R+r)*f.S+s):])))
						}
						at := ((k*f.R+r)*f.S+s)*f.Cp + c
						if v := binary.LittleEndian.Uint16(got[2*at:]); v != want {
							t.Fatalf("%s: (%d, %d, %d, %d) = %#x, want %#x", p, k, r, s, c, v, want)
						}
					}
				}
			}
		}
	}
	if n := (krscForm{}).size(400); n != 200 {
		t.Errorf("the plain shadow of 400 bytes: %d bytes", n)
	}
}

// TestFuseConvActs (no GPU needed): with convolutions on cuDNN, every
// convolution of the small ResNet becomes a ConvAct, the bottleneck's
// last one taking the shortcut's output as its addend and the ReLU after
// the sum; the activations between them are channels-last and 16-bit,
// and each ConvAct is one fused cuDNN launch with its bias (and addend).
// A convolution whose output is the graph's stays a Conv, and without
// cuDNN nothing changes.
func TestFuseConvActs(t *testing.T) {
	g := resnetGraph(2, 32).g
	hs := &halves{prec: BF16, shadow: map[ir.TensorID]int{}, dry: true, mma: true, dnn: true}
	f := fuseConvActs(g, hs, acceptsHalf(g, 132, hs))
	want := []string{"ConvAct", "MaxPool", "ConvAct", "ConvAct", "ConvAct", "ConvAct", "GlobalAveragePool", "Flatten", "Gemm"}
	if got := opsOf(f, seq(len(f.Nodes))); !slices.Equal(got, want) {
		t.Fatalf("ops %v, want %v", got, want)
	}
	last := &f.Nodes[5]
	if len(last.Inputs) != 4 || last.Inputs[3] != f.Nodes[4].Outputs[0] || last.Attrs.Int("relu", 0) != 1 || f.Nodes[4].Attrs.Int("relu", 0) != 0 {
		t.Errorf("the bottleneck's last ConvAct: inputs %v, relu %d; the shortcut's relu %d", last.Inputs, last.Attrs.Int("relu", 0), f.Nodes[4].Attrs.Int("relu", 0))
	}
	fz := analyzeFusion(f, true, hs, acceptsHalf(f, 132, hs))
	hs.stored = fz.half
	for i, n := range f.Nodes {
		c, err := buildNodeWith(f, i, 132, true, new([][]byte), hs, fz)
		if err != nil {
			t.Fatalf("node %d (%s): %v", i, n.Op, err)
		}
		if n.Op != "ConvAct" {
			continue
		}
		y := n.Outputs[0]
		if !fz.half[y] || !fz.nhwc[y] {
			t.Errorf("node %d: output 16-bit %v, channels-last %v", i, fz.half[y], fz.nhwc[y])
		}
		l := c.launches[len(c.launches)-1]
		if l.dnn == nil || !l.dnn.Fused || !l.dnn.NHWC || l.dnn.ReLU != (n.Attrs.Int("relu", 0) == 1) || len(l.args) != len(n.Inputs)+1 {
			t.Errorf("node %d: launch %+v with %d arguments", i, l.dnn, len(l.args))
		}
	}
	if !fz.nhwc[f.Nodes[1].Outputs[0]] {
		t.Errorf("the MaxPool's output is not channels-last")
	}

	// A convolution without a bias (as passes.SplitPointwiseSums leaves
	// one of each pair) takes zeros.
	g3 := resnetGraph(2, 32).g
	conv3 := 7 // the bottleneck's last convolution
	g3.Nodes[conv3].Inputs = g3.Nodes[conv3].Inputs[:2]
	f3 := fuseConvActs(g3, hs, acceptsHalf(g3, 132, hs))
	if got := opsOf(f3, seq(len(f3.Nodes))); !slices.Equal(got, want) {
		t.Errorf("without a bias: ops %v, want %v", got, want)
	} else if b := f3.Tensor(f3.Nodes[5].Inputs[2]); !b.IsConst() || b.Shape.Elements() != 32 || slices.ContainsFunc(b.Data, func(v byte) bool { return v != 0 }) {
		t.Errorf("without a bias: the ConvAct's bias is %v %v", b.Shape, b.Data)
	}

	// An Add of a tensor that broadcasts (per channel) is no addend:
	// the bottleneck's last convolution keeps the ReLU out too.
	g4 := resnetGraph(2, 32).g
	add := 9 // the bottleneck's Add
	scale := g4.NewTensor("scale", ir.Float32, ir.Shape{2, 32, 1, 1}, nil)
	g4.Inputs = append(g4.Inputs, scale)
	g4.Nodes[add].Inputs[1] = scale
	f4 := fuseConvActs(g4, hs, acceptsHalf(g4, 132, hs))
	for _, n := range f4.Nodes {
		if isConvAct(&n) && len(n.Inputs) > 3 {
			t.Errorf("a ConvAct took %v as its addend", f4.Tensor(n.Inputs[3]).Shape)
		}
	}

	// The stem's output as the graph's: it stays a Conv.
	g2 := resnetGraph(2, 32).g
	g2.Outputs = append(g2.Outputs, g2.Nodes[0].Outputs[0])
	if f := fuseConvActs(g2, hs, acceptsHalf(g2, 132, hs)); f.Nodes[0].Op != "Conv" {
		t.Errorf("a convolution writing a graph output became %s", f.Nodes[0].Op)
	}
	if h := (&halves{prec: BF16, shadow: map[ir.TensorID]int{}, dry: true, mma: true}); fuseConvActs(g, h, acceptsHalf(g, 132, h)) != g {
		t.Errorf("without cuDNN the graph changed")
	}
}

// seq is 0, 1, …, n-1.
func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
