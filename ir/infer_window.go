package ir

import "fmt"

// Window is the geometry of a sliding-window operator (Conv, MaxPool,
// AveragePool) along the spatial axes of its input, with auto_pad resolved
// into explicit pads.
type Window struct {
	Kernel    []int64 // kernel size per spatial axis
	Strides   []int64
	Dilations []int64
	// Pads holds the padding before each spatial axis, then the padding
	// after each (ONNX's layout: x1_begin, x2_begin, …, x1_end, x2_end, …).
	Pads []int64
	// Out is the output size per spatial axis.
	Out []int64
}

// SpatialWindow resolves the window of a Conv, MaxPool or AveragePool node
// against its input shapes: kernel (from Conv's weights or the
// kernel_shape attribute), strides, dilations, pads (auto_pad resolved, as
// ONNX Runtime does it) and the output's spatial sizes. Pooling with
// ceil_mode drops a last window that would start in the end padding, as
// PyTorch does.
func SpatialWindow(g *Graph, n *Node) (*Window, error) {
	x, err := input(g, n, 0)
	if err != nil {
		return nil, err
	}
	if x.Shape.Rank() < 3 {
		return nil, fmt.Errorf("input %q has shape %v, want rank 3 or more (N, C, spatial…)", x.Name, x.Shape)
	}
	r := x.Shape.Rank() - 2
	var kernel []int64
	if n.Op == "Conv" {
		w, err := input(g, n, 1)
		if err != nil {
			return nil, err
		}
		if w.Shape.Rank() != x.Shape.Rank() {
			return nil, fmt.Errorf("weights %q have shape %v, want rank %d like input %q %v", w.Name, w.Shape, x.Shape.Rank(), x.Name, x.Shape)
		}
		kernel = w.Shape[2:]
		if ks := n.Attrs.Ints("kernel_shape", nil); ks != nil && !Shape(ks).Equal(Shape(kernel)) {
			return nil, fmt.Errorf("kernel_shape %v does not match weights %q %v", ks, w.Name, w.Shape)
		}
	} else {
		kernel = n.Attrs.Ints("kernel_shape", nil)
		if kernel == nil {
			return nil, fmt.Errorf("attribute kernel_shape is missing")
		}
	}
	return windowOf(n.Attrs, x.Shape[2:], kernel, r, n.Attrs.Int("ceil_mode", 0) != 0)
}

// windowOf computes the window of spatial input sizes in.
func windowOf(a Attrs, in []int64, kernel []int64, r int, ceil bool) (*Window, error) {
	list := func(name string, def, lo int64, k int) ([]int64, error) {
		v := a.Ints(name, nil)
		if v == nil {
			v = make([]int64, k)
			for i := range v {
				v[i] = def
			}
			return v, nil
		}
		if len(v) != k {
			return nil, fmt.Errorf("attribute %s %v has %d values, want %d", name, v, len(v), k)
		}
		for _, x := range v {
			if x < lo || x > MaxElements {
				return nil, fmt.Errorf("attribute %s %v: value %d out of range", name, v, x)
			}
		}
		return v, nil
	}
	if len(kernel) != r {
		return nil, fmt.Errorf("kernel %v has %d dimensions, the input has %d spatial axes", kernel, len(kernel), r)
	}
	for _, k := range kernel {
		if k < 1 || k > MaxElements {
			return nil, fmt.Errorf("kernel %v: size %d out of range", kernel, k)
		}
	}
	strides, err := list("strides", 1, 1, r)
	if err != nil {
		return nil, err
	}
	dilations, err := list("dilations", 1, 1, r)
	if err != nil {
		return nil, err
	}
	pads, err := list("pads", 0, 0, 2*r)
	if err != nil {
		return nil, err
	}
	w := &Window{Kernel: kernel, Strides: strides, Dilations: dilations, Pads: make([]int64, 2*r), Out: make([]int64, r)}
	autoPad := a.String("auto_pad", "NOTSET")
	for i := 0; i < r; i++ {
		s, d := strides[i], dilations[i]
		span, err := checkedMul(kernel[i]-1, d) // dilated kernel extent - 1
		if err != nil || span >= 4*MaxElements {
			return nil, fmt.Errorf("kernel %d with dilation %d is too large", kernel[i], d)
		}
		span++
		switch autoPad {
		case "NOTSET", "VALID", "":
			pb, pe := pads[i], pads[r+i]
			if autoPad == "VALID" {
				pb, pe = 0, 0
			}
			room := in[i] + pb + pe - span // all terms ≤ 2^41, no overflow
			if room < 0 {
				return nil, fmt.Errorf("kernel extent %d (kernel %d, dilation %d) exceeds the padded input size %d on spatial axis %d", span, kernel[i], d, in[i]+pb+pe, i)
			}
			out := room/s + 1
			if ceil {
				out = (room+s-1)/s + 1
				// A window must start inside the input or its begin padding.
				if (out-1)*s >= in[i]+pb {
					out--
				}
			}
			w.Pads[i], w.Pads[r+i], w.Out[i] = pb, pe, out
		case "SAME_UPPER", "SAME_LOWER":
			out := (in[i] + s - 1) / s
			total := max(0, (out-1)*s+span-in[i])
			small, big := total/2, total-total/2
			if autoPad == "SAME_UPPER" {
				w.Pads[i], w.Pads[r+i] = small, big
			} else {
				w.Pads[i], w.Pads[r+i] = big, small
			}
			w.Out[i] = out
		default:
			return nil, fmt.Errorf("auto_pad %q is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", autoPad)
		}
	}
	return w, nil
}
