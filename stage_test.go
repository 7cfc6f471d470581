package berth

import (
	"context"
	"fmt"
	"testing"

	"github.com/berth-ml/berth/npy"
)

// TestStageHandsOn runs the detector of testdata/open/nms, whose boxes
// come from a NonMaxSuppression: the plan after its stage takes what the
// stage computed as it is, and computes none of it again.
func TestStageHandsOn(t *testing.T) {
	m, err := Load("testdata/open/nms/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exe, err := Compile(m, CPU, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
