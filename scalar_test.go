package berth_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/compare"
)

// TestScalarInputShapes feeds inputs declared scalars as [1], [1, 1] and
// [3] (testdata/scalar, scripts/gen_ort_fixtures.py): ONNX Runtime takes
// any shape there and computes with the shape given, and so does berth,
// for a model of fixed shapes (whose session then runs a plan made for
// the shapes given beside its own) as for one of open shapes. Every data
// set runs alone as a conformance case, then all of them in one session,
// twice, against ONNX Runtime's outputs.
func TestScalarInputShapes(t *testing.T) {
	eachCase(t, "testdata/scalar", func(t *testing.T, dir string) {
		if reason, _ := runConformanceCase(dir); reason != "" {
			t.Fatal(reason)
		}
		m := loadModel(t, filepath.Join(dir, "model.onnx"))
		// scalar_rate's If needs the value of sr: open too.
		if open := !strings.HasSuffix(dir, "_fixed"); m.Open() != open {
			t.Fatalf("the model is open: %v, want %v", m.Open(), open)
		}
		names := make([]string, len(m.Inputs()))
		for i, in := range m.Inputs() {
			names[i] = in.Name
		}
		_, s := newSession(t, m, berth.Options{Threads: 1})
		sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
		for round := range 2 {
			for k, set := range sets {
				ins, _, err := readTensors(set, "input", nil, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				wants, _, err := readTensors(set, "output", nil, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				feeds := make([]berth.Tensor, len(ins))
				for i, x := range ins {
					feeds[i] = berth.Tensor{Name: names[i], DType: x.DType, Shape: x.Shape, Data: x.Data}
				}
				outs, err := s.Run(context.Background(), feeds...)
				if err != nil {
					t.Fatalf("round %d, set %d: %v", round, k, err)
				}
				for i, got := range outs {
					if !slices.Equal(got.Shape, wants[i].Shape) {
						t.Errorf("round %d, set %d: output %d has shape %v, ONNX Runtime's %v", round, k, i, got.Shape, wants[i].Shape)
						continue
					}
					if msg := compare.AllClose(got.DType, got.Data, wants[i].Data); msg != "" {
						t.Errorf("round %d, set %d: output %d: %s", round, k, i, msg)
					}
				}
			}
		}
	})
}

// TestScalarInputShapesRefused feeds inputs of the same size as declared
// but another rank where the declaration is not a scalar: ONNX Runtime
// refuses them ("Invalid rank for input"), and so does berth, naming the
// input.
func TestScalarInputShapesRefused(t *testing.T) {
	for _, c := range []struct {
		model string
		shape []int64
		want  string
	}{
		{"scalar_fixed", []int64{6}, `input "x": expected float32[2,3], got float32[6]`},
		{"scalar_fixed", []int64{1, 2, 3}, `input "x": expected float32[2,3], got float32[1,2,3]`},
		{"scalar_open", []int64{6}, `input "x": expected rank 2`},
	} {
		t.Run(fmt.Sprint(c.model, c.shape), func(t *testing.T) {
			m := loadModel(t, filepath.Join("testdata/scalar", c.model, "model.onnx"))
			_, s := newSession(t, m, berth.Options{Threads: 1})
			x := f32Tensor(c.shape, 1, 2, 3, 4, 5, 6)
			x.Name = "x"
			sc := f32Tensor([]int64{1}, 2)
			sc.Name = "s"
			_, err := s.Run(context.Background(), x, sc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}
