package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-ml/berth/arena"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// cli runs the command line in-process and returns its exit code and
// output.
func cli(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func fixtures(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("../../testdata/models/*")
	if len(dirs) == 0 {
		t.Fatal("no fixtures under testdata/models; run scripts/gen_fixtures.py")
	}
	return dirs
}

func TestRunEmbedded(t *testing.T) {
	code, out, errs := cli("run")
	if code != 0 {
		t.Fatalf("berth run: exit %d: %s", code, errs)
	}
	for _, want := range []string{"Fashion-MNIST", "predicted", "true label", "correct"} {
		if !strings.Contains(out, want) {
			t.Errorf("berth run output lacks %q:\n%s", want, out)
		}
	}
}

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, a.Shape.Elements())
	if err := arena.DecodeF32(v, a.DType, a.Data); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunOutputDirMatchesPyTorch runs every fixture through the CLI and
// compares the .npy files it writes with PyTorch's outputs; where a fixture
// has a second input set (alt_input_<i>.npy, alt_output_<i>.npy) it runs
// that too.
func TestRunOutputDirMatchesPyTorch(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var meta struct{ Inputs, Outputs []string }
			b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &meta); err != nil {
				t.Fatal(err)
			}
			runSet(t, dir, meta.Inputs, meta.Outputs, "")
			if _, err := os.Stat(filepath.Join(dir, "alt_input_0.npy")); err == nil {
				runSet(t, dir, meta.Inputs, meta.Outputs, "alt_")
			}
		})
	}
}

// runSet runs the fixture in dir on <prefix>input_<i>.npy with `berth run
// --output-dir` and compares with <prefix>output_<i>.npy.
func runSet(t *testing.T, dir string, inputs, outputs []string, prefix string) {
	t.Helper()
	out := t.TempDir()
	args := []string{"run", filepath.Join(dir, "model.onnx"), "--output-dir", out}
	for i, name := range inputs {
		args = append(args, "--input", fmt.Sprintf("%s=%s", name, filepath.Join(dir, fmt.Sprintf("%sinput_%d.npy", prefix, i))))
	}
	if code, _, errs := cli(args...); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for i, name := range outputs {
		got := readF32(t, filepath.Join(out, fileName(name)))
		want := readF32(t, filepath.Join(dir, fmt.Sprintf("%soutput_%d.npy", prefix, i)))
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
		}
		if e := compare.RelL2(got, want); !(e <= 1e-4) {
			t.Errorf("%s%s: relative L2 error %.3g > 1e-4", prefix, name, e)
		}
	}
}

func TestPlanJSON(t *testing.T) {
	for _, dir := range fixtures(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			code, out, errs := cli("plan", filepath.Join(dir, "model.onnx"), "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var s planSummary
			if err := json.Unmarshal([]byte(out), &s); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if !s.Verified {
				t.Error("plan not verified")
			}
			if s.ActivationBytes > s.FileOrderLowerBoundBytes {
				t.Errorf("activation_bytes %d > file_order_lower_bound_bytes %d", s.ActivationBytes, s.FileOrderLowerBoundBytes)
			}
			if s.ActivationBytes != s.LowerBoundBytes {
				t.Errorf("activation_bytes %d ≠ lower_bound_bytes %d: placement lost memory to fragmentation", s.ActivationBytes, s.LowerBoundBytes)
			}
			t.Logf("activation %d, LOAD %d, file-order LOAD %d, naive %d, %.2f ms", s.ActivationBytes, s.LowerBoundBytes, s.FileOrderLowerBoundBytes, s.NaiveBytes, s.PlanMS)
		})
	}
}

func TestPlanTextAndSVG(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "plan.svg")
	code, out, errs := cli("plan", "../../testdata/models/resnet/model.onnx", "--svg", svg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "verified") {
		t.Errorf("text report lacks the verdict:\n%s", out)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("no SVG written: %v", err)
	}
}

func TestBenchJSON(t *testing.T) {
	code, out, errs := cli("bench", "../../testdata/models/gpt/model.onnx", "--iters", "5", "--warmup", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.AllocsPerRun != 0 {
		t.Errorf("allocs_per_run = %v", r.AllocsPerRun)
	}
	if r.Iters != 5 || r.MedianMS <= 0 || r.MinMS > r.MedianMS || r.MedianMS > r.P90MS || r.ActivationBytes <= 0 || r.WeightBytes <= 0 || r.PeakRSSMB <= 0 || r.WorkspaceBytes != 0 {
		t.Errorf("implausible result %+v", r)
	}
}

func TestInfo(t *testing.T) {
	code, out, errs := cli("info", "../../testdata/models/bert/model.onnx")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"input_ids", "attention_mask", "last_hidden_state", "LayerNormalization", "ai.onnx 17", "weights"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
}

// TestLanguageModel: a GGUF language model of testdata/llm, described by
// info and run on a prompt by run, as a user calls them.
func TestLanguageModel(t *testing.T) {
	const model = "../../testdata/llm/llama-q4_0.gguf"
	code, out, errs := cli("info", model)
	if code != 0 {
		t.Fatalf("info: exit %d: %s", code, errs)
	}
	for _, want := range []string{"GGUF v3, llama: 2 layers", "tokens                   int64[seq]", "q4_0", "llama.rope.freq_base"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.npy")
	ids := make([]byte, 8*5)
	for i := range 5 {
		ids[8*i] = byte(3 + 7*i)
	}
	if err := npy.WriteFile(tokens, &npy.Array{DType: ir.Int64, Shape: []int64{5}, Data: ids}); err != nil {
		t.Fatal(err)
	}
	code, _, errs = cli("run", model, "--input", "tokens="+tokens, "--output-dir", dir)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	a, err := npy.ReadFile(filepath.Join(dir, "logits.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != ir.Float32 || !slices.Equal(a.Shape, []int64{5, 288}) {
		t.Errorf("logits %s%v, want float32[5 288]", a.DType, a.Shape)
	}
}

// TestBadInput checks that every kind of bad input ends in a one-line error
// and a non-zero exit, never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notONNX := write("notonnx.onnx", []byte("#!/bin/sh\necho this is not a model\n"))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(i*7919 + i>>3)
	}
	randomFile := write("random.onnx", random)
	empty := write("empty.onnx", nil)
	wrongShape := filepath.Join(dir, "wrong_shape.npy")
	npy.WriteFile(wrongShape, &npy.Array{DType: ir.Float32, Shape: []int64{1, 3, 16, 16}, Data: make([]byte, 4*3*16*16)})
	wrongType := filepath.Join(dir, "wrong_type.npy")
	npy.WriteFile(wrongType, &npy.Array{DType: ir.Uint8, Shape: []int64{1, 3, 32, 32}, Data: make([]byte, 3*32*32)})
	badNpy := write("bad.npy", []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'"))
	resnet := "../../testdata/models/resnet/model.onnx"
	bert := "../../testdata/models/bert/model.onnx"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing file", []string{"run", filepath.Join(dir, "nope.onnx")}, "no such file"},
		{"not onnx", []string{"run", notONNX}, "ONNX"},
		{"random bytes", []string{"info", randomFile}, ""},
		{"empty file", []string{"plan", empty}, ""},
		{"directory", []string{"info", dir}, ""},
		{"missing input", []string{"run", bert, "--input", "input_ids=../../testdata/models/bert/input_0.npy"}, "attention_mask"},
		{"wrong shape", []string{"run", resnet, "--input", wrongShape}, `expected float32[1,3,32,32], got float32[1,3,16,16]`},
		{"wrong dtype", []string{"run", resnet, "--input", wrongType}, `expected float32[1,3,32,32], got uint8[1,3,32,32]`},
		{"malformed npy", []string{"run", resnet, "--input", badNpy}, "npy"},
		{"missing npy", []string{"run", resnet, "--input", filepath.Join(dir, "none.npy")}, "no such file"},
		{"too many inputs", []string{"run", resnet, "--input", wrongShape, "--input", wrongShape}, "only 1 input"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown flag", []string{"run", "--bogus"}, "bogus"},
		{"no model", []string{"plan"}, "missing MODEL"},
		{"bad device", []string{"run", "--device", "tpu"}, "unknown device"},
		{"cuda absent", []string{"run", "--device", "cuda"}, "cuda"},
	} {
		code, out, errs := cli(tc.args...)
		if code == 0 {
			t.Errorf("%s: exit 0, output %q", tc.name, out)
			continue
		}
		if strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 || errs == "" {
			t.Errorf("%s: stderr is not one line: %q", tc.name, errs)
		}
		if strings.Contains(errs, "panic") || strings.Contains(errs, "internal error") || strings.Contains(errs, "goroutine") {
			t.Errorf("%s: %s", tc.name, errs)
		}
		if !strings.Contains(errs, tc.want) {
			t.Errorf("%s: stderr %q lacks %q", tc.name, errs, tc.want)
		}
	}
}

func TestFileName(t *testing.T) {
	for in, want := range map[string]string{
		"logits":            "logits.npy",
		"last_hidden_state": "last_hidden_state.npy",
		"out/0:1 x":         "out_0_1_x.npy",
		"a.b-c":             "a.b-c.npy",
		"../../etc/passwd":  ".._.._etc_passwd.npy",
	} {
		if got := fileName(in); got != want {
			t.Errorf("fileName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHostileInputs takes every hostile case through `berth run` and
// `berth info`: a non-zero exit and one line on stderr, never a panic.
func TestHostileInputs(t *testing.T) {
	cases, err := onnxtest.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		args := []string{"run", c.Model}
		for _, in := range c.Inputs {
			args = append(args, "--input", in)
		}
		commands := [][]string{args}
		if !c.Loads {
			commands = append(commands, []string{"info", c.Model}, []string{"plan", c.Model, "--json"})
		}
		for _, args := range commands {
			start := time.Now()
			code, out, errs := cli(args...)
			if code == 0 {
				t.Errorf("%s: berth %s exited 0: %s", c.Name, args[0], out)
				continue
			}
			if code == 3 || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
				t.Errorf("%s: berth %s: %s", c.Name, args[0], errs)
			}
			if errs == "" || strings.Count(strings.TrimRight(errs, "\n"), "\n") != 0 {
				t.Errorf("%s: berth %s: stderr is not one line: %q", c.Name, args[0], errs)
			}
			if !strings.Contains(errs, c.Want) {
				t.Errorf("%s: berth %s: stderr %q lacks %q", c.Name, args[0], errs, c.Want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s: berth %s took %v", c.Name, args[0], d)
			}
		}
	}
}
