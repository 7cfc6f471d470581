package berth

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/npy"
)

// TestStageHandsOn runs the detector of testdata/open/nms, whose boxes
// come from a NonMaxSuppression: the plan after its stage takes what the
// stage computed as it is, and computes none of it again.
func TestStageHandsOn(t *testing.T) {
	_, s := freshSession(t, "testdata/open/nms/model.onnx")
	for k := range 3 {
		a, err := npy.ReadFile(fmt.Sprintf("testdata/open/nms/set_%d/input_0.npy", k))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Run(context.Background(), Tensor{Name: "feats", DType: a.DType, Shape: a.Shape, Data: a.Data}); err != nil {
			t.Fatal(err)
		}
	}
	stages := 0
	var walk func(sp *special)
	walk = func(sp *special) {
		if sp.final() {
			return
		}
		stages++
		computed := map[string]bool{}
		for _, n := range sp.m.graph.Nodes {
			computed[n.Name] = true
		}
		for _, k := range sp.kids {
			for _, n := range k.m.graph.Nodes {
				if n.Name != "" && computed[n.Name] {
					t.Errorf("node %q (%s) runs in a stage and again in the plan after it", n.Name, n.Op)
				}
			}
			walk(k)
		}
	}
	for _, sp := range s.open.plans {
		walk(sp)
	}
	if stages == 0 {
		t.Fatal("no stage ran")
	}
}

// TestStageReimport runs the detector of testdata/open/nms on inputs of
// one shape and new values, one after the other in one session: the plan
// after the stage is imported once and each later set of values bound
// into a copy of that import (openModel.reimport). Each run's outputs must
// be those of a session of the model loaded anew, which imports its own.
func TestStageReimport(t *testing.T) {
	m, s := freshSession(t, "testdata/open/nms/model.onnx")
	a, err := npy.ReadFile("testdata/open/nms/set_0/input_0.npy")
	if err != nil {
		t.Fatal(err)
	}
	run := func(s *Session, data []byte) []Tensor {
		outs, err := s.Run(context.Background(), Tensor{Name: "feats", DType: a.DType, Shape: a.Shape, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		for i := range outs {
			outs[i] = outs[i].Clone()
		}
		return outs
	}
	r := rand.New(rand.NewPCG(3, 4))
	base := raw.F32(a.Data)
	for k := range 6 {
		v := make([]float32, len(base))
		for i := range v {
			v[i] = base[i] + 0.3*float32(r.NormFloat64())
		}
		data := raw.Bytes(v)
		got := run(s, data)
		_, fresh := freshSession(t, "testdata/open/nms/model.onnx")
		want := run(fresh, data)
		for i := range want {
			if !slices.Equal(got[i].Shape, want[i].Shape) || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Errorf("run %d: output %q is %v, a fresh session's %v", k, want[i].Name, got[i].Shape, want[i].Shape)
			}
		}
	}
	if hits := m.open.imported.hits; hits < 5 {
		t.Errorf("%d of 6 plans after the stage copied the kept import, want 5", hits)
	}
}

// freshSession loads path anew, a model of its own (no import kept from
// another), and returns it and a session of it on one thread, closed with
// the test.
func freshSession(t *testing.T, path string) (*Model, *Session) {
	m, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	_, s := openSessionOn(t, m, CPU, Options{Threads: 1})
	return m, s
}
