package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx"
)

// expectedFailures lists the conformance cases berth does not pass yet,
// one "suite/case  reason" per line (shared with the API's conformance
// test in the root package).
const expectedFailures = "../../testdata/conformance_expected_failures.txt"

// TestConformanceCLI runs every case of ONNX's conformance suites as a
// user would, through the command line with nothing bound:
//
//	berth run model.onnx --input input_0.pb … --output-dir DIR
//
// and compares each output file with the reference as ONNX's backend
// test runner does: the same dtype and shape, floats within
// |got-want| <= 1e-7 + 1e-3*|want| (NaN matches NaN), everything else
// exactly. A sequence output is compared element by element (NAME[i]).
// A case listed in testdata/conformance_expected_failures.txt must fail
// and every other case must pass.
func TestConformanceCLI(t *testing.T) {
	cases := testenv.ConformanceCases(t)
	expected, err := testenv.ExpectedFailures(expectedFailures)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes testenv.Outcomes
	t.Run("case", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c, func(t *testing.T) {
				t.Parallel()
				reason := runCLICase(t, filepath.Join(testenv.ConformanceDir, c))
				outcomes.Record(c, reason)
				testenv.CheckListed(t, expected, expectedFailures, c, reason)
			})
		}
	})
	outcomes.LogSummary(t)
}

// runCLICase runs every data set of the case in dir through `berth run`;
// it returns why the case fails, "" when it passes.
func runCLICase(t *testing.T, dir string) string {
	model := filepath.Join(dir, "model.onnx")
	b, err := os.ReadFile(model)
	if err != nil {
		return err.Error()
	}
	sig, err := onnx.ReadSignature(b)
	if err != nil {
		return "signature: " + err.Error()
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return "no test data sets"
	}
	for _, set := range sets {
		args := []string{"run", model, "--threads", "1"}
		ins, _ := filepath.Glob(filepath.Join(set, "input_*.pb"))
		for i := range ins {
			args = append(args, "--input", filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
		}
		out := t.TempDir()
		args = append(args, "--output-dir", out)
		if code, _, errs := cli(args...); code != 0 {
			return fmt.Sprintf("exit %d: %s", code, strings.TrimSpace(strings.ReplaceAll(errs, model+": ", "")))
		}
		for i, o := range sig.Outputs {
			ref := filepath.Join(set, fmt.Sprintf("output_%d.pb", i))
			if r := compareOutput(out, ref, o); r != "" {
				return fmt.Sprintf("%s: output %d (%s): %s", filepath.Base(set), i, o.Name, r)
			}
		}
	}
	return ""
}

// compareOutput compares the output files berth wrote for o with the
// reference file ref.
func compareOutput(dir, ref string, o onnx.Value) string {
	if o.Kind == onnx.SequenceValue {
		want, err := onnx.ReadSequenceFile(ref)
		if err != nil {
			return "reference: " + err.Error()
		}
		for k, w := range want {
			if r := compareFile(filepath.Join(dir, fileName(onnx.SequenceElement(o.Name, k))), w, o.DType); r != "" {
				return fmt.Sprintf("element %d: %s", k, r)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, fileName(onnx.SequenceElement(o.Name, len(want))))); err == nil {
			return fmt.Sprintf("more than the reference's %d elements", len(want))
		}
		return ""
	}
	want, err := onnx.ReadTensorFile(ref)
	if err != nil {
		return "reference: " + err.Error()
	}
	return compareFile(filepath.Join(dir, fileName(o.Name)), want, o.DType)
}

func compareFile(path string, want *ir.Tensor, declared ir.DType) string {
	got, err := npy.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	gdt, wdt := got.DType, want.DType
	if declared == ir.BFloat16 {
		// .npy files and the test data carry bfloat16 bits as uint16.
		if gdt == ir.Uint16 {
			gdt = ir.BFloat16
		}
		if wdt == ir.Uint16 {
			wdt = ir.BFloat16
		}
	}
	if gdt != wdt || !want.Shape.Equal(got.Shape) {
		return fmt.Sprintf("%s%v, the reference is %s%v", gdt, got.Shape, wdt, want.Shape)
	}
	return compare.AllClose(gdt, got.Data, want.Data)
}

// TestOpsetCasesCLI runs the cases of testdata/opset (operators at
// opsets 18 to 20) and testdata/scalar (inputs declared scalars fed as
// [1], [1, 1] or [3]) through `berth run`, against ONNX Runtime's outputs
// (scripts/gen_ort_fixtures.py): every one must pass.
func TestOpsetCasesCLI(t *testing.T) {
	var dirs []string
	for _, pattern := range []string{"../../testdata/opset/*/model.onnx", "../../testdata/scalar/*/model.onnx"} {
		found, _ := filepath.Glob(pattern)
		dirs = append(dirs, found...)
	}
	if len(dirs) == 0 {
		t.Fatal("no cases under testdata/opset or testdata/scalar; run scripts/gen_ort_fixtures.py")
	}
	for _, m := range dirs {
		dir := filepath.Dir(m)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Parallel()
			if reason := runCLICase(t, dir); reason != "" {
				t.Error(reason)
			}
		})
	}
}
