package cpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/internal/npytest"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// kgraph builds small graphs by hand for the rewrites' tests.
type kgraph struct{ g *ir.Graph }

func (k *kgraph) input(name string, dt ir.DType, shape ...int64) ir.TensorID {
	id := k.g.NewTensor(name, dt, ir.Shape(shape).Clone(), nil)
	k.g.Inputs = append(k.g.Inputs, id)
	return id
}

func (k *kgraph) constant(name string, vals []float32, shape ...int64) ir.TensorID {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return k.g.NewTensor(name, ir.Float32, ir.Shape(shape).Clone(), b)
}

// boolConst is a constant of bools (each byte 0 or 1).
func (k *kgraph) boolConst(name string, vals []byte, shape ...int64) ir.TensorID {
	return k.g.NewTensor(name, ir.Bool, ir.Shape(shape).Clone(), vals)
}

// ints64 adds an int64 constant.
func (k *kgraph) ints64(name string, vals ...int64) ir.TensorID {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return k.g.NewTensor(name, ir.Int64, ir.Shape{int64(len(vals))}, b)
}

// node adds a node with one output of the given type and shape.
func (k *kgraph) node(op string, attrs ir.Attrs, ins []ir.TensorID, dt ir.DType, shape ...int64) ir.TensorID {
	idx := len(k.g.Nodes)
	out := k.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("%s_%d", op, idx), DType: dt, Shape: ir.Shape(shape).Clone(), Producer: idx})
	k.g.Nodes = append(k.g.Nodes, ir.Node{Name: fmt.Sprintf("n%d", idx), Op: op, Attrs: attrs, Inputs: ins, Outputs: []ir.TensorID{out}})
	return out
}

// fixtures is where the models of scripts/gen_fixtures.py lie.
const fixtures = "../../testdata/models/"

// loadFixture imports the fixture model at path and prepares its graph
// as berth.Load does (shapes inferred, constants folded).
func loadFixture(t testing.TB, path string) *ir.Graph {
	t.Helper()
	src, err := onnx.Import(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	if err := passes.Prepare(src.Graph, Evaluate); err != nil {
		t.Fatal(err)
	}
	return src.Graph
}

// fixtureInputs reads the inputs of the fixture in dir, in order.
func fixtureInputs(t testing.TB, dir string) [][]byte {
	t.Helper()
	var inputs [][]byte
	for _, a := range npytest.ReadSet(t, dir, "input") {
		inputs = append(inputs, a.Data)
	}
	return inputs
}

// randomInputs draws every float32 input of g from N(0, 1), every bool
// one from {false, true}.
func randomInputs(rng *rand.Rand, g *ir.Graph) [][]byte {
	var inputs [][]byte
	for _, id := range g.Inputs {
		tt := g.Tensor(id)
		if tt.DType == ir.Bool {
			b := make([]byte, tt.Shape.Elements())
			for i := range b {
				b[i] = byte(rng.IntN(2))
			}
			inputs = append(inputs, b)
			continue
		}
		b := make([]byte, 4*tt.Shape.Elements())
		for i := 0; i < len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.NormFloat64())))
		}
		inputs = append(inputs, b)
	}
	return inputs
}

// feed copies inputs into the session's input slots.
func feed(t testing.TB, s backend.Session, inputs [][]byte) {
	t.Helper()
	if len(inputs) != len(s.Inputs()) {
		t.Fatalf("%d inputs, the graph takes %d", len(inputs), len(s.Inputs()))
	}
	for i, in := range inputs {
		if len(in) != len(s.Inputs()[i]) {
			t.Fatalf("input %d: %d bytes, want %d", i, len(in), len(s.Inputs()[i]))
		}
		copy(s.Inputs()[i], in)
	}
}

// runOnce runs e once on inputs in a session of its own and returns
// copies of its outputs.
func runOnce(t testing.TB, e *Executable, inputs [][]byte) [][]byte {
	t.Helper()
	s, err := e.NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	feed(t, s, inputs)
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var outs [][]byte
	for _, o := range s.Outputs() {
		outs = append(outs, bytes.Clone(o))
	}
	return outs
}
