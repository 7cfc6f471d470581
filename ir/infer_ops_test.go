package ir

import "testing"

func TestInferOps(t *testing.T) {
	i := func(v int64) Attr { return Attr{Kind: AttrInt, Int: v} }
	is := func(v ...int64) Attr { return Attr{Kind: AttrInts, Ints: v} }
	s := func(v string) Attr { return Attr{Kind: AttrString, String: v} }
	i64 := func(dims ...int64) in { return act(Int64, dims...) }
	runInferCases(t, []inferCase{
		{name: "legacy broadcast along the trailing axes", op: "Add", opset: 6, attrs: Attrs{"broadcast": i(1), "axis": i(1)},
			inputs: []in{f32(2, 3), f32(3)}, want: f(2, 3)},
		{name: "legacy broadcast along a leading axis", op: "Add", opset: 6, attrs: Attrs{"broadcast": i(1), "axis": i(0)},
			inputs: []in{f32(2, 3), f32(2)}, err: "legacy broadcasting"},
		{name: "legacy PRelu slope per channel", op: "PRelu", opset: 6, inputs: []in{f32(2, 3, 4), f32(3)}, want: f(2, 3, 4)},
		{name: "ArgMax drops the axis", op: "ArgMax", attrs: Attrs{"axis": i(1), "keepdims": i(0)},
			inputs: []in{f32(2, 3, 4)}, want: []Type{ty(Int64, 2, 4)}},
		{name: "ConvTranspose with output padding", op: "ConvTranspose", attrs: Attrs{"strides": is(2, 2), "output_padding": is(1, 1)},
			inputs: []in{f32(1, 2, 3, 3), f32(2, 4, 3, 3)}, want: f(1, 4, 8, 8)},
		{name: "Resize by sizes", op: "Resize", inputs: []in{f32(1, 1, 2, 2), none, none, ints(1, 1, 4, 6)}, want: f(1, 1, 4, 6)},
		{name: "Resize needs constant scales", op: "Resize", inputs: []in{f32(1, 1, 2, 2), none, f32(4)}, err: "must be a constant"},
		{name: "TopK", op: "TopK", attrs: Attrs{"axis": i(0)}, outputs: 2, inputs: []in{f32(5, 2), ints(3)},
			want: []Type{ty(Float32, 3, 2), ty(Int64, 3, 2)}},
		{name: "GatherND with batch dims", op: "GatherND", attrs: Attrs{"batch_dims": i(1)}, inputs: []in{f32(2, 3, 4), i64(2, 1)},
			want: f(2, 4)},
		{name: "Einsum matmul", op: "Einsum", attrs: Attrs{"equation": s("bij,bjk->bik")}, inputs: []in{f32(2, 3, 4), f32(2, 4, 5)},
			want: f(2, 3, 5)},
		{name: "Einsum implicit output", op: "Einsum", attrs: Attrs{"equation": s("ij,jk")}, inputs: []in{f32(3, 4), f32(4, 5)},
			want: f(3, 5)},
		{name: "Einsum ellipsis diagonal", op: "Einsum", attrs: Attrs{"equation": s("...ii->...i")}, inputs: []in{f32(2, 3, 3)},
			want: f(2, 3)},
		{name: "LSTM outputs", op: "LSTM", attrs: Attrs{"hidden_size": i(5), "direction": s("bidirectional")}, outputs: 3,
			inputs: []in{f32(7, 2, 3), f32(2, 20, 3), f32(2, 20, 5)},
			want:   []Type{ty(Float32, 7, 2, 2, 5), ty(Float32, 2, 2, 5), ty(Float32, 2, 2, 5)}},
		{name: "NonZero needs a constant", op: "NonZero", inputs: []in{f32(3)}, err: "must be a constant"},
		{name: "Compress by a constant condition", op: "Compress", attrs: Attrs{"axis": i(1)},
			inputs: []in{f32(2, 3), {dt: Bool, shape: Shape{3}, data: []byte{1, 0, 1}}}, want: f(2, 2)},
	})
}
