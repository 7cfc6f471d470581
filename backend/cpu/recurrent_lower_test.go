package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	cmp "github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/internal/recurrenttest"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
	"github.com/berth-ml/berth/passes"
)

// TestLowerRecurrent runs LSTM, GRU and RNN nodes written out by
// passes.LowerRecurrent (what the CUDA backend runs) and as they are
// (this backend's own kernel, which ONNX's conformance cases check) on
// the same inputs: every direction, both layouts, one step and several,
// with and without biases, initial states, peepholes (LSTM) and
// linear_before_reset (GRU). The outputs agree within 1e-5 (rel L2; the
// kernel sums in float64).
func TestLowerRecurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var cases []recurrenttest.Case
	for _, op := range []string{"LSTM", "GRU", "RNN"} {
		for _, dir := range []string{"forward", "reverse", "bidirectional"} {
			for _, layout := range []int64{0, 1} {
				cases = append(cases,
					recurrenttest.Case{Op: op, Steps: 1, Batch: 1, In: 4, Hid: 8, Direction: dir, Layout: layout, Bias: true, Initial: true},
					recurrenttest.Case{Op: op, Steps: 3, Batch: 2, In: 5, Hid: 6, Direction: dir, Layout: layout, Peep: true, LinearBeforeReset: true},
					recurrenttest.Case{Op: op, Steps: 5, Batch: 3, In: 2, Hid: 4, Direction: dir, Layout: layout, Bias: true, Initial: true, Peep: true, LinearBeforeReset: op == "GRU"})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			g, inputs := c.Graph(r)
			lowered := passes.LowerRecurrent(g)
			if lowered == g {
				t.Fatal("nothing lowered")
			}
			for _, n := range lowered.Nodes {
				if n.Op == c.Op {
					t.Fatalf("a %s node is left", c.Op)
				}
			}
			if len(g.Nodes) != 1 || g.Nodes[0].Op != c.Op {
				t.Fatal("the lowering changed its input graph")
			}
			want := runOnce(t, compiled(t, g), inputs)
			got := runOnce(t, compiled(t, lowered), inputs)
			for i := range want {
				if e := cmp.RelL2(raw.F32(got[i]), raw.F32(want[i])); !(e <= 1e-5) {
					t.Errorf("output %d: rel L2 %.3g against the %s kernel", i, e, c.Op)
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
		g, _ := recurrenttest.Case{Op: "LSTM", Steps: 2, Batch: 1, In: 3, Hid: 4, Direction: "forward", Bias: true}.Graph(r)
		c.spoil(g)
		if got := passes.LowerRecurrent(g); got != g {
			t.Errorf("%s: the node was lowered", c.name)
		}
	}
}
