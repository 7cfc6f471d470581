package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	cmp "github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// recurrentCase is one LSTM, GRU or RNN node: steps, batch, input and
// hidden sizes, the direction, the layout, which optional inputs it takes
// (peepholes for an LSTM alone), and for a GRU linear_before_reset.
type recurrentCase struct {
	op                    string
	steps, batch, in, hid int64
	direction             string
	layout                int64
	bias, initial, peep   bool
	linearBeforeReset     bool
}

func (c recurrentCase) String() string {
	return fmt.Sprintf("%s_T%d_B%d_I%d_H%d_%s_layout%d_bias%v_init%v_peep%v_lbr%v", c.op, c.steps, c.batch, c.in, c.hid, c.direction, c.layout, c.bias, c.initial, c.peep, c.linearBeforeReset)
}

// graph is the case as a graph of one LSTM node with random constant
// weights: inputs x (and the initial states), outputs Y, Y_h and Y_c.
func (c recurrentCase) graph(r *rand.Rand) *ir.Graph {
	k := &kgraph{g: &ir.Graph{Name: "recurrent", Opsets: map[string]int64{"": 14}}}
	gates := map[string]int64{"LSTM": 4, "GRU": 3, "RNN": 1}[c.op]
	dirs := int64(1)
	if c.direction == "bidirectional" {
		dirs = 2
	}
	normal := func(n int64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(0.5 * r.NormFloat64())
		}
		return v
	}
	xs, hs := []int64{c.steps, c.batch, c.in}, []int64{dirs, c.batch, c.hid}
	if c.layout != 0 {
		xs, hs = []int64{c.batch, c.steps, c.in}, []int64{c.batch, dirs, c.hid}
	}
	ins := []ir.TensorID{k.input("x", ir.Float32, xs...),
		k.constant("W", normal(dirs*gates*c.hid*c.in), dirs, gates*c.hid, c.in),
		k.constant("R", normal(dirs*gates*c.hid*c.hid), dirs, gates*c.hid, c.hid),
		ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor}
	if c.bias {
		ins[3] = k.constant("B", normal(dirs*2*gates*c.hid), dirs, 2*gates*c.hid)
	}
	if c.initial {
		ins[5] = k.input("h0", ir.Float32, hs...)
		if c.op == "LSTM" {
			ins[6] = k.input("c0", ir.Float32, hs...)
		}
	}
	if c.peep && c.op == "LSTM" {
		ins[7] = k.constant("P", normal(dirs*3*c.hid), dirs, 3*c.hid)
	}
	for len(ins) > 3 && ins[len(ins)-1] == ir.NoTensor {
		ins = ins[:len(ins)-1]
	}
	n := ir.Node{Name: "recurrent", Op: c.op, Inputs: ins, Attrs: ir.Attrs{
		"hidden_size": {Kind: ir.AttrInt, Int: c.hid},
		"direction":   {Kind: ir.AttrString, String: c.direction},
		"layout":      {Kind: ir.AttrInt, Int: c.layout},
	}}
	if c.linearBeforeReset {
		n.Attrs["linear_before_reset"] = ir.Attr{Kind: ir.AttrInt, Int: 1}
	}
	k.g.Nodes = append(k.g.Nodes, n)
	types, err := ir.Infer(k.g, &k.g.Nodes[0])
	if err != nil {
		panic(err)
	}
	for i, tp := range types {
		id := k.g.AddTensor(ir.Tensor{Name: fmt.Sprintf("y%d", i), DType: tp.DType, Shape: tp.Shape, Producer: 0})
		k.g.Nodes[0].Outputs = append(k.g.Nodes[0].Outputs, id)
		k.g.Outputs = append(k.g.Outputs, id)
	}
	return k.g
}

// TestLowerRecurrent runs LSTM, GRU and RNN nodes written out by
// passes.LowerRecurrent (what the CUDA backend runs) and as they are
// (this backend's own kernel, which ONNX's conformance cases check) on
// the same inputs: every direction, both layouts, one step and several,
// with and without biases, initial states, peepholes (LSTM) and
// linear_before_reset (GRU). The outputs agree within 1e-5 (rel L2; the
// kernel sums in float64).
func TestLowerRecurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var cases []recurrentCase
	for _, op := range []string{"LSTM", "GRU", "RNN"} {
		for _, dir := range []string{"forward", "reverse", "bidirectional"} {
			for _, layout := range []int64{0, 1} {
				cases = append(cases,
					recurrentCase{op, 1, 1, 4, 8, dir, layout, true, true, false, false},
					recurrentCase{op, 3, 2, 5, 6, dir, layout, false, false, true, true},
					recurrentCase{op, 5, 3, 2, 4, dir, layout, true, true, true, op == "GRU"})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			g := c.graph(r)
			lowered := passes.LowerRecurrent(g)
			if lowered == g {
				t.Fatal("nothing lowered")
			}
			for _, n := range lowered.Nodes {
				if n.Op == c.op {
					t.Fatalf("a %s node is left", c.op)
				}
			}
			if len(g.Nodes) != 1 || g.Nodes[0].Op != c.op {
				t.Fatal("the lowering changed its input graph")
			}
			inputs := randomInputs(r, g)
			want := runOnce(t, compiled(t, g), inputs)
			got := runOnce(t, compiled(t, lowered), inputs)
			for i := range want {
				if e := cmp.RelL2(raw.F32(got[i]), raw.F32(want[i])); !(e <= 1e-5) {
					t.Errorf("output %d: rel L2 %.3g against the %s kernel", i, e, c.op)
				}
			}
		})
	}
}

// TestLowerRecurrentConformance runs ONNX's LSTM, GRU and RNN conformance
// cases written out by passes.LowerRecurrent, the weights bound as
// constants, against their reference outputs (within 1e-4, as the
// conformance runner compares).
func TestLowerRecurrentConformance(t *testing.T) {
	const dir = testenv.ConformanceDir
	testenv.Require(t, dir, testenv.InstallConformance)
	for _, name := range []string{"test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes", "test_lstm_batchwise",
		"test_gru_defaults", "test_gru_with_initial_bias", "test_gru_seq_length", "test_gru_batchwise",
		"test_simple_rnn_defaults", "test_simple_rnn_with_initial_bias", "test_rnn_seq_length", "test_simple_rnn_batchwise"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, "node", name)
			m, err := onnx.Import(filepath.Join(path, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			g := m.Graph
			set := filepath.Join(path, "test_data_set_0")
			// x stays an input; the weights (and every other input)
			// become constants, as they are in exported models.
			var inputs [][]byte
			for i, id := range g.Inputs {
				v, err := onnx.ReadTensorFile(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
				if err != nil {
					t.Fatal(err)
				}
				in := &g.Tensors[id]
				in.Shape = v.Shape
				if i == 0 {
					inputs = append(inputs, v.Data)
					continue
				}
				in.Data = v.Data
			}
			g.Inputs = g.Inputs[:1]
			if err := passes.Prepare(g, Evaluate); err != nil {
				t.Fatal(err)
			}
			lowered := passes.LowerRecurrent(g)
			if lowered == g {
				t.Fatal("nothing lowered")
			}
			got := runOnce(t, compiled(t, lowered), inputs)
			for i := range g.Outputs {
				want, err := onnx.ReadTensorFile(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
				if err != nil {
					t.Fatal(err)
				}
				gv, wv := raw.F32(got[i]), raw.F32(want.Data)
				if len(gv) != len(wv) {
					t.Fatalf("output %d: %d values, want %d", i, len(gv), len(wv))
				}
				for j := range wv {
					if d := math.Abs(float64(gv[j] - wv[j])); !(d <= 1e-4+1e-4*math.Abs(float64(wv[j]))) {
						t.Fatalf("output %d, element %d: %v, want %v", i, j, gv[j], wv[j])
					}
				}
			}
		})
	}
}

// compiled compiles g for this backend, closed with the test.
func compiled(t *testing.T, g *ir.Graph) *Executable {
	t.Helper()
	e, err := Compile(g, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestLowerRecurrentRefuses: nodes the lowering does not take are left as
// they are, and a graph with nothing lowered comes back itself: a
// hidden_size that does not fit the weights (one that overflows their
// sizes too), a clip, activations other than the defaults, a
// sequence_lens input.
func TestLowerRecurrentRefuses(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct {
		name  string
		spoil func(g *ir.Graph)
	}{
		{"hidden_size", func(g *ir.Graph) { g.Nodes[0].Attrs["hidden_size"] = ir.Attr{Kind: ir.AttrInt, Int: 7} }},
		{"hidden_size overflowing", func(g *ir.Graph) { g.Nodes[0].Attrs["hidden_size"] = ir.Attr{Kind: ir.AttrInt, Int: 1 << 61} }},
		{"clip", func(g *ir.Graph) { g.Nodes[0].Attrs["clip"] = ir.Attr{Kind: ir.AttrFloat, Float: 3} }},
		{"activations", func(g *ir.Graph) {
			g.Nodes[0].Attrs["activations"] = ir.Attr{Kind: ir.AttrStrings, Strings: []string{"Relu", "Tanh", "Tanh"}}
		}},
		{"sequence_lens", func(g *ir.Graph) {
			n := &g.Nodes[0]
			lens := g.NewTensor("lens", ir.Int32, ir.Shape{1}, nil)
			g.Inputs = append(g.Inputs, lens)
			n.Inputs = append(n.Inputs[:4:4], lens)
		}},
	} {
		g := recurrentCase{"LSTM", 2, 1, 3, 4, "forward", 0, true, false, false, false}.graph(r)
		c.spoil(g)
		if got := passes.LowerRecurrent(g); got != g {
			t.Errorf("%s: the node was lowered", c.name)
		}
	}
}
