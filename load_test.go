package berth_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/onnx"
)

// TestLoadWithConstants specialises a Reshape whose target shape is a
// graph input: bound as a constant, the model plans statically and runs
// with the data input alone.
func TestLoadWithConstants(t *testing.T) {
	testenv.Require(t, testenv.ConformanceDir, testenv.InstallConformance)
	dir := filepath.Join(testenv.ConformanceDir, "node", "test_reshape_reordered_all_dims")
	read := func(name string) berth.Tensor {
		x, err := onnx.ReadTensorFile(filepath.Join(dir, "test_data_set_0", name))
		if err != nil {
			t.Fatal(err)
		}
		return berth.Tensor{DType: x.DType, Shape: x.Shape, Data: x.Data}
	}
	data, shape, want := read("input_0.pb"), read("input_1.pb"), read("output_0.pb")
	model := filepath.Join(dir, "model.onnx")
	names, err := onnx.InputNames(model)
	if err != nil || len(names) != 2 {
		t.Fatalf("InputNames = %q, %v", names, err)
	}
	// As it is, the model is open: the session specialises it on the
	// shape's value.
	open, err := berth.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if !open.Open() {
		t.Fatal("Load of a Reshape with a run-time shape is not open")
	}
	// Twice: the second executable knows the shape input decides shapes.
	for range 2 {
		outs := runModel(t, open, named(names[0], data), named(names[1], shape))
		if string(outs[0].Data) != string(want.Data) || !slices.Equal(outs[0].Shape, want.Shape) {
			t.Errorf("open model: output %v differs from the reference %v", outs[0].Shape, want.Shape)
		}
	}
	shape.Name = names[1]
	m, err := berth.LoadWith(model, berth.LoadOptions{Constants: map[string]berth.Tensor{names[1]: shape}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if in := m.Inputs(); len(in) != 1 || in[0].Name != names[0] {
		t.Fatalf("inputs %v, want only %s", in, names[0])
	}
	_, s := newSession(t, m, berth.Options{Threads: 1})
	out, err := s.Run(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if string(out[0].Data) != string(want.Data) || !slices.Equal(out[0].Shape, want.Shape) {
		t.Errorf("output %v differs from the reference %v", out[0].Shape, want.Shape)
	}

	for _, c := range []struct {
		consts map[string]berth.Tensor
		want   string
	}{
		{map[string]berth.Tensor{"nope": shape}, "no graph input"},
		{map[string]berth.Tensor{names[1]: {DType: berth.Int32, Shape: shape.Shape, Data: shape.Data[:len(shape.Data)/2]}}, "the input is int64"},
		{map[string]berth.Tensor{names[1]: {DType: berth.Int64, Shape: shape.Shape, Data: shape.Data[:8]}}, "bytes of data"},
	} {
		if _, err := berth.LoadWith(model, berth.LoadOptions{Constants: c.consts}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadWith(%v): err = %v, want one containing %q", c.consts, err, c.want)
		}
	}
}

// A closed executable makes no new sessions; closing twice is fine.
func TestExecutableClose(t *testing.T) {
	m, err := berth.Load("testdata/models/resnet/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exe := compileWith(t, m, berth.Options{})
	if err := exe.Close(); err != nil {
		t.Fatal(err)
	}
	if err := exe.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := exe.NewSession(); err == nil {
		t.Fatal("NewSession on a closed executable succeeded")
	}
}
