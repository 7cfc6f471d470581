package berth

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx/onnxtest"
	"github.com/berth-ml/berth/passes"
)

// Small models for the shape-generic cases, beside those of testdata/open.
var (
	// twoInputs adds two inputs that share both symbols.
	twoInputs = onnxtest.Graph{
		Inputs:  []onnxtest.Input{{Name: "x", Dims: []string{"batch", "n"}}, {Name: "y", Dims: []string{"batch", "n"}}},
		Nodes:   []onnxtest.Node{{Op: "Add", Inputs: []string{"x", "y"}, Outputs: []string{"z"}}},
		Outputs: []string{"z"},
	}
	// constShape reshapes x[batch, 6] to [-1] ++ the shape of a
	// constant: the target folds from no input's shape.
	constShape = onnxtest.Graph{
		Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"batch", "6"}}},
		Nodes: []onnxtest.Node{
			{Op: "Shape", Inputs: []string{"c"}, Outputs: []string{"cs"}},
			{Op: "Concat", Inputs: []string{"minus1", "cs"}, Outputs: []string{"target"}, Ints: map[string]int64{"axis": 0}},
			{Op: "Reshape", Inputs: []string{"x", "target"}, Outputs: []string{"y"}},
		},
		Consts:  []onnxtest.Const{{Name: "c", Dims: []int64{2, 3}, Values: []int64{1, 2, 3, 4, 5, 6}}, {Name: "minus1", Dims: []int64{1}, Values: []int64{-1}}},
		Outputs: []string{"y"},
	}
	// inputShape reshapes x[batch, 6] to its batch ++ [2, 3], the batch
	// read with Shape: the target is marked and stays in the graph.
	inputShape = onnxtest.Graph{
		Opset:  15,
		Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"batch", "6"}}},
		Nodes: []onnxtest.Node{
			{Op: "Shape", Inputs: []string{"x"}, Outputs: []string{"b"}, Ints: map[string]int64{"start": 0, "end": 1}},
			{Op: "Concat", Inputs: []string{"b", "rest"}, Outputs: []string{"target"}, Ints: map[string]int64{"axis": 0}},
			{Op: "Reshape", Inputs: []string{"x", "target"}, Outputs: []string{"y"}},
		},
		Consts:  []onnxtest.Const{{Name: "rest", Dims: []int64{2}, Values: []int64{2, 3}}},
		Outputs: []string{"y"},
	}
	// ifShape takes one branch for a batch of one and the other for
	// larger ones: the If is inlined on a condition that follows from a
	// shape.
	ifShape = onnxtest.Graph{
		Opset:  15,
		Inputs: []onnxtest.Input{{Name: "x", Elem: "int64", Dims: []string{"batch", "n"}}},
		Nodes: []onnxtest.Node{
			{Op: "Shape", Inputs: []string{"x"}, Outputs: []string{"b"}, Ints: map[string]int64{"start": 0, "end": 1}},
			{Op: "Equal", Inputs: []string{"b", "one"}, Outputs: []string{"single"}},
			{Op: "Squeeze", Inputs: []string{"single"}, Outputs: []string{"cond"}},
			{Op: "If", Inputs: []string{"cond"}, Outputs: []string{"y"},
				Then: &onnxtest.Graph{Nodes: []onnxtest.Node{{Op: "Add", Inputs: []string{"x", "x"}, Outputs: []string{"twice"}}}, Outputs: []string{"twice"}},
				Else: &onnxtest.Graph{Nodes: []onnxtest.Node{{Op: "Neg", Inputs: []string{"x"}, Outputs: []string{"neg"}}}, Outputs: []string{"neg"}}},
		},
		Consts:  []onnxtest.Const{{Name: "one", Dims: []int64{1}, Values: []int64{1}}},
		Outputs: []string{"y"},
	}
	// splitSequence cuts x[n] into n pieces and joins them again: the
	// importer lowers the sequence to as many tensors as x's size says.
	splitSequence = onnxtest.Graph{
		Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"n"}}},
		Nodes: []onnxtest.Node{
			{Op: "SplitToSequence", Inputs: []string{"x"}, Outputs: []string{"pieces"}},
			{Op: "ConcatFromSequence", Inputs: []string{"pieces"}, Outputs: []string{"y"}, Ints: map[string]int64{"axis": 0}},
		},
		Outputs: []string{"y"},
	}
	// unread("Shape") computes a Shape nobody reads: Shape nodes always
	// fold, and dropping it changes nothing at other shapes. Another
	// node nobody reads is inferred when preparing at other shapes too,
	// and re-inferring does not see it.
	unread = func(op string) onnxtest.Graph {
		return onnxtest.Graph{
			Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"n"}}},
			Nodes: []onnxtest.Node{
				{Op: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
				{Op: op, Inputs: []string{"x"}, Outputs: []string{"unread"}},
			},
			Outputs: []string{"y"},
		}
	}
)

// resnet50 is onnxtest.ResNet50 with its channels narrowed eightfold,
// made once.
var resnet50 = sync.OnceValue(func() []byte { return onnxtest.ResNet50(8, 1) })

// genericCase is a model and the shapes of its inputs to specialise it
// at, the first set making the graph kept.
type genericCase struct {
	name    string
	path    string         // the model file, or
	graph   onnxtest.Graph // the model, or
	bytes   []byte         // the model's bytes
	shapes  [][][]int64    // sets of input shapes, in declared order
	generic bool
	why     string
}

// fileShapes is the input shapes of the sets of the testdata/open model
// in dir, as its meta.json lists them.
func fileShapes(t testing.TB, dir string) [][][]int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Skipf("%s: %v", dir, err)
	}
	var meta struct {
		Sets [][][]int64 `json:"sets"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	return meta.Sets
}

func genericCases(t testing.TB) []genericCase {
	file := func(name string, generic bool, why string, more ...[][]int64) genericCase {
		dir := filepath.Join("testdata/open", name)
		return genericCase{name: name, path: filepath.Join(dir, "model.onnx"), shapes: append(fileShapes(t, dir), more...), generic: generic, why: why}
	}
	return []genericCase{
		file("cnn", true, "convolutions, pools, Flatten and Gemm: nothing folds from a shape",
			[][]int64{{3, 3, 64, 48}}, [][]int64{{1, 3, 8, 8}}, [][]int64{{2, 3, 1, 1}}, [][]int64{{0, 3, 16, 16}}, [][]int64{{1, 3, 200, 7}}),
		file("cnnext", true, "cnn with its weights in an external data file",
			[][]int64{{1, 3, 17, 23}}, [][]int64{{4, 3, 40, 40}}),
		file("bert", false, "its reshape targets are Shape → Gather → Concat of activations", [][]int64{{2, 7}, {2, 7}}),
		file("gpt", false, "its reshape targets are Shape → Gather → Concat of activations", [][]int64{{1, 3}}),
		{name: "resnet50", bytes: resnet50(), generic: true, why: "ResNet-50's graph (channels narrowed): its first block's two 1×1 convolutions merge",
			shapes: [][][]int64{{{1, 3, 64, 64}}, {{2, 3, 57, 75}}, {{1, 3, 224, 224}}, {{1, 3, 1, 1}}, {{3, 3, 7, 300}}, {{1, 3, 0, 0}}}},
		{name: "twoInputs", graph: twoInputs, generic: true, why: "an Add of two inputs",
			shapes: [][][]int64{{{2, 3}, {2, 3}}, {{1, 1}, {1, 1}}, {{5, 0}, {5, 0}}, {{7, 9}, {7, 9}}}},
		{name: "constShape", graph: constShape, generic: true, why: "a Reshape target folded from the shape of a constant",
			shapes: [][][]int64{{{1, 6}}, {{4, 6}}, {{0, 6}}}},
		{name: "inputShape", graph: inputShape, generic: false, why: "a Reshape target folded from an input's shape",
			shapes: [][][]int64{{{1, 6}}, {{4, 6}}}},
		{name: "ifShape", graph: ifShape, generic: false, why: "an If inlined on a condition computed from a shape",
			shapes: [][][]int64{{{1, 4}}, {{3, 4}}}},
		{name: "splitSequence", graph: splitSequence, generic: false, why: "a sequence cut into as many pieces as x has elements",
			shapes: [][][]int64{{{3}}, {{5}}}},
		{name: "deadShape", graph: unread("Shape"), generic: true, why: "an unread Shape, dropped",
			shapes: [][][]int64{{{3}}, {{5}}, {{0}}}},
		{name: "deadNode", graph: unread("Neg"), generic: false, why: "an unread node inferred at the shapes, dropped",
			shapes: [][][]int64{{{3}}, {{5}}}},
	}
}

// caseNamed is the case called name.
func caseNamed(t testing.TB, name string) genericCase {
	cases := genericCases(t)
	k := slices.IndexFunc(cases, func(c genericCase) bool { return c.name == name })
	if k < 0 {
		t.Fatalf("no case %q", name)
	}
	return cases[k]
}

// load loads the case's model, closed with the test.
func (c genericCase) load(t testing.TB) *Model {
	t.Helper()
	var m *Model
	var err error
	if c.path != "" {
		if _, serr := os.Stat(c.path); serr != nil {
			t.Skipf("%s: %v", c.path, serr)
		}
		m, err = Load(c.path)
	} else if c.bytes != nil {
		m, err = LoadBytes(c.bytes, "")
	} else {
		m, err = LoadBytes(c.graph.Bytes(), "")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if m.open == nil {
		t.Fatalf("%s: the model is not open", c.name)
	}
	return m
}

// kept loads the case's model and specialises it at its first shapes:
// its open model, and the generic graph it keeps (nil where none).
func (c genericCase) kept(t testing.TB) (*openModel, *genericGraph) {
	t.Helper()
	o := c.load(t).open
	first, err := specialiseAt(o, c.shapes[0])
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	return o, o.keptGeneric()
}

// inputsAt is the model's inputs at shapes (in declared order, with no
// data), as specialise takes them.
func inputsAt(o *openModel, shapes [][]int64) ([]Tensor, []int) {
	flat := make([]Tensor, len(o.sig.Inputs))
	decls := make([]int, len(o.sig.Inputs))
	for k, v := range o.sig.Inputs {
		flat[k] = Tensor{Name: v.Name, DType: v.DType}
		if k < len(shapes) {
			flat[k].Shape = shapes[k]
		}
		decls[k] = k
	}
	return flat, decls
}

// specialiseAt specialises the model at shapes, no input bound by value.
func specialiseAt(o *openModel, shapes [][]int64) (*Model, error) {
	flat, decls := inputsAt(o, shapes)
	return o.specialise(flat, decls, make([]bool, len(o.sig.Inputs)), nil, nil)
}

// specialiseFull imports and prepares the model at shapes, as specialise
// did before graphs were re-inferred.
func specialiseFull(o *openModel, shapes [][]int64) (*Model, error) {
	o.fullOnly = true
	defer func() { o.fullOnly = false }()
	return specialiseAt(o, shapes)
}

// TestShapeGeneric reports, for every model of testdata/open and a few
// made for the cases, whether the graph its first plain specialisation
// prepared is shape-generic, and checks the answer where the model makes
// it plain.
func TestShapeGeneric(t *testing.T) {
	for _, c := range genericCases(t) {
		t.Run(c.name, func(t *testing.T) {
			m := c.load(t)
			sm, err := specialiseAt(m.open, c.shapes[0])
			if err != nil {
				t.Fatal(err)
			}
			defer sm.Close()
			got := passes.ShapeGeneric(sm.graph)
			t.Logf("shape-generic: %v (%s)", got, c.why)
			if got != c.generic {
				t.Errorf("shape-generic %v, want %v: %s", got, c.generic, c.why)
			}
			if kept := m.open.keptGeneric() != nil; kept != c.generic {
				t.Errorf("a generic graph kept: %v, want %v", kept, c.generic)
			}
		})
	}
	// The models whose shapes follow from values take no plain
	// specialisation: their plans bind inputs by value (ifrate's rate)
	// or are stages and the plans after them (the rest), and none keeps
	// a generic graph.
	for _, name := range []string{"nms", "select", "ifrate", "ifstage"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata/open", name)
			c := genericCase{name: name, path: filepath.Join(dir, "model.onnx")}
			m := c.load(t)
			sm, err := specialiseAt(m.open, fileShapes(t, dir)[0])
			if err == nil {
				sm.Close()
			}
			if !errors.Is(err, ir.ErrValueDependent) {
				t.Errorf("specialised without values: %v, want a value-dependent error", err)
			}
			_, s := openSessionOn(t, m, CPU, Options{Threads: 1})
			sets := fileSets(t, dir)
			for k, set := range sets {
				if _, err := s.Run(context.Background(), set...); err != nil {
					t.Fatalf("set %d: %v", k, err)
				}
			}
			var walk func(sp *special, depth int)
			walk = func(sp *special, depth int) {
				kind := "final"
				if !sp.final() {
					kind = "stage"
				}
				t.Logf("%*s%s plan, bound by value: %v, shape-generic: %v", 2*depth, "", kind, slices.ContainsFunc(sp.values, func(v []byte) bool { return v != nil }), passes.ShapeGeneric(sp.m.graph))
				for _, k := range sp.kids {
					walk(k, depth+1)
				}
			}
			for _, sp := range s.open.plans {
				walk(sp, 0)
			}
			if m.open.keptGeneric() != nil || m.open.reinferred.Load() != 0 {
				t.Error("a model whose shapes follow from values kept or used a generic graph")
			}
		})
	}
}

// fileSets reads the input sets of the testdata/open model in dir.
func fileSets(t testing.TB, dir string) [][]Tensor {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Inputs []string `json:"inputs"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	var sets [][]Tensor
	for k := 0; ; k++ {
		set := filepath.Join(dir, fmt.Sprintf("set_%d", k))
		if _, err := os.Stat(set); err != nil {
			return sets
		}
		var ins []Tensor
		for i, name := range meta.Inputs {
			a, err := npy.ReadFile(filepath.Join(set, fmt.Sprintf("input_%d.npy", i)))
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, Tensor{Name: name, DType: a.DType, Shape: a.Shape, Data: a.Data})
		}
		sets = append(sets, ins)
	}
}

// TestReinferMatchesPrepare re-infers each shape-generic graph at the
// shapes of every set (and at other shapes within its symbols) and
// compares the result with the graph importing and preparing the file at
// those shapes gives: the same nodes, attributes, constants' bytes and
// tensor types and shapes. Where one way fails, so must the other.
func TestReinferMatchesPrepare(t *testing.T) {
	for _, c := range genericCases(t) {
		if !c.generic {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			m := c.load(t)
			o := m.open
			first, err := specialiseFull(o, c.shapes[0])
			if err != nil {
				t.Fatal(err)
			}
			first.Close()
			o.keepGeneric(first) // the graph was copied before compiling
			gen := o.keptGeneric()
			if gen == nil {
				t.Fatal("no generic graph kept")
			}
			same := 0
			for _, shapes := range c.shapes {
				flat, decls := inputsAt(o, shapes)
				re, rerr := o.reinfer(gen, flat, decls)
				full, ferr := specialiseFull(o, shapes)
				switch {
				case rerr != nil && ferr != nil:
					t.Logf("%v: both fail: %v", shapes, ferr)
					continue
				case rerr != nil:
					t.Errorf("%v: re-inferring fails where preparing does not: %v", shapes, rerr)
					continue
				case ferr != nil:
					t.Errorf("%v: re-inferring succeeds where preparing fails: %v", shapes, ferr)
					continue
				}
				if err := sameGraph(re.graph, full.graph); err != nil {
					t.Errorf("%v: %v", shapes, err)
				}
				if err := ir.Verify(re.graph); err != nil {
					t.Errorf("%v: the re-inferred graph: %v", shapes, err)
				}
				if re.fileNode != full.fileNode || !reflect.DeepEqual(re.fileOps, full.fileOps) {
					t.Errorf("%v: the file's nodes differ", shapes)
				}
				re.Close()
				full.Close()
				same++
			}
			if same < 2 {
				t.Errorf("only %d shapes compared", same)
			}
		})
	}
}

// sameGraph describes the first difference between two prepared graphs,
// or returns nil: their nodes, attributes, constants' bytes and every
// tensor's name, type and shape.
func sameGraph(a, b *ir.Graph) error {
	if a.Name != b.Name || a.ShapeDecided != b.ShapeDecided || !maps2Equal(a.Opsets, b.Opsets) {
		return fmt.Errorf("the graphs differ: %q %v %v against %q %v %v", a.Name, a.ShapeDecided, a.Opsets, b.Name, b.ShapeDecided, b.Opsets)
	}
	for _, l := range []struct {
		what string
		a, b []ir.TensorID
	}{{"inputs", a.Inputs, b.Inputs}, {"outputs", a.Outputs, b.Outputs}, {"captures", a.Captures, b.Captures}, {"state", a.State, b.State}} {
		if !slices.Equal(l.a, l.b) {
			return fmt.Errorf("%s %v against %v", l.what, l.a, l.b)
		}
	}
	if len(a.Tensors) != len(b.Tensors) || len(a.Nodes) != len(b.Nodes) {
		return fmt.Errorf("%d tensors and %d nodes against %d and %d", len(a.Tensors), len(a.Nodes), len(b.Tensors), len(b.Nodes))
	}
	for i := range a.Tensors {
		x, y := &a.Tensors[i], &b.Tensors[i]
		if x.Name != y.Name || x.DType != y.DType || !x.Shape.Equal(y.Shape) || (x.Shape == nil) != (y.Shape == nil) ||
			x.Producer != y.Producer || x.FromShapes != y.FromShapes || x.IsConst() != y.IsConst() || !bytes.Equal(x.Data, y.Data) {
			return fmt.Errorf("tensor %d: %q %s%v (producer %d, constant %v) against %q %s%v (producer %d, constant %v)",
				i, x.Name, x.DType, x.Shape, x.Producer, x.IsConst(), y.Name, y.DType, y.Shape, y.Producer, y.IsConst())
		}
	}
	for i := range a.Nodes {
		x, y := &a.Nodes[i], &b.Nodes[i]
		if x.Name != y.Name || x.Op != y.Op || x.Domain != y.Domain || x.Implicit != y.Implicit ||
			!slices.Equal(x.Inputs, y.Inputs) || !slices.Equal(x.Outputs, y.Outputs) || !reflect.DeepEqual(x.Attrs, y.Attrs) {
			return fmt.Errorf("node %d: %q (%s) %v → %v %v against %q (%s) %v → %v %v", i, x.Name, x.Op, x.Inputs, x.Outputs, x.Attrs, y.Name, y.Op, y.Inputs, y.Outputs, y.Attrs)
		}
	}
	return nil
}

func maps2Equal(a, b map[string]int64) bool { return reflect.DeepEqual(a, b) }

// randomInputs is the model's inputs at shapes, filled with values from
// r (small integers for integer inputs).
func randomInputs(o *openModel, shapes [][]int64, r *rand.Rand) []Tensor {
	flat, _ := inputsAt(o, shapes)
	for i := range flat {
		t := &flat[i]
		n := ir.Shape(t.Shape).Elements()
		t.Data = make([]byte, ir.Shape(t.Shape).Bytes(t.DType))
		for k := int64(0); k < n; k++ {
			switch t.DType {
			case ir.Float32:
				putF32(t.Data[4*k:], r.Float32()*2-1)
			case ir.Int64:
				putI64(t.Data[8*k:], r.Int64N(4))
			}
		}
	}
	return flat
}

func putF32(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) }

func putI64(b []byte, v int64) { binary.LittleEndian.PutUint64(b, uint64(v)) }

// runBoth runs ins on a session of a and of b, and fails the test where
// the outputs or the errors differ. It returns a's outputs' bytes.
func runBoth(t *testing.T, what string, a, b *Session, ins []Tensor) {
	t.Helper()
	ra, ea := a.Run(context.Background(), ins...)
	rb, eb := b.Run(context.Background(), ins...)
	if (ea == nil) != (eb == nil) || ea != nil && ea.Error() != eb.Error() {
		t.Errorf("%s: errors differ:\n  re-inferred: %v\n  prepared:    %v", what, ea, eb)
		return
	}
	if len(ra) != len(rb) {
		t.Errorf("%s: %d outputs against %d", what, len(ra), len(rb))
		return
	}
	for i := range ra {
		if ra[i].Name != rb[i].Name || ra[i].DType != rb[i].DType || !slices.Equal(ra[i].Shape, rb[i].Shape) || !bytes.Equal(ra[i].Data, rb[i].Data) {
			t.Errorf("%s: output %d (%q) differs: %s%v against %s%v", what, i, ra[i].Name, ra[i].DType, ra[i].Shape, rb[i].DType, rb[i].Shape)
		}
	}
}

// TestReinferRuns runs each shape-generic model through the public API
// at the shapes of its sets and others, once where new shapes re-infer
// the kept graph and once where every shape is imported and prepared
// (before re-inferring was): the outputs must be the same bits, the
// errors the same words. With Options.MaxDims too, whose plan at the
// bound is the first specialised.
func TestReinferRuns(t *testing.T) {
	for _, c := range genericCases(t) {
		if !c.generic {
			continue
		}
		for _, bounded := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bounded=%v", c.name, bounded), func(t *testing.T) {
				re, full := c.load(t), c.load(t)
				full.open.fullOnly = true
				opts := Options{Threads: 1}
				if bounded {
					opts.MaxDims = map[string]int64{}
					for _, shapes := range c.shapes {
						for k, v := range re.open.sig.Inputs {
							for d, dim := range v.Shape {
								if dim.Open() && k < len(shapes) && d < len(shapes[k]) {
									opts.MaxDims[dim.Symbol] = max(opts.MaxDims[dim.Symbol], shapes[k][d])
								}
							}
						}
					}
				}
				_, sr := openSessionOn(t, re, CPU, opts)
				_, sf := openSessionOn(t, full, CPU, opts)
				r := rand.New(rand.NewPCG(1, 2))
				// Twice: the second pass runs the plans kept.
				for pass := range 2 {
					for _, shapes := range c.shapes {
						runBoth(t, fmt.Sprintf("pass %d %v", pass, shapes), sr, sf, randomInputs(re.open, shapes, r))
					}
				}
				if n := re.open.reinferred.Load(); n == 0 {
					t.Error("no shape was re-inferred")
				} else {
					t.Logf("%d specialisations re-inferred (%d shapes, two passes, %d plans kept)", n, len(c.shapes), DefaultPlans)
				}
				if full.open.reinferred.Load() != 0 {
					t.Error("the full way re-inferred")
				}
			})
		}
	}
}

// TestReinferConcurrent runs sessions of one executable at once, each at
// shapes of its own, all new: the specialisations that re-infer the kept
// graph at the same time must give what preparing gives.
func TestReinferConcurrent(t *testing.T) {
	c := caseNamed(t, "cnn")
	re, full := c.load(t), c.load(t)
	full.open.fullOnly = true
	exe, err := Compile(re, CPU, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	_, sf := openSessionOn(t, full, CPU, Options{Threads: 1})
	shapes := [][][]int64{{{1, 3, 16, 16}}, {{2, 3, 20, 24}}, {{1, 3, 33, 17}}, {{3, 3, 12, 40}}}
	r := rand.New(rand.NewPCG(3, 4))
	var ins [][]Tensor
	var want [][][]byte
	for _, s := range shapes {
		in := randomInputs(re.open, s, r)
		outs, err := sf.Run(context.Background(), in...)
		if err != nil {
			t.Fatal(err)
		}
		var w [][]byte
		for _, o := range outs {
			w = append(w, bytes.Clone(o.Data))
		}
		ins, want = append(ins, in), append(want, w)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(shapes))
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := exe.NewSession()
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for k := range shapes {
				k := (k + g) % len(shapes)
				outs, err := s.Run(context.Background(), ins[k]...)
				if err != nil {
					errs <- err
					return
				}
				for i := range outs {
					if !bytes.Equal(outs[i].Data, want[k][i]) {
						errs <- fmt.Errorf("session %d, shapes %v: output %d differs from the prepared plan's", g, shapes[k], i)
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if re.open.reinferred.Load() == 0 {
		t.Error("no shape was re-inferred")
	}
}

// hostileShapes are shapes for cnn's image [batch, 3, height, width]
// that a run or a caller may bring.
var hostileShapes = [][]int64{
	{0, 3, 32, 32}, {1, 3, 0, 0}, {1, 3, 1, 1}, {1, 3, 2, 2}, {-1, 3, 32, 32}, {1, 3, -5, 32},
	{1 << 40, 3, 1 << 40, 1 << 40}, {1, 3, 1 << 31, 1 << 31}, {1, 3, 1 << 20, 1 << 20}, {1, 3, 1 << 62, 1},
	{1, 3, 32}, {1, 3, 32, 32, 1}, {}, {1, 4, 32, 32}, {1, 0, 32, 32}, {1 << 20, 3, 64, 64},
}

// TestReinferHostile re-infers cnn's generic graph at hostile shapes, and
// twoInputs's at shapes whose symbols disagree: each fails or gives what
// preparing gives, and none panics. Through a session, both ways give
// the same errors.
func TestReinferHostile(t *testing.T) {
	cnn, two := caseNamed(t, "cnn"), caseNamed(t, "twoInputs")
	o, gen := cnn.kept(t)
	for _, s := range hostileShapes {
		checkReinfer(t, o, gen, [][]int64{s})
	}
	ot, gent := two.kept(t)
	for _, s := range [][][]int64{{{2, 3}, {2, 4}}, {{2, 3}, {3, 3}}, {{0, 3}, {1, 3}}, {{2, 3}}, {{2, 3}, {2}}, {{2, -3}, {2, -3}}} {
		flat, decls := inputsAt(ot, s)
		if _, err := ot.reinfer(gent, flat, decls); err == nil {
			t.Errorf("%v: re-inferred shapes a run may not have", s)
		} else {
			t.Logf("%v: %v", s, err)
		}
	}
	// A caller's lists that do not match: more inputs than declarations,
	// an input named as none of the graph's.
	flat, decls := inputsAt(ot, two.shapes[0])
	if _, err := ot.reinfer(gent, flat, decls[:1]); err == nil {
		t.Error("re-inferred with a declaration missing")
	}
	flat[1].Name = "w"
	if _, err := ot.reinfer(gent, flat, decls); err == nil {
		t.Error("re-inferred without input y")
	}

	// Through sessions: the same outputs and errors both ways.
	re, full := cnn.load(t), cnn.load(t)
	full.open.fullOnly = true
	_, sr := openSessionOn(t, re, CPU, Options{Threads: 1})
	_, sf := openSessionOn(t, full, CPU, Options{Threads: 1})
	r := rand.New(rand.NewPCG(5, 6))
	runBoth(t, "first", sr, sf, randomInputs(re.open, cnn.shapes[0], r))
	for _, s := range hostileShapes {
		runBoth(t, fmt.Sprint(s), sr, sf, []Tensor{zerosOrNone(re.open, s)})
	}
	tr, tf := two.load(t), two.load(t)
	tf.open.fullOnly = true
	_, sr2 := openSessionOn(t, tr, CPU, Options{Threads: 1})
	_, sf2 := openSessionOn(t, tf, CPU, Options{Threads: 1})
	runBoth(t, "first", sr2, sf2, randomInputs(tr.open, two.shapes[0], r))
	for _, s := range [][][]int64{{{2, 3}, {2, 4}}, {{4, 1}, {4, 1}}, {{0, 2}, {0, 2}}} {
		runBoth(t, fmt.Sprint(s), sr2, sf2, randomInputs(tr.open, s, r))
	}
}

// zerosOrNone is cnn's image at shape s, zeros where such a tensor can
// be held, else with no data.
func zerosOrNone(o *openModel, s []int64) Tensor {
	t := Tensor{Name: o.sig.Inputs[0].Name, DType: ir.Float32, Shape: s}
	if ir.Shape(s).Validate() == nil && ir.Shape(s).Bytes(ir.Float32) <= 1<<26 {
		t.Data = make([]byte, ir.Shape(s).Bytes(ir.Float32))
	}
	return t
}

// checkReinfer re-infers gen at shapes: where it succeeds, preparing at
// those shapes must succeed with the same graph.
func checkReinfer(t testing.TB, o *openModel, gen *genericGraph, shapes [][]int64) {
	t.Helper()
	flat, decls := inputsAt(o, shapes)
	re, err := o.reinfer(gen, flat, decls)
	if err != nil {
		return
	}
	defer re.Close()
	full, ferr := specialiseFull(o, shapes)
	if ferr != nil {
		t.Errorf("%v: re-inferring succeeds where preparing fails: %v", shapes, ferr)
		return
	}
	defer full.Close()
	if err := sameGraph(re.graph, full.graph); err != nil {
		t.Errorf("%v: %v", shapes, err)
	}
}

// FuzzReinfer re-infers cnn's generic graph at shapes made of sizes
// around the edges: it fails or matches preparing, and never panics.
func FuzzReinfer(f *testing.F) {
	for _, s := range hostileShapes {
		if len(s) == 4 {
			f.Add(s[0], s[1], s[2], s[3])
		}
	}
	f.Add(int64(2), int64(3), int64(29), int64(41))
	o, gen := caseNamed(f, "cnn").kept(f)
	f.Fuzz(func(t *testing.T, n, ch, h, w int64) {
		checkReinfer(t, o, gen, [][]int64{{n, ch, h, w}})
	})
}

// BenchmarkSpecialise times specialising cnn of testdata/open at new
// shapes, both ways: importing and preparing the file ("full"), and
// re-inferring the generic graph kept ("reinfer").
func BenchmarkSpecialise(b *testing.B) {
	for _, name := range []string{"cnn", "cnnext", "resnet50"} {
		shapes := [][][]int64{{{1, 3, 32, 32}}, {{2, 3, 29, 41}}, {{1, 3, 17, 23}}, {{4, 3, 64, 48}}}
		c := genericCase{name: name, path: filepath.Join("testdata/open", name, "model.onnx"), shapes: shapes}
		if name == "resnet50" {
			c = genericCase{name: name, bytes: resnet50(), shapes: shapes}
		}
		for _, way := range []string{"full", "reinfer"} {
			b.Run(name+"/"+way, func(b *testing.B) {
				o, gen := c.kept(b)
				if gen == nil {
					b.Fatal("not shape-generic")
				}
				o.fullOnly = way == "full"
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					sm, err := specialiseAt(o, shapes[i%len(shapes)])
					if err != nil {
						b.Fatal(err)
					}
					sm.Close()
				}
			})
		}
	}
}
