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

// lstmCase is one LSTM node: steps, batch, input and hidden sizes, the
// direction, the layout, whether it has peepholes and whether it takes
// initial states (inputs h0 and c0); it always has biases.
type lstmCase struct {
	steps, batch, in, hid int64
	direction             string
	layout                int64
	peep, initial         bool
}

var lstmCases = []lstmCase{
	{1, 1, 128, 128, "forward", 0, false, true}, // a step of Silero VAD
	{4, 2, 6, 5, "bidirectional", 1, true, true},
	{3, 3, 4, 8, "reverse", 0, true, false},
}

func (c lstmCase) String() string {
	return fmt.Sprintf("T%d_B%d_%s_layout%d", c.steps, c.batch, c.direction, c.layout)
}

// graph is the case as a graph of one LSTM node with random constant
// weights, and random values for its inputs (x, and h0 and c0 where it
// takes them).
func (c lstmCase) graph(r *rand.Rand) (*ir.Graph, [][]byte) {
	normal := func(n int64) []byte {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(0.3 * r.NormFloat64())
		}
		return raw.Bytes(v)
	}
	dirs := int64(1)
	if c.direction == "bidirectional" {
		dirs = 2
	}
	xs, hs := ir.Shape{c.steps, c.batch, c.in}, ir.Shape{dirs, c.batch, c.hid}
	if c.layout != 0 {
		xs, hs = ir.Shape{c.batch, c.steps, c.in}, ir.Shape{c.batch, dirs, c.hid}
	}
	g := &ir.Graph{Name: "lstm", Opsets: map[string]int64{"": 14}}
	x := g.NewTensor("x", ir.Float32, xs, nil)
	h0, c0 := ir.NoTensor, ir.NoTensor
	g.Inputs = []ir.TensorID{x}
	inputs := [][]byte{normal(xs.Elements())}
	if c.initial {
		h0 = g.NewTensor("h0", ir.Float32, hs, nil)
		c0 = g.NewTensor("c0", ir.Float32, hs.Clone(), nil)
		g.Inputs = append(g.Inputs, h0, c0)
		inputs = append(inputs, normal(hs.Elements()), normal(hs.Elements()))
	}
	ins := []ir.TensorID{x,
		g.NewTensor("W", ir.Float32, ir.Shape{dirs, 4 * c.hid, c.in}, normal(dirs*4*c.hid*c.in)),
		g.NewTensor("R", ir.Float32, ir.Shape{dirs, 4 * c.hid, c.hid}, normal(dirs*4*c.hid*c.hid)),
		g.NewTensor("B", ir.Float32, ir.Shape{dirs, 8 * c.hid}, normal(dirs*8*c.hid)),
		ir.NoTensor, h0, c0}
	if c.peep {
		ins = append(ins, g.NewTensor("P", ir.Float32, ir.Shape{dirs, 3 * c.hid}, normal(dirs*3*c.hid)))
	}
	g.Nodes = []ir.Node{{Name: "lstm", Op: "LSTM", Inputs: ins, Attrs: ir.Attrs{
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

// TestLSTMLoweredBuilds writes the cases' LSTMs out as Compile does and
// builds every node's launches (no GPU needed): no LSTM is left and every
// node has kernels.
func TestLSTMLoweredBuilds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range lstmCases {
		g, _ := c.graph(r)
		lowered := passes.LowerLSTM(g)
		for i, n := range lowered.Nodes {
			if n.Op == "LSTM" {
				t.Fatalf("%v: an LSTM is left", c)
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

// TestLSTMMatchesCPU runs the cases' LSTMs on the GPU, which writes them
// out as products and elementwise nodes (passes.LowerLSTM), and on the
// CPU's LSTM kernel, and wants the same outputs within 1e-5 (rel L2).
func TestLSTMMatchesCPU(t *testing.T) {
	requireGPU(t)
	r := rand.New(rand.NewPCG(2, 2))
	for _, c := range lstmCases {
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
					t.Errorf("output %d: rel L2 %.3g against the CPU's LSTM", i, e)
				}
			}
		})
	}
}
