package ir

import (
	"fmt"
	"math"
)

// Resampling rules every backend shares: where Resize (and the older
// Upsample) reads each output coordinate from, and where Pad does. Both
// come down to one table per axis, computed once when a node is compiled,
// so that every backend reads the same input elements with the same
// weights.

// Taps are the input elements that the output indices of one axis read:
// N per output index, Index[o·N+t] with weight Weight[o·N+t].
type Taps struct {
	N      int
	Index  []int32
	Weight []float32
	// Outside marks the output indices whose coordinate leaves the input
	// (tf_crop_and_resize): they take the extrapolation value. Nil when
	// there are none.
	Outside []bool
}

// Identity reports whether the axis copies its input as it is: as many
// output indices as in, each reading the input index of its own with
// weight 1.
func (t *Taps) Identity(in int64) bool {
	if t.N != 1 || int64(len(t.Index)) != in || t.Outside != nil {
		return false
	}
	for o, i := range t.Index {
		if int64(i) != int64(o) || t.Weight[o] != 1 {
			return false
		}
	}
	return true
}

// Resampling is how a Resize node computes its output, axis by axis.
type Resampling struct {
	// Mode is "nearest" (one tap an output index, of weight 1), "linear"
	// (two) or "cubic" (four); an axis whose every output reads one input
	// with weight 1 has one tap whatever the mode.
	Mode string
	Axes []Taps
	// Extrapolation is the value of outputs outside the input
	// (tf_crop_and_resize).
	Extrapolation float32
}

// ResizeTaps resolves a Resize or Upsample node against its input and
// output shapes: the coordinate transformation (half_pixel,
// half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric,
// tf_half_pixel_for_nn, tf_crop_and_resize), the rounding of
// nearest_mode and the Keys cubic weights (cubic_coeff_a,
// exclude_outside), with the scales ResolveResize gives (from scales or
// sizes, axes and keep_aspect_ratio_policy). antialias is not supported.
func ResizeTaps(g *Graph, n *Node) (*Resampling, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	if len(n.Outputs) == 0 || n.Outputs[0] == NoTensor {
		return nil, fmt.Errorf("node has no output")
	}
	y := g.Tensor(n.Outputs[0])
	r := x.Shape.Rank()
	if y.Shape.Rank() != r {
		return nil, fmt.Errorf("output %v does not match input %v", y.Shape, x.Shape)
	}
	at := n.Attrs
	mode := at.String("mode", "nearest")
	ctm := at.String("coordinate_transformation_mode", "half_pixel")
	nearest := at.String("nearest_mode", "round_prefer_floor")
	if n.Op == "Upsample" || opset(g) < 11 {
		// Upsample and Resize-10: scales only, asymmetric, floor.
		ctm, nearest = "asymmetric", "floor"
	}
	// The scales of every axis (from scales or sizes, opset 18's axes
	// and keep_aspect_ratio_policy), as shape inference resolves them.
	geo, err := ResolveResize(g, n)
	if err != nil {
		return nil, err
	}
	if !geo.Out.Equal(y.Shape) {
		return nil, fmt.Errorf("output %v, the scales or sizes give %v", y.Shape, geo.Out)
	}
	scales := geo.Scales
	var roi []float64
	if ctm == "tf_crop_and_resize" {
		t, err := optInput(g, n, 1)
		if err != nil {
			return nil, err
		}
		if t != nil && !t.IsConst() {
			return nil, NeedValue("roi", t.Name)
		}
		k := len(geo.Axes)
		if t == nil || t.Shape.Elements() != int64(2*k) {
			return nil, fmt.Errorf("tf_crop_and_resize needs a constant roi of %d values", 2*k)
		}
		v, err := t.Float64s()
		if err != nil {
			return nil, fmt.Errorf("roi: %v", err)
		}
		// The roi of the axes not named is the whole axis.
		roi = make([]float64, 2*r)
		for i := 0; i < r; i++ {
			roi[r+i] = 1
		}
		for i, a := range geo.Axes {
			roi[a], roi[r+a] = v[i], v[k+i]
		}
	}
	taps := 1
	switch mode {
	case "nearest":
	case "linear", "bilinear", "trilinear":
		taps, mode = 2, "linear"
	case "cubic", "bicubic":
		taps, mode = 4, "cubic"
	default:
		return nil, fmt.Errorf("mode %q is not supported", mode)
	}
	if at.Int("antialias", 0) != 0 {
		return nil, fmt.Errorf("antialias (opset 18) is not supported")
	}
	switch nearest {
	case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
	default:
		if mode == "nearest" {
			return nil, fmt.Errorf("nearest_mode %q is not supported", nearest)
		}
	}
	cubicA := float64(at.Float("cubic_coeff_a", -0.75))
	exclude := at.Int("exclude_outside", 0) != 0
	rs := &Resampling{Mode: mode, Axes: make([]Taps, r), Extrapolation: at.Float("extrapolation_value", 0)}
	for i := 0; i < r; i++ {
		in, out := int(x.Shape[i]), int(y.Shape[i])
		scale := scales[i]
		if in == 0 && out > 0 {
			return nil, fmt.Errorf("cannot resize an empty axis")
		}
		outW := scale * float64(in)
		t := Taps{N: taps, Index: make([]int32, out*taps), Weight: make([]float32, out*taps)}
		for o := 0; o < out; o++ {
			var xo float64
			xr := float64(o)
			switch ctm {
			case "half_pixel":
				xo = (xr+0.5)/scale - 0.5
			case "half_pixel_symmetric":
				// Opset 19: half_pixel about the centre of the input
				// when the output's size was rounded.
				off := float64(in) / 2 * (1 - float64(out)/outW)
				xo = off + (xr+0.5)/scale - 0.5
			case "pytorch_half_pixel":
				xo = -0.5
				if outW != 1 {
					xo = (xr+0.5)/scale - 0.5
				}
			case "align_corners":
				if outW != 1 {
					xo = xr * float64(in-1) / (outW - 1)
				}
			case "asymmetric":
				xo = xr / scale
			case "tf_half_pixel_for_nearest", "tf_half_pixel_for_nn":
				xo = (xr + 0.5) / scale
			case "tf_crop_and_resize":
				lo, hi := roi[i], roi[r+i]
				if outW == 1 {
					xo = (hi - lo) * float64(in-1) / 2
				} else {
					xo = xr * (hi - lo) * float64(in-1) / (outW - 1)
				}
				xo += lo * float64(in-1)
				if xo < 0 || xo > float64(in-1) {
					if t.Outside == nil {
						t.Outside = make([]bool, out)
					}
					t.Outside[o] = true
				}
			default:
				return nil, fmt.Errorf("coordinate_transformation_mode %q is not supported", ctm)
			}
			idx, w := t.Index[o*taps:(o+1)*taps], t.Weight[o*taps:(o+1)*taps]
			f := math.Floor(xo)
			ratio := xo - f
			switch mode {
			case "nearest":
				up := false
				if ratio != 0 {
					switch nearest {
					case "round_prefer_floor":
						up = ratio > 0.5
					case "round_prefer_ceil":
						up = ratio >= 0.5
					case "ceil":
						up = true
					}
				}
				k := int(f)
				if up {
					k++
				}
				idx[0], w[0] = int32(max(0, min(k, in-1))), 1
			case "linear":
				k := int(f)
				for j, wt := range [2]float64{1 - ratio, ratio} {
					idx[j], w[j] = int32(max(0, min(k+j, in-1))), float32(wt)
				}
			case "cubic":
				k := int(f) - 1
				cs := cubicCoeffs(ratio, cubicA)
				sum := 0.0
				for j := range cs {
					if exclude && (k+j < 0 || k+j >= in) {
						cs[j] = 0
					}
					sum += cs[j]
				}
				for j := range cs {
					if exclude {
						cs[j] /= sum
					}
					idx[j], w[j] = int32(max(0, min(k+j, in-1))), float32(cs[j])
				}
			}
		}
		rs.Axes[i] = t.compact()
	}
	return rs, nil
}

// cubicCoeffs are the four Keys cubic convolution weights for taps at
// −1, 0, 1, 2 relative to floor(x), with ratio = x − floor(x).
func cubicCoeffs(ratio, a float64) [4]float64 {
	r1, r2 := ratio+1, 1-ratio
	return [4]float64{
		((a*r1-5*a)*r1+8*a)*r1 - 4*a,
		((a+2)*ratio-(a+3))*ratio*ratio + 1,
		((a+2)*r2-(a+3))*r2*r2 + 1,
		((a*(r2+1)-5*a)*(r2+1)+8*a)*(r2+1) - 4*a,
	}
}

// compact reduces an axis whose every output reads exactly one input with
// weight 1 (an unscaled axis, say) to one tap per output.
func (t Taps) compact() Taps {
	if t.N == 1 {
		return t
	}
	out := len(t.Index) / t.N
	single := Taps{N: 1, Index: make([]int32, out), Weight: make([]float32, out), Outside: t.Outside}
	for o := 0; o < out; o++ {
		found := -1
		for j := 0; j < t.N; j++ {
			switch w := t.Weight[o*t.N+j]; {
			case w == 0:
			case w == 1 && found < 0:
				found = j
			default:
				return t
			}
		}
		if found < 0 {
			return t
		}
		single.Index[o], single.Weight[o] = t.Index[o*t.N+found], 1
	}
	return single
}

// PadMaps resolves the pads of a Pad node (ResolvePads) into, for every
// axis of the output, the input index each output index reads, or -1 where
// it takes the constant: mode constant, edge (the nearest edge element) or
// reflect (mirrored without repeating the edge, as numpy's reflect).
// Negative pads crop.
func PadMaps(g *Graph, n *Node) ([][]int32, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	pads, err := ResolvePads(g, n)
	if err != nil {
		return nil, err
	}
	mode := n.Attrs.String("mode", "constant")
	r := x.Shape.Rank()
	if len(pads) != 2*r {
		return nil, fmt.Errorf("pads %v must have %d values", pads, 2*r)
	}
	maps := make([][]int32, r)
	for i := 0; i < r; i++ {
		size := x.Shape[i]
		pb, pe := pads[i], pads[r+i]
		o := size + pb + pe
		if o < 0 {
			return nil, fmt.Errorf("pads %v crop axis %d of %v below zero", pads, i, x.Shape)
		}
		// Negative pads crop first (as ONNX Runtime does): the other
		// modes then pad the part kept, [lo, lo+kept).
		lo, kept := max(0, -pb), size-max(0, -pb)-max(0, -pe)
		if mode != "constant" && kept <= 0 && o > 0 {
			return nil, fmt.Errorf("mode %s cannot pad an empty axis", mode)
		}
		m := make([]int32, o)
		for j := range m {
			t := int64(j) - max(pb, 0) // the index into the part kept
			s := lo + t
			if t < 0 || t >= kept {
				switch mode {
				case "constant":
					s = -1
				case "edge":
					s = lo + max(0, min(t, kept-1))
				case "reflect":
					s = lo + reflectIndex(t, kept)
				case "wrap":
					s = lo + (t%kept+kept)%kept
				default:
					return nil, fmt.Errorf("mode %q is not supported", mode)
				}
			}
			m[j] = int32(s)
		}
		maps[i] = m
	}
	return maps, nil
}

// reflectIndex mirrors an out-of-range index into [0, n) without
// repeating the edge, as numpy's reflect mode does.
func reflectIndex(s, n int64) int64 {
	if n == 1 {
		return 0
	}
	period := 2 * (n - 1)
	s %= period
	if s < 0 {
		s += period
	}
	if s >= n {
		s = period - s
	}
	return s
}

// TransposeWindow resolves the geometry of a ConvTranspose node against
// its input, weight and output shapes: kernel, strides, dilations and the
// pads that give the output its size. With output_shape or auto_pad
// SAME_UPPER/SAME_LOWER the pads follow from the output size (a negative
// total, a larger output, halves downwards so that the extra size goes to
// the end as with output_padding); otherwise they are the pads attribute,
// and the output size must be what they give.
func TransposeWindow(g *Graph, n *Node) (*Window, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	w, err := input(g, n, 1)
	if err != nil {
		return nil, err
	}
	if len(n.Outputs) == 0 || n.Outputs[0] == NoTensor {
		return nil, fmt.Errorf("node has no output")
	}
	y := g.Tensor(n.Outputs[0])
	r := x.Shape.Rank() - 2
	if r < 1 || w.Shape.Rank() != r+2 || y.Shape.Rank() != r+2 {
		return nil, fmt.Errorf("input %v, weight %v and output %v must have the same rank, at least 3", x.Shape, w.Shape, y.Shape)
	}
	at := n.Attrs
	get := func(name string, def int64) ([]int64, error) { return spatialInts(at, name, r, def) }
	win := &Window{Kernel: w.Shape[2:].Clone(), Out: y.Shape[2:].Clone(), Pads: make([]int64, 2*r)}
	if win.Strides, err = get("strides", 1); err != nil {
		return nil, err
	}
	if win.Dilations, err = get("dilations", 1); err != nil {
		return nil, err
	}
	outPad, err := get("output_padding", 0)
	if err != nil {
		return nil, err
	}
	autoPad := at.String("auto_pad", "NOTSET")
	if v := at.Ints("pads", nil); v != nil && autoPad == "NOTSET" && !at.Has("output_shape") {
		if len(v) != 2*r {
			return nil, fmt.Errorf("pads %v must have %d values", v, 2*r)
		}
		copy(win.Pads, v)
	}
	for i := 0; i < r; i++ {
		in, kern, o := x.Shape[2+i], win.Kernel[i], y.Shape[2+i]
		if win.Strides[i] < 1 || win.Dilations[i] < 1 {
			return nil, fmt.Errorf("strides %v and dilations %v must be positive", win.Strides, win.Dilations)
		}
		full := win.Strides[i]*(in-1) + outPad[i] + (kern-1)*win.Dilations[i] + 1
		if at.Has("output_shape") || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
			total := full - o
			half := total >> 1
			if autoPad == "SAME_UPPER" {
				win.Pads[i], win.Pads[r+i] = half, total-half
			} else {
				win.Pads[i], win.Pads[r+i] = total-half, half
			}
		}
		if want := full - win.Pads[i] - win.Pads[r+i]; want != o {
			return nil, fmt.Errorf("output size %d along spatial axis %d, the geometry gives %d", o, i, want)
		}
	}
	return win, nil
}

// TableBytes bounds the bytes of the per-axis tables that a backend
// builds on the host to compile n, before any plan is checked: for Pad
// and Tile an int32 a position of every output axis, for Resize and
// Upsample its taps (an int32 index and a float32 weight each, one to
// four a position by mode, and the mark of positions outside the input).
// It is 0 for other nodes, where the output's shape is not known or not
// valid, and for an empty output, whose kernel does nothing.
// The sum is what a memory limit must leave room for besides the plan:
// a 1-D output of 2³⁰ bytes has a Tile table four times as large.
func TableBytes(g *Graph, n *Node) int64 {
	var per int64
	switch n.Op {
	case "Pad", "Tile":
		per = 4
	case "Resize", "Upsample":
		taps := int64(1)
		switch n.Attrs.String("mode", "nearest") {
		case "linear", "bilinear", "trilinear":
			taps = 2
		case "cubic":
			taps = 4
		}
		per = 8*taps + 1
	default:
		return 0
	}
	if !n.DefaultDomain() {
		return 0
	}
	y := g.OutputOf(n, 0)
	if y == nil || y.Shape.Validate() != nil || y.Shape.Elements() == 0 {
		return 0
	}
	var b int64
	for _, d := range y.Shape {
		if d > (math.MaxInt64-b)/per {
			return math.MaxInt64
		}
		b += per * d
	}
	return b
}
