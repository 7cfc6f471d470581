package berth_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// Tensors for the open-shape cases, named as the graph inputs they feed.

func zeros(name string, dt berth.DType, shape ...int64) berth.Tensor {
	n := int64(dt.Size())
	for _, d := range shape {
		if d < 0 || d > 1<<24 || n*d > 1<<26 {
			// A shape whose data cannot be: the tensor carries none.
			return berth.Tensor{Name: name, DType: dt, Shape: shape}
		}
		n *= d
	}
	return berth.Tensor{Name: name, DType: dt, Shape: shape, Data: make([]byte, n)}
}

// ones fills the float32 tensor t with ones.
func ones(t berth.Tensor) berth.Tensor {
	for i := 0; i+4 <= len(t.Data); i += 4 {
		binary.LittleEndian.PutUint32(t.Data[i:], math.Float32bits(1))
	}
	return t
}

func f32s(name string, shape ...int64) berth.Tensor { return zeros(name, berth.Float32, shape...) }

// ints is an int64 tensor of the values v, of shape [len(v)].
func ints(name string, v ...int64) berth.Tensor {
	return intsShaped(name, []int64{int64(len(v))}, v...)
}

func intsShaped(name string, shape []int64, v ...int64) berth.Tensor {
	data := make([]byte, 0, 8*len(v))
	for _, x := range v {
		data = binary.LittleEndian.AppendUint64(data, uint64(x))
	}
	return berth.Tensor{Name: name, DType: berth.Int64, Shape: shape, Data: data}
}

// scalar is an int64 scalar.
func scalar(name string, v int64) berth.Tensor { return intsShaped(name, []int64{}, v) }

func f32scalar(name string, v float32) berth.Tensor {
	return berth.Tensor{Name: name, DType: berth.Float32, Shape: []int64{}, Data: binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))}
}

// Models with open shapes for the hostile cases.

var (
	vecN   = onnxtest.Input{Name: "x", Dims: []string{"n"}}
	shapeR = onnxtest.Input{Name: "s", Elem: "int64", Dims: []string{"r"}}
)

func oneNode(op string, inputs []onnxtest.Input, ins ...string) onnxtest.Graph {
	return onnxtest.Graph{Inputs: inputs, Nodes: []onnxtest.Node{{Op: op, Inputs: ins, Outputs: []string{"y"}}}, Outputs: []string{"y"}}
}

var (
	reshapeModel = oneNode("Reshape", []onnxtest.Input{vecN, shapeR}, "x", "s")
	expandModel  = oneNode("Expand", []onnxtest.Input{vecN, shapeR}, "x", "s")
	tileModel    = oneNode("Tile", []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{"1"}}}, "x", "s")
	// tileBytesModel tiles bytes: 2²⁵ of them take half the small limit,
	// their index table (an int32 a position) twice it.
	tileBytesModel = oneNode("Tile", []onnxtest.Input{{Name: "x", Elem: "uint8", Dims: []string{"n"}}, {Name: "s", Elem: "int64", Dims: []string{"1"}}}, "x", "s")
	cosModel       = oneNode("ConstantOfShape", []onnxtest.Input{shapeR}, "s")
	rangeModel     = oneNode("Range", []onnxtest.Input{
		{Name: "start", Elem: "int64", Dims: []string{}}, {Name: "limit", Elem: "int64", Dims: []string{}}, {Name: "delta", Elem: "int64", Dims: []string{}}},
		"start", "limit", "delta")
	rangeF32Model = oneNode("Range", []onnxtest.Input{
		{Name: "start", Dims: []string{}}, {Name: "limit", Dims: []string{}}, {Name: "delta", Dims: []string{}}},
		"start", "limit", "delta")
	addModel   = oneNode("Add", []onnxtest.Input{{Name: "a", Dims: []string{"n"}}, {Name: "b", Dims: []string{"n"}}}, "a", "b")
	addNMModel = oneNode("Add", []onnxtest.Input{{Name: "a", Dims: []string{"n", "m"}}, {Name: "b", Dims: []string{"m", "n"}}}, "a", "b")
	// outer is x ⊗ x: a modest x gives a square output.
	outerModel = onnxtest.Graph{Inputs: []onnxtest.Input{vecN}, Nodes: []onnxtest.Node{
		{Op: "Unsqueeze", Inputs: []string{"x", "one"}, Outputs: []string{"col"}},
		{Op: "Mul", Inputs: []string{"col", "x"}, Outputs: []string{"y"}},
	}, Consts: []onnxtest.Const{{Name: "one", Dims: []int64{1}, Values: []int64{1}}}, Outputs: []string{"y"}}
	// nonzeroExpand is NonZero(Expand(x, s)).
	nonzeroExpand = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, shapeR}, Nodes: []onnxtest.Node{
		{Op: "Expand", Inputs: []string{"x", "s"}, Outputs: []string{"big"}},
		{Op: "NonZero", Inputs: []string{"big"}, Outputs: []string{"y"}},
	}, Outputs: []string{"y"}}
	// nonzeroOfShape is NonZero(ConstantOfShape(s, 1)): every element.
	nonzeroOfShape = onnxtest.Graph{Inputs: []onnxtest.Input{shapeR}, Nodes: []onnxtest.Node{
		{Op: "ConstantOfShape", Inputs: []string{"s"}, Outputs: []string{"ones"}, Value: new(float32(1))},
		{Op: "NonZero", Inputs: []string{"ones"}, Outputs: []string{"y"}},
	}, Outputs: []string{"y"}}
	// nonzeroComputed is NonZero(x == x) of an open x (every element
	// where x is not NaN): a stage computes
	// the mask, the plan after it the indices.
	nonzeroComputed = onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"n", "m"}}}, Nodes: []onnxtest.Node{
		{Op: "Equal", Inputs: []string{"x", "x"}, Outputs: []string{"mask"}},
		{Op: "NonZero", Inputs: []string{"mask"}, Outputs: []string{"y"}},
	}, Outputs: []string{"y"}}
	// reshapeComputed reshapes x to a shape the graph computes from the
	// value of s: s * 2.
	reshapeComputed = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, shapeR}, Nodes: []onnxtest.Node{
		{Op: "Mul", Inputs: []string{"s", "two"}, Outputs: []string{"target"}},
		{Op: "Reshape", Inputs: []string{"x", "target"}, Outputs: []string{"y"}},
	}, Consts: []onnxtest.Const{{Name: "two", Values: []int64{2}}}, Outputs: []string{"y"}}
	// seqConcat stacks the elements of a sequence.
	seqConcat = onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "xs", Dims: []string{"n"}, Sequence: true}}, Nodes: []onnxtest.Node{
		{Op: "ConcatFromSequence", Inputs: []string{"xs"}, Outputs: []string{"y"}, Ints: map[string]int64{"axis": 0, "new_axis": 1}},
	}, Outputs: []string{"y"}}
	seqAdd = onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "xs", Dims: []string{"n"}, Sequence: true}, vecN}, Nodes: []onnxtest.Node{
		{Op: "SequenceAt", Inputs: []string{"xs", "zero"}, Outputs: []string{"first"}},
		{Op: "Add", Inputs: []string{"first", "x"}, Outputs: []string{"y"}},
	}, Consts: []onnxtest.Const{{Name: "zero", Values: []int64{0}}}, Outputs: []string{"y"}}
)

// Operators whose output shapes follow from the value of an input s.
var (
	topkModel = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, {Name: "k", Elem: "int64", Dims: []string{"1"}}}, Nodes: []onnxtest.Node{
		{Op: "TopK", Inputs: []string{"x", "k"}, Outputs: []string{"y", "i"}},
	}, Outputs: []string{"y", "i"}}
	padModel       = oneNode("Pad", []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{"2"}}}, "x", "s")
	oneHotModel    = oneNode("OneHot", []onnxtest.Input{{Name: "x", Elem: "int64", Dims: []string{"n"}}, {Name: "s", Elem: "int64", Dims: []string{}}, {Name: "v", Dims: []string{"2"}}}, "x", "s", "v")
	splitModel     = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{"2"}}}, Nodes: []onnxtest.Node{{Op: "Split", Inputs: []string{"x", "s"}, Outputs: []string{"y", "z"}}}, Outputs: []string{"y", "z"}}
	squeezeModel   = oneNode("Squeeze", []onnxtest.Input{{Name: "x", Dims: []string{"n", "1"}}, shapeR}, "x", "s")
	unsqueezeModel = oneNode("Unsqueeze", []onnxtest.Input{vecN, shapeR}, "x", "s")
	sliceModel     = oneNode("Slice", []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{"1"}}, {Name: "e", Elem: "int64", Dims: []string{"1"}}}, "x", "s", "e")
	resizeModel    = oneNode("Resize", []onnxtest.Input{{Name: "x", Dims: []string{"n", "1", "2", "2"}}, {Name: "roi", Dims: []string{"0"}}, {Name: "scales", Dims: []string{"0"}}, {Name: "s", Elem: "int64", Dims: []string{"4"}}}, "x", "roi", "scales", "s")
	// shapeScaled is ConstantOfShape(Shape(x) * s): the size of a symbol
	// scaled by a value.
	shapeScaled = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{"1"}}}, Nodes: []onnxtest.Node{
		{Op: "Shape", Inputs: []string{"x"}, Outputs: []string{"shape"}},
		{Op: "Mul", Inputs: []string{"shape", "s"}, Outputs: []string{"scaled"}},
		{Op: "ConstantOfShape", Inputs: []string{"scaled"}, Outputs: []string{"y"}},
	}, Outputs: []string{"y"}}
	// loopModel runs a Loop s times, each iteration emitting x: its
	// scan output holds s copies of x.
	loopModel = onnxtest.Graph{Inputs: []onnxtest.Input{vecN, {Name: "s", Elem: "int64", Dims: []string{}}}, Nodes: []onnxtest.Node{
		{Op: "Loop", Inputs: []string{"s", "", "x"}, Outputs: []string{"last", "y"}, Body: &onnxtest.Graph{
			Inputs: []onnxtest.Input{{Name: "i", Elem: "int64", Dims: []string{}}, {Name: "c", Elem: "bool", Dims: []string{}}, {Name: "acc", Unranked: true}},
			Nodes: []onnxtest.Node{
				{Op: "Identity", Inputs: []string{"c"}, Outputs: []string{"c_out"}},
				{Op: "Identity", Inputs: []string{"acc"}, Outputs: []string{"acc_out"}},
				{Op: "Identity", Inputs: []string{"acc"}, Outputs: []string{"row"}},
			},
			Outputs: []string{"c_out", "acc_out", "row"},
		}},
	}, Outputs: []string{"y"}}
)

// rank70 is op(Unsqueeze(x, 0…68), s) of an open x[n] and s[r]: a
// tensor of rank 70.
func rank70(op, s string) onnxtest.Graph {
	return onnxtest.Graph{Inputs: []onnxtest.Input{vecN, shapeR}, Nodes: []onnxtest.Node{
		{Op: "Unsqueeze", Inputs: []string{"x", "axes"}, Outputs: []string{"u"}},
		{Op: op, Inputs: []string{"u", s}, Outputs: []string{"y"}},
	}, Consts: []onnxtest.Const{{Name: "axes", Dims: []int64{69}, Values: seq(69)}}, Outputs: []string{"y"}}
}

// seq is 0, 1, …, n-1.
func seq(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)
	}
	return v
}

// openCase is a model with open shapes and runs that must end in an
// error: every run before the last succeeds, the last (or Compile, or
// NewSession) fails.
type openCase struct {
	name  string
	model onnxtest.Graph
	opts  berth.Options
	runs  [][]berth.Tensor
	want  []string // substrings of the error
	is    error    // when set, errors.Is(err, is)
}

// runOpenCase takes c through LoadBytes, Compile, NewSession and its runs
// and returns the first error, and which step (0 for the steps before any
// run, k+1 for run k) it came from. A panic is an error that says so.
func runOpenCase(c openCase) (step int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	m, err := berth.LoadBytes(c.model.Bytes(), "")
	if err != nil {
		return 0, err
	}
	defer m.Close()
	opts := c.opts
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	exe, err := berth.Compile(m, berth.CPU, opts)
	if err != nil {
		return 0, err
	}
	defer exe.Close()
	s, err := exe.NewSession()
	if err != nil {
		return 0, err
	}
	defer s.Close()
	for k, ins := range c.runs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		outs, err := s.Run(ctx, ins...)
		cancel()
		if err != nil {
			return k + 1, err
		}
		for _, o := range outs {
			if n := int64(o.DType.Size()) * elements(o.Shape); int64(len(o.Data)) != n {
				return k + 1, fmt.Errorf("output %q: %d bytes for %s%v", o.Name, len(o.Data), o.DType, o.Shape)
			}
		}
	}
	return len(c.runs) + 1, nil
}

// checkOpenCase runs c and checks that it failed where and as it should,
// quickly and without a large allocation.
func checkOpenCase(t *testing.T, c openCase) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	step, err := runOpenCase(c)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	switch {
	case err == nil:
		t.Fatalf("every run succeeded")
	case strings.HasPrefix(err.Error(), "PANIC"):
		t.Fatal(err)
	case step != 0 && step != len(c.runs):
		t.Fatalf("step %d failed, want only the last run (%d) to: %v", step, len(c.runs), err)
	}
	for _, w := range c.want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if c.is != nil && !errors.Is(err, c.is) {
		t.Errorf("error %q is not %q", err, c.is)
	}
	if elapsed > 10*time.Second {
		t.Errorf("took %v", elapsed)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("allocated %d MiB", grew>>20)
	}
	t.Logf("step %d: %v", step, err)
}

const small = 64 << 20 // a memory limit far below what the hostile shapes ask

// TestHostileOpenShapes feeds models with open shapes sizes and values
// that cannot be: each ends in an error, never a panic, a large
// allocation or a long wait.
func TestHostileOpenShapes(t *testing.T) {
	cases := []openCase{
		// Sizes that overflow or pass ir.MaxElements once a value or a
		// symbol settles them.
		{name: "reshape to an overflowing shape", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", 1<<40, 1<<40, 1<<40)}}, want: []string{"Reshape"}},
		{name: "reshape two -1", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", -1, -1)}}, want: []string{"Reshape"}},
		{name: "reshape negative", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", -2, -3)}}, want: []string{"Reshape"}},
		{name: "reshape -1 of nothing", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 0), ints("s", 0, -1)}}, want: []string{"Reshape"}},
		{name: "reshape min int64", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", math.MinInt64, -1)}}, want: []string{"Reshape"}},
		{name: "expand overflow", model: expandModel, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", 1<<62, 4)}}, want: []string{"Expand"}},
		{name: "expand past max elements", model: expandModel, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", 1<<21, 1<<20)}}, want: []string{"Expand"}},
		{name: "expand within max elements", model: expandModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", 1<<20, 1<<18)}}, is: berth.ErrMemoryLimit},
		{name: "expand negative", model: expandModel, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", -4, 2)}}, want: []string{"Expand"}},
		{name: "tile overflow", model: tileModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", 1<<62)}}, want: []string{"Tile"}},
		{name: "tile past max elements", model: tileModel, runs: [][]berth.Tensor{{f32s("x", 1<<10), ints("s", 1<<31)}}, want: []string{"Tile"}},
		{name: "tile within max elements", model: tileModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1<<10), ints("s", 1<<24)}}, is: berth.ErrMemoryLimit},
		{name: "tile table past the limit", model: tileBytesModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{zeros("x", berth.Uint8, 1), ints("s", 1<<25)}}, is: berth.ErrMemoryLimit},
		{name: "tile negative", model: tileModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", -1)}}, want: []string{"Tile"}},
		{name: "constant of shape overflow", model: cosModel, runs: [][]berth.Tensor{{ints("s", 1<<32, 1<<32)}}, want: []string{"ConstantOfShape"}},
		{name: "constant of shape huge", model: cosModel, runs: [][]berth.Tensor{{ints("s", 1<<38)}}, is: berth.ErrMemoryLimit},
		{name: "constant of shape negative", model: cosModel, runs: [][]berth.Tensor{{ints("s", 3, -1)}}, want: []string{"ConstantOfShape"}},
		{name: "range huge count", model: rangeModel, runs: [][]berth.Tensor{{scalar("start", 0), scalar("limit", math.MaxInt64), scalar("delta", 1)}}, want: []string{"Range"}},
		{name: "range overflowing span", model: rangeModel, runs: [][]berth.Tensor{{scalar("start", math.MinInt64), scalar("limit", math.MaxInt64), scalar("delta", 1<<22)}}, want: []string{"Range"}},
		{name: "range overflowing span within max elements", model: rangeModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{scalar("start", math.MinInt64), scalar("limit", math.MaxInt64), scalar("delta", 1<<40)}}, is: berth.ErrMemoryLimit},
		{name: "range zero delta", model: rangeModel, runs: [][]berth.Tensor{{scalar("start", 0), scalar("limit", 4), scalar("delta", 0)}}, want: []string{"Range"}},
		{name: "range within max elements", model: rangeModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{scalar("start", 0), scalar("limit", 1<<36), scalar("delta", 1)}}, is: berth.ErrMemoryLimit},
		{name: "range float huge", model: rangeF32Model, runs: [][]berth.Tensor{{f32scalar("start", 0), f32scalar("limit", 1e30), f32scalar("delta", 1e-30)}}, want: []string{"Range"}},
		{name: "range float nan", model: rangeF32Model, runs: [][]berth.Tensor{{f32scalar("start", 0), f32scalar("limit", float32(math.NaN())), f32scalar("delta", 1)}}, want: []string{"Range"}},
		{name: "range float inf", model: rangeF32Model, runs: [][]berth.Tensor{{f32scalar("start", 0), f32scalar("limit", float32(math.Inf(1))), f32scalar("delta", 1)}}, want: []string{"Range"}},
		{name: "symbol squared past the limit", model: outerModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1<<16)}}, is: berth.ErrMemoryLimit},
		{name: "symbol squared past max elements", model: outerModel, runs: [][]berth.Tensor{{f32s("x", 1<<21)}}, want: []string{"elements"}},

		// Sizes that cannot be, given at run time.
		{name: "negative dim", model: addModel, runs: [][]berth.Tensor{{f32s("a", -2), f32s("b", -2)}}, want: []string{`"a"`, "negative"}},
		{name: "min int64 dim", model: addModel, runs: [][]berth.Tensor{{f32s("a", math.MinInt64), f32s("b", 2)}}, want: []string{`"a"`, "negative"}},
		{name: "overflowing dims", model: addNMModel, runs: [][]berth.Tensor{{f32s("a", 1<<32, 1<<32), f32s("b", 1<<32, 1<<32)}}, want: []string{`"a"`, "elements"}},
		{name: "dims whose bytes overflow", model: addNMModel, runs: [][]berth.Tensor{{f32s("a", 1<<20, 1<<20), f32s("b", 1<<20, 1<<20)}}, want: []string{`"a"`}},
		{name: "empty with a dimension past max elements", model: addNMModel, runs: [][]berth.Tensor{{f32s("a", 0, 1<<41), f32s("b", 1<<41, 0)}}, want: []string{`"a"`, "more than"}},
		{name: "empty with a dimension of max int64", model: addNMModel, runs: [][]berth.Tensor{{f32s("a", 0, math.MaxInt64), f32s("b", math.MaxInt64, 0)}}, want: []string{`"a"`, "more than"}},
		{name: "data short of the shape", model: addModel, runs: [][]berth.Tensor{{f32s("a", 3), {Name: "b", DType: berth.Float32, Shape: []int64{3}, Data: make([]byte, 8)}}}, want: []string{`"b"`, "bytes"}},

		// Inputs that disagree on a symbol.
		{name: "symbol disagrees", model: addModel, runs: [][]berth.Tensor{{f32s("a", 2), f32s("b", 3)}}, want: []string{`"b"`, "n"}},
		{name: "symbol disagrees after a good run", model: addModel, runs: [][]berth.Tensor{{f32s("a", 2), f32s("b", 2)}, {f32s("a", 4), f32s("b", 5)}}, want: []string{`"b"`, "n = 4"}},
		{name: "crossed symbols disagree", model: addNMModel, runs: [][]berth.Tensor{{f32s("a", 2, 3), f32s("b", 3, 4)}}, want: []string{`"b"`, "(n)"}},
		{name: "symbol disagrees with the fixed size", model: addModel, opts: berth.Options{Dims: map[string]int64{"n": 3}}, runs: [][]berth.Tensor{{f32s("a", 4), f32s("b", 4)}}, want: []string{`"a"`, "expected float32[3]"}},
		{name: "zero disagrees", model: addModel, runs: [][]berth.Tensor{{f32s("a", 0), f32s("b", 1)}}, want: []string{`"b"`, "n = 0"}},

		// Bounds (MaxDims) and fixed sizes (Dims) that cannot be.
		{name: "max dim exceeded", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": 4}}, runs: [][]berth.Tensor{{f32s("a", 5), f32s("b", 5)}}, want: []string{"(n)", "bound 4"}},
		{name: "max dim zero", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": 0}}, runs: [][]berth.Tensor{{f32s("a", 0), f32s("b", 0)}, {f32s("a", 1), f32s("b", 1)}}, want: []string{"(n)", "bound 0"}},
		{name: "max dim negative", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": -1}}, want: []string{"MaxDims", "n=-1"}},
		{name: "max dim min int64", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": math.MinInt64}}, want: []string{"MaxDims", "n="}},
		{name: "max dim max int64", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": math.MaxInt64}}, want: []string{"MaxDims", "not a size"}},
		{name: "max dim past the memory limit", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": 1 << 40}}, is: berth.ErrMemoryLimit},
		{name: "max dim past a small limit", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"n": 1 << 26}, MemoryLimit: small}, is: berth.ErrMemoryLimit},
		{name: "max dim squared past max elements", model: addNMModel, opts: berth.Options{MaxDims: map[string]int64{"n": 1 << 30, "m": 1 << 30}}, want: []string{"elements"}},
		{name: "max dim of a symbol the model lacks", model: addModel, opts: berth.Options{MaxDims: map[string]int64{"batch": 4}}, want: []string{"batch", "its symbols: n"}},
		{name: "dim negative", model: addModel, opts: berth.Options{Dims: map[string]int64{"n": -5}}, want: []string{"Dims", "n=-5"}},
		{name: "dim past the memory limit", model: addModel, opts: berth.Options{Dims: map[string]int64{"n": 1 << 40}}, is: berth.ErrMemoryLimit},
		{name: "dim above max dim", model: addModel, opts: berth.Options{Dims: map[string]int64{"n": 5}, MaxDims: map[string]int64{"n": 4}}, want: []string{"n is fixed at 5", "bound 4"}},
		{name: "max dim squared past the limit", model: outerModel, opts: berth.Options{MaxDims: map[string]int64{"n": 1 << 16}, MemoryLimit: small}, is: berth.ErrMemoryLimit},

		// NonZero over a huge tensor or of a huge computed count.
		{name: "nonzero of an expansion past max elements", model: nonzeroExpand, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", 1<<30, 1<<30)}}},
		{name: "nonzero of a huge expansion", model: nonzeroExpand, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1), ints("s", 1<<16, 1<<16)}}, is: berth.ErrMemoryLimit},
		{name: "nonzero of a huge constant", model: nonzeroOfShape, runs: [][]berth.Tensor{{ints("s", 1<<36)}}, is: berth.ErrMemoryLimit},
		{name: "nonzero of a constant past max elements", model: nonzeroOfShape, runs: [][]berth.Tensor{{ints("s", 1<<41)}}, want: []string{"ConstantOfShape"}},
		{name: "nonzero of a large computed mask", model: nonzeroComputed, opts: berth.Options{MemoryLimit: 16 << 20}, runs: [][]berth.Tensor{{f32s("x", 1<<10, 1<<10)}}, is: berth.ErrMemoryLimit},

		// Values that decide shapes, hostile: negative, huge, of the wrong
		// type or rank.
		{name: "shape input of floats", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), f32s("s", 2)}}, want: []string{`"s"`, "int64"}},
		{name: "shape input of rank 2", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), intsShaped("s", []int64{1, 2}, 2, 3)}}, want: []string{`"s"`, "rank"}},
		{name: "shape input of rank 0", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), scalar("s", 6)}}, want: []string{`"s"`, "rank"}},
		{name: "shape input short of data", model: reshapeModel, runs: [][]berth.Tensor{{f32s("x", 6), {Name: "s", DType: berth.Int64, Shape: []int64{2}, Data: make([]byte, 8)}}}, want: []string{`"s"`, "bytes"}},
		{name: "computed shape overflows", model: reshapeComputed, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", 1<<62, 1)}}, want: []string{"Reshape"}},
		{name: "computed shape negative", model: reshapeComputed, runs: [][]berth.Tensor{{f32s("x", 6), ints("s", -3, -1)}}, want: []string{"Reshape"}},
		{name: "computed shape after a good run", model: reshapeComputed, runs: [][]berth.Tensor{{f32s("x", 12), ints("s", 1, 3)}, {f32s("x", 12), ints("s", 1<<40, 1<<40)}}, want: []string{"Reshape"}},
		{name: "range start of two values", model: rangeModel, runs: [][]berth.Tensor{{ints("start", 0, 1), ints("limit", 4), ints("delta", 1)}}, want: []string{"Range", "start"}},
		{name: "range of the wrong type", model: rangeModel, runs: [][]berth.Tensor{{f32scalar("start", 0), scalar("limit", 4), scalar("delta", 1)}}, want: []string{`"start"`, "int64"}},

		{name: "topk k negative", model: topkModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("k", -1)}}, want: []string{"TopK"}},
		{name: "topk k past the input", model: topkModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("k", 1<<40)}}, want: []string{"TopK"}},
		{name: "topk k max int64", model: topkModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("k", math.MaxInt64)}}, want: []string{"TopK"}},
		{name: "pad past max elements", model: padModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", 0, 1<<41)}}, want: []string{"Pad"}},
		{name: "pad overflow", model: padModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", math.MaxInt64, math.MaxInt64)}}, want: []string{"Pad"}},
		{name: "pad past the limit", model: padModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", 0, 1<<34)}}, is: berth.ErrMemoryLimit},
		{name: "pad crops past the input", model: padModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", -5, 0)}}, want: []string{"Pad"}},
		{name: "pad crops min int64", model: padModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", math.MinInt64, 0)}}, want: []string{"Pad"}},
		{name: "one hot depth huge", model: oneHotModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{ints("x", 1, 2), scalar("s", 1<<36), f32s("v", 2)}}, is: berth.ErrMemoryLimit},
		{name: "one hot depth past max elements", model: oneHotModel, runs: [][]berth.Tensor{{ints("x", 1, 2), scalar("s", 1<<40), f32s("v", 2)}}, want: []string{"OneHot"}},
		{name: "one hot depth negative", model: oneHotModel, runs: [][]berth.Tensor{{ints("x", 1, 2), scalar("s", -3), f32s("v", 2)}}, want: []string{"OneHot"}},
		{name: "split sizes past the input", model: splitModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", 1<<40, 1)}}, want: []string{"Split"}},
		{name: "split sizes negative", model: splitModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", -1, 5)}}, want: []string{"Split"}},
		{name: "split sizes overflow", model: splitModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", math.MaxInt64, math.MaxInt64)}}, want: []string{"Split"}},
		{name: "squeeze axis out of range", model: squeezeModel, runs: [][]berth.Tensor{{f32s("x", 3, 1), ints("s", 7)}}, want: []string{"Squeeze"}},
		{name: "squeeze axis min int64", model: squeezeModel, runs: [][]berth.Tensor{{f32s("x", 3, 1), ints("s", math.MinInt64)}}, want: []string{"Squeeze"}},
		{name: "squeeze axis not one", model: squeezeModel, runs: [][]berth.Tensor{{f32s("x", 3, 1), ints("s", 0)}}, want: []string{"Squeeze"}},
		{name: "unsqueeze axis out of range", model: unsqueezeModel, runs: [][]berth.Tensor{{f32s("x", 3), ints("s", 1<<40)}}, want: []string{"Unsqueeze"}},
		{name: "unsqueeze axis twice", model: unsqueezeModel, runs: [][]berth.Tensor{{f32s("x", 3), ints("s", 0, 0)}}, want: []string{"Unsqueeze"}},
		{name: "pad of rank 70", model: rank70("Pad", "s"), runs: [][]berth.Tensor{{ones(f32s("x", 2)), ints("s", make([]int64, 140)...)}}, want: []string{"Pad", "rank 70"}},
		{name: "tile of rank 70", model: rank70("Tile", "s"), runs: [][]berth.Tensor{{ones(f32s("x", 2)), ints("s", slices.Repeat([]int64{1}, 70)...)}}, want: []string{"Tile", "rank 70"}},
		{name: "resize past max elements", model: resizeModel, runs: [][]berth.Tensor{{f32s("x", 1, 1, 2, 2), f32s("roi", 0), f32s("scales", 0), ints("s", 1, 1, 1<<21, 1<<21)}}, want: []string{"Resize"}},
		{name: "resize past the limit", model: resizeModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1, 1, 2, 2), f32s("roi", 0), f32s("scales", 0), ints("s", 1, 1, 1, 1<<36)}}, is: berth.ErrMemoryLimit},
		{name: "resize negative", model: resizeModel, runs: [][]berth.Tensor{{f32s("x", 1, 1, 2, 2), f32s("roi", 0), f32s("scales", 0), ints("s", 1, 1, -2, 2)}}, want: []string{"Resize"}},
		{name: "slice of min int64", model: sliceModel, runs: [][]berth.Tensor{{f32s("x", 4), ints("s", math.MinInt64), ints("e", math.MaxInt64)}, {f32s("x", 4), ints("s", 0), ints("e", 1)}, {f32s("x", 4), f32s("s", 1), ints("e", 1)}}, want: []string{`"s"`, "int64"}},
		{name: "symbol scaled past max elements", model: shapeScaled, runs: [][]berth.Tensor{{f32s("x", 1<<10), ints("s", 1<<40)}}, want: []string{"ConstantOfShape"}},
		{name: "symbol scaled past the limit", model: shapeScaled, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1<<10), ints("s", 1<<30)}}, is: berth.ErrMemoryLimit},
		{name: "symbol scaled overflows", model: shapeScaled, runs: [][]berth.Tensor{{f32s("x", 1<<10), ints("s", 1<<53)}}, want: []string{"ConstantOfShape"}},
		{name: "loop trip count huge", model: loopModel, opts: berth.Options{MemoryLimit: small}, runs: [][]berth.Tensor{{f32s("x", 1<<10), scalar("s", 1<<30)}}},

		// Sequences whose elements disagree.
		{name: "sequence elements of other sizes", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", 2), f32s("xs[1]", 3)}}},
		{name: "sequence element of another rank", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", 2), f32s("xs[1]", 2, 1)}}, want: []string{`"xs[1]"`, "rank"}},
		{name: "sequence element of another type", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", 2), ints("xs[1]", 1, 2)}}, want: []string{`"xs[1]"`, "float32"}},
		{name: "sequence element skipped", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", 2), f32s("xs[2]", 2)}}, want: []string{`"xs[2]"`, "no element 1"}},
		{name: "sequence element twice", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", 2), f32s("xs[0]", 2)}}, want: []string{`"xs[0]"`, "twice"}},
		{name: "input twice", model: addModel, runs: [][]berth.Tensor{{f32s("a", 2), f32s("b", 2), f32s("a", 2)}}, want: []string{`"a"`, "twice"}},
		{name: "sequence element index huge", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[99999999999999999999]", 2)}}, want: []string{"xs[99999999999999999999]"}},
		{name: "sequence element disagrees with a tensor", model: seqAdd, runs: [][]berth.Tensor{{f32s("xs[0]", 3), f32s("x", 4)}}},
		{name: "sequence with a negative element", model: seqConcat, runs: [][]berth.Tensor{{f32s("xs[0]", -1)}}, want: []string{`"xs[0]"`, "negative"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkOpenCase(t, c) })
	}
}

// TestOpenZeroSizes runs models with open shapes on inputs with a
// dimension of size zero: as ONNX Runtime does, they run and return
// outputs of the shapes the operators give (a sum over nothing is zero).
// Each model runs first on inputs of other sizes filled with ones, so
// that a kernel that leaves its output unwritten shows what the arena
// held.
func TestOpenZeroSizes(t *testing.T) {
	twoIn := func(op string, a, b []string) onnxtest.Graph {
		return oneNode(op, []onnxtest.Input{{Name: "a", Dims: a}, {Name: "b", Dims: b}}, "a", "b")
	}
	cases := []struct {
		name  string
		model onnxtest.Graph
		warm  []berth.Tensor // a run of other sizes first
		ins   []berth.Tensor
		shape []int64 // of the one output
		want  float32 // every output element (float32 outputs)
	}{
		{"add", addModel, []berth.Tensor{ones(f32s("a", 3)), ones(f32s("b", 3))}, []berth.Tensor{f32s("a", 0), f32s("b", 0)}, []int64{0}, 0},
		{"matmul over nothing", twoIn("MatMul", []string{"m", "k"}, []string{"k", "n"}),
			[]berth.Tensor{ones(f32s("a", 2, 4)), ones(f32s("b", 4, 3))}, []berth.Tensor{f32s("a", 2, 0), f32s("b", 0, 3)}, []int64{2, 3}, 0},
		{"matmul of no rows", twoIn("MatMul", []string{"m", "k"}, []string{"k", "n"}),
			[]berth.Tensor{ones(f32s("a", 2, 4)), ones(f32s("b", 4, 3))}, []berth.Tensor{f32s("a", 0, 4), f32s("b", 4, 3)}, []int64{0, 3}, 0},
		{"reduce sum over nothing", onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"b", "n"}}}, Nodes: []onnxtest.Node{
			{Op: "ReduceSum", Inputs: []string{"x", "axes"}, Outputs: []string{"y"}, Ints: map[string]int64{"keepdims": 0}},
		}, Consts: []onnxtest.Const{{Name: "axes", Dims: []int64{1}, Values: []int64{1}}}, Outputs: []string{"y"}},
			[]berth.Tensor{ones(f32s("x", 2, 5))}, []berth.Tensor{f32s("x", 2, 0)}, []int64{2}, 0},
		{"softmax of nothing", onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"b", "n"}}}, Nodes: []onnxtest.Node{
			{Op: "Softmax", Inputs: []string{"x"}, Outputs: []string{"y"}, Ints: map[string]int64{"axis": -1}},
		}, Outputs: []string{"y"}}, []berth.Tensor{ones(f32s("x", 2, 5))}, []berth.Tensor{f32s("x", 2, 0)}, []int64{2, 0}, 0},
		{"concat with an empty piece", onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "a", Dims: []string{"b", "n"}}, {Name: "c", Dims: []string{"b", "3"}}}, Nodes: []onnxtest.Node{
			{Op: "Concat", Inputs: []string{"a", "c"}, Outputs: []string{"y"}, Ints: map[string]int64{"axis": 1}},
		}, Outputs: []string{"y"}}, []berth.Tensor{ones(f32s("a", 2, 2)), ones(f32s("c", 2, 3))}, []berth.Tensor{f32s("a", 2, 0), f32s("c", 2, 3)}, []int64{2, 3}, 0},
		{"transpose", onnxtest.Graph{Inputs: []onnxtest.Input{{Name: "x", Dims: []string{"n", "3"}}}, Nodes: []onnxtest.Node{
			{Op: "Transpose", Inputs: []string{"x"}, Outputs: []string{"y"}},
		}, Outputs: []string{"y"}}, []berth.Tensor{ones(f32s("x", 2, 3))}, []berth.Tensor{f32s("x", 0, 3)}, []int64{3, 0}, 0},
		{"reshape copying a zero", reshapeModel, []berth.Tensor{ones(f32s("x", 8)), ints("s", 2, 4)}, []berth.Tensor{f32s("x", 0), ints("s", 0, 4)}, []int64{0, 4}, 0},
		{"expand to nothing", expandModel, []berth.Tensor{ones(f32s("x", 1)), ints("s", 3, 1)}, []berth.Tensor{f32s("x", 1), ints("s", 0, 5)}, []int64{0, 5}, 0},
		{"tile of nothing", tileModel, []berth.Tensor{ones(f32s("x", 2)), ints("s", 2)}, []berth.Tensor{f32s("x", 2), ints("s", 0)}, []int64{0}, 0},
		{"constant of an empty shape", cosModel, []berth.Tensor{ints("s", 2, 3)}, []berth.Tensor{ints("s", 0, 7)}, []int64{0, 7}, 0},
		{"empty range", rangeModel, []berth.Tensor{scalar("start", 0), scalar("limit", 3), scalar("delta", 1)}, []berth.Tensor{scalar("start", 5), scalar("limit", 3), scalar("delta", 1)}, []int64{0}, 0},
		{"nonzero of nothing", nonzeroComputed, []berth.Tensor{ones(f32s("x", 2, 2))}, []berth.Tensor{f32s("x", 0, 2)}, []int64{2, 0}, 0},
		{"tile of nothing along a long axis", oneNode("Tile", []onnxtest.Input{{Name: "x", Dims: []string{"n", "m"}}, {Name: "s", Elem: "int64", Dims: []string{"2"}}}, "x", "s"),
			[]berth.Tensor{ones(f32s("x", 2, 2)), ints("s", 1, 2)}, []berth.Tensor{f32s("x", 0, 1), ints("s", 1, 1<<33)}, []int64{0, 1 << 33}, 0},
		{"pad of nothing along a long axis", oneNode("Pad", []onnxtest.Input{{Name: "x", Dims: []string{"n", "m"}}, {Name: "s", Elem: "int64", Dims: []string{"4"}}}, "x", "s"),
			[]berth.Tensor{ones(f32s("x", 2, 2)), ints("s", 0, 0, 0, 1)}, []berth.Tensor{f32s("x", 0, 1), ints("s", 0, 0, 0, 1<<33)}, []int64{0, 1<<33 + 1}, 0},
		{"resize to nothing along a long axis", resizeModel, []berth.Tensor{ones(f32s("x", 1, 1, 2, 2)), f32s("roi", 0), f32s("scales", 0), ints("s", 1, 1, 4, 4)},
			[]berth.Tensor{f32s("x", 1, 1, 2, 2), f32s("roi", 0), f32s("scales", 0), ints("s", 0, 1<<31, 1, 0)}, []int64{0, 1 << 31, 1, 0}, 0},
		{"outer of nothing", outerModel, []berth.Tensor{ones(f32s("x", 4))}, []berth.Tensor{f32s("x", 0)}, []int64{0, 0}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadBytes(t, c.model.Bytes())
			for _, opts := range []berth.Options{{Threads: 1}, {Threads: 1, MaxDims: symbolSizes(m, c.warm)}} {
				_, s := newSession(t, m, opts)
				if _, err := s.Run(context.Background(), c.warm...); err != nil {
					t.Fatalf("%v: the run of other sizes: %v", opts.MaxDims, err)
				}
				outs, err := s.Run(context.Background(), c.ins...)
				if err != nil {
					t.Fatalf("%v: %v", opts.MaxDims, err)
				}
				o := outs[0]
				if !slices.Equal(o.Shape, c.shape) {
					t.Fatalf("%v: output %s%v, want shape %v", opts.MaxDims, o.DType, o.Shape, c.shape)
				}
				if n := int64(o.DType.Size()) * elements(o.Shape); int64(len(o.Data)) != n {
					t.Fatalf("%v: %d bytes for %s%v", opts.MaxDims, len(o.Data), o.DType, o.Shape)
				}
				if o.DType == berth.Float32 {
					v, _ := o.Float32s()
					for i, x := range v {
						if x != c.want {
							t.Fatalf("%v: element %d is %v, want %v", opts.MaxDims, i, x, c.want)
						}
					}
				}
			}
		})
	}
}

// TestOpenPlansOption runs a session through more shapes than it keeps
// plans for, with Options.Plans zero, negative and far larger than memory
// allows: the session keeps DefaultPlans for a bound of zero or less, and
// never more plans than their arenas fit in the memory limit.
func TestOpenPlansOption(t *testing.T) {
	const n, shapes = 1 << 14, 12
	m := loadBytes(t, addModel.Bytes())
	for _, c := range []struct {
		plans int
		limit int64
		keep  int // most plans kept
	}{
		{0, 0, berth.DefaultPlans},
		{-1, 0, berth.DefaultPlans},
		{math.MinInt, 0, berth.DefaultPlans},
		{1, 0, 1},
		// Each plan's arena holds a, b and y, about 3·4·n bytes.
		{math.MaxInt, 1 << 20, (1 << 20) / (3 * 4 * n)},
		{math.MaxInt, 0, shapes},
	} {
		t.Run(fmt.Sprintf("plans %d limit %d", c.plans, c.limit), func(t *testing.T) {
			_, s := newSession(t, m, berth.Options{Threads: 1, Plans: c.plans, MemoryLimit: c.limit})
			for k := range shapes {
				size := int64(n + k)
				if _, err := s.Run(context.Background(), f32s("a", size), f32s("b", size)); err != nil {
					t.Fatal(err)
				}
				if s.Plans() > c.keep {
					t.Fatalf("after %d shapes the session keeps %d plans, at most %d expected", k+1, s.Plans(), c.keep)
				}
			}
			if s.Plans() != c.keep {
				t.Errorf("the session keeps %d plans, want %d", s.Plans(), c.keep)
			}
		})
	}
}
