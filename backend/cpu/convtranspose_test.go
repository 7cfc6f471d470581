package cpu

import (
	"fmt"
	"testing"

	"github.com/berth-ml/berth/ir"
)

func TestConvTranspose(t *testing.T) {
	cases := []struct {
		name                    string
		x                       []int64
		mg, group               int64
		kern, strides, dil, pad []int64 // pad: begins then ends
		outPad                  []int64
		bias, constW            bool
	}{
		{"3x3 s1", ints64(1, 2, 5, 6), 3, 1, ints64(3, 3), ints64(1, 1), ints64(1, 1), ints64(0, 0, 0, 0), nil, true, true},
		{"4x4 s2 p1", ints64(2, 3, 7, 5), 4, 1, ints64(4, 4), ints64(2, 2), ints64(1, 1), ints64(1, 1, 1, 1), nil, true, true},
		{"3x3 s2 output padding", ints64(1, 2, 4, 4), 2, 1, ints64(3, 3), ints64(2, 2), ints64(1, 1), ints64(1, 1, 1, 1), ints64(1, 1), false, true},
		{"dilated asymmetric", ints64(1, 2, 5, 4), 3, 1, ints64(2, 3), ints64(3, 1), ints64(2, 2), ints64(0, 1, 2, 0), nil, true, true},
		{"groups runtime W", ints64(1, 4, 5, 5), 3, 2, ints64(3, 3), ints64(2, 1), ints64(1, 1), ints64(1, 0, 0, 1), nil, true, false},
		{"depthwise", ints64(1, 6, 6, 6), 1, 6, ints64(3, 3), ints64(2, 2), ints64(1, 1), ints64(1, 1, 1, 1), ints64(1, 1), true, true},
		{"1-D", ints64(2, 3, 9), 2, 1, ints64(4), ints64(3), ints64(1), ints64(1, 2), nil, true, true},
		{"3-D", ints64(1, 2, 3, 4, 3), 2, 1, ints64(2, 2, 3), ints64(2, 1, 2), ints64(1, 2, 1), ints64(0, 1, 1, 1, 0, 1), nil, true, true},
		{"large", ints64(1, 16, 20, 20), 8, 1, ints64(3, 3), ints64(2, 2), ints64(1, 1), ints64(1, 1, 1, 1), ints64(1, 1), true, true},
	}
	for _, c := range cases {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", c.name, threads), func(t *testing.T) {
				r := len(c.kern)
				ch := c.x[1]
				cg := ch / c.group
				m := c.mg * c.group
				outPad := c.outPad
				if outPad == nil {
					outPad = make([]int64, r)
				}
				ys := ints64(c.x[0], m)
				for i := 0; i < r; i++ {
					ys = append(ys, c.strides[i]*(c.x[2+i]-1)+outPad[i]+(c.kern[i]-1)*c.dil[i]+1-c.pad[i]-c.pad[r+i])
				}
				ws := append(ints64(ch, c.mg), c.kern...)
				x, w, b := randF32(int(elems(c.x))), randF32(int(elems(ws))), randF32(int(m))
				// Reference: scatter every input element through every tap.
				want := make([]float64, elems(ys))
				yst := strides(ys)
				sp := elems(ys[2:])
				if c.bias {
					for i := range want {
						want[i] = float64(b[int64(i)/sp%m])
					}
				}
				kvol := elems(c.kern)
				for xi, xv := range x {
					idx := unravel(int64(xi), c.x)
					n, ci := idx[0], idx[1]
					g := ci / cg
					for mm := int64(0); mm < c.mg; mm++ {
						for tap := int64(0); tap < kvol; tap++ {
							kidx := unravel(tap, c.kern)
							off := n*yst[0] + (g*c.mg+mm)*yst[1]
							inside := true
							for d := 0; d < r; d++ {
								o := idx[2+d]*c.strides[d] - c.pad[d] + kidx[d]*c.dil[d]
								if o < 0 || o >= ys[2+d] {
									inside = false
									break
								}
								off += o * yst[2+d]
							}
							if inside {
								want[off] += float64(xv) * float64(w[(ci*c.mg+mm)*kvol+tap])
							}
						}
					}
				}
				tg := newTGraph(17)
				feeds := [][]byte{f32Bytes(x)}
				ins := []ir.TensorID{tg.input("x", ir.Float32, c.x...)}
				if c.constW {
					ins = append(ins, tg.constant("w", ir.Float32, f32Bytes(w), ws...))
				} else {
					ins = append(ins, tg.input("w", ir.Float32, ws...))
					feeds = append(feeds, f32Bytes(w))
				}
				if c.bias {
					ins = append(ins, tg.constant("b", ir.Float32, f32Bytes(b), m))
				}
				attrs := ir.Attrs{
					"strides":   {Kind: ir.AttrInts, Ints: c.strides},
					"dilations": {Kind: ir.AttrInts, Ints: c.dil},
					"pads":      {Kind: ir.AttrInts, Ints: c.pad},
					"group":     {Kind: ir.AttrInt, Int: c.group},
				}
				if c.outPad != nil {
					attrs["output_padding"] = ir.Attr{Kind: ir.AttrInts, Ints: c.outPad}
				}
				n := tg.node("ConvTranspose", attrs, ins, out{ir.Float32, ys})
				near(t, "Y", asF32(exec(t, tg.g, n, threads, feeds...)[0]), want, 1e-5, 1e-5)
			})
		}
	}
}
