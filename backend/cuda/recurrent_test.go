package cuda

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/passes"
)

// recurrentCase is one LSTM, GRU or RNN node: steps, batch, input and
// hidden sizes, the direction, the layout, whether it has peepholes (an
// LSTM's) and whether it takes initial states; it always has biases.
type recurrentCase struct {
	op                    string
	steps, batch, in, hid int64
	direction             string
	layout                int64
	peep, initial         bool
}

var recurrentCases = []recurrentCase{
	{"LSTM", 1, 1, 128, 128, "forward", 0, false, true}, // a step of Silero VAD
	{"LSTM", 4, 2, 6, 5, "bidirectional", 1, true, true},
	{"LSTM", 3, 3, 4, 8, "reverse", 0, true, false},
	{"GRU", 3, 2, 6, 5, "bidirectional", 0, false, true},
	{"RNN", 4, 3, 5, 7, "forward", 1, false, false},
}

func (c recurrentCase) String() string {
	return fmt.Sprintf("%s_T%d_B%d_%s_layout%d", c.op, c.steps, c.batch, c.direction, c.layout)
}

// graph is the case as a graph of one recurrent node with random constant
// weights, and random values for its inputs (x, and h0 and c0 where it
// takes them).
func (c recurrentCase) graph(r *rand.Rand) (*ir.Graph, [][]byte) {
	normal := func(n int64) []byte {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(0.3 * r.NormFloat64())
		}
		return raw.Bytes(v)
	}
	gates := map[string]int64{"LSTM": 4, "GRU": 3, "RNN": 1}[c.op]
	dirs := int64(1)
	if c.direction == "bidirectional" {
		dirs = 2
	}
	xs, hs := ir.Shape{c.steps, c.batch, c.in}, ir.Shape{dirs, c.batch, c.hid}
	if c.layout != 0 {
		xs, hs = ir.Shape{c.batch, c.steps, c.in}, ir.Shape{c.batch, dirs, c.hid}
	}
	g := &ir.Graph{Name: "recurrent", Opsets: map[string]int64{"": 14}}
	x := g.NewTensor("x", ir.Float32, xs, nil)
	h0, c0 := ir.NoTensor, ir.NoTensor
	g.Inputs = []ir.TensorID{x}
	inputs := [][]byte{normal(xs.Elements())}
	if c.initial {
		h0 = g.NewTensor("h0", ir.Float32, hs, nil)
		g.Inputs = append(g.Inputs, h0)
		inputs = append(inputs, normal(hs.Elements()))
		if c.op == "LSTM" {
			c0 = g.NewTensor("c0", ir.Float32, hs.Clone(), nil)
			g.Inputs = append(g.Inputs, c0)
			inputs = append(inputs, normal(hs.Elements()))
		}
	}
	ins := []ir.TensorID{x,
		g.NewTensor("W", ir.Float32, ir.Shape{dirs, gates * c.hid, c.in}, normal(dirs*gates*c.hid*c.in)),
		g.NewTensor("R", ir.Float32, ir.Shape{dirs, gates * c.hid, c.hid}, normal(dirs*gates*c.hid*c.hid)),
		g.NewTensor("B", ir.Float32, ir.Shape{dirs, 2 * gates * c.hid}, normal(dirs*2*gates*c.hid)),
		ir.NoTensor, h0}
	if c.op == "LSTM" {
		ins = append(ins, c0)
	}
	if c.peep && c.op == "LSTM" {
		ins = append(ins, g.NewTensor("P", ir.Float32, ir.Shape{dirs, 3 * c.hid}, normal(dirs*3*c.hid)))
	}
	for len(ins) > 3 && ins[len(ins)-1] == ir.NoTensor {
		ins = ins[:len(ins)-1]
	}
	g.Nodes = []ir.Node{{Name: "recurrent", Op: c.op, Inputs: ins, Attrs: ir.Attrs{
		"hidden_size": {Kind: ir.AttrInt, Int: c.hid},
		"direction":   {Kind: ir.AttrString, String: c.direction},
		"layout":      {Kind: ir.AttrInt, Int: c.layout},
	}}}
	types, err := ir.Infer(g, &g.Nodes[0])
	if err != nil {
		panic(err)
	}
	for i, tp := range types {
		id := g.AddTensor(ir.Tensor{Name: fmt.Sprintf("y%d", i), DType: tp.DType, Shape: tp.Shape, Producer: 0})
		g.Nodes[0].Outputs = append(g.Nodes[0].Outputs, id)
		g.Outputs = append(g.Outputs, id)
	}
	return g, inputs
}

// TestRecurrentLoweredBuilds writes the cases' nodes out as Compile does
// and builds every node's launches (no GPU needed): no recurrent node is
// left and every node has kernels.
func TestRecurrentLoweredBuilds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range recurrentCases {
		g, _ := c.graph(r)
		lowered := passes.LowerRecurrent(g)
		for i, n := range lowered.Nodes {
			if n.Op == c.op {
				t.Fatalf("%v: a %s is left", c, c.op)
			}
			if _, err := buildNode(lowered, i, 132, true, new([][]byte)); err != nil {
				t.Errorf("%v: %v", c, err)
			}
		}
		if err := Check(g); err != nil {
			t.Errorf("%v: Check: %v", c, err)
		}
	}
}

// TestRecurrentMatchesCPU runs the cases' nodes on the GPU, which writes
// them out as products and elementwise nodes (passes.LowerRecurrent), and
// on the CPU's recurrent kernel, and wants the same outputs within 1e-5
// (rel L2).
func TestRecurrentMatchesCPU(t *testing.T) {
	requireGPU(t)
	r := rand.New(rand.NewPCG(2, 2))
	for _, c := range recurrentCases {
		t.Run(c.String(), func(t *testing.T) {
			g, inputs := c.graph(r)
			// The CPU's kernel, on the inputs bound as constants.
			for i, id := range g.Inputs {
				g.Tensor(id).Data = inputs[i]
			}
			if err := cpu.Evaluate(g, &g.Nodes[0]); err != nil {
				t.Fatal(err)
			}
			var want [][]float64
			for _, id := range g.Outputs {
				var w []float64
				for _, v := range raw.F32(g.Tensor(id).Data) {
					w = append(w, float64(v))
				}
				want = append(want, w)
				g.Tensor(id).Data = nil
			}
			for _, id := range g.Inputs {
				g.Tensor(id).Data = nil
			}
			_, s := openSession(t, g, Options{})
			outs := make([][]byte, len(g.Outputs))
			for i, id := range g.Outputs {
				outs[i] = make([]byte, g.Tensor(id).Bytes())
			}
			for range 2 { // launched one by one, then replayed as a graph
				if err := s.Run(inputs, outs); err != nil {
					t.Fatal(err)
				}
			}
			for i := range want {
				if e := relL2(raw.F32(outs[i]), want[i]); !(e <= 1e-5) {
					t.Errorf("output %d: rel L2 %.3g against the CPU's %s", i, e, c.op)
				}
			}
		})
	}
}
