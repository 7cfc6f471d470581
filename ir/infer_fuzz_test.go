package ir

import (
	"math"
	"slices"
	"testing"
)

// fuzzReader hands out values from the fuzzer's bytes (zeros once they run
// out).
type fuzzReader struct{ b []byte }

func (r *fuzzReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// int returns a small or extreme integer.
func (r *fuzzReader) int() int64 {
	c := r.byte()
	switch c {
	case 250:
		return math.MaxInt64
	case 251:
		return math.MinInt64
	case 252:
		return 1 << 40
	case 253:
		return -(1 << 40)
	case 254:
		return 1 << 62
	}
	return int64(c%16) - 4
}

func (r *fuzzReader) ints() []int64 {
	v := make([]int64, r.byte()%6)
	for i := range v {
		v[i] = r.int()
	}
	return v
}

var fuzzAttrs = []string{"axis", "axes", "perm", "pads", "strides", "dilations", "kernel_shape", "group",
	"split", "starts", "ends", "transA", "transB", "allowzero", "keepdims", "noop_with_empty_axes", "to",
	"auto_pad", "ceil_mode", "start", "end", "mode", "value", "stash_type", "training_mode", "storage_order"}

var fuzzStrings = []string{"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", "constant", "reflect", "edge", "wrap", ""}

// FuzzInfer runs every shape rule on nodes with arbitrary input shapes,
// constants and attributes: it must return types or an error, never panic,
// and every shape it returns must be valid.
func FuzzInfer(f *testing.F) {
	f.Add([]byte{0, 2, 1, 4, 1, 3, 8, 8, 1, 4, 4, 3, 3, 3})
	f.Add([]byte{5, 3, 7, 2, 2, 3, 0, 8, 1, 2, 0, 255, 1, 1, 9})
	ops := make([]string, 0, len(inferers))
	for op := range inferers {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	dtypes := []DType{Float32, Int64, Bool, Float16, Int32, Uint8}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &fuzzReader{b: data}
		g := &Graph{Opsets: map[string]int64{"": 7 + int64(r.byte()%11)}}
		n := Node{Name: "n", Op: ops[int(r.byte())%len(ops)], Attrs: Attrs{}}
		for i := int(r.byte() % 6); i > 0; i-- {
			if r.byte()%8 == 0 {
				n.Inputs = append(n.Inputs, NoTensor)
				continue
			}
			dt := dtypes[int(r.byte())%len(dtypes)]
			shape := make(Shape, r.byte()%5)
			for j := range shape {
				shape[j] = int64(r.byte() % 9)
			}
			var bytes []byte
			if r.byte()%2 == 0 {
				if dt == Int64 && shape.Rank() <= 1 {
					v := make([]int64, shape.Elements())
					for k := range v {
						v[k] = r.int()
					}
					bytes = Int64Bytes(v)
				} else {
					bytes = make([]byte, shape.Bytes(dt))
				}
			}
			n.Inputs = append(n.Inputs, g.NewTensor("in", dt, shape, bytes))
		}
		for i := int(r.byte() % 5); i > 0; i-- {
			name := fuzzAttrs[int(r.byte())%len(fuzzAttrs)]
			switch r.byte() % 4 {
			case 0:
				n.Attrs[name] = Attr{Kind: AttrInt, Int: r.int()}
			case 1:
				n.Attrs[name] = Attr{Kind: AttrInts, Ints: r.ints()}
			case 2:
				n.Attrs[name] = Attr{Kind: AttrString, String: fuzzStrings[int(r.byte())%len(fuzzStrings)]}
			case 3:
				dims := Shape(r.ints())
				for k := range dims {
					dims[k] &= 3
				}
				tt := &Tensor{DType: Float32, Shape: dims, Data: make([]byte, dims.Bytes(Float32))}
				n.Attrs[name] = Attr{Kind: AttrTensor, Tensor: tt}
			}
		}
		for i := int(r.byte()%4) + 1; i > 0; i-- {
			n.Outputs = append(n.Outputs, g.AddTensor(Tensor{Name: "out", Producer: 0}))
		}
		g.Nodes = []Node{n}
		types, err := Infer(g, &g.Nodes[0])
		if err != nil {
			return
		}
		for _, ty := range types {
			if err := ty.Shape.Validate(); err != nil || !ty.DType.Valid() {
				t.Fatalf("%s gave invalid output %s%v: %v", n.Op, ty.DType, ty.Shape, err)
			}
		}
	})
}
