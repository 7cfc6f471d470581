package cpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/plan"
)

// TestMarkInPlace marks the ONNX operators of inPlaceOps, and no other.
func TestMarkInPlace(t *testing.T) {
	for _, c := range []struct {
		op, domain string
		want       bool
	}{
		{"Relu", "", true},
		{"Add", "ai.onnx", true},
		{"LayerNormalization", "", true},
		{"Relu", "com.example", false},
		{"Transpose", "", false},
		{"MatMul", "", false},
		{"CachedAttention", "berth", false},
	} {
		p := &plan.Problem{Steps: []plan.Step{{Op: c.op, Domain: c.domain}}}
		markInPlace(p)
		if got := p.Steps[0].InPlace; got != c.want {
			t.Errorf("%s (domain %q): in place %v, want %v", c.op, c.domain, got, c.want)
		}
	}
}

// TestInPlaceKernels runs every operator the planner may run in place with
// its output over a dying input, and without, and wants the same bytes.
// Each graph feeds the operator from Neg nodes, so that its inputs are
// intermediates the plan may hand over (graph inputs are never written).
func TestInPlaceKernels(t *testing.T) {
	const f32 = ir.Float32
	full := []int64{2, 3, 4, 5}
	row := []int64{4, 5}
	fa := func(name string, v float32) ir.Attrs { return ir.Attrs{name: {Kind: ir.AttrFloat, Float: v}} }
	ia := func(name string, v int64) ir.Attrs { return ir.Attrs{name: {Kind: ir.AttrInt, Int: v}} }
	// a is a full-shaped intermediate, b one that broadcasts along rows.
	type build func(k *kgraph, a, b, cond ir.TensorID) ir.TensorID
	unary := func(op string, attrs ir.Attrs) build {
		return func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			return k.node(op, attrs, []ir.TensorID{a}, f32, full...)
		}
	}
	binaryOp := func(op string, swap bool) build {
		return func(k *kgraph, a, b, _ ir.TensorID) ir.TensorID {
			ins := []ir.TensorID{a, b}
			if swap {
				ins = []ir.TensorID{b, a}
			}
			return k.node(op, nil, ins, f32, full...)
		}
	}
	cases := []struct {
		name  string
		build build
	}{
		{"Relu", unary("Relu", nil)},
		{"LeakyRelu", unary("LeakyRelu", fa("alpha", 0.1))},
		{"Sigmoid", unary("Sigmoid", nil)},
		{"HardSigmoid", unary("HardSigmoid", nil)},
		{"HardSwish", unary("HardSwish", nil)},
		{"Tanh", unary("Tanh", nil)},
		{"Erf", unary("Erf", nil)},
		{"Exp", unary("Exp", nil)},
		{"Log", unary("Log", nil)},
		{"Sqrt", unary("Sqrt", nil)},
		{"Neg", unary("Neg", nil)},
		{"Abs", unary("Abs", nil)},
		{"Reciprocal", unary("Reciprocal", nil)},
		{"Softplus", unary("Softplus", nil)},
		{"Elu", unary("Elu", nil)},
		{"Selu", unary("Selu", nil)},
		{"Sin", unary("Sin", nil)},
		{"Cos", unary("Cos", nil)},
		{"Floor", unary("Floor", nil)},
		{"Ceil", unary("Ceil", nil)},
		{"Round", unary("Round", nil)},
		{"Sign", unary("Sign", nil)},
		{"Clip", func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			lo, hi := k.constant("lo", []float32{-0.5}), k.constant("hi", []float32{0.25})
			return k.node("Clip", nil, []ir.TensorID{a, lo, hi}, f32, full...)
		}},
		{"Add", binaryOp("Add", false)},
		{"Add/broadcast first", binaryOp("Add", true)},
		{"Sub", binaryOp("Sub", false)},
		{"Sub/broadcast first", binaryOp("Sub", true)},
		{"Mul", binaryOp("Mul", false)},
		{"Div", binaryOp("Div", false)},
		{"Div/broadcast first", binaryOp("Div", true)},
		{"Pow", binaryOp("Pow", false)},
		{"Pow/broadcast first", binaryOp("Pow", true)},
		{"Max", binaryOp("Max", false)},
		{"Min", binaryOp("Min", true)},
		{"Mul/same input twice", func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			return k.node("Mul", nil, []ir.TensorID{a, a}, f32, full...)
		}},
		{"Where/x", func(k *kgraph, a, b, cond ir.TensorID) ir.TensorID {
			return k.node("Where", nil, []ir.TensorID{cond, a, b}, f32, full...)
		}},
		{"Where/y", func(k *kgraph, a, b, cond ir.TensorID) ir.TensorID {
			return k.node("Where", nil, []ir.TensorID{cond, b, a}, f32, full...)
		}},
		{"Softmax/last axis", unary("Softmax", ia("axis", -1))},
		{"Softmax/strided", unary("Softmax", ia("axis", 1))},
		{"LogSoftmax/strided", unary("LogSoftmax", ia("axis", 2))},
		{"LayerNormalization/last axis", func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			s, c := k.constant("scale", []float32{1, 2, 3, 4, 5}, 5), k.constant("bias", []float32{0, .1, .2, .3, .4}, 5)
			return k.node("LayerNormalization", ia("axis", -1), []ir.TensorID{a, s, c}, f32, full...)
		}},
		{"LayerNormalization/two axes", func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			s := k.constant("scale", make20(), 4, 5)
			return k.node("LayerNormalization", ia("axis", 2), []ir.TensorID{a, s}, f32, full...)
		}},
		{"BatchNormalization", func(k *kgraph, a, _, _ ir.TensorID) ir.TensorID {
			sc, bi := k.constant("scale", []float32{1, 2, 3}, 3), k.constant("bias", []float32{0, .5, -1}, 3)
			mu, va := k.constant("mean", []float32{.1, .2, .3}, 3), k.constant("var", []float32{1, 2, .5}, 3)
			return k.node("BatchNormalization", nil, []ir.TensorID{a, sc, bi, mu, va}, f32, full...)
		}},
	}
	rng := rand.New(rand.NewPCG(4, 4))
	input := func(dt ir.DType, shape []int64) []byte {
		n := int(ir.Shape(shape).Elements())
		var b []byte
		if dt == ir.Bool {
			b = make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(2))
			}
		} else {
			b = make([]byte, 4*n)
			for i := 0; i < n; i++ {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(rng.NormFloat64())))
			}
		}
		return b
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := &kgraph{g: &ir.Graph{Name: "inplace", Opsets: map[string]int64{"": 17}}}
			x, y, cond := k.input("x", f32, full...), k.input("y", f32, row...), k.input("cond", ir.Bool, full...)
			a := k.node("Neg", nil, []ir.TensorID{x}, f32, full...)
			b := k.node("Neg", nil, []ir.TensorID{y}, f32, row...)
			o := c.build(k, a, b, cond)
			k.g.Outputs = []ir.TensorID{o}
			inputs := [][]byte{input(f32, full), input(f32, row), input(ir.Bool, full)}

			var outs [2][]byte
			for i, inPlace := range []bool{false, true} {
				exe, err := Compile(k.g, Options{Threads: 2, FileOrder: true, NoInPlace: !inPlace})
				if err != nil {
					t.Fatal(err)
				}
				// The operator's output lands on a's bytes exactly when
				// it runs in place.
				la := exe.Layout()
				if shared := la.Slots[o].Offset == la.Slots[a].Offset; shared != inPlace {
					t.Fatalf("in place %v, but output at %d and input at %d", inPlace, la.Slots[o].Offset, la.Slots[a].Offset)
				}
				s, err := exe.NewSession(nil)
				if err != nil {
					t.Fatal(err)
				}
				feed(t, s, inputs)
				if err := s.Run(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				outs[i] = bytes.Clone(s.Outputs()[0])
				s.Close()
			}
			if !bytes.Equal(outs[0], outs[1]) {
				t.Fatalf("in place, the output differs")
			}
		})
	}
}

func make20() []float32 {
	v := make([]float32, 20)
	for i := range v {
		v[i] = 1 + float32(i)/10
	}
	return v
}
