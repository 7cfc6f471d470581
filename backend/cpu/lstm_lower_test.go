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

// lstmCase is one LSTM node: steps, batch, input and hidden sizes, the
// direction, the layout, and which optional inputs it takes.
type lstmCase struct {
	steps, batch, in, hid int64
	direction             string
	layout                int64
	bias, initial, peep   bool
}

func (c lstmCase) String() string {
	return fmt.Sprintf("T%d_B%d_I%d_H%d_%s_layout%d_bias%v_init%v_peep%v", c.steps, c.batch, c.in, c.hid, c.direction, c.layout, c.bias, c.initial, c.peep)
}

// graph is the case as a graph of one LSTM node with random constant
// weights: inputs x (and the initial states), outputs Y, Y_h and Y_c.
func (c lstmCase) graph(r *rand.Rand) *ir.Graph {
	k := &kgraph{g: &ir.Graph{Name: "lstm", Opsets: map[string]int64{"": 14}}}
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
		k.constant("W", normal(dirs*4*c.hid*c.in), dirs, 4*c.hid, c.in),
		k.constant("R", normal(dirs*4*c.hid*c.hid), dirs, 4*c.hid, c.hid),
		ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor, ir.NoTensor}
	if c.bias {
		ins[3] = k.constant("B", normal(dirs*8*c.hid), dirs, 8*c.hid)
	}
	if c.initial {
		ins[5] = k.input("h0", ir.Float32, hs...)
		ins[6] = k.input("c0", ir.Float32, hs...)
	}
	if c.peep {
		ins[7] = k.constant("P", normal(dirs*3*c.hid), dirs, 3*c.hid)
	}
	for len(ins) > 3 && ins[len(ins)-1] == ir.NoTensor {
		ins = ins[:len(ins)-1]
	}
	n := ir.Node{Name: "lstm", Op: "LSTM", Inputs: ins, Attrs: ir.Attrs{
		"hidden_size": {Kind: ir.AttrInt, Int: c.hid},
		"direction":   {Kind: ir.AttrString, String: c.direction},
		"layout":      {Kind: ir.AttrInt, Int: c.layout},
	}}
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

// TestLowerLSTM runs LSTM nodes written out by passes.LowerLSTM (what the
// CUDA backend runs) and as they are (this backend's own kernel, which
// ONNX's conformance cases check) on the same inputs: every direction,
// both layouts, one step and several, with and without biases, initial
// states and peepholes. The outputs agree within 1e-5 (rel L2; the
// kernel sums in float64).
func TestLowerLSTM(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	var cases []lstmCase
	for _, dir := range []string{"forward", "reverse", "bidirectional"} {
		for _, layout := range []int64{0, 1} {
			cases = append(cases,
				lstmCase{1, 1, 4, 8, dir, layout, true, true, false},
				lstmCase{3, 2, 5, 6, dir, layout, false, false, true},
				lstmCase{5, 3, 2, 4, dir, layout, true, true, true})
		}
	}
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			g := c.graph(r)
			lowered := passes.LowerLSTM(g)
			if lowered == g {
				t.Fatal("nothing lowered")
			}
			for _, n := range lowered.Nodes {
				if n.Op == "LSTM" {
					t.Fatal("an LSTM node is left")
				}
			}
			if len(g.Nodes) != 1 || g.Nodes[0].Op != "LSTM" {
				t.Fatal("the lowering changed its input graph")
			}
			inputs := randomInputs(r, g)
			want := runOnce(t, compiled(t, g), inputs)
			got := runOnce(t, compiled(t, lowered), inputs)
			for i := range want {
				if e := cmp.RelL2(raw.F32(got[i]), raw.F32(want[i])); !(e <= 1e-5) {
					t.Errorf("output %d: rel L2 %.3g against the LSTM kernel", i, e)
				}
			}
		})
	}
}

// TestLowerLSTMConformance runs ONNX's LSTM conformance cases written out
// by passes.LowerLSTM, the weights bound as constants, against their
// reference outputs (within 1e-4, as the conformance runner compares).
func TestLowerLSTMConformance(t *testing.T) {
	const dir = testenv.ConformanceDir
	testenv.Require(t, dir, testenv.InstallConformance)
	for _, name := range []string{"test_lstm_defaults", "test_lstm_with_initial_bias", "test_lstm_with_peepholes", "test_lstm_batchwise"} {
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
			lowered := passes.LowerLSTM(g)
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
