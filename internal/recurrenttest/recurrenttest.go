package recurrenttest

import (
	"fmt"
	"math/rand/v2"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// Case is one LSTM, GRU or RNN node: its steps, batch, input and hidden
// sizes, direction and layout, which optional inputs it takes (Peep, an
// LSTM's peepholes, alone), and for a GRU linear_before_reset.
type Case struct {
	Op                    string
	Steps, Batch, In, Hid int64
	Direction             string
	Layout                int64
	Bias, Initial, Peep   bool
	LinearBeforeReset     bool
}

func (c Case) String() string {
	return fmt.Sprintf("%s_T%d_B%d_I%d_H%d_%s_layout%d_bias%v_init%v_peep%v_lbr%v",
		c.Op, c.Steps, c.Batch, c.In, c.Hid, c.Direction, c.Layout, c.Bias, c.Initial, c.Peep, c.LinearBeforeReset)
}

// Graph is the case as a graph of one node with constant weights drawn
// from N(0, 0.25) (W, R, and B and P where the case takes them) and its
// outputs typed by ir.Infer, and values for its inputs from N(0, 1): x,
// then h0 (and an LSTM's c0) where the case takes initial states.
func (c Case) Graph(r *rand.Rand) (*ir.Graph, [][]byte) {
	normal := func(n int64, scale float64) []byte {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(scale * r.NormFloat64())
		}
		return raw.Bytes(v)
	}
	gates := map[string]int64{"LSTM": 4, "GRU": 3, "RNN": 1}[c.Op]
	dirs := int64(1)
	if c.Direction == "bidirectional" {
		dirs = 2
	}
	xs, hs := ir.Shape{c.Steps, c.Batch, c.In}, ir.Shape{dirs, c.Batch, c.Hid}
	if c.Layout != 0 {
		xs, hs = ir.Shape{c.Batch, c.Steps, c.In}, ir.Shape{c.Batch, dirs, c.Hid}
	}
	g := &ir.Graph{Name: "recurrent", Opsets: map[string]int64{"": 14}}
	x := g.NewTensor("x", ir.Float32, xs, nil)
	g.Inputs = []ir.TensorID{x}
	inputs := [][]byte{normal(xs.Elements(), 1)}
	ins := []ir.TensorID{x,
		g.NewTensor("W", ir.Float32, ir.Shape{dirs, gates * c.Hid, c.In}, normal(dirs*gates*c.Hid*c.In, 0.5)),
		g.NewTensor("R", ir.Float32, ir.Shape{dirs, gates * c.Hid, c.Hid}, normal(dirs*gates*c.Hid*c.Hid, 0.5)),
		ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor}
	if c.Bias {
		ins[3] = g.NewTensor("B", ir.Float32, ir.Shape{dirs, 2 * gates * c.Hid}, normal(dirs*2*gates*c.Hid, 0.5))
	}
	if c.Initial {
		for k, name := range []string{"h0", "c0"} {
			if k == 1 && c.Op != "LSTM" {
				break
			}
			ins[5+k] = g.NewTensor(name, ir.Float32, hs.Clone(), nil)
			g.Inputs = append(g.Inputs, ins[5+k])
			inputs = append(inputs, normal(hs.Elements(), 1))
		}
	}
	if c.Peep && c.Op == "LSTM" {
		ins[7] = g.NewTensor("P", ir.Float32, ir.Shape{dirs, 3 * c.Hid}, normal(dirs*3*c.Hid, 0.5))
	}
	for len(ins) > 3 && ins[len(ins)-1] == ir.NoTensor {
		ins = ins[:len(ins)-1]
	}
	n := ir.Node{Name: "recurrent", Op: c.Op, Inputs: ins, Attrs: ir.Attrs{
		"hidden_size": {Kind: ir.AttrInt, Int: c.Hid},
		"direction":   {Kind: ir.AttrString, String: c.Direction},
		"layout":      {Kind: ir.AttrInt, Int: c.Layout},
	}}
	if c.LinearBeforeReset {
		n.Attrs["linear_before_reset"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
	}
	g.Nodes = []ir.Node{n}
	types, err := ir.Infer(g, &g.Nodes[0])
	if err != nil {
		panic(fmt.Sprintf("recurrenttest: %v: %v", c, err))
	}
	for i, tp := range types {
		id := g.AddTensor(ir.Tensor{Name: fmt.Sprintf("y%d", i), DType: tp.DType, Shape: tp.Shape, Producer: 0})
		g.Nodes[0].Outputs = append(g.Nodes[0].Outputs, id)
		g.Outputs = append(g.Outputs, id)
	}
	return g, inputs
}
