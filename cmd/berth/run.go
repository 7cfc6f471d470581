package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/demo"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx"
)

// common holds the flags every command that compiles a model shares.
type common struct {
	inputs    listFlag
	device    string
	precision string
	threads   int
	dims      dimFlag
	maxDims   dimFlag
	plans     int
}

func (c *common) register(fs *flag.FlagSet, withInputs bool) {
	if withInputs {
		fs.Var(&c.inputs, "input", "input `NAME=PATH` or PATH (.npy or .pb); repeat for several")
		fs.IntVar(&c.plans, "plans", 0, "plans a session keeps for a model with open shapes, one per set of input shapes (0: the default)")
	}
	fs.StringVar(&c.device, "device", "cpu", "device: cpu or cuda")
	fs.StringVar(&c.precision, "precision", "fp32", "matrix products on cuda: fp32, tf32, bf16 or f16")
	fs.IntVar(&c.threads, "threads", 0, "threads per session (0: all cores)")
	fs.Var(&c.dims, "dim", "fix the open dimension `SYMBOL=N` ahead of time; repeat for several")
	fs.Var(&c.maxDims, "max-dim", "bound the open dimension `SYMBOL=N`: runs beyond it are refused; repeat for several")
}

// options is the compile options the flags choose.
func (c *common) options() (berth.Options, error) {
	prec, err := berth.ParsePrecision(c.precision)
	if err != nil {
		return berth.Options{}, usageError{"--precision: " + err.Error()}
	}
	return berth.Options{Threads: c.threads, Precision: prec, Dims: c.dims.m, MaxDims: c.maxDims.m, Plans: c.plans}, nil
}

// compile loads and compiles a model; path "" is the embedded demo.
func (c *common) compile(path string) (*berth.Model, *berth.Executable, error) {
	opts, err := c.options()
	if err != nil {
		return nil, nil, err
	}
	var m *berth.Model
	if path == "" {
		m, err = berth.LoadBytes(demo.Model(), "")
	} else {
		m, err = berth.Load(path)
	}
	if err != nil {
		return nil, nil, err
	}
	exe, err := berth.Compile(m, berth.Device(c.device), opts)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, exe, nil
}

// readValue reads the file at path for the graph input want: a sequence
// input from an ONNX SequenceProto .pb file, element by element (named
// NAME[i]), a tensor input from a .npy or TensorProto .pb file.
func readValue(path string, want berth.TensorInfo) ([]berth.Tensor, error) {
	if want.Sequence {
		if !strings.EqualFold(filepath.Ext(path), ".pb") {
			return nil, fmt.Errorf("%s: input %q is a sequence: give it as an ONNX SequenceProto .pb file", path, want.Name)
		}
		ts, err := onnx.ReadSequenceFile(path)
		if err != nil {
			return nil, err
		}
		out := make([]berth.Tensor, len(ts))
		for i, t := range ts {
			out[i] = berth.Tensor{Name: onnx.SequenceElement(want.Name, i), DType: t.DType, Shape: t.Shape, Data: t.Data}
			asDeclared(&out[i], want)
		}
		return out, nil
	}
	t, err := readTensor(path)
	if err != nil {
		return nil, err
	}
	t.Name = want.Name
	asDeclared(&t, want)
	return []berth.Tensor{t}, nil
}

// asDeclared reads 16-bit integers given for a bfloat16 input as the
// bfloat16 bits they hold: numpy has no bfloat16, so .npy files and
// ONNX's own test data carry bfloat16 values as uint16.
func asDeclared(t *berth.Tensor, want berth.TensorInfo) {
	if want.DType == berth.BFloat16 && t.DType == berth.Uint16 {
		t.DType = berth.BFloat16
	}
}

// readTensor reads a .npy or ONNX TensorProto .pb file.
func readTensor(path string) (berth.Tensor, error) {
	if strings.EqualFold(filepath.Ext(path), ".pb") {
		t, err := onnx.ReadTensorFile(path)
		if err != nil {
			return berth.Tensor{}, err
		}
		return berth.Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: t.Data}, nil
	}
	a, err := npy.ReadFile(path)
	if err != nil {
		return berth.Tensor{}, err
	}
	return berth.Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data}, nil
}

// bindInputs turns --input flags into tensors in graph-input order (a
// sequence input as its elements).
func bindInputs(specs []string, want []berth.TensorInfo) ([]berth.Tensor, error) {
	out := make([][]berth.Tensor, len(want))
	have := make([]bool, len(want))
	next := 0
	for _, spec := range specs {
		k, path := -1, spec
		if name, p, ok := strings.Cut(spec, "="); ok {
			for i, w := range want {
				if w.Name == name {
					k, path = i, p
				}
			}
			if k < 0 {
				if _, err := os.Stat(spec); err != nil {
					return nil, fmt.Errorf("--input %s: the model has no input %q (its inputs: %s)", spec, name, names(want))
				}
			}
		}
		if k < 0 {
			for next < len(want) && have[next] {
				next++
			}
			if next == len(want) {
				return nil, fmt.Errorf("--input %s: the model takes only %d input(s): %s", spec, len(want), names(want))
			}
			k = next
		}
		if have[k] {
			return nil, fmt.Errorf("--input %s: input %q given twice", spec, want[k].Name)
		}
		ts, err := readValue(path, want[k])
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", want[k].Name, err)
		}
		out[k], have[k] = ts, true
	}
	var missing []string
	for i, ok := range have {
		if !ok {
			missing = append(missing, want[i].Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing input(s) %s: pass --input NAME=PATH for each", strings.Join(missing, ", "))
	}
	var flat []berth.Tensor
	for _, ts := range out {
		flat = append(flat, ts...)
	}
	return flat, nil
}

func names(ts []berth.TensorInfo) string {
	var s []string
	for _, t := range ts {
		s = append(s, t.Name+" "+describe(t))
	}
	return strings.Join(s, ", ")
}

// describe prints a tensor's type and shape, its open dimensions by
// symbol ("float32[batch 3 224 224]").
func describe(t berth.TensorInfo) string {
	var b strings.Builder
	if t.Sequence {
		b.WriteString("sequence of ")
	}
	b.WriteString(t.DType.String())
	if t.Shape == nil {
		b.WriteString("[…]")
		return b.String()
	}
	b.WriteByte('[')
	for i, d := range t.Shape {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch {
		case d >= 0:
			fmt.Fprint(&b, d)
		case t.Symbols != nil && t.Symbols[i] != "":
			b.WriteString(t.Symbols[i])
		default:
			b.WriteByte('?')
		}
	}
	b.WriteByte(']')
	return b.String()
}

// fileName maps an output name to DIR/<name>.npy per the CLI contract.
func fileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	return string(b) + ".npy"
}

func cmdRun(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var c common
	c.register(fs, true)
	outDir := fs.String("output-dir", "", "write each output to `DIR`/<name>.npy")
	asJSON := fs.Bool("json", false, "print the outputs as JSON")
	path, err := parseModel(fs, args, true)
	if err != nil {
		return err
	}
	m, exe, err := c.compile(path)
	if err != nil {
		return err
	}
	defer m.Close()
	var inputs []berth.Tensor
	if path == "" && len(c.inputs) == 0 {
		a, err := npy.Read(bytes.NewReader(demo.Images()), int64(len(demo.Images())))
		if err != nil {
			return fmt.Errorf("embedded images: %w", err)
		}
		inputs = []berth.Tensor{{Name: exe.Inputs()[0].Name, DType: a.DType, Shape: a.Shape, Data: a.Data}}
	} else if inputs, err = bindInputs(c.inputs, exe.Inputs()); err != nil {
		return err
	}
	s, err := exe.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now()
	outs, err := s.Run(context.Background(), inputs...)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return err
		}
		for _, o := range outs {
			a := &npy.Array{DType: o.DType, Shape: o.Shape, Data: o.Data}
			if err := npy.WriteFile(filepath.Join(*outDir, fileName(o.Name)), a); err != nil {
				return err
			}
		}
	}
	if *asJSON {
		return printJSON(stdout, path, exe, outs, elapsed)
	}
	if path == "" && len(c.inputs) == 0 {
		return printDemo(stdout, outs[0], elapsed)
	}
	fmt.Fprintf(stdout, "%s on %s: %d output(s) in %.2f ms\n", displayName(path), exe.Device(), len(outs), ms(elapsed))
	for _, o := range outs {
		fmt.Fprintf(stdout, "  %s\n", summary(o))
	}
	if *outDir != "" {
		fmt.Fprintf(stdout, "outputs written to %s\n", *outDir)
	}
	return nil
}

func displayName(path string) string {
	if path == "" {
		return "embedded Fashion-MNIST classifier"
	}
	return path
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// summary prints a tensor's type, shape, a few values and simple stats.
func summary(t berth.Tensor) string {
	v, err := t.Float32s()
	if err != nil {
		return fmt.Sprintf("%s (%v)", t, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s = [", t)
	for i, x := range v {
		if i == 6 {
			b.WriteString(" …")
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.5g", x)
	}
	b.WriteString("]")
	if len(v) > 0 {
		lo, hi, sum := float64(v[0]), float64(v[0]), 0.0
		for _, x := range v {
			lo, hi, sum = math.Min(lo, float64(x)), math.Max(hi, float64(x)), sum+float64(x)
		}
		fmt.Fprintf(&b, "  min %.5g max %.5g mean %.5g", lo, hi, sum/float64(len(v)))
	}
	return b.String()
}

// printDemo shows the embedded classifier's predictions next to the true
// labels.
func printDemo(w io.Writer, logits berth.Tensor, elapsed time.Duration) error {
	v, err := logits.Float32s()
	if err != nil {
		return err
	}
	la, err := npy.Read(bytes.NewReader(demo.Labels()), int64(len(demo.Labels())))
	if err != nil {
		return fmt.Errorf("embedded labels: %w", err)
	}
	labels, err := (&ir.Tensor{DType: la.DType, Shape: la.Shape, Data: la.Data}).Int64s()
	if err != nil {
		return err
	}
	classes := len(demo.Classes)
	n := len(v) / classes
	if len(labels) < n {
		return fmt.Errorf("embedded labels: %d for %d images", len(labels), n)
	}
	fmt.Fprintf(w, "berth: embedded Fashion-MNIST classifier, %d test images, cpu, %.2f ms\n\n", n, ms(elapsed))
	fmt.Fprintf(w, "  %-5s  %-12s  %-12s  %s\n", "image", "predicted", "true label", "confidence")
	correct := 0
	for i := 0; i < n; i++ {
		row := v[i*classes : (i+1)*classes]
		best, p := softmaxArgmax(row)
		mark := "✗"
		if int64(best) == labels[i] {
			mark = "✓"
			correct++
		}
		fmt.Fprintf(w, "  %-5d  %-12s  %-12s  %5.1f%%  %s\n", i, demo.Classes[best], className(labels[i]), 100*p, mark)
	}
	fmt.Fprintf(w, "\n%d of %d correct\n", correct, n)
	return nil
}

func className(l int64) string {
	if l >= 0 && l < int64(len(demo.Classes)) {
		return demo.Classes[l]
	}
	return fmt.Sprint(l)
}

func softmaxArgmax(row []float32) (int, float64) {
	best := 0
	for j, x := range row {
		if x > row[best] {
			best = j
		}
	}
	var sum float64
	for _, x := range row {
		sum += math.Exp(float64(x - row[best]))
	}
	return best, 1 / sum
}

// jsonFloat encodes non-finite values as null, which JSON can carry.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

type jsonTensor struct {
	Name   string      `json:"name"`
	DType  string      `json:"dtype"`
	Shape  []int64     `json:"shape"`
	Values []jsonFloat `json:"values,omitempty"`
	Min    jsonFloat   `json:"min"`
	Max    jsonFloat   `json:"max"`
	Mean   jsonFloat   `json:"mean"`
}

// maxJSONValues bounds how many values of one output --json prints.
const maxJSONValues = 1 << 16

func printJSON(w io.Writer, path string, exe *berth.Executable, outs []berth.Tensor, elapsed time.Duration) error {
	res := struct {
		Model   string       `json:"model"`
		Device  string       `json:"device"`
		MS      float64      `json:"ms"`
		Outputs []jsonTensor `json:"outputs"`
	}{Model: displayName(path), Device: string(exe.Device()), MS: ms(elapsed)}
	for _, o := range outs {
		v, err := o.Float32s()
		if err != nil {
			return err
		}
		jt := jsonTensor{Name: o.Name, DType: o.DType.String(), Shape: o.Shape}
		if len(v) > 0 {
			lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
			for _, x := range v {
				f := float64(x)
				lo, hi, sum = math.Min(lo, f), math.Max(hi, f), sum+f
			}
			jt.Min, jt.Max, jt.Mean = jsonFloat(lo), jsonFloat(hi), jsonFloat(sum/float64(len(v)))
		}
		if len(v) <= maxJSONValues {
			jt.Values = make([]jsonFloat, len(v))
			for i, x := range v {
				jt.Values[i] = jsonFloat(x)
			}
		}
		res.Outputs = append(res.Outputs, jt)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}
