package berth

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/backend/cpu"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/npytest"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/passes"
)

// gpuLike is the CPU backend taking the control flow and the LSTMs of a
// graph as the CUDA backend does: an If left in a graph is refused with
// the error of a shape that waits for a value, naming the condition
// (backend/cuda buildIf), and LSTMs are written out as products and
// elementwise nodes (passes.LowerRecurrent).
type gpuLike struct {
	cpu.Backend
	lowered *int // the graphs whose LSTMs it wrote out
}

func (b gpuLike) Compile(g *ir.Graph, opts backend.Options) (backend.Executable, error) {
	for _, n := range g.Nodes {
		if n.Op == "If" {
			return nil, fmt.Errorf("node %q: no If here: %w", n.Name, &ir.ValueError{Tensor: g.Tensor(n.Inputs[0]).Name, Why: "the condition of an If"})
		}
	}
	if l := passes.LowerRecurrent(g); l != g {
		*b.lowered++
		g = l
	}
	return b.Backend.Compile(g, opts)
}

// TestIfOnADeviceWithoutIf runs the If fixtures (ifrate: a condition
// from an input and one computed at run time whose branches agree;
// ifstage: a computed one whose branches differ) on a device that runs no
// If, as the GPU: each session learns every condition first and plans the
// branch taken alone, and the outputs are ONNX Runtime's
// (scripts/gen_ort_fixtures.py). lstm_if (an LSTM in each branch of an If
// on a computed condition, scripts/gen_fixtures.py) runs both branches
// with its LSTM written out, and gives PyTorch's outputs.
func TestIfOnADeviceWithoutIf(t *testing.T) {
	const dev Device = "cpu-as-the-gpu"
	lowered := 0
	testDevices = map[Device]backend.Device{dev: gpuLike{lowered: &lowered}}
	t.Cleanup(func() { testDevices = nil })
	t.Run("lstm_if", func(t *testing.T) {
		runLSTMIf(t, dev)
		if lowered < 2 {
			t.Errorf("the LSTMs of %d plans were written out, want those of both branches", lowered)
		}
	})
	for _, name := range []string{"ifrate", "ifstage"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "open", name)
			m, err := Load(filepath.Join(dir, "model.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			_, s := openSessionOn(t, m, dev, Options{Threads: 1})
			sets := testenv.Glob(t, filepath.Join(dir, "set_*"), "run scripts/gen_ort_fixtures.py")
			for round := range 2 {
				for _, set := range sets {
					var ins []Tensor
					for i, a := range npytest.ReadSet(t, set, "input") {
						ins = append(ins, Tensor{Name: m.Inputs()[i].Name, DType: a.DType, Shape: a.Shape, Data: a.Data})
					}
					outs, err := s.Run(context.Background(), ins...)
					if err != nil {
						t.Fatalf("round %d, %s: %v", round, filepath.Base(set), err)
					}
					want := npytest.ReadSet(t, set, "output")
					if len(outs) != len(want) {
						t.Fatalf("%s: %d outputs, want %d", filepath.Base(set), len(outs), len(want))
					}
					for i, o := range outs {
						w := Tensor{DType: want[i].DType, Shape: want[i].Shape, Data: want[i].Data}
						got, gerr := o.Float32s()
						wv, werr := w.Float32s()
						if gerr != nil || werr != nil || !slices.Equal(o.Shape, w.Shape) || !(compare.RelL2(got, wv) <= 1e-4) {
							t.Errorf("round %d, %s: output %d (%s) %v against the reference's %v (%v %v)", round, filepath.Base(set), i, o.Name, o.Shape, w.Shape, gerr, werr)
						}
					}
				}
			}
		})
	}
}

// runLSTMIf runs testdata/models/lstm_if (an LSTM in each branch of an If
// on a computed condition) on dev, an input that takes each branch, and
// wants PyTorch's outputs (scripts/gen_fixtures.py) within 1e-4.
func runLSTMIf(t *testing.T, dev Device) {
	dir := filepath.Join("testdata", "models", "lstm_if")
	m, err := Load(filepath.Join(dir, "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	_, s := openSessionOn(t, m, dev, Options{Threads: 1})
	for _, prefix := range []string{"", "alt_"} {
		in := npytest.ReadSet(t, dir, prefix+"input")[0]
		want := npytest.ReadSet(t, dir, prefix+"output")[0]
		outs, err := s.Run(context.Background(), Tensor{Name: m.Inputs()[0].Name, DType: in.DType, Shape: in.Shape, Data: in.Data})
		if err != nil {
			t.Fatalf("%sinput: %v", prefix, err)
		}
		got, _ := outs[0].Float32s()
		wv, _ := (&Tensor{DType: want.DType, Shape: want.Shape, Data: want.Data}).Float32s()
		if e := compare.RelL2(got, wv); !(e <= 1e-4) || !slices.Equal(outs[0].Shape, []int64(want.Shape)) {
			t.Errorf("%s on %s: %v, rel L2 %.3g against the reference's %v", dir, dev, outs[0].Shape, e, want.Shape)
		}
	}
}
