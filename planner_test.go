package berth_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/demo"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/plan"
)

// planModes are the planner's passes on and off: every combination must
// compute the same bytes.
var planModes = []struct {
	name string
	opts berth.Options
}{
	{"file order, nothing in place", berth.Options{FileOrder: true, NoInPlace: true}},
	{"file order, in place", berth.Options{FileOrder: true}},
	{"scheduled, nothing in place", berth.Options{NoInPlace: true}},
	{"scheduled, in place", berth.Options{}},
}

// TestPlannerPassesKeepOutputs runs every fixture and the embedded demo
// model with in-place execution and memory-aware scheduling on and off, and
// wants the outputs identical bit for bit.
func TestPlannerPassesKeepOutputs(t *testing.T) {
	type model struct {
		name   string
		load   func() (*berth.Model, error)
		inputs []berth.Tensor
	}
	var models []model
	for _, f := range loadFixtures(t) {
		models = append(models, model{f.name, func() (*berth.Model, error) { return berth.Load(f.model) }, f.inputs})
	}
	img, err := npy.Read(bytes.NewReader(demo.Images()), int64(len(demo.Images())))
	if err != nil {
		t.Fatal(err)
	}
	models = append(models, model{"demo", func() (*berth.Model, error) { return berth.LoadBytes(demo.Model(), "") },
		[]berth.Tensor{{DType: img.DType, Shape: img.Shape, Data: img.Data}}})

	for _, md := range models {
		t.Run(md.name, func(t *testing.T) {
			m, err := md.load()
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var want []berth.Tensor
			var base int64
			for _, mode := range planModes {
				opts := mode.opts
				opts.Threads = 2
				exe, err := berth.Compile(m, berth.CPU, opts)
				if err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				p, pl := exe.Plan()
				if err := plan.Verify(p, pl); err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				got := runOnce(t, exe, md.inputs)
				if want == nil {
					want, base = got, pl.ArenaBytes
					continue
				}
				if pl.ArenaBytes > base {
					t.Errorf("%s: arena %d bytes, more than the %d of the file order with nothing in place", mode.name, pl.ArenaBytes, base)
				}
				for i := range want {
					if !bytes.Equal(got[i].Data, want[i].Data) {
						t.Errorf("%s: output %q differs from the file order's with nothing in place", mode.name, want[i].Name)
					}
				}
			}
		})
	}
}

// TestCorpus plans every model of the corpus that scripts/gen_corpus.py
// exports into the folder named by BERTH_CORPUS, verifies each plan, holds
// its arena to the LOAD of the file order, and prints a table with the
// geometric mean of arena / file-order LOAD. With BERTH_CORPUS_RUN=1 it
// also runs every model on random inputs with the planner's passes and
// fusion on and off and wants the same bytes out.
func TestCorpus(t *testing.T) {
	dir := os.Getenv("BERTH_CORPUS")
	if dir == "" {
		t.Skip("BERTH_CORPUS is not set; export a corpus with scripts/gen_corpus.py DIR and set BERTH_CORPUS=DIR")
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.onnx"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no models in %s: run scripts/gen_corpus.py %s", dir, dir)
	}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tnodes\tactivation\tLOAD\tfile-order LOAD\tratio\tschedule\tplan ms\t")
	var logSum float64
	var planned int
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".onnx")
		m, err := berth.Load(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		exe, err := berth.Compile(m, berth.CPU, berth.Options{MemoryLimit: -1})
		if err != nil {
			m.Close()
			t.Errorf("%s: %v", name, err)
			continue
		}
		p, pl := exe.Plan()
		if err := plan.Verify(p, pl); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if pl.ArenaBytes > pl.FileOrderLoadBytes {
			t.Errorf("%s: arena %d bytes, above the file order's LOAD %d", name, pl.ArenaBytes, pl.FileOrderLoadBytes)
		}
		ratio := float64(pl.ArenaBytes) / float64(pl.FileOrderLoadBytes)
		logSum += math.Log(ratio)
		planned++
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%s\t%.1f\t\n", name, len(p.Steps), pl.ArenaBytes, pl.LoadBytes,
			pl.FileOrderLoadBytes, ratio, pl.Schedule, float64(exe.PlanTime().Microseconds())/1000)
		if os.Getenv("BERTH_CORPUS_RUN") != "" {
			sameOutputs(t, name, m, exe)
		}
		var peak []string
		for _, id := range pl.PeakTensors[:min(4, len(pl.PeakTensors))] {
			peak = append(peak, fmt.Sprintf("%s %d", p.Tensors[id].Name, p.Tensors[id].Size))
		}
		t.Logf("%s: peak at step %s: %s", name, p.Steps[pl.Order[pl.PeakStep]].Name, strings.Join(peak, ", "))
		m.Close()
	}
	tw.Flush()
	if planned > 0 {
		fmt.Fprintf(&table, "geometric mean of activation / file-order LOAD over %d models: %.3f\n", planned, math.Exp(logSum/float64(planned)))
	}
	t.Log("\n" + table.String())
}

// A memory limit the plan cannot meet fails compilation with an error that
// names the peak step and the tensors live there.
func TestMemoryLimitNamesThePeak(t *testing.T) {
	m, err := berth.Load("testdata/models/resnet/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	exe := compileWith(t, m, berth.Options{MemoryLimit: -1})
	p, pl := exe.Plan()
	peak := p.Steps[pl.Order[pl.PeakStep]]
	_, err = berth.Compile(m, berth.CPU, berth.Options{MemoryLimit: exe.WeightBytes() + pl.ArenaBytes - 1})
	if !errors.Is(err, berth.ErrMemoryLimit) {
		t.Fatalf("Compile = %v, want ErrMemoryLimit", err)
	}
	for _, want := range []string{fmt.Sprintf("node %q (%s)", peak.Name, peak.Op), p.Tensors[pl.PeakTensors[0]].Name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if _, err := berth.Compile(m, berth.CPU, berth.Options{MemoryLimit: exe.WeightBytes() + pl.ArenaBytes}); err != nil {
		t.Errorf("with a limit just large enough: %v", err)
	}
	t.Log(err)
}

// sameOutputs runs exe, and m compiled in file order with nothing in place,
// on the same random inputs and wants identical outputs.
func sameOutputs(t *testing.T, name string, m *berth.Model, exe *berth.Executable) {
	plain, err := berth.Compile(m, berth.CPU, berth.Options{MemoryLimit: -1, FileOrder: true, NoInPlace: true, CPU: berth.CPUTuning{NoFusion: true}})
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var inputs []berth.Tensor
	for _, in := range exe.Inputs() {
		n := 1
		for _, d := range in.Shape {
			n *= int(d)
		}
		var data []byte
		switch in.DType {
		case ir.Float32:
			data = make([]byte, 4*n)
			for i := range n {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(rng.NormFloat64())))
			}
		case ir.Int64:
			data = make([]byte, 8*n)
			for i := range n {
				binary.LittleEndian.PutUint64(data[8*i:], uint64(rng.IntN(1000)))
			}
		default:
			t.Errorf("%s: no random data for input %q of type %v", name, in.Name, in.DType)
			return
		}
		inputs = append(inputs, berth.Tensor{Name: in.Name, DType: in.DType, Shape: in.Shape, Data: data})
	}
	got, want := runOnce(t, exe, inputs), runOnce(t, plain, inputs)
	for i := range want {
		if i >= len(got) || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Errorf("%s: output %q differs with the planner's passes and fusion on", name, want[i].Name)
		}
	}
}
