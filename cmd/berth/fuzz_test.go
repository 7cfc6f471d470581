package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// FuzzDimFlags runs `berth run` on a model with an open dimension with
// --dim, --max-dim and --plans values the fuzzer picks: a bad value is a
// usage error (exit 2), anything else runs or fails with exit 1; either
// way stderr is one line and never a panic.
func FuzzDimFlags(f *testing.F) {
	f.Add("n=3", "n=4", "0")
	f.Add("n=-1", "n=0", "-3")
	f.Add("n=1099511627776", "n=99999999999999999999", "1")
	f.Add("=3", "n==3", "x")
	f.Add("batch=2", "n=9223372036854775807", "9223372036854775807")
	dir := f.TempDir()
	model := filepath.Join(dir, "add.onnx")
	g := onnxtest.Graph{
		Inputs:  []onnxtest.Input{{Name: "a", Dims: []string{"n"}}, {Name: "b", Dims: []string{"n"}}},
		Nodes:   []onnxtest.Node{{Op: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}},
		Outputs: []string{"y"},
	}
	if err := os.WriteFile(model, g.Bytes(), 0o644); err != nil {
		f.Fatal(err)
	}
	input := filepath.Join(dir, "x.npy")
	if err := npy.WriteFile(input, &npy.Array{DType: ir.Float32, Shape: []int64{3}, Data: make([]byte, 12)}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, dim, bound, plans string) {
		args := []string{"run", model, "--input", "a=" + input, "--input", "b=" + input, "--output-dir", t.TempDir()}
		if dim != "" {
			args = append(args, "--dim", dim)
		}
		if bound != "" {
			args = append(args, "--max-dim", bound)
		}
		if plans != "" {
			args = append(args, "--plans", plans)
		}
		code, _, errs := cli(args...)
		if code == 0 {
			return
		}
		if code != 1 && code != 2 {
			t.Errorf("exit %d: %s", code, errs)
		}
		if strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || errs == "" {
			t.Errorf("stderr is not one line: %q", errs)
		}
		if strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine ") {
			t.Errorf("stderr: %s", errs)
		}
	})
}
