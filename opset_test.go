package berth_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/testenv"
)

// TestOpsetCases runs the cases of testdata/opset (one operator each at
// opset 18, 19 or 20, where its definition changed;
// scripts/gen_ort_fixtures.py) as the conformance cases run, against ONNX
// Runtime's outputs: every one must pass.
func TestOpsetCases(t *testing.T) {
	eachCase(t, "testdata/opset", func(t *testing.T, dir string) {
		if reason, _ := runConformanceCase(dir); reason != "" {
			t.Error(reason)
		}
	})
}

// eachCase runs test in a subtest for each folder under root that holds a
// model.onnx, the cases of scripts/gen_ort_fixtures.py; none is a failure.
func eachCase(t *testing.T, root string, test func(t *testing.T, dir string)) {
	paths := testenv.Glob(t, filepath.Join(root, "*", "model.onnx"), "run scripts/gen_ort_fixtures.py")
	for _, path := range paths {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) { test(t, dir) })
	}
}

// TestOpsetRefused loads, compiles and runs the models of
// testdata/opset/refused, which use what berth does not implement of
// opsets 18 to 20: each fails with an error naming the operator and the
// opset.
func TestOpsetRefused(t *testing.T) {
	cases := []struct {
		file string
		want []string
	}{
		{"group_normalization", []string{"GroupNormalization", "added in opset 18", "imports opset 18"}},
		{"col2im", []string{"Col2Im", "added in opset 18"}},
		{"center_crop_pad", []string{"CenterCropPad", "added in opset 18"}},
		{"deform_conv", []string{"DeformConv", "added in opset 19", "imports opset 19"}},
		{"resize_antialias", []string{"(Resize)", "antialias (opset 18) is not supported"}},
		{"gridsample_volume", []string{"GridSample", "volumes of opset 20"}},
		{"pad_wrap_opset18", []string{"Pad", "mode wrap needs opset 19, the model imports 18"}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			err := loadAndRun(filepath.Join("testdata/opset/refused", c.file+".onnx"))
			if err == nil {
				t.Fatal("ran")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// loadAndRun loads, compiles and runs the model at path on inputs of
// zeros of the shapes it declares, and returns the first error.
func loadAndRun(path string) error {
	m, err := berth.Load(path)
	if err != nil {
		return err
	}
	defer m.Close()
	exe, err := berth.Compile(m, berth.CPU, berth.Options{Threads: 1})
	if err != nil {
		return err
	}
	defer exe.Close()
	s, err := exe.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	var ins []berth.Tensor
	for _, in := range exe.Inputs() {
		n := int64(in.DType.Size())
		for _, d := range in.Shape {
			n *= d
		}
		ins = append(ins, berth.Tensor{Name: in.Name, DType: in.DType, Shape: in.Shape, Data: make([]byte, n)})
	}
	_, err = s.Run(context.Background(), ins...)
	return err
}
