package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/internal/recurrenttest"
	"github.com/berth-ml/berth/passes"
)

// recurrentCases are the nodes of the tests below, all with biases: a
// step of Silero VAD's shape, and others of every direction, layout and
// operator, with and without initial states and peepholes.
var recurrentCases = []recurrenttest.Case{
	{Op: "LSTM", Steps: 1, Batch: 1, In: 128, Hid: 128, Direction: "forward", Bias: true, Initial: true},
	{Op: "LSTM", Steps: 4, Batch: 2, In: 6, Hid: 5, Direction: "bidirectional", Layout: 1, Bias: true, Initial: true, Peep: true},
	{Op: "LSTM", Steps: 3, Batch: 3, In: 4, Hid: 8, Direction: "reverse", Bias: true, Peep: true},
	{Op: "GRU", Steps: 3, Batch: 2, In: 6, Hid: 5, Direction: "bidirectional", Bias: true, Initial: true},
	{Op: "RNN", Steps: 4, Batch: 3, In: 5, Hid: 7, Direction: "forward", Layout: 1, Bias: true},
}

// TestRecurrentLoweredBuilds writes the cases' nodes out as Compile does
// and builds every node's launches (no GPU needed): no recurrent node is
// left and every node has kernels.
func TestRecurrentLoweredBuilds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, c := range recurrentCases {
		g, _ := c.Graph(r)
		lowered := passes.LowerRecurrent(g)
		for i, n := range lowered.Nodes {
			if n.Op == c.Op {
				t.Fatalf("%v: a %s is left", c, c.Op)
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
			g, inputs := c.Graph(r)
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
					t.Errorf("output %d: rel L2 %.3g against the CPU's %s", i, e, c.Op)
				}
			}
		})
	}
}
