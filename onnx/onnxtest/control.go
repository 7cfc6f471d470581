package onnxtest

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Models with control flow (If, Loop, Scan), as ONNX bytes, for tests of
// import, shape inference and the kernels.

func graphAttr(name string, g *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_GRAPH.Enum(), G: g}
}

func intAttr(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: proto.String(name), Type: onnxpb.AttributeProto_INT.Enum(), I: proto.Int64(v)}
}

// untyped declares a subgraph value by name only.
func untyped(name string) *onnxpb.ValueInfoProto {
	return &onnxpb.ValueInfoProto{Name: proto.String(name)}
}

func marshal(opset int64, g *onnxpb.GraphProto) []byte {
	b, err := proto.Marshal(model(opset, "", g))
	if err != nil {
		panic(err)
	}
	return b
}

// nestedIf returns the branches of an If nested depth levels deep: at
// each level then_branch holds the next If and else_branch gives -x; the
// innermost then_branch gives x+x. Every level reads cond and x from the
// main graph.
func nestedIf(depth int, out string) *onnxpb.NodeProto {
	inner := &onnxpb.GraphProto{Name: proto.String("then"), Output: []*onnxpb.ValueInfoProto{untyped(out + "_t")}}
	if depth > 1 {
		inner.Node = []*onnxpb.NodeProto{nestedIf(depth-1, out+"_t")}
	} else {
		inner.Node = []*onnxpb.NodeProto{node("Add", []string{"x", "x"}, []string{out + "_t"})}
	}
	els := &onnxpb.GraphProto{Name: proto.String("else"), Output: []*onnxpb.ValueInfoProto{untyped(out + "_e")},
		Node: []*onnxpb.NodeProto{node("Neg", []string{"x"}, []string{out + "_e"})}}
	n := node("If", []string{"cond"}, []string{out})
	n.Attribute = []*onnxpb.AttributeProto{graphAttr("then_branch", inner), graphAttr("else_branch", els)}
	return n
}

// NestedIfModel returns a model with inputs cond (bool scalar) and x
// (float [3]) whose output y is x+x when cond holds and -x otherwise,
// decided by If nodes nested depth levels deep.
func NestedIfModel(depth int) []byte {
	return marshal(13, &onnxpb.GraphProto{
		Name:   proto.String("nested_if"),
		Node:   []*onnxpb.NodeProto{nestedIf(depth, "y")},
		Input:  []*onnxpb.ValueInfoProto{vi("cond", onnxpb.TensorProto_BOOL), vi("x", onnxpb.TensorProto_FLOAT, 3)},
		Output: []*onnxpb.ValueInfoProto{untyped("y")},
	})
}

// LoopModel returns a model with input x (float [2]) and a Loop of trips
// iterations (M an initializer, cond left out) that adds x (read from the
// outer scope) to an accumulator starting at zero; its outputs are the
// final sum (float [2]) and the running sums (float [trips, 2]).
func LoopModel(trips int64) []byte {
	body := &onnxpb.GraphProto{
		Name: proto.String("body"),
		Input: []*onnxpb.ValueInfoProto{vi("i", onnxpb.TensorProto_INT64), vi("c", onnxpb.TensorProto_BOOL),
			untyped("acc")},
		Node: []*onnxpb.NodeProto{
			node("Add", []string{"acc", "x"}, []string{"acc_out"}),
			node("Identity", []string{"c"}, []string{"c_out"}),
			node("Identity", []string{"acc_out"}, []string{"row"}),
		},
		Output: []*onnxpb.ValueInfoProto{untyped("c_out"), untyped("acc_out"), untyped("row")},
	}
	loop := node("Loop", []string{"M", "", "zero"}, []string{"sum", "rows"})
	loop.Attribute = []*onnxpb.AttributeProto{graphAttr("body", body)}
	m := i64("M", trips)
	m.Dims = nil
	zero := f32("zero", []int64{2}, 0)
	zero.RawData = make([]byte, 8)
	return marshal(13, &onnxpb.GraphProto{
		Name:        proto.String("loop"),
		Node:        []*onnxpb.NodeProto{loop},
		Input:       []*onnxpb.ValueInfoProto{vi("x", onnxpb.TensorProto_FLOAT, 2)},
		Output:      []*onnxpb.ValueInfoProto{untyped("sum"), untyped("rows")},
		Initializer: []*onnxpb.TensorProto{m, zero},
	})
}

// ScanModel returns a model (opset 11) with inputs init (float [2]) and
// xs (float [3, 2]) whose Scan sums the rows of xs onto init, in reverse
// order when reverse is set; its outputs are the final sum (float [2])
// and the running sums (float [3, 2]).
func ScanModel(reverse bool) []byte {
	body := &onnxpb.GraphProto{
		Name:   proto.String("body"),
		Input:  []*onnxpb.ValueInfoProto{untyped("s"), untyped("row")},
		Node:   []*onnxpb.NodeProto{node("Add", []string{"s", "row"}, []string{"s_out"}), node("Identity", []string{"s_out"}, []string{"scan"})},
		Output: []*onnxpb.ValueInfoProto{untyped("s_out"), untyped("scan")},
	}
	scan := node("Scan", []string{"init", "xs"}, []string{"sum", "sums"})
	scan.Attribute = []*onnxpb.AttributeProto{graphAttr("body", body), intAttr("num_scan_inputs", 1)}
	if reverse {
		scan.Attribute = append(scan.Attribute, &onnxpb.AttributeProto{Name: proto.String("scan_input_directions"),
			Type: onnxpb.AttributeProto_INTS.Enum(), Ints: []int64{1}})
	}
	return marshal(11, &onnxpb.GraphProto{
		Name:   proto.String("scan"),
		Node:   []*onnxpb.NodeProto{scan},
		Input:  []*onnxpb.ValueInfoProto{vi("init", onnxpb.TensorProto_FLOAT, 2), vi("xs", onnxpb.TensorProto_FLOAT, 3, 2)},
		Output: []*onnxpb.ValueInfoProto{untyped("sum"), untyped("sums")},
	})
}

// MismatchedIfModel returns a model whose If branches give float [3] and
// float [2]: berth refuses it (static types differ).
func MismatchedIfModel() []byte {
	th := &onnxpb.GraphProto{Name: proto.String("then"), Output: []*onnxpb.ValueInfoProto{untyped("a")},
		Node: []*onnxpb.NodeProto{node("Identity", []string{"x"}, []string{"a"})}}
	el := &onnxpb.GraphProto{Name: proto.String("else"), Output: []*onnxpb.ValueInfoProto{untyped("b")},
		Node: []*onnxpb.NodeProto{node("Identity", []string{"w"}, []string{"b"})}}
	n := node("If", []string{"cond"}, []string{"y"})
	n.Attribute = []*onnxpb.AttributeProto{graphAttr("then_branch", th), graphAttr("else_branch", el)}
	return marshal(13, &onnxpb.GraphProto{
		Name:        proto.String("mismatch"),
		Node:        []*onnxpb.NodeProto{n},
		Input:       []*onnxpb.ValueInfoProto{vi("cond", onnxpb.TensorProto_BOOL), vi("x", onnxpb.TensorProto_FLOAT, 3)},
		Output:      []*onnxpb.ValueInfoProto{untyped("y")},
		Initializer: []*onnxpb.TensorProto{f32("w", []int64{2}, 2)},
	})
}

// EndlessLoopModel returns a model with input x (float [2]) and a Loop
// with neither a trip count nor a condition that ever turns false: it runs
// until its run is cancelled.
func EndlessLoopModel() []byte {
	body := &onnxpb.GraphProto{
		Name:   proto.String("body"),
		Input:  []*onnxpb.ValueInfoProto{vi("i", onnxpb.TensorProto_INT64), vi("c", onnxpb.TensorProto_BOOL), untyped("acc")},
		Node:   []*onnxpb.NodeProto{node("Identity", []string{"c"}, []string{"c_out"}), node("Add", []string{"acc", "acc"}, []string{"acc_out"})},
		Output: []*onnxpb.ValueInfoProto{untyped("c_out"), untyped("acc_out")},
	}
	loop := node("Loop", []string{"", "", "x"}, []string{"y"})
	loop.Attribute = []*onnxpb.AttributeProto{graphAttr("body", body)}
	return marshal(13, &onnxpb.GraphProto{
		Name:   proto.String("endless"),
		Node:   []*onnxpb.NodeProto{loop},
		Input:  []*onnxpb.ValueInfoProto{vi("x", onnxpb.TensorProto_FLOAT, 2)},
		Output: []*onnxpb.ValueInfoProto{untyped("y")},
	})
}

// NestedLoopModel returns a model without inputs whose output (float
// [1]) counts, in depth nested Loops of trips iterations each, trips to
// the power depth: all constant, and far too much work to do at load time
// for large arguments.
func NestedLoopModel(depth int, trips int64) []byte {
	var level func(d int, acc string) (*onnxpb.NodeProto, string)
	level = func(d int, acc string) (*onnxpb.NodeProto, string) {
		in, out := acc+"_in", acc+"_out"
		body := &onnxpb.GraphProto{
			Name:   proto.String("body"),
			Input:  []*onnxpb.ValueInfoProto{vi(acc+"_i", onnxpb.TensorProto_INT64), vi(acc+"_c", onnxpb.TensorProto_BOOL), untyped(in)},
			Node:   []*onnxpb.NodeProto{node("Identity", []string{acc + "_c"}, []string{acc + "_cout"})},
			Output: []*onnxpb.ValueInfoProto{untyped(acc + "_cout"), untyped(out)},
		}
		if d == 1 {
			body.Node = append(body.Node, node("Add", []string{in, "one"}, []string{out}))
		} else {
			inner, res := level(d-1, acc+"x")
			inner.Input[2] = in
			body.Node = append(body.Node, inner, node("Identity", []string{res}, []string{out}))
		}
		n := node("Loop", []string{"M", "", acc}, []string{acc + "_res"})
		n.Attribute = []*onnxpb.AttributeProto{graphAttr("body", body)}
		return n, acc + "_res"
	}
	top, res := level(depth, "a")
	m := i64("M", trips)
	m.Dims = nil
	zero := f32("a", []int64{1}, 1)
	one := f32("one", []int64{1}, 2)
	one.RawData = f32le1(1)
	return marshal(13, &onnxpb.GraphProto{
		Name:        proto.String("nested_loops"),
		Node:        []*onnxpb.NodeProto{top, node("Identity", []string{res}, []string{"y"})},
		Output:      []*onnxpb.ValueInfoProto{untyped("y")},
		Initializer: []*onnxpb.TensorProto{m, zero, one},
	})
}

func f32le1(v float32) []byte {
	b := f32("", []int64{1}, 1).RawData
	binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	return b
}
