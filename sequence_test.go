package berth_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

func writeModel(t *testing.T, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runModel(t *testing.T, m *berth.Model, ins ...berth.Tensor) []berth.Tensor {
	t.Helper()
	_, s := newSession(t, m, berth.Options{Threads: 1})
	outs, err := s.Run(context.Background(), ins...)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

func named(name string, t berth.Tensor) berth.Tensor { t.Name = name; return t }

// TestSequences runs a model with a sequence input loaded twice: with the
// sequence's length fixed (LoadWith), and as it is, the length then taken
// from the elements a run is given.
func TestSequences(t *testing.T) {
	path := writeModel(t, onnxtest.SequenceModel())
	open, err := berth.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if in := open.Inputs(); !open.Open() || len(in) != 3 || !in[2].Sequence || in[2].Name != "seq" {
		t.Fatalf("loaded as it is: open %v, inputs %+v; want open with the sequence input seq third", open.Open(), in)
	}
	m, err := berth.LoadWith(path, berth.LoadOptions{SequenceLengths: map[string]int{"seq": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var inNames []string
	for _, in := range m.Inputs() {
		inNames = append(inNames, in.Name)
	}
	if want := []string{"a", "b", "seq[0]", "seq[1]"}; !slices.Equal(inNames, want) {
		t.Fatalf("inputs %v, want %v", inNames, want)
	}
	for _, m := range []*berth.Model{m, open} {
		checkSequenceModel(t, m)
	}
}

func checkSequenceModel(t *testing.T, m *berth.Model) {
	t.Helper()
	a := f32Tensor([]int64{2, 3}, 1, 2, 3, 4, 5, 6)
	b := f32Tensor([]int64{2, 3}, 10, 20, 30, 40, 50, 60)
	s0 := f32Tensor([]int64{2, 3}, 0, 0, 0, 0, 0, 1)
	s1 := f32Tensor([]int64{2, 3}, 1, 1, 1, 1, 1, 1)
	outs := runModel(t, m, named("a", a), named("b", b), named("seq[0]", s0), named("seq[1]", s1))
	if len(outs) != 5 {
		t.Fatalf("%d outputs, want 5 (stacked, count, last, mapped[0], mapped[1])", len(outs))
	}
	check := func(i int, shape []int64, want ...float32) {
		t.Helper()
		if !slices.Equal(outs[i].Shape, shape) || !slices.Equal(f32Values(outs[i]), want) {
			t.Errorf("output %d (%s) is %v %v, want %v %v", i, outs[i].Name, outs[i].Shape, f32Values(outs[i]), shape, want)
		}
	}
	check(0, []int64{2, 2, 3}, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6)
	if n := int64(binary.LittleEndian.Uint64(outs[1].Data)); outs[1].DType != ir.Int64 || n != 3 {
		t.Errorf("count is %s %d, want int64 3", outs[1].DType, n)
	}
	check(2, []int64{2}, 3, 6)
	check(3, []int64{2, 3}, 10, 20, 30, 40, 50, 61)
	check(4, []int64{2, 3}, 11, 21, 31, 41, 51, 61)
	if outs[3].Name != "mapped[0]" || outs[4].Name != "mapped[1]" {
		t.Errorf("sequence outputs are named %q, %q; want mapped[0], mapped[1]", outs[3].Name, outs[4].Name)
	}
}

func TestAdagrad(t *testing.T) {
	m, err := berth.Load(writeModel(t, onnxtest.AdagradModel()))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := f32Tensor([]int64{}, 0.5)
	tt := berth.Tensor{DType: ir.Int64, Shape: []int64{}, Data: binary.LittleEndian.AppendUint64(nil, 4)}
	x := []float32{1, -2, 3}
	g := []float32{0.5, 0.25, -1}
	h := []float32{0.1, 0, 2}
	outs := runModel(t, m, named("R", r), named("T", tt), named("X", f32Tensor([]int64{3}, x...)),
		named("G", f32Tensor([]int64{3}, g...)), named("H", f32Tensor([]int64{3}, h...)))
	rate := 0.5 / (1 + 4*0.1)
	for i := range x {
		gr := 0.01*float64(x[i]) + float64(g[i])
		hn := float64(h[i]) + gr*gr
		xn := float64(x[i]) - rate*gr/(math.Sqrt(hn)+1e-5)
		if got := f32Values(outs[0])[i]; math.Abs(float64(got)-xn) > 1e-6 {
			t.Errorf("X_new[%d] = %v, want %v", i, got, xn)
		}
		if got := f32Values(outs[1])[i]; math.Abs(float64(got)-hn) > 1e-6 {
			t.Errorf("H_new[%d] = %v, want %v", i, got, hn)
		}
	}
}

func TestTrainingOpsOnlyInTheirDomain(t *testing.T) {
	b := onnxtest.AdagradModel()
	// The same node without its domain is not an ONNX operator.
	i := strings.Index(string(b), "ai.onnx.preview.training")
	if i < 0 {
		t.Fatal("the model does not name the training domain")
	}
	bad := slices.Clone(b)
	copy(bad[i:], "ai.onnx.preview.trainin!")
	if _, err := berth.LoadBytes(bad, ""); err == nil {
		t.Fatal("an unknown domain loaded")
	}
}
