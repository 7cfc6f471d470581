package cpu

import (
	"math"

	"github.com/berth-ml/berth/ir"
)

// RNN, GRU and LSTM, computed in float64 one time step after another.

type recurrentKernel struct {
	op                  string
	dt                  ir.DType
	seq, batch, in, hid int
	dirs                int
	reverse             bool // the only direction runs backwards
	layout              int
	gates               int // 1 (RNN), 3 (GRU), 4 (LSTM)
	acts                [][]func(float64) float64
	clip                float64
	linearBeforeReset   bool
	inputForget         bool
	wide                bool // int64 sequence lengths... (always int32 in ONNX)
}

func activation(name string) func(float64) float64 {
	switch name {
	case "Sigmoid":
		return func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	case "Tanh":
		return math.Tanh
	case "Relu":
		return func(v float64) float64 { return math.Max(0, v) }
	}
	return nil
}

func buildRecurrent(c *buildContext) (Kernel, int64, error) {
	x, err := c.floatInput(3)
	if err != nil {
		return nil, 0, err
	}
	at := c.attrs()
	k := &recurrentKernel{op: c.n.Op, dt: x.DType, hid: int(at.Int("hidden_size", 0)), layout: int(at.Int("layout", 0)),
		clip: float64(at.Float("clip", 0)), linearBeforeReset: at.Int("linear_before_reset", 0) != 0,
		inputForget: at.Int("input_forget", 0) != 0}
	k.seq, k.batch, k.in = int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2])
	if k.layout != 0 {
		k.seq, k.batch = k.batch, k.seq
	}
	k.dirs = 1
	switch d := at.String("direction", "forward"); d {
	case "forward":
	case "reverse":
		k.reverse = true
	case "bidirectional":
		k.dirs = 2
	default:
		return nil, 0, c.errorf("direction %q is not supported", d)
	}
	var defaults []string
	switch k.op {
	case "RNN":
		k.gates, defaults = 1, []string{"Tanh"}
	case "GRU":
		k.gates, defaults = 3, []string{"Sigmoid", "Tanh"}
	case "LSTM":
		k.gates, defaults = 4, []string{"Sigmoid", "Tanh", "Tanh"}
	}
	names := at.Strings("activations", nil)
	if names == nil {
		for range k.dirs {
			names = append(names, defaults...)
		}
	}
	if len(names) != len(defaults)*k.dirs {
		return nil, 0, c.errorf("%d activations, want %d", len(names), len(defaults)*k.dirs)
	}
	if at.Has("activation_alpha") || at.Has("activation_beta") {
		return nil, 0, c.errorf("activation_alpha and activation_beta are not supported")
	}
	for d := 0; d < k.dirs; d++ {
		var fs []func(float64) float64
		for _, name := range names[d*len(defaults) : (d+1)*len(defaults)] {
			f := activation(name)
			if f == nil {
				return nil, 0, c.errorf("activation %q is not supported", name)
			}
			fs = append(fs, f)
		}
		k.acts = append(k.acts, fs)
	}
	w, r := c.in(1), c.in(2)
	g := k.gates * k.hid
	if !w.Shape.Equal(ir.Shape{int64(k.dirs), int64(g), int64(k.in)}) || !r.Shape.Equal(ir.Shape{int64(k.dirs), int64(g), int64(k.hid)}) {
		return nil, 0, c.errorf("W %v and R %v do not fit %d directions of %d gates of %d", w.Shape, r.Shape, k.dirs, k.gates, k.hid)
	}
	for i := 1; i < len(c.n.Inputs); i++ {
		if t := c.in(i); t != nil && i != 4 && t.DType != x.DType {
			return nil, 0, c.errorf("input %d is %s, want %s", i, t.DType, x.DType)
		}
	}
	if t := c.in(4); t != nil && t.DType != ir.Int32 && t.DType != ir.Int64 {
		return nil, 0, c.errorf("sequence_lens must be int32")
	} else if t != nil {
		k.wide = t.DType == ir.Int64
	}
	// Scratch: h, c, gate values (float64).
	return k, int64(8 * (2*k.batch*k.hid + k.gates*k.hid + k.hid)), nil
}

func (k *recurrentKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	e := k.dt.Size()
	ld := func(b []byte, i int) float64 { v, _ := loadFloat(k.dt, b[i*e:]); return v }
	st := func(b []byte, i int, v float64) {
		if b != nil {
			storeFloat(k.dt, b[i*e:], v)
		}
	}
	at := func(i int) []byte {
		if i < len(in) {
			return in[i]
		}
		return nil
	}
	x, wt, rt, bias, lens, h0, c0, peep := in[0], in[1], in[2], at(3), at(4), at(5), at(6), at(7)
	y, yh, yc := outAt(out, 0), outAt(out, 1), outAt(out, 2)
	if y != nil {
		clear(y)
	}
	f := view[float64](scratch)
	H, C := f[:k.batch*k.hid], f[k.batch*k.hid:2*k.batch*k.hid]
	G := f[2*k.batch*k.hid : 2*k.batch*k.hid+k.gates*k.hid]
	tmp := f[2*k.batch*k.hid+k.gates*k.hid:]
	gh := k.gates * k.hid
	clip := func(v float64) float64 {
		if k.clip > 0 {
			return math.Max(-k.clip, math.Min(k.clip, v))
		}
		return v
	}
	// Index helpers for the layouts.
	xAt := func(t, b, i int) int {
		if k.layout != 0 {
			return (b*k.seq+t)*k.in + i
		}
		return (t*k.batch+b)*k.in + i
	}
	yAt := func(t, d, b, j int) int {
		if k.layout != 0 {
			return ((b*k.seq+t)*k.dirs+d)*k.hid + j
		}
		return ((t*k.dirs+d)*k.batch+b)*k.hid + j
	}
	hAt := func(d, b, j int) int {
		if k.layout != 0 {
			return (b*k.dirs+d)*k.hid + j
		}
		return (d*k.batch+b)*k.hid + j
	}
	for d := 0; d < k.dirs; d++ {
		reverse := k.reverse || d == 1
		acts := k.acts[d]
		for b := 0; b < k.batch; b++ {
			for j := 0; j < k.hid; j++ {
				H[b*k.hid+j], C[b*k.hid+j] = 0, 0
				if h0 != nil {
					H[b*k.hid+j] = ld(h0, hAt(d, b, j))
				}
				if c0 != nil {
					C[b*k.hid+j] = ld(c0, hAt(d, b, j))
				}
			}
		}
		for b := 0; b < k.batch; b++ {
			n := k.seq
			if lens != nil {
				n = int(indexAt(lens, k.wide, b))
			}
			h, cs := H[b*k.hid:(b+1)*k.hid], C[b*k.hid:(b+1)*k.hid]
			for s := 0; s < n; s++ {
				t := s
				if reverse {
					t = n - 1 - s
				}
				// G = W·x + Wb (+ R·h + Rb, except GRU's h gate).
				for gi := 0; gi < gh; gi++ {
					v := 0.0
					if bias != nil {
						v = ld(bias, d*2*gh+gi)
					}
					for i := 0; i < k.in; i++ {
						v += ld(wt, (d*gh+gi)*k.in+i) * ld(x, xAt(t, b, i))
					}
					rv := 0.0
					if bias != nil {
						rv = ld(bias, d*2*gh+gh+gi)
					}
					if k.op == "GRU" && gi >= 2*k.hid {
						// The h gate: R·(r⊙h) or r⊙(R·h + Rb), below.
						G[gi] = v
						tmp[gi-2*k.hid] = rv
						continue
					}
					for j := 0; j < k.hid; j++ {
						rv += ld(rt, (d*gh+gi)*k.hid+j) * h[j]
					}
					G[gi] = v + rv
				}
				switch k.op {
				case "RNN":
					for j := 0; j < k.hid; j++ {
						h[j] = acts[0](clip(G[j]))
					}
				case "GRU":
					z, r := G[:k.hid], G[k.hid:2*k.hid]
					for j := 0; j < k.hid; j++ {
						z[j], r[j] = acts[0](clip(z[j])), acts[0](clip(r[j]))
					}
					hh := G[2*k.hid:]
					for gj := 0; gj < k.hid; gj++ {
						row := (d*gh + 2*k.hid + gj) * k.hid
						acc := 0.0
						if k.linearBeforeReset {
							for j := 0; j < k.hid; j++ {
								acc += ld(rt, row+j) * h[j]
							}
							acc = r[gj] * (acc + tmp[gj])
						} else {
							for j := 0; j < k.hid; j++ {
								acc += ld(rt, row+j) * r[j] * h[j]
							}
							acc += tmp[gj]
						}
						hh[gj] = acts[1](clip(hh[gj] + acc))
					}
					for j := 0; j < k.hid; j++ {
						h[j] = (1-z[j])*hh[j] + z[j]*h[j]
					}
				case "LSTM":
					ig, og, fg, cg := G[:k.hid], G[k.hid:2*k.hid], G[2*k.hid:3*k.hid], G[3*k.hid:]
					p := func(g, j int) float64 {
						if peep == nil {
							return 0
						}
						return ld(peep, d*3*k.hid+g*k.hid+j)
					}
					for j := 0; j < k.hid; j++ {
						iv := acts[0](clip(ig[j] + p(0, j)*cs[j]))
						fv := acts[0](clip(fg[j] + p(2, j)*cs[j]))
						if k.inputForget {
							fv = 1 - iv
						}
						cv := acts[1](clip(cg[j]))
						cs[j] = fv*cs[j] + iv*cv
						ov := acts[0](clip(og[j] + p(1, j)*cs[j]))
						h[j] = ov * acts[2](cs[j])
					}
				}
				for j := 0; j < k.hid; j++ {
					st(y, yAt(t, d, b, j), h[j])
				}
			}
			for j := 0; j < k.hid; j++ {
				st(yh, hAt(d, b, j), h[j])
				st(yc, hAt(d, b, j), cs[j])
			}
		}
	}
}
