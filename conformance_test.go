package berth_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/compare"
	"github.com/berth-ml/berth/internal/testenv"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx"
)

// expectedFailures lists the conformance cases berth does not pass yet,
// one "suite/case  reason" per line.
const expectedFailures = "testdata/conformance_expected_failures.txt"

var updateConformance = flag.Bool("update-conformance", false, "rewrite "+expectedFailures+" from this run's results")

// TestConformance runs every case of ONNX's conformance suites through the
// public API (Load, Compile, NewSession, Run) and compares each output with
// the reference as ONNX's backend test runner does: the same dtype and
// shape, floats within |got-want| <= 1e-7 + 1e-3*|want| (NaN matches NaN),
// everything else exactly.
//
// Each case is loaded as it is, with nothing bound: a model whose file
// leaves dimensions open, or whose shapes follow from input values (a
// Reshape's shape, a TopK's k fed as inputs), is specialised by the
// session for the inputs it runs with (the summary counts these cases).
//
// A case listed in testdata/conformance_expected_failures.txt must fail
// and every other case must pass, so the list only shrinks; run with
// -update-conformance to rewrite it after fixing something.
func TestConformance(t *testing.T) {
	cases := testenv.ConformanceCases(t)
	expected, err := testenv.ExpectedFailures(expectedFailures)
	if err != nil && !*updateConformance {
		t.Fatal(err)
	}
	var outcomes testenv.Outcomes
	var mu sync.Mutex
	specialised := make([]int, 2) // passing cases: compiled as loaded, specialised per run
	t.Run("case", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c, func(t *testing.T) {
				t.Parallel()
				reason, spec := runConformanceCase(filepath.Join(testenv.ConformanceDir, c))
				outcomes.Record(c, reason)
				if reason == "" {
					mu.Lock()
					specialised[spec]++
					mu.Unlock()
				}
				if !*updateConformance {
					testenv.CheckListed(t, expected, expectedFailures, c, reason)
				}
			})
		}
	})
	outcomes.LogSummary(t)
	failures := outcomes.Failures()
	t.Logf("passing cases specialised per run (open shapes or shapes that follow from input values): %d", specialised[1])
	if testing.Verbose() {
		groups := map[string]int{}
		for _, r := range failures {
			groups[failureGroup(r)]++
		}
		keys := slices.Collect(func(yield func(string) bool) {
			for k := range groups {
				if !yield(k) {
					return
				}
			}
		})
		sort.Slice(keys, func(i, j int) bool {
			return groups[keys[i]] > groups[keys[j]] || groups[keys[i]] == groups[keys[j]] && keys[i] < keys[j]
		})
		for _, k := range keys {
			t.Logf("%4d  %s", groups[k], k)
		}
	}
	if *updateConformance {
		// A reason written by hand for a case that still fails is kept.
		for c := range failures {
			if r := expected[c]; strings.HasPrefix(r, "#") {
				failures[c] = r
			}
		}
		if err := writeExpectedFailures(expectedFailures, failures); err != nil {
			t.Fatal(err)
		}
	}
}

// failureGroup shortens a failure reason to its kind, for the summary.
var numbers = regexp.MustCompile(`"[^"]*"|\[[^\]]*\]|[0-9]+`)

func failureGroup(reason string) string {
	return numbers.ReplaceAllString(reason, "_")
}

func writeExpectedFailures(path string, failures map[string]string) error {
	var b strings.Builder
	b.WriteString("# ONNX conformance cases (Debian libonnx-testdata) that berth does not pass yet,\n")
	b.WriteString("# one \"suite/case  reason\" per line. TestConformance fails when a listed case\n")
	b.WriteString("# passes or an unlisted one fails; go test -run TestConformance -update-conformance\n")
	b.WriteString("# rewrites this file; a reason that starts with \"#\" was written by hand and is kept.\n")
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range failures {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		r := strings.Join(strings.Fields(failures[n]), " ")
		if len(r) > 200 {
			r = r[:200] + "…"
		}
		fmt.Fprintf(&b, "%s  %s\n", n, r)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// runConformanceCase runs every data set of one case; it returns why the
// case fails ("" when it passes) and how far it had to be specialised on
// input values (the index of the load attempt that succeeded).
func runConformanceCase(dir string) (reason string, specialised int) {
	defer func() {
		if r := recover(); r != nil {
			reason = fmt.Sprintf("panic: %v", r)
		}
	}()
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	if len(sets) == 0 {
		return "no test data sets", 0
	}
	names, err := onnx.InputNames(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return "import: " + err.Error(), 0
	}
	for _, set := range sets {
		r, spec := runConformanceSet(dir, set, names)
		specialised = max(specialised, spec)
		if r != "" {
			return r, specialised
		}
	}
	return "", specialised
}

// readTensors reads the set's prefix_*.pb files in order. A file that
// seq marks (by index) holds a sequence: its elements are read in its
// place and lens records its length under names[index] (when names is
// given).
func readTensors(set, prefix string, seq []bool, names []string, lens map[string]int) ([]*ir.Tensor, []string, error) {
	var ts []*ir.Tensor
	var flat []string
	for i := 0; ; i++ {
		path := filepath.Join(set, fmt.Sprintf("%s_%d.pb", prefix, i))
		if _, err := os.Stat(path); err != nil {
			return ts, flat, nil
		}
		if i < len(seq) && seq[i] {
			xs, err := onnx.ReadSequenceFile(path)
			if err != nil {
				return nil, nil, err
			}
			ts = append(ts, xs...)
			if i < len(names) {
				lens[names[i]] = len(xs)
				for k := range xs {
					flat = append(flat, onnx.SequenceElement(names[i], k))
				}
			}
			continue
		}
		x, err := onnx.ReadTensorFile(path)
		if err != nil {
			return nil, nil, err
		}
		ts = append(ts, x)
		if i < len(names) {
			flat = append(flat, names[i])
		}
	}
}

func runConformanceSet(dir, set string, names []string) (string, int) {
	model := filepath.Join(dir, "model.onnx")
	seqIn, seqOut, err := onnx.SequenceIO(model)
	if err != nil {
		return "import: " + err.Error(), 0
	}
	lens := map[string]int{}
	ins, flat, err := readTensors(set, "input", seqIn, names, lens)
	if err == nil && len(ins) != len(flat) {
		return fmt.Sprintf("the model takes %d inputs, the test data has more", len(names)), 0
	}
	if err == nil {
		var wants []*ir.Tensor
		if wants, _, err = readTensors(set, "output", seqOut, nil, nil); err == nil {
			return runConformanceTensors(model, flat, lens, ins, wants)
		}
	}
	// Sequences, optionals and strings are not tensors berth reads; the
	// model says best what it holds.
	m, lerr := berth.Load(model)
	if lerr != nil {
		return "load: " + trimPath(lerr, model), 0
	}
	m.Close()
	return "test data: " + strings.TrimPrefix(err.Error(), set+"/"), 0
}

func runConformanceTensors(model string, names []string, lens map[string]int, ins, wants []*ir.Tensor) (string, int) {
	if len(ins) != len(names) {
		return fmt.Sprintf("the model takes %d inputs, the test data has %d", len(names), len(ins)), 0
	}
	m, err := berth.Load(model)
	if err != nil {
		return "load: " + trimPath(err, model), 0
	}
	defer m.Close()
	exe, err := berth.Compile(m, berth.CPU, berth.Options{Threads: 1})
	if err != nil {
		return "compile: " + trimPath(err, model), 0
	}
	defer exe.Close()
	declared := map[string]berth.DType{}
	for _, in := range m.Inputs() {
		declared[in.Name] = in.DType
	}
	feeds := make([]berth.Tensor, len(ins))
	for i, x := range ins {
		feeds[i] = berth.Tensor{Name: names[i], DType: x.DType, Shape: x.Shape, Data: x.Data}
		base, _, _ := strings.Cut(names[i], "[")
		if declared[base] == berth.BFloat16 && x.DType == berth.Uint16 {
			feeds[i].DType = berth.BFloat16 // the test data stores bfloat16 bits as uint16
		}
	}
	s, err := exe.NewSession()
	if err != nil {
		return "session: " + err.Error(), 0
	}
	defer s.Close()
	outs, err := s.Run(context.Background(), feeds...)
	if err != nil {
		return "run: " + trimPath(err, model), 0
	}
	specialised := 0
	if s.Executable() != exe {
		specialised = 1
	}
	if len(outs) != len(wants) {
		return fmt.Sprintf("%d outputs, the reference has %d", len(outs), len(wants)), specialised
	}
	for i, got := range outs {
		want := wants[i]
		wdt := want.DType
		if got.DType == berth.BFloat16 && wdt == berth.Uint16 {
			wdt = berth.BFloat16
		}
		if got.DType != wdt || !want.Shape.Equal(got.Shape) {
			return fmt.Sprintf("output %d is %s%v, the reference is %s%v", i, got.DType, ir.Shape(got.Shape), want.DType, want.Shape), specialised
		}
		if msg := compare.AllClose(got.DType, got.Data, want.Data); msg != "" {
			return fmt.Sprintf("output %d: %s", i, msg), specialised
		}
	}
	return "", specialised
}

func trimPath(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}
