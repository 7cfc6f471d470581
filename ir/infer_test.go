package ir

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestInferConv(t *testing.T) {
	runInferCases(t, []inferCase{
		{name: "same size with pads", op: "Conv", attrs: Attrs{"pads": {Kind: AttrInts, Ints: []int64{1, 1, 1, 1}}},
			inputs: []in{f32(1, 3, 32, 32), constOf(Float32, 16, 3, 3, 3)}, want: f(1, 16, 32, 32)},
		{name: "stride 2", op: "Conv", attrs: Attrs{"pads": {Kind: AttrInts, Ints: []int64{1, 1, 1, 1}}, "strides": {Kind: AttrInts, Ints: []int64{2, 2}}},
			// floor((32 + 2 - 3) / 2) + 1 = 16
			inputs: []in{f32(1, 3, 32, 32), constOf(Float32, 16, 3, 3, 3), constOf(Float32, 16)}, want: f(1, 16, 16, 16)},
		{name: "dilation", op: "Conv", attrs: Attrs{"dilations": {Kind: AttrInts, Ints: []int64{2, 1}}},
			// height: 32 - ((3-1)*2+1) + 1 = 28; width: 32 - 3 + 1 = 30
			inputs: []in{f32(1, 3, 32, 32), constOf(Float32, 4, 3, 3, 3)}, want: f(1, 4, 28, 30)},
		{name: "asymmetric pads", op: "Conv", attrs: Attrs{"pads": {Kind: AttrInts, Ints: []int64{0, 1, 2, 0}}},
			inputs: []in{f32(1, 1, 5, 5), constOf(Float32, 1, 1, 3, 3)}, want: f(1, 1, 5, 4)},
		{name: "depthwise", op: "Conv", attrs: Attrs{"group": {Kind: AttrInt, Int: 3}},
			inputs: []in{f32(1, 3, 8, 8), constOf(Float32, 3, 1, 3, 3)}, want: f(1, 3, 6, 6)},
		{name: "grouped", op: "Conv", attrs: Attrs{"group": {Kind: AttrInt, Int: 2}},
			inputs: []in{f32(2, 4, 8, 8), constOf(Float32, 6, 2, 1, 1)}, want: f(2, 6, 8, 8)},
		{name: "same upper", op: "Conv", attrs: Attrs{"auto_pad": {Kind: AttrString, String: "SAME_UPPER"}, "strides": {Kind: AttrInts, Ints: []int64{2, 2}}},
			inputs: []in{f32(1, 1, 7, 8), constOf(Float32, 2, 1, 3, 3)}, want: f(1, 2, 4, 4)},
		{name: "same lower", op: "Conv", attrs: Attrs{"auto_pad": {Kind: AttrString, String: "SAME_LOWER"}},
			inputs: []in{f32(1, 1, 7, 8), constOf(Float32, 2, 1, 4, 4)}, want: f(1, 2, 7, 8)},
		{name: "valid", op: "Conv", attrs: Attrs{"auto_pad": {Kind: AttrString, String: "VALID"}, "strides": {Kind: AttrInts, Ints: []int64{2, 2}}, "pads": {Kind: AttrInts, Ints: []int64{5, 5, 5, 5}}},
			inputs: []in{f32(1, 1, 7, 8), constOf(Float32, 2, 1, 3, 3)}, want: f(1, 2, 3, 3)},
		{name: "1-D", op: "Conv", inputs: []in{f32(2, 4, 10), constOf(Float32, 8, 4, 3)}, want: f(2, 8, 8)},
		{name: "3-D", op: "Conv", attrs: Attrs{"kernel_shape": {Kind: AttrInts, Ints: []int64{1, 2, 3}}},
			inputs: []in{f32(1, 2, 4, 5, 6), constOf(Float32, 3, 2, 1, 2, 3)}, want: f(1, 3, 4, 4, 4)},
		{name: "channel mismatch", op: "Conv", inputs: []in{f32(1, 3, 8, 8), constOf(Float32, 4, 2, 3, 3)}, err: "has 3 channels"},
		{name: "groups do not divide", op: "Conv", attrs: Attrs{"group": {Kind: AttrInt, Int: 2}},
			inputs: []in{f32(1, 4, 8, 8), constOf(Float32, 3, 2, 3, 3)}, err: "do not divide into 2 groups"},
		{name: "bad bias", op: "Conv", inputs: []in{f32(1, 3, 8, 8), constOf(Float32, 4, 3, 3, 3), constOf(Float32, 3)}, err: "bias"},
		{name: "kernel too large", op: "Conv", inputs: []in{f32(1, 1, 2, 2), constOf(Float32, 1, 1, 3, 3)}, err: "exceeds the padded input"},
		{name: "kernel_shape mismatch", op: "Conv", attrs: Attrs{"kernel_shape": {Kind: AttrInts, Ints: []int64{2, 2}}},
			inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 3, 3)}, err: "kernel_shape"},
		{name: "bad auto_pad", op: "Conv", attrs: Attrs{"auto_pad": {Kind: AttrString, String: "SAME"}},
			inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 3, 3)}, err: "auto_pad"},
		{name: "zero stride", op: "Conv", attrs: Attrs{"strides": {Kind: AttrInts, Ints: []int64{0, 1}}},
			inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 3, 3)}, err: "strides"},
		{name: "huge dilation", op: "Conv", attrs: Attrs{"dilations": {Kind: AttrInts, Ints: []int64{1 << 40, 1 << 40}}},
			inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 1<<30, 3)}, err: "too large"},
		{name: "negative pad", op: "Conv", attrs: Attrs{"pads": {Kind: AttrInts, Ints: []int64{-1, 0, 0, 0}}},
			inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 3, 3)}, err: "pads"},
		{name: "rank mismatch", op: "Conv", inputs: []in{f32(1, 1, 8, 8), constOf(Float32, 1, 1, 3)}, err: "want rank 4"},
		{name: "int input", op: "Conv", inputs: []in{act(Int64, 1, 1, 8, 8), constOf(Int64, 1, 1, 3, 3)}, err: "floating-point"},
	})
}

func TestSpatialWindowPads(t *testing.T) {
	tests := []struct {
		autoPad  string
		in, k, s int64
		pads     []int64
		out      int64
	}{
		{"SAME_UPPER", 7, 3, 2, []int64{1, 1}, 4},
		{"SAME_UPPER", 8, 3, 2, []int64{0, 1}, 4},
		{"SAME_LOWER", 8, 3, 2, []int64{1, 0}, 4},
		{"SAME_UPPER", 8, 4, 1, []int64{1, 2}, 8},
		{"SAME_LOWER", 8, 4, 1, []int64{2, 1}, 8},
		{"VALID", 8, 4, 1, []int64{0, 0}, 5},
		{"NOTSET", 8, 4, 1, []int64{0, 0}, 5},
	}
	for _, tt := range tests {
		c := inferCase{op: "MaxPool", attrs: Attrs{
			"auto_pad":     {Kind: AttrString, String: tt.autoPad},
			"kernel_shape": {Kind: AttrInts, Ints: []int64{tt.k}},
			"strides":      {Kind: AttrInts, Ints: []int64{tt.s}},
		}, inputs: []in{f32(1, 1, tt.in)}}
		g, n := c.build()
		w, err := SpatialWindow(g, n)
		if err != nil {
			t.Fatalf("%+v: %v", tt, err)
		}
		if !Shape(w.Pads).Equal(tt.pads) || w.Out[0] != tt.out {
			t.Errorf("%+v: pads %v out %v, want %v %d", tt, w.Pads, w.Out, tt.pads, tt.out)
		}
	}
}

func TestInferPool(t *testing.T) {
	k := func(v ...int64) Attr { return Attr{Kind: AttrInts, Ints: v} }
	runInferCases(t, []inferCase{
		{name: "resnet stem", op: "MaxPool", attrs: Attrs{"kernel_shape": k(3, 3), "strides": k(2, 2), "pads": k(1, 1, 1, 1)},
			inputs: []in{f32(1, 64, 32, 32)}, want: f(1, 64, 16, 16)},
		{name: "floor mode", op: "MaxPool", attrs: Attrs{"kernel_shape": k(3), "strides": k(2)},
			inputs: []in{f32(1, 1, 6)}, want: f(1, 1, 2)},
		{name: "ceil mode", op: "MaxPool", attrs: Attrs{"kernel_shape": k(3), "strides": k(2), "ceil_mode": {Kind: AttrInt, Int: 1}},
			inputs: []in{f32(1, 1, 6)}, want: f(1, 1, 3)},
		{name: "ceil mode drops a window starting in the padding", op: "MaxPool",
			attrs:  Attrs{"kernel_shape": k(2), "strides": k(2), "pads": k(1, 1), "ceil_mode": {Kind: AttrInt, Int: 1}},
			inputs: []in{f32(1, 1, 5)}, want: f(1, 1, 3)},
		{name: "dilations", op: "MaxPool", attrs: Attrs{"kernel_shape": k(3), "dilations": k(2)},
			inputs: []in{f32(1, 1, 10)}, want: f(1, 1, 6)},
		{name: "storage order", op: "MaxPool", attrs: Attrs{"kernel_shape": k(2, 2), "storage_order": {Kind: AttrInt, Int: 1}},
			inputs: []in{f32(1, 1, 4, 4)}, want: f(1, 1, 3, 3)},
		{name: "indices requested", op: "MaxPool", attrs: Attrs{"kernel_shape": k(2, 2)}, outputs: 2,
			inputs: []in{f32(1, 1, 4, 4)}, want: []Type{ty(Float32, 1, 1, 3, 3), ty(Int64, 1, 1, 3, 3)}},
		{name: "no kernel_shape", op: "MaxPool", inputs: []in{f32(1, 1, 4, 4)}, err: "kernel_shape"},
		{name: "average", op: "AveragePool", attrs: Attrs{"kernel_shape": k(2, 2), "strides": k(2, 2), "count_include_pad": {Kind: AttrInt, Int: 1}},
			inputs: []in{f32(2, 3, 8, 9)}, want: f(2, 3, 4, 4)},
		{name: "average ceil", op: "AveragePool", attrs: Attrs{"kernel_shape": k(2, 2), "strides": k(2, 2), "ceil_mode": {Kind: AttrInt, Int: 1}},
			inputs: []in{f32(2, 3, 8, 9)}, want: f(2, 3, 4, 5)},
		{name: "global", op: "GlobalAveragePool", inputs: []in{f32(2, 3, 8, 9)}, want: f(2, 3, 1, 1)},
		{name: "global 1-D", op: "GlobalAveragePool", inputs: []in{f32(2, 3, 8)}, want: f(2, 3, 1)},
		{name: "global rank 2", op: "GlobalAveragePool", inputs: []in{f32(2, 3)}, err: "rank 3"},
	})
}

func TestInferNormalization(t *testing.T) {
	p := constOf(Float32, 3)
	runInferCases(t, []inferCase{
		{name: "batchnorm", op: "BatchNormalization", inputs: []in{f32(2, 3, 4, 4), p, p, p, p}, want: f(2, 3, 4, 4)},
		{name: "batchnorm 2-D", op: "BatchNormalization", inputs: []in{f32(2, 3), p, p, p, p}, want: f(2, 3)},
		{name: "batchnorm wrong params", op: "BatchNormalization", inputs: []in{f32(2, 4, 4, 4), p, p, p, p}, err: "want [4]"},
		{name: "batchnorm training", op: "BatchNormalization", attrs: Attrs{"training_mode": {Kind: AttrInt, Int: 1}}, outputs: 3,
			inputs: []in{f32(2, 3, 4, 4), p, p, p, p}, want: []Type{ty(Float32, 2, 3, 4, 4), ty(Float32, 3), ty(Float32, 3)}},
		{name: "batchnorm statistics requested", op: "BatchNormalization", outputs: 3,
			inputs: []in{f32(2, 3, 4, 4), p, p, p, p}, err: "not supported"},
		{name: "layernorm", op: "LayerNormalization", inputs: []in{f32(2, 5, 8), constOf(Float32, 8), constOf(Float32, 8)},
			want: f(2, 5, 8)},
		{name: "layernorm all outputs", op: "LayerNormalization", outputs: 3, inputs: []in{f32(2, 5, 8), constOf(Float32, 8)},
			want: []Type{ty(Float32, 2, 5, 8), ty(Float32, 2, 5, 1), ty(Float32, 2, 5, 1)}},
		{name: "layernorm axis 1", op: "LayerNormalization", outputs: 2, attrs: Attrs{"axis": {Kind: AttrInt, Int: 1}},
			inputs: []in{act(Float16, 2, 5, 8), constOf(Float16, 5, 8), constOf(Float16, 1)},
			want:   []Type{ty(Float16, 2, 5, 8), ty(Float32, 2, 1, 1)}},
		{name: "layernorm bad scale", op: "LayerNormalization", inputs: []in{f32(2, 5, 8), constOf(Float32, 5)}, err: "scale"},
		{name: "layernorm too many outputs", op: "LayerNormalization", outputs: 4, inputs: []in{f32(2, 5, 8), constOf(Float32, 8)}, err: "output 3"},
		{name: "softmax", op: "Softmax", inputs: []in{f32(2, 5)}, want: f(2, 5)},
		{name: "softmax axis", op: "Softmax", attrs: Attrs{"axis": {Kind: AttrInt, Int: -2}}, inputs: []in{f32(2, 5)}, want: f(2, 5)},
		{name: "softmax bad axis", op: "Softmax", attrs: Attrs{"axis": {Kind: AttrInt, Int: 2}}, inputs: []in{f32(2, 5)}, err: "axis 2"},
		{name: "softmax opset 11 default axis 1", op: "Softmax", opset: 11, inputs: []in{f32(5)}, err: "axis 1 out of range"},
		{name: "softmax opset 13 default axis -1", op: "Softmax", opset: 13, inputs: []in{f32(5)}, want: f(5)},
	})
}

func TestInferMatrix(t *testing.T) {
	one := Attr{Kind: AttrInt, Int: 1}
	runInferCases(t, []inferCase{
		{name: "gemm", op: "Gemm", inputs: []in{f32(4, 3), constOf(Float32, 3, 5)}, want: f(4, 5)},
		{name: "gemm transA", op: "Gemm", attrs: Attrs{"transA": one}, inputs: []in{f32(3, 4), constOf(Float32, 3, 5)}, want: f(4, 5)},
		{name: "gemm transB with bias", op: "Gemm", attrs: Attrs{"transB": one},
			inputs: []in{f32(4, 3), constOf(Float32, 5, 3), constOf(Float32, 5)}, want: f(4, 5)},
		{name: "gemm column bias", op: "Gemm", inputs: []in{f32(4, 3), constOf(Float32, 3, 5), constOf(Float32, 4, 1)}, want: f(4, 5)},
		{name: "gemm scalar bias", op: "Gemm", inputs: []in{f32(4, 3), constOf(Float32, 3, 5), constOf(Float32)}, want: f(4, 5)},
		{name: "gemm bad bias", op: "Gemm", inputs: []in{f32(4, 3), constOf(Float32, 3, 5), constOf(Float32, 3)}, err: "does not broadcast"},
		{name: "gemm inner mismatch", op: "Gemm", inputs: []in{f32(4, 3), constOf(Float32, 4, 5)}, err: "inner dimensions"},
		{name: "gemm rank 3", op: "Gemm", inputs: []in{f32(2, 4, 3), constOf(Float32, 3, 5)}, err: "matrix"},
		{name: "matmul", op: "MatMul", inputs: []in{f32(3, 4), f32(4, 5)}, want: f(3, 5)},
		{name: "matmul vector left", op: "MatMul", inputs: []in{f32(4), f32(4, 5)}, want: f(5)},
		{name: "matmul vector right", op: "MatMul", inputs: []in{f32(3, 4), f32(4)}, want: f(3)},
		{name: "matmul dot", op: "MatMul", inputs: []in{f32(4), f32(4)}, want: f()},
		{name: "matmul batched broadcast", op: "MatMul", inputs: []in{f32(2, 1, 3, 4), f32(5, 4, 6)}, want: f(2, 5, 3, 6)},
		{name: "matmul batched vector", op: "MatMul", inputs: []in{f32(4), f32(2, 4, 6)}, want: f(2, 6)},
		{name: "matmul batched times vector", op: "MatMul", inputs: []in{f32(2, 3, 4), f32(4)}, want: f(2, 3)},
		{name: "matmul inner mismatch", op: "MatMul", inputs: []in{f32(3, 4), f32(5, 6)}, err: "inner dimensions"},
		{name: "matmul batch mismatch", op: "MatMul", inputs: []in{f32(2, 3, 4), f32(3, 4, 6)}, err: "batch"},
		{name: "matmul scalar", op: "MatMul", inputs: []in{f32(), f32(4)}, err: "rank 1"},
		{name: "matmul types", op: "MatMul", inputs: []in{f32(3, 4), act(Float16, 4, 5)}, err: "differ in type"},
		{name: "flatten", op: "Flatten", inputs: []in{f32(2, 3, 4)}, want: f(2, 12)},
		{name: "flatten axis 0", op: "Flatten", attrs: Attrs{"axis": {Kind: AttrInt, Int: 0}}, inputs: []in{f32(2, 3, 4)}, want: f(1, 24)},
		{name: "flatten axis rank", op: "Flatten", attrs: Attrs{"axis": {Kind: AttrInt, Int: 3}}, inputs: []in{f32(2, 3, 4)}, want: f(24, 1)},
		{name: "flatten negative axis", op: "Flatten", attrs: Attrs{"axis": {Kind: AttrInt, Int: -1}}, inputs: []in{f32(2, 3, 4)}, want: f(6, 4)},
		{name: "flatten bad axis", op: "Flatten", attrs: Attrs{"axis": {Kind: AttrInt, Int: 4}}, inputs: []in{f32(2, 3, 4)}, err: "axis 4"},
	})
}

func TestInferReshapeFamily(t *testing.T) {
	allowZero := Attrs{"allowzero": {Kind: AttrInt, Int: 1}}
	runInferCases(t, []inferCase{
		{name: "infer one", op: "Reshape", inputs: []in{f32(2, 3, 4), ints(0, -1)}, want: f(2, 12)},
		{name: "flat", op: "Reshape", inputs: []in{f32(2, 3, 4), ints(-1)}, want: f(24)},
		{name: "copy zeros", op: "Reshape", inputs: []in{f32(2, 3, 4), ints(0, 0, 2, 2)}, want: f(2, 3, 2, 2)},
		{name: "to scalar", op: "Reshape", inputs: []in{f32(1, 1), ints()}, want: f()},
		{name: "allowzero", op: "Reshape", attrs: allowZero, inputs: []in{f32(0, 3), ints(3, 0)}, want: f(3, 0)},
		{name: "allowzero with -1", op: "Reshape", attrs: allowZero, inputs: []in{f32(0, 3), ints(0, -1)}, err: "allowzero"},
		{name: "not divisible", op: "Reshape", inputs: []in{f32(2, 3), ints(4, -1)}, err: "cannot reshape [2,3] into [4,-1]"},
		{name: "wrong count", op: "Reshape", inputs: []in{f32(2, 3), ints(7)}, err: "cannot reshape [2,3] into [7]"},
		{name: "two -1", op: "Reshape", inputs: []in{f32(2, 3), ints(-1, -1)}, err: "more than one -1"},
		{name: "bad dim", op: "Reshape", inputs: []in{f32(2, 3), ints(-2, 3)}, err: "invalid dimension -2"},
		{name: "zero beyond rank", op: "Reshape", inputs: []in{f32(6), ints(2, 0)}, err: "0 at index 1"},
		{name: "overflow", op: "Reshape", inputs: []in{f32(2, 3), ints(1<<40, 1<<40, -1)}, err: "cannot reshape"},
		{name: "shape not constant", op: "Reshape", inputs: []in{f32(2, 3), act(Int64, 2)}, err: "must be a constant"},
		{name: "transpose default", op: "Transpose", inputs: []in{f32(2, 3, 4)}, want: f(4, 3, 2)},
		{name: "transpose perm", op: "Transpose", attrs: Attrs{"perm": {Kind: AttrInts, Ints: []int64{0, 2, 1}}}, inputs: []in{f32(2, 3, 4)}, want: f(2, 4, 3)},
		{name: "transpose bad perm", op: "Transpose", attrs: Attrs{"perm": {Kind: AttrInts, Ints: []int64{0, 0, 1}}}, inputs: []in{f32(2, 3, 4)}, err: "not a permutation"},
		{name: "transpose short perm", op: "Transpose", attrs: Attrs{"perm": {Kind: AttrInts, Ints: []int64{1, 0}}}, inputs: []in{f32(2, 3, 4)}, err: "rank 3"},
		{name: "squeeze axes", op: "Squeeze", inputs: []in{f32(1, 3, 1, 2), ints(0, -2)}, want: f(3, 2)},
		{name: "squeeze all", op: "Squeeze", inputs: []in{f32(1, 3, 1, 2)}, want: f(3, 2)},
		{name: "squeeze to scalar", op: "Squeeze", inputs: []in{f32(1, 1)}, want: f()},
		{name: "squeeze opset 11", op: "Squeeze", opset: 11, attrs: Attrs{"axes": {Kind: AttrInts, Ints: []int64{2}}}, inputs: []in{f32(1, 3, 1, 2)}, want: f(1, 3, 2)},
		{name: "squeeze not one", op: "Squeeze", inputs: []in{f32(1, 3, 1, 2), ints(1)}, err: "not 1"},
		{name: "squeeze input before 13", op: "Squeeze", opset: 11, inputs: []in{f32(1, 3), ints(0)}, err: "attribute"},
		{name: "unsqueeze", op: "Unsqueeze", inputs: []in{f32(3, 4), ints(0, 3)}, want: f(1, 3, 4, 1)},
		{name: "unsqueeze negative", op: "Unsqueeze", inputs: []in{f32(3, 4), ints(-1)}, want: f(3, 4, 1)},
		{name: "unsqueeze scalar", op: "Unsqueeze", inputs: []in{f32(), ints(0)}, want: f(1)},
		{name: "unsqueeze opset 11", op: "Unsqueeze", opset: 11, attrs: Attrs{"axes": {Kind: AttrInts, Ints: []int64{1}}}, inputs: []in{f32(3, 4)}, want: f(3, 1, 4)},
		{name: "unsqueeze duplicate", op: "Unsqueeze", inputs: []in{f32(3, 4), ints(1, 1)}, err: "twice"},
		{name: "unsqueeze no axes", op: "Unsqueeze", inputs: []in{f32(3, 4)}, err: "axes are required"},
		{name: "identity", op: "Identity", inputs: []in{act(Int8, 3, 4)}, want: []Type{ty(Int8, 3, 4)}},
	})
}

func TestInferConcatSplit(t *testing.T) {
	axis := func(a int64) Attrs { return Attrs{"axis": {Kind: AttrInt, Int: a}} }
	runInferCases(t, []inferCase{
		{name: "concat", op: "Concat", attrs: axis(1), inputs: []in{f32(2, 3), f32(2, 5), constOf(Float32, 2, 0)}, want: f(2, 8)},
		{name: "concat negative axis", op: "Concat", attrs: axis(-2), inputs: []in{f32(2, 3), f32(4, 3)}, want: f(6, 3)},
		{name: "concat one input", op: "Concat", attrs: axis(0), inputs: []in{ints(1, 2)}, want: []Type{ty(Int64, 2)}},
		{name: "concat mismatch", op: "Concat", attrs: axis(1), inputs: []in{f32(2, 3), f32(3, 5)}, err: "differ outside axis 1"},
		{name: "concat rank", op: "Concat", attrs: axis(0), inputs: []in{f32(2, 3), f32(2)}, err: "rank"},
		{name: "concat no axis", op: "Concat", inputs: []in{f32(2, 3)}, err: "axis"},
		{name: "concat types", op: "Concat", attrs: axis(0), inputs: []in{f32(2, 3), act(Int64, 2, 3)}, err: "differ in type"},
		{name: "split equal", op: "Split", outputs: 3, inputs: []in{f32(6, 4)}, want: []Type{ty(Float32, 2, 4), ty(Float32, 2, 4), ty(Float32, 2, 4)}},
		{name: "split input", op: "Split", outputs: 2, attrs: axis(-1), inputs: []in{f32(6, 4), ints(1, 3)}, want: []Type{ty(Float32, 6, 1), ty(Float32, 6, 3)}},
		{name: "split attribute opset 11", op: "Split", opset: 11, outputs: 2, attrs: Attrs{"split": {Kind: AttrInts, Ints: []int64{2, 4}}},
			inputs: []in{f32(6, 4)}, want: []Type{ty(Float32, 2, 4), ty(Float32, 4, 4)}},
		{name: "split not divisible", op: "Split", outputs: 4, inputs: []in{f32(6, 4)}, err: "4 equal parts"},
		{name: "split sum", op: "Split", outputs: 2, inputs: []in{f32(6, 4), ints(1, 2)}, err: "sums to 3"},
		{name: "split count", op: "Split", outputs: 2, inputs: []in{f32(6, 4), ints(1, 2, 3)}, err: "3 parts"},
	})
}

func TestInferSlice(t *testing.T) {
	const maxI, minI = math.MaxInt64, math.MinInt64
	x := f32(10, 20)
	runInferCases(t, []inferCase{
		{name: "basic", op: "Slice", inputs: []in{x, ints(1), ints(5), ints(0)}, want: f(4, 20)},
		{name: "default axes", op: "Slice", inputs: []in{x, ints(1, 2), ints(5, 4)}, want: f(4, 2)},
		{name: "to the end", op: "Slice", inputs: []in{x, ints(-3), ints(maxI), ints(1)}, want: f(10, 3)},
		{name: "negative axis", op: "Slice", inputs: []in{x, ints(0), ints(-1), ints(-1)}, want: f(10, 19)},
		{name: "reverse", op: "Slice", inputs: []in{x, ints(-1), ints(minI), ints(0), ints(-1)}, want: f(10, 20)},
		{name: "step 3", op: "Slice", inputs: []in{x, ints(0), ints(10), ints(0), ints(3)}, want: f(4, 20)},
		{name: "step -2", op: "Slice", inputs: []in{x, ints(8), ints(1), ints(0), ints(-2)}, want: f(4, 20)},
		{name: "huge negative step", op: "Slice", inputs: []in{x, ints(8), ints(1), ints(0), ints(minI)}, want: f(1, 20)},
		{name: "start past end", op: "Slice", inputs: []in{x, ints(100), ints(200), ints(0)}, want: f(0, 20)},
		{name: "end before start", op: "Slice", inputs: []in{x, ints(5), ints(-100), ints(1)}, want: f(10, 0)},
		{name: "opset 9 attributes", op: "Slice", opset: 9, attrs: Attrs{
			"starts": {Kind: AttrInts, Ints: []int64{2}}, "ends": {Kind: AttrInts, Ints: []int64{-2}}, "axes": {Kind: AttrInts, Ints: []int64{1}}},
			inputs: []in{x}, want: f(10, 16)},
		{name: "int32 starts", op: "Slice", inputs: []in{x, {dt: Int32, shape: Shape{1}, data: []byte{2, 0, 0, 0}}, ints(4)}, want: f(2, 20)},
		{name: "zero step", op: "Slice", inputs: []in{x, ints(0), ints(5), ints(0), ints(0)}, err: "step"},
		{name: "duplicate axes", op: "Slice", inputs: []in{x, ints(0, 0), ints(5, 5), ints(0, -2)}, err: "twice"},
		{name: "length mismatch", op: "Slice", inputs: []in{x, ints(0, 0), ints(5)}, err: "differ in length"},
		{name: "axis out of range", op: "Slice", inputs: []in{x, ints(0), ints(5), ints(2)}, err: "axis 2"},
		{name: "dynamic starts", op: "Slice", inputs: []in{x, act(Int64, 1), ints(5)}, err: "constant"},
	})
	// The resolved parameters that a kernel uses.
	g, n := inferCase{op: "Slice", inputs: []in{x, ints(8, -1), ints(1, minI), ints(0, 1), ints(-2, -3)}}.build()
	p, err := ResolveSlice(g, n)
	if err != nil {
		t.Fatal(err)
	}
	if !Shape(p.Start).Equal(Shape{8, 19}) || !Shape(p.Step).Equal(Shape{-2, -3}) || !p.Len.Equal(Shape{4, 7}) {
		t.Errorf("ResolveSlice = %+v", p)
	}
}

func TestInferGatherShape(t *testing.T) {
	i32 := func(v ...int32) in {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return in{dt: Int32, shape: Shape{int64(len(v))}, data: b}
	}
	runInferCases(t, []inferCase{
		{name: "gather rows", op: "Gather", inputs: []in{f32(5, 4), act(Int64, 2, 3)}, want: f(2, 3, 4)},
		{name: "gather scalar index", op: "Gather", attrs: Attrs{"axis": {Kind: AttrInt, Int: 1}}, inputs: []in{f32(5, 4), scalar(-1)}, want: f(5)},
		{name: "gather int32 constant", op: "Gather", inputs: []in{f32(5, 4), i32(4, -5)}, want: f(2, 4)},
		{name: "gather out of range", op: "Gather", inputs: []in{f32(5, 4), ints(5)}, err: "index 5 out of range"},
		{name: "gather float indices", op: "Gather", inputs: []in{f32(5, 4), f32(2)}, err: "int32 or int64"},
		{name: "gather bad axis", op: "Gather", attrs: Attrs{"axis": {Kind: AttrInt, Int: 2}}, inputs: []in{f32(5, 4), ints(0)}, err: "axis 2"},
		{name: "shape", op: "Shape", inputs: []in{f32(2, 3, 4)}, want: []Type{ty(Int64, 3)}},
		{name: "shape of scalar", op: "Shape", inputs: []in{f32()}, want: []Type{ty(Int64, 0)}},
		{name: "shape start", op: "Shape", attrs: Attrs{"start": {Kind: AttrInt, Int: 1}}, inputs: []in{f32(2, 3, 4)}, want: []Type{ty(Int64, 2)}},
		{name: "shape end", op: "Shape", attrs: Attrs{"end": {Kind: AttrInt, Int: -1}}, inputs: []in{f32(2, 3, 4)}, want: []Type{ty(Int64, 2)}},
		{name: "shape clamped", op: "Shape", attrs: Attrs{"start": {Kind: AttrInt, Int: 5}}, inputs: []in{f32(2, 3, 4)}, want: []Type{ty(Int64, 0)}},
		{name: "constant of shape", op: "ConstantOfShape", inputs: []in{ints(2, 3)}, want: f(2, 3)},
		{name: "constant of shape typed", op: "ConstantOfShape",
			attrs:  Attrs{"value": {Kind: AttrTensor, Tensor: &Tensor{DType: Int64, Shape: Shape{1}, Data: Int64Bytes([]int64{7})}}},
			inputs: []in{ints(4)}, want: []Type{ty(Int64, 4)}},
		{name: "constant of shape scalar", op: "ConstantOfShape", inputs: []in{ints()}, want: f()},
		{name: "constant of shape negative", op: "ConstantOfShape", inputs: []in{ints(2, -3)}, err: "negative"},
		{name: "constant of shape huge", op: "ConstantOfShape", inputs: []in{ints(1<<30, 1<<30)}, err: "more than"},
		{name: "expand", op: "Expand", inputs: []in{f32(3, 1), ints(2, 1, 4)}, want: f(2, 3, 4)},
		{name: "expand smaller shape", op: "Expand", inputs: []in{f32(2, 3), ints(1)}, want: f(2, 3)},
		{name: "expand mismatch", op: "Expand", inputs: []in{f32(2, 3), ints(4)}, err: "cannot expand"},
		{name: "expand negative", op: "Expand", inputs: []in{f32(2, 3), ints(-1)}, err: "negative"},
	})
}

func TestInferElementwise(t *testing.T) {
	b := func(dims ...int64) in { return act(Bool, dims...) }
	runInferCases(t, []inferCase{
		{name: "add broadcast", op: "Add", inputs: []in{f32(2, 3, 4), f32(4)}, want: f(2, 3, 4)},
		{name: "mul both ways", op: "Mul", inputs: []in{f32(2, 1, 4), f32(3, 1)}, want: f(2, 3, 4)},
		{name: "div scalar", op: "Div", inputs: []in{act(Int64, 3), constOf(Int64)}, want: []Type{ty(Int64, 3)}},
		{name: "sub mismatch", op: "Sub", inputs: []in{f32(2, 3), f32(4)}, err: "do not broadcast"},
		{name: "add types", op: "Add", inputs: []in{f32(2), act(Float64, 2)}, err: "differ in type"},
		{name: "add bool", op: "Add", inputs: []in{b(2), b(2)}, err: "numeric"},
		{name: "pow mixed", op: "Pow", inputs: []in{f32(2, 3), constOf(Int64)}, want: f(2, 3)},
		{name: "equal", op: "Equal", inputs: []in{act(Int64, 2, 3), act(Int64, 3)}, want: []Type{ty(Bool, 2, 3)}},
		{name: "equal bool", op: "Equal", inputs: []in{b(2), b(2)}, want: []Type{ty(Bool, 2)}},
		{name: "less", op: "Less", inputs: []in{f32(2, 3), f32()}, want: []Type{ty(Bool, 2, 3)}},
		{name: "greater", op: "Greater", inputs: []in{f32(1), f32(4)}, want: []Type{ty(Bool, 4)}},
		{name: "and", op: "And", inputs: []in{b(2, 1), b(3)}, want: []Type{ty(Bool, 2, 3)}},
		{name: "or non-bool", op: "Or", inputs: []in{f32(2), f32(2)}, err: "want bool"},
		{name: "not", op: "Not", inputs: []in{b(2)}, want: []Type{ty(Bool, 2)}},
		{name: "where", op: "Where", inputs: []in{b(3, 1), f32(1, 4), f32()}, want: f(3, 4)},
		{name: "where cond type", op: "Where", inputs: []in{f32(3), f32(3), f32(3)}, err: "want bool"},
		{name: "where mismatch", op: "Where", inputs: []in{b(3), f32(3), act(Int64, 3)}, err: "differ in type"},
		{name: "sum", op: "Sum", inputs: []in{f32(3, 1), f32(4), f32(1)}, want: f(3, 4)},
		{name: "mean one", op: "Mean", inputs: []in{f32(3)}, want: f(3)},
		{name: "max", op: "Max", inputs: []in{f32(2), f32(3)}, err: "do not broadcast"},
		{name: "min types", op: "Min", inputs: []in{f32(2), act(Int32, 2)}, err: "differ in type"},
		{name: "relu", op: "Relu", inputs: []in{f32(2, 3)}, want: f(2, 3)},
		{name: "leaky relu", op: "LeakyRelu", attrs: Attrs{"alpha": {Kind: AttrFloat, Float: 0.1}}, inputs: []in{f32(2)}, want: f(2)},
		{name: "sigmoid int", op: "Sigmoid", inputs: []in{act(Int64, 2)}, err: "floating-point"},
		{name: "hardswish", op: "HardSwish", inputs: []in{act(Float16, 2)}, want: []Type{ty(Float16, 2)}},
		{name: "neg unsigned", op: "Neg", inputs: []in{act(Uint8, 2)}, err: "signed"},
		{name: "abs", op: "Abs", inputs: []in{act(Int8, 2)}, want: []Type{ty(Int8, 2)}},
		{name: "sqrt too many inputs", op: "Sqrt", inputs: []in{f32(2), f32(2)}, err: "at most 1"},
		{name: "clip opset 13", op: "Clip", inputs: []in{f32(2, 3), constOf(Float32), constOf(Float32)}, want: f(2, 3)},
		{name: "clip max only", op: "Clip", inputs: []in{f32(2, 3), none, constOf(Float32, 1)}, want: f(2, 3)},
		{name: "clip opset 6 style", op: "Clip", opset: 7, attrs: Attrs{"min": {Kind: AttrFloat, Float: 0}, "max": {Kind: AttrFloat, Float: 6}}, inputs: []in{f32(2)}, want: f(2)},
		{name: "clip inputs before 11", op: "Clip", opset: 10, inputs: []in{f32(2), constOf(Float32)}, err: "before opset 11"},
		{name: "clip vector bound", op: "Clip", inputs: []in{f32(2), constOf(Float32, 2)}, err: "scalar"},
		{name: "cast", op: "Cast", attrs: Attrs{"to": {Kind: AttrInt, Int: 7}}, inputs: []in{f32(2, 3)}, want: []Type{ty(Int64, 2, 3)}},
		{name: "cast to half", op: "Cast", attrs: Attrs{"to": {Kind: AttrInt, Int: 10}}, inputs: []in{f32(2)}, want: []Type{ty(Float16, 2)}},
		{name: "cast to string", op: "Cast", attrs: Attrs{"to": {Kind: AttrInt, Int: 8}}, inputs: []in{f32(2)}, err: "string"},
		{name: "cast without to", op: "Cast", inputs: []in{f32(2)}, err: "\"to\""},
		{name: "missing input", op: "Add", inputs: []in{f32(2), none}, err: "input 1 is missing"},
		{name: "untyped input", op: "Relu", inputs: []in{{dt: Undefined}}, err: "no known type"},
	})
}

func TestInferReducePadRange(t *testing.T) {
	axes := func(v ...int64) Attrs { return Attrs{"axes": {Kind: AttrInts, Ints: v}} }
	keep0 := Attr{Kind: AttrInt, Int: 0}
	f64 := func(v float64) in {
		return in{dt: Float64, shape: Shape{}, data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))}
	}
	runInferCases(t, []inferCase{
		{name: "mean keepdims", op: "ReduceMean", attrs: axes(1), inputs: []in{f32(2, 3, 4)}, want: f(2, 1, 4)},
		{name: "mean drop", op: "ReduceMean", attrs: Attrs{"axes": {Kind: AttrInts, Ints: []int64{-1, 0}}, "keepdims": keep0}, inputs: []in{f32(2, 3, 4)}, want: f(3)},
		{name: "mean all", op: "ReduceMean", inputs: []in{f32(2, 3, 4)}, want: f(1, 1, 1)},
		{name: "mean all drop", op: "ReduceMean", attrs: Attrs{"keepdims": keep0}, inputs: []in{f32(2, 3, 4)}, want: f()},
		{name: "sum input axes", op: "ReduceSum", attrs: Attrs{"keepdims": keep0}, inputs: []in{f32(2, 3, 4), ints(-1)}, want: f(2, 3)},
		{name: "sum all", op: "ReduceSum", inputs: []in{f32(2, 3, 4)}, want: f(1, 1, 1)},
		{name: "sum empty axes", op: "ReduceSum", inputs: []in{f32(2, 3, 4), ints()}, want: f(1, 1, 1)},
		{name: "sum noop", op: "ReduceSum", attrs: Attrs{"noop_with_empty_axes": {Kind: AttrInt, Int: 1}}, inputs: []in{f32(2, 3, 4)}, want: f(2, 3, 4)},
		{name: "sum opset 11", op: "ReduceSum", opset: 11, attrs: axes(0), inputs: []in{f32(2, 3, 4)}, want: f(1, 3, 4)},
		{name: "sum duplicate axes", op: "ReduceSum", inputs: []in{f32(2, 3, 4), ints(1, -2)}, err: "twice"},
		{name: "mean bad axis", op: "ReduceMean", attrs: axes(3), inputs: []in{f32(2, 3, 4)}, err: "axis 3"},
		{name: "pad", op: "Pad", inputs: []in{f32(2, 3), ints(1, 1, 2, 2)}, want: f(5, 6)},
		{name: "pad crop", op: "Pad", inputs: []in{f32(2, 3), ints(0, -1, 0, 0)}, want: f(2, 2)},
		{name: "pad value", op: "Pad", inputs: []in{f32(2, 3), ints(0, 1, 0, 1), constOf(Float32)}, want: f(2, 5)},
		{name: "pad opset 2", op: "Pad", opset: 7, attrs: Attrs{"pads": {Kind: AttrInts, Ints: []int64{1, 0, 1, 0}}, "mode": {Kind: AttrString, String: "edge"}},
			inputs: []in{f32(2, 3)}, want: f(4, 3)},
		{name: "pad reflect", op: "Pad", attrs: Attrs{"mode": {Kind: AttrString, String: "reflect"}}, inputs: []in{f32(2, 3), ints(1, 2, 1, 2)}, want: f(4, 7)},
		{name: "pad reflect too much", op: "Pad", attrs: Attrs{"mode": {Kind: AttrString, String: "reflect"}}, inputs: []in{f32(2, 3), ints(2, 0, 0, 0)}, err: "reflect"},
		{name: "pad wrap", op: "Pad", attrs: Attrs{"mode": {Kind: AttrString, String: "wrap"}}, inputs: []in{f32(2, 3), ints(0, 0, 0, 0)}, err: "wrap"},
		{name: "pad count", op: "Pad", inputs: []in{f32(2, 3), ints(1, 1)}, err: "want 4"},
		{name: "pad crop too much", op: "Pad", inputs: []in{f32(2, 3), ints(-3, 0, 0, 0)}, err: "below zero"},
		{name: "pad huge", op: "Pad", inputs: []in{f32(2, 3), ints(math.MaxInt64, 0, 0, 0)}, err: "out of range"},
		{name: "range", op: "Range", inputs: []in{scalar(0), scalar(10), scalar(3)}, want: []Type{ty(Int64, 4)}},
		{name: "range down", op: "Range", inputs: []in{scalar(10), scalar(0), scalar(-3)}, want: []Type{ty(Int64, 4)}},
		{name: "range exact", op: "Range", inputs: []in{scalar(0), scalar(9), scalar(3)}, want: []Type{ty(Int64, 3)}},
		{name: "range empty", op: "Range", inputs: []in{scalar(0), scalar(10), scalar(-1)}, want: []Type{ty(Int64, 0)}},
		{name: "range float", op: "Range", inputs: []in{f64(0), f64(1), f64(0.25)}, want: []Type{ty(Float64, 4)}},
		{name: "range zero delta", op: "Range", inputs: []in{scalar(0), scalar(10), scalar(0)}, err: "delta is 0"},
		{name: "range huge", op: "Range", inputs: []in{scalar(math.MinInt64), scalar(math.MaxInt64), scalar(1)}, err: "too many"},
		{name: "range dynamic", op: "Range", inputs: []in{scalar(0), act(Int64), scalar(1)}, err: "constant"},
	})
}

func TestInferUnknown(t *testing.T) {
	runInferCases(t, []inferCase{
		{name: "unknown op", op: "FancyOp", inputs: []in{f32(2)}, err: "operator FancyOp is not supported"},
	})
	g, n := inferCase{op: "Relu", inputs: []in{f32(2)}}.build()
	n.Domain = "com.example"
	if _, err := Infer(g, n); err == nil {
		t.Error("Infer accepted an operator of a foreign domain")
	}
	if !Supported("Conv") || Supported("FancyOp") {
		t.Error("Supported is wrong")
	}
}

func TestDTypeFromONNX(t *testing.T) {
	for d := Float32; d <= Bool; d++ {
		got, err := DTypeFromONNX(d.ONNXCode())
		if err != nil || got != d {
			t.Errorf("%s: code %d maps back to %s, %v", d, d.ONNXCode(), got, err)
		}
	}
	for _, code := range []int64{0, 8, 14, 15, 17, 99, -1} {
		if _, err := DTypeFromONNX(code); err == nil {
			t.Errorf("code %d accepted", code)
		}
	}
}
