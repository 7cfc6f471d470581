package onnxtest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// ResNet50 returns, as ONNX bytes (opset 13), a model of the structure
// PyTorch exports torchvision's ResNet-50 with: image [batch, 3, height,
// width] (the three open) → a 7×7 convolution of stride 2, ReLU, a 3×3
// max pool, bottleneck blocks of 3, 4, 6 and 3 (1×1, 3×3 with the stride,
// 1×1 convolutions, ReLUs, the shortcut added, its first block's
// projected by a 1×1 convolution), a global average pool, Flatten and
// Gemm → logits [batch, 1000]; batch normalisation folded into the
// convolutions, as the export does. Every channel count is divided by
// narrow (1: ResNet-50's own, 25.5 million weights) and the weights are
// small pseudo-random values drawn from seed: the graph is the real one's,
// node for node, its weights as light as the test needs.
func ResNet50(narrow int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 50))
	gp := &onnxpb.GraphProto{Name: proto.String("resnet50")}
	gp.Input = []*onnxpb.ValueInfoProto{Input{Name: "image", Dims: []string{"batch", "3", "height", "width"}}.valueInfo()}
	k := 0
	weights := func(name string, dims ...int64) string {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		fan := float64(n / dims[0])
		b := make([]byte, 4*n)
		for i := range n {
			v := float32((r.Float64()*2 - 1) / math.Sqrt(fan))
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		gp.Initializer = append(gp.Initializer, &onnxpb.TensorProto{Name: proto.String(name), DataType: proto.Int32(int32(onnxpb.TensorProto_FLOAT)), Dims: dims, RawData: b})
		return name
	}
	add := func(op string, in []string, attrs ...*onnxpb.AttributeProto) string {
		k++
		out := fmt.Sprintf("/%s_%d_output_0", op, k)
		gp.Node = append(gp.Node, &onnxpb.NodeProto{OpType: proto.String(op), Name: proto.String(fmt.Sprintf("/%s_%d", op, k)), Input: in, Output: []string{out}, Attribute: attrs})
		return out
	}
	ints := func(name string, v ...int64) *onnxpb.AttributeProto {
		return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INTS.Enum(), Ints: v}
	}
	conv := func(x string, cin, cout, kernel, stride int64) string {
		w := weights(fmt.Sprintf("conv%d.weight", k+1), cout, cin, kernel, kernel)
		b := weights(fmt.Sprintf("conv%d.bias", k+1), cout)
		p := kernel / 2
		return add("Conv", []string{x, w, b}, intAttr("group", 1), ints("dilations", 1, 1), ints("kernel_shape", kernel, kernel), ints("pads", p, p, p, p), ints("strides", stride, stride))
	}
	c := func(n int64) int64 { return max(n/int64(narrow), 1) }
	x := add("Relu", []string{conv("image", 3, c(64), 7, 2)})
	x = add("MaxPool", []string{x}, ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1), ints("strides", 2, 2))
	in := c(64)
	for stage, blocks := range []int{3, 4, 6, 3} {
		width := c(64 << stage)
		for b := range blocks {
			stride := int64(1)
			if b == 0 && stage > 0 {
				stride = 2
			}
			y := add("Relu", []string{conv(x, in, width, 1, 1)})
			y = add("Relu", []string{conv(y, width, width, 3, stride)})
			y = conv(y, width, 4*width, 1, 1)
			short := x
			if b == 0 {
				short = conv(x, in, 4*width, 1, stride)
			}
			x = add("Relu", []string{add("Add", []string{y, short})})
			in = 4 * width
		}
	}
	x = add("GlobalAveragePool", []string{x})
	x = add("Flatten", []string{x}, intAttr("axis", 1))
	w := weights("fc.weight", 1000, in)
	b := weights("fc.bias", 1000)
	k++
	gp.Node = append(gp.Node, &onnxpb.NodeProto{OpType: proto.String("Gemm"), Name: proto.String("/fc/Gemm"), Input: []string{x, w, b}, Output: []string{"logits"},
		Attribute: []*onnxpb.AttributeProto{{Name: proto.String("alpha"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(1)},
			{Name: proto.String("beta"), Type: onnxpb.AttributeProto_FLOAT.Enum(), F: proto.Float32(1)}, intAttr("transB", 1)}})
	gp.Output = []*onnxpb.ValueInfoProto{Input{Name: "logits", Dims: []string{"batch", "1000"}}.valueInfo()}
	return marshal(13, gp)
}
