package cpu

import (
	"fmt"
	"testing"

	"github.com/berth-ml/berth/ir"
)

// seq returns 1, 2, …, n as values of dt (n small enough for every type).
func seqBytes(n int64, dt ir.DType) []byte {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i%120) + 1
	}
	return encodeAny(v, dt)
}

// encodeAny stores small integers as any element type.
func encodeAny(v []int64, dt ir.DType) []byte {
	b := make([]byte, 0, len(v)*dt.Size())
	for _, x := range v {
		switch dt.Size() {
		case 1:
			b = append(b, byte(x))
		case 2:
			b = append(b, byte(x), byte(x>>8))
		case 4:
			if dt == ir.Float32 {
				b = append(b, f32Bytes([]float32{float32(x)})...)
			} else {
				b = append(b, i32Bytes([]int32{int32(x)})...)
			}
		case 8:
			b = append(b, i64Bytes([]int64{x})...)
		}
	}
	return b
}

// elemAt returns element i of b as raw bytes.
func elemAt(b []byte, i int64, dt ir.DType) string {
	s := int64(dt.Size())
	return string(b[i*s : (i+1)*s])
}

// gatherRef builds the expected output element by element: src(i) gives the
// input element index of output element i, or -1 for a zero element.
func checkMoved(t *testing.T, what string, got, in []byte, dt ir.DType, n int64, src func(i int64) int64) {
	t.Helper()
	zero := string(make([]byte, dt.Size()))
	for i := int64(0); i < n; i++ {
		want := zero
		if j := src(i); j >= 0 {
			want = elemAt(in, j, dt)
		}
		if g := elemAt(got, i, dt); g != want {
			t.Fatalf("%s: element %d is %x, want %x", what, i, g, want)
		}
	}
}

var moveTypes = []ir.DType{ir.Float32, ir.Uint8, ir.Float16, ir.Int64}

func TestTranspose(t *testing.T) {
	cases := []struct {
		shape []int64
		perm  []int64
	}{
		{[]int64{2, 3}, nil},
		{[]int64{2, 3, 4}, []int64{0, 2, 1}},
		{[]int64{2, 3, 4, 5}, []int64{0, 2, 1, 3}},
		{[]int64{2, 3, 4, 5}, []int64{3, 1, 0, 2}},
		{[]int64{1, 5, 1, 7}, []int64{2, 3, 0, 1}},
		{[]int64{64, 130}, []int64{1, 0}},
		{[]int64{}, []int64{}},
		// Blocks of sixteen rows and columns with AVX-512, tails in both.
		{[]int64{37, 33}, []int64{1, 0}},
		{[]int64{1, 20, 3, 18}, []int64{0, 2, 3, 1}},
		{[]int64{2, 17, 40}, []int64{0, 2, 1}},
	}
	for _, dt := range moveTypes {
		for _, c := range cases {
			perm := c.perm
			if perm == nil {
				perm = []int64{1, 0}
			}
			ys := make([]int64, len(perm))
			for i, p := range perm {
				ys[i] = c.shape[p]
			}
			tg := newTGraph(17)
			attrs := ir.Attrs{}
			if c.perm != nil {
				attrs["perm"] = ir.Attr{Kind: ir.AttrInts, Ints: c.perm}
			}
			n := tg.node("Transpose", attrs, []ir.TensorID{tg.input("x", dt, c.shape...)}, out{dt, ys})
			in := seqBytes(elems(c.shape), dt)
			got := exec(t, tg.g, n, 2, in)[0]
			xst := strides(c.shape)
			checkMoved(t, fmt.Sprintf("%s %v %v", dt, c.shape, perm), got, in, dt, elems(ys), func(i int64) int64 {
				idx := unravel(i, ys)
				var j int64
				for d, p := range perm {
					j += idx[d] * xst[p]
				}
				return j
			})
		}
	}
}

// TestTransposeBlocks checks transpose itself against the element-by-
// element definition: bands of sixteen rows, tails of one to fifteen rows
// (those of at most transposeTail go element by element), clipped
// columns, a negative source stride, and nothing written outside the
// destination's elements.
func TestTransposeBlocks(t *testing.T) {
	if !dw512 {
		t.Skip("no AVX-512 kernels")
	}
	for _, c := range []struct{ rows, cols, lds, ldd int }{
		{1, 7, 9, 3}, {2, 16, 20, 5}, {3, 17, 17, 4}, {16, 16, 16, 16},
		{17, 33, 40, 20}, {18, 5, 5, 18}, {49, 480, 960, 49}, {49, 40, -41, 50},
		{31, 1, 3, 31},
	} {
		t.Run(fmt.Sprintf("%dx%d/lds=%d", c.rows, c.cols, c.lds), func(t *testing.T) {
			s0 := 0
			if c.lds < 0 {
				s0 = (c.rows - 1) * -c.lds
			}
			src := randF32(s0 + max(c.lds, -c.lds)*(c.rows-1) + c.cols + 3)
			const d0 = 5
			dst := make([]float32, d0+c.ldd*(c.cols-1)+c.rows+7)
			for i := range dst {
				dst[i] = -1
			}
			want := append([]float32(nil), dst...)
			for r := range c.rows {
				for j := range c.cols {
					want[d0+j*c.ldd+r] = src[s0+r*c.lds+j]
				}
			}
			transpose(dst, d0, c.ldd, src, s0, c.lds, c.rows, c.cols)
			for i := range want {
				if dst[i] != want[i] {
					t.Fatalf("dst[%d] = %v, want %v", i, dst[i], want[i])
				}
			}
		})
	}
}

func TestSlice(t *testing.T) {
	shape := []int64{5, 6, 7}
	cases := []struct {
		starts, ends, axes, steps []int64
	}{
		{[]int64{1, 0, 2}, []int64{4, 6, 5}, nil, nil},
		{[]int64{0}, []int64{-1}, []int64{1}, nil},
		{[]int64{-3}, []int64{1 << 62}, []int64{-1}, []int64{2}},
		{[]int64{4, 5}, []int64{0, -100}, []int64{0, 2}, []int64{-1, -2}},
		{[]int64{-1}, []int64{-1 << 62}, []int64{1}, []int64{-1}},
		{[]int64{10}, []int64{20}, []int64{0}, nil},
		{[]int64{2, 1}, []int64{3, 5}, []int64{2, 0}, []int64{1, 3}},
	}
	for _, dt := range moveTypes {
		for ci, c := range cases {
			axes := c.axes
			if axes == nil {
				axes = []int64{0, 1, 2}[:len(c.starts)]
			}
			steps := c.steps
			if steps == nil {
				steps = []int64{1, 1, 1}[:len(c.starts)]
			}
			first := []int64{0, 0, 0}
			step := []int64{1, 1, 1}
			ys := append([]int64(nil), shape...)
			for i, a := range axes {
				a = (a + 3) % 3
				// ONNX's rule, walked index by index: negative indices
				// count from the end, then clamp to [0, d] for positive
				// steps and [-1, d-1] for negative ones.
				d := shape[a]
				var loop []int64
				if steps[i] > 0 {
					for j := clamp(adj(c.starts[i], d), 0, d); j < clamp(adj(c.ends[i], d), 0, d); j += steps[i] {
						loop = append(loop, j)
					}
				} else {
					for j := clamp(adj(c.starts[i], d), 0, d-1); j > clamp(adj(c.ends[i], d), -1, d-1); j += steps[i] {
						loop = append(loop, j)
					}
				}
				f := int64(0)
				if len(loop) > 0 {
					f = loop[0]
				}
				first[a], step[a], ys[a] = f, steps[i], int64(len(loop))
			}
			tg := newTGraph(13)
			ins := []ir.TensorID{tg.input("x", dt, shape...),
				tg.constant("s", ir.Int64, i64Bytes(c.starts), int64(len(c.starts))),
				tg.constant("e", ir.Int64, i64Bytes(c.ends), int64(len(c.ends)))}
			if c.axes != nil {
				ins = append(ins, tg.constant("a", ir.Int64, i64Bytes(c.axes), int64(len(c.axes))))
			} else if c.steps != nil {
				ins = append(ins, ir.NoTensor)
			}
			if c.steps != nil {
				ins = append(ins, tg.constant("st", ir.Int64, i64Bytes(c.steps), int64(len(c.steps))))
			}
			n := tg.node("Slice", nil, ins, out{dt, ys})
			in := seqBytes(elems(shape), dt)
			got := exec(t, tg.g, n, 2, in)[0]
			xst := strides(shape)
			checkMoved(t, fmt.Sprintf("%s case %d", dt, ci), got, in, dt, elems(ys), func(i int64) int64 {
				idx := unravel(i, ys)
				var j int64
				for d := range idx {
					j += (first[d] + idx[d]*step[d]) * xst[d]
				}
				return j
			})
		}
	}
}

func adj(v, d int64) int64 {
	if v < 0 {
		return v + d
	}
	return v
}

func TestGather(t *testing.T) {
	shape := []int64{4, 5, 3}
	cases := []struct {
		axis   int64
		idx    []int64
		ishape []int64
	}{
		{0, []int64{3, 0, -1, 2}, []int64{2, 2}},
		{1, []int64{4, -5, 2}, []int64{3}},
		{-1, []int64{1}, []int64{}},
		{2, []int64{0, 2, 1, 1, 0, 2}, []int64{3, 2}},
		{0, []int64{7, -9, 1}, []int64{3}}, // out of range: zeros
	}
	for _, dt := range moveTypes {
		for _, idt := range []ir.DType{ir.Int64, ir.Int32} {
			for ci, c := range cases {
				axis := (c.axis + 3) % 3
				ys := append(append(append([]int64(nil), shape[:axis]...), c.ishape...), shape[axis+1:]...)
				tg := newTGraph(13)
				n := tg.node("Gather", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: c.axis}},
					[]ir.TensorID{tg.input("x", dt, shape...), tg.input("i", idt, c.ishape...)}, out{dt, ys})
				in := seqBytes(elems(shape), dt)
				got := exec(t, tg.g, n, 1, in, encodeInts(c.idx, idt))[0]
				xst := strides(shape)
				ni := int64(len(c.ishape))
				checkMoved(t, fmt.Sprintf("%s/%s case %d", dt, idt, ci), got, in, dt, elems(ys), func(i int64) int64 {
					idx := unravel(i, ys)
					k := c.idx[bcastIndex(idx[axis:axis+ni], c.ishape)]
					if k < 0 {
						k += shape[axis]
					}
					if k < 0 || k >= shape[axis] {
						return -1
					}
					var j int64
					for d := int64(0); d < axis; d++ {
						j += idx[d] * xst[d]
					}
					j += k * xst[axis]
					for d := axis + 1; d < 3; d++ {
						j += idx[d-1+ni] * xst[d]
					}
					return j
				})
			}
		}
	}
}

func TestConcatSplit(t *testing.T) {
	shapes := [][]int64{{2, 3, 4}, {2, 0, 4}, {2, 5, 4}, {2, 1, 4}}
	for _, dt := range moveTypes {
		for _, axis := range []int64{1, -2} {
			tg := newTGraph(13)
			var ins []ir.TensorID
			var feeds, data [][]byte
			total := int64(0)
			for i, s := range shapes {
				ins = append(ins, tg.input(fmt.Sprint("x", i), dt, s...))
				b := seqBytes(elems(s), dt)
				for j := range b {
					b[j] += byte(i * 7)
				}
				feeds, data = append(feeds, b), append(data, b)
				total += s[1]
			}
			ys := []int64{2, total, 4}
			n := tg.node("Concat", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: axis}}, ins, out{dt, ys})
			got := exec(t, tg.g, n, 1, feeds...)[0]
			// Reference: concatenate per outer index.
			var want []byte
			es := int64(dt.Size())
			for o := int64(0); o < 2; o++ {
				for i, s := range shapes {
					blk := s[1] * 4 * es
					want = append(want, data[i][o*blk:(o+1)*blk]...)
				}
			}
			if string(got) != string(want) {
				t.Fatalf("Concat %s axis %d differs", dt, axis)
			}
			// Split the result back, split sizes from the outputs.
			tg = newTGraph(13)
			var outs []out
			for _, s := range shapes {
				outs = append(outs, out{dt, s})
			}
			sn := tg.node("Split", ir.Attrs{"axis": {Kind: ir.AttrInt, Int: axis}}, []ir.TensorID{tg.input("y", dt, ys...)}, outs...)
			parts := exec(t, tg.g, sn, 1, want)
			for i := range shapes {
				if string(parts[i]) != string(data[i]) {
					t.Fatalf("Split %s axis %d part %d differs", dt, axis, i)
				}
			}
		}
	}
}

func TestExpand(t *testing.T) {
	cases := []struct{ in, out []int64 }{
		{[]int64{3, 1}, []int64{2, 3, 4}},
		{[]int64{}, []int64{5}},
		{[]int64{1, 4}, []int64{3, 4}},
		{[]int64{2, 1, 3}, []int64{2, 5, 3}},
		{[]int64{3}, []int64{3}},
	}
	for _, dt := range moveTypes {
		for _, c := range cases {
			tg := newTGraph(13)
			sh := tg.constant("shape", ir.Int64, i64Bytes(c.out), int64(len(c.out)))
			n := tg.node("Expand", nil, []ir.TensorID{tg.input("x", dt, c.in...), sh}, out{dt, c.out})
			in := seqBytes(elems(c.in), dt)
			got := exec(t, tg.g, n, 2, in)[0]
			checkMoved(t, fmt.Sprint("Expand ", dt, c), got, in, dt, elems(c.out), func(i int64) int64 {
				return bcastIndex(unravel(i, c.out), c.in)
			})
		}
	}
}

func TestPad(t *testing.T) {
	shape := []int64{3, 4, 5}
	cases := []struct {
		mode string
		pads []int64
	}{
		{"constant", []int64{1, 0, 2, 0, 3, 1}},
		{"constant", []int64{0, -1, 1, -1, 2, -2}},
		{"edge", []int64{2, 1, 0, 1, 3, 2}},
		{"reflect", []int64{2, 3, 1, 2, 3, 4}},
		{"reflect", []int64{0, 0, 8, 0, 0, 9}},
		{"edge", []int64{0, -1, 0, 0, 1, -2}},
	}
	for _, dt := range moveTypes {
		for ci, c := range cases {
			for _, valueIn := range []bool{false, true} {
				ys := make([]int64, 3)
				for i := range ys {
					ys[i] = shape[i] + c.pads[i] + c.pads[3+i]
				}
				tg := newTGraph(13)
				ins := []ir.TensorID{tg.input("x", dt, shape...), tg.constant("pads", ir.Int64, i64Bytes(c.pads), 6)}
				feeds := [][]byte{seqBytes(elems(shape), dt)}
				cv := encodeAny([]int64{99}, dt)
				if valueIn {
					ins = append(ins, tg.input("v", dt))
					feeds = append(feeds, cv)
				} else {
					cv = make([]byte, dt.Size())
				}
				n := tg.node("Pad", ir.Attrs{"mode": {Kind: ir.AttrString, String: c.mode}}, ins, out{dt, ys})
				got := exec(t, tg.g, n, 2, feeds...)[0]
				in := feeds[0]
				xst := strides(shape)
				for i := int64(0); i < elems(ys); i++ {
					idx := unravel(i, ys)
					var j int64
					constant := false
					for d := range idx {
						s := idx[d] - c.pads[d]
						n := shape[d]
						for s < 0 || s >= n {
							switch c.mode {
							case "edge":
								s = max(0, min(s, n-1))
							case "reflect":
								if s < 0 {
									s = -s
								} else {
									s = 2*(n-1) - s
								}
							default:
								constant = true
							}
							if constant {
								break
							}
						}
						j += s * xst[d]
					}
					want := string(cv)
					if !constant {
						want = elemAt(in, j, dt)
					}
					if g := elemAt(got, i, dt); g != want {
						t.Fatalf("%s case %d (value input %v): element %d = %x, want %x", dt, ci, valueIn, i, g, want)
					}
				}
			}
		}
	}
}

func TestViews(t *testing.T) {
	for _, op := range []string{"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"} {
		tg := newTGraph(13)
		ins := []ir.TensorID{tg.input("x", ir.Float32, 2, 1, 6)}
		if op == "Reshape" {
			ins = append(ins, tg.constant("s", ir.Int64, i64Bytes([]int64{3, 4}), 2))
		}
		outs := []out{{ir.Float32, []int64{3, 4}}}
		if op == "Dropout" {
			outs = append(outs, out{ir.Bool, []int64{3, 4}})
		}
		n := tg.node(op, nil, ins, outs...)
		x := randF32(12)
		got := exec(t, tg.g, n, 1, f32Bytes(x))
		near(t, op, asF32(got[0]), widen(x), 0, 0)
		if op == "Dropout" && string(got[1]) != string([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}) {
			t.Errorf("Dropout mask = %v", got[1])
		}
		near(t, op+" aliased", asF32(execAliased(t, tg.g, n, 1, 0, f32Bytes(x))), widen(x), 0, 0)
	}
}

func TestShapeValues(t *testing.T) {
	tg := newTGraph(15)
	x := tg.input("x", ir.Float32, 2, 3, 4, 5)
	for _, c := range []struct {
		start, end *int64
		want       []int64
	}{
		{nil, nil, []int64{2, 3, 4, 5}},
		{ptr(1), nil, []int64{3, 4, 5}},
		{ptr(-3), ptr(-1), []int64{3, 4}},
		{ptr(3), ptr(1), []int64{}},
	} {
		attrs := ir.Attrs{}
		if c.start != nil {
			attrs["start"] = ir.Attr{Kind: ir.AttrInt, Int: *c.start}
		}
		if c.end != nil {
			attrs["end"] = ir.Attr{Kind: ir.AttrInt, Int: *c.end}
		}
		n := tg.node("Shape", attrs, []ir.TensorID{x}, out{ir.Int64, []int64{int64(len(c.want))}})
		got := asI64(exec(t, tg.g, n, 1, make([]byte, 480))[0])
		if fmt.Sprint(got) != fmt.Sprint(c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("Shape %v..%v = %v, want %v", c.start, c.end, got, c.want)
		}
	}
	// ConstantOfShape with and without a value.
	tg = newTGraph(13)
	sh := tg.constant("s", ir.Int64, i64Bytes([]int64{2, 3}), 2)
	n := tg.node("ConstantOfShape", ir.Attrs{"value": {Kind: ir.AttrTensor, Tensor: &ir.Tensor{DType: ir.Int64, Shape: ir.Shape{1}, Data: i64Bytes([]int64{7})}}}, []ir.TensorID{sh}, out{ir.Int64, []int64{2, 3}})
	if got := asI64(exec(t, tg.g, n, 1)[0]); fmt.Sprint(got) != "[7 7 7 7 7 7]" {
		t.Errorf("ConstantOfShape = %v", got)
	}
	n = tg.node("ConstantOfShape", nil, []ir.TensorID{sh}, out{ir.Float32, []int64{2, 3}})
	near(t, "ConstantOfShape default", asF32(exec(t, tg.g, n, 1)[0]), make([]float64, 6), 0, 0)
	// Range, floats and integers.
	tg = newTGraph(13)
	n = tg.node("Range", nil, []ir.TensorID{tg.input("a", ir.Float32), tg.input("b", ir.Float32), tg.input("c", ir.Float32)}, out{ir.Float32, []int64{4}})
	near(t, "Range", asF32(exec(t, tg.g, n, 1, f32Bytes([]float32{1}), f32Bytes([]float32{3}), f32Bytes([]float32{0.5}))[0]), []float64{1, 1.5, 2, 2.5}, 0, 0)
	n = tg.node("Range", nil, []ir.TensorID{tg.input("a", ir.Int64), tg.input("b", ir.Int64), tg.input("c", ir.Int64)}, out{ir.Int64, []int64{3}})
	if got := asI64(exec(t, tg.g, n, 1, i64Bytes([]int64{10}), i64Bytes([]int64{4}), i64Bytes([]int64{-3}))[0]); fmt.Sprint(got) != "[10 7 4]" {
		t.Errorf("Range int64 = %v", got)
	}
	// Constant.
	n = tg.node("Constant", ir.Attrs{"value_floats": {Kind: ir.AttrFloats, Floats: []float32{1, 2}}}, nil, out{ir.Float32, []int64{2}})
	near(t, "Constant", asF32(exec(t, tg.g, n, 1)[0]), []float64{1, 2}, 0, 0)
}
