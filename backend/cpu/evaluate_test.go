package cpu

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

func TestEvaluate(t *testing.T) {
	tg := newTGraph(17)
	a := tg.constant("a", ir.Float32, f32Bytes([]float32{1, 2, 3, 4, 5, 6}), 2, 3)
	b := tg.constant("b", ir.Float32, f32Bytes([]float32{10, 20, 30}), 3)
	add := tg.node("Add", nil, []ir.TensorID{a, b}, out{ir.Float32, []int64{2, 3}})
	if err := Evaluate(tg.g, add); err != nil {
		t.Fatal(err)
	}
	y := tg.g.Tensor(add.Outputs[0])
	if !y.IsConst() || !raw.Aligned(y.Data, alignment) {
		t.Fatalf("output not set or not aligned")
	}
	near(t, "Add", asF32(y.Data), []float64{11, 22, 33, 14, 25, 36}, 0, 0)

	// Evaluate chains: the folded output feeds the next node.
	tr := tg.node("Transpose", nil, []ir.TensorID{add.Outputs[0]}, out{ir.Float32, []int64{3, 2}})
	if err := Evaluate(tg.g, tr); err != nil {
		t.Fatal(err)
	}
	near(t, "Transpose", asF32(tg.g.Tensor(tr.Outputs[0]).Data), []float64{11, 14, 22, 25, 33, 36}, 0, 0)

	// Unaligned constant bytes are fine.
	raw := make([]byte, 4*3+1)
	copy(raw[1:], f32Bytes([]float32{-1, 0, 2}))
	u := tg.constant("u", ir.Float32, raw[1:], 3)
	relu := tg.node("Relu", nil, []ir.TensorID{u}, out{ir.Float32, []int64{3}})
	if err := Evaluate(tg.g, relu); err != nil {
		t.Fatal(err)
	}
	near(t, "Relu", asF32(tg.g.Tensor(relu.Outputs[0]).Data), []float64{0, 0, 2}, 0, 0)

	// A zero-sized result is still a known constant.
	e := tg.constant("e", ir.Float32, []byte{}, 0)
	neg := tg.node("Neg", nil, []ir.TensorID{e}, out{ir.Float32, []int64{0}})
	if err := Evaluate(tg.g, neg); err != nil || !tg.g.Tensor(neg.Outputs[0]).IsConst() {
		t.Fatalf("empty Evaluate: err %v, const %v", err, tg.g.Tensor(neg.Outputs[0]).IsConst())
	}

	// Shape and Size need no input values.
	x0 := tg.input("x0", ir.Float32, 4, 5)
	shape := tg.node("Shape", nil, []ir.TensorID{x0}, out{ir.Int64, []int64{2}})
	size := tg.node("Size", nil, []ir.TensorID{x0}, out{ir.Int64, []int64{}})
	for _, n := range []*ir.Node{shape, size} {
		if err := Evaluate(tg.g, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := asI64(tg.g.Tensor(shape.Outputs[0]).Data); got[0] != 4 || got[1] != 5 {
		t.Errorf("Shape = %v", got)
	}
	if got := asI64(tg.g.Tensor(size.Outputs[0]).Data); got[0] != 20 {
		t.Errorf("Size = %v", got)
	}

	// A run-time input is refused, by name.
	x := tg.input("x", ir.Float32, 3)
	bad := tg.node("Relu", nil, []ir.TensorID{x}, out{ir.Float32, []int64{3}})
	if err := Evaluate(tg.g, bad); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("Evaluate with a run-time input: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	tg := newTGraph(17)
	x := tg.input("x", ir.Float32, 3)
	cases := []*ir.Node{
		tg.node("NoSuchOp", nil, []ir.TensorID{x}, out{ir.Float32, []int64{3}}),
		tg.node("Add", nil, []ir.TensorID{x}, out{ir.Float32, []int64{3}}),
		tg.node("Add", nil, []ir.TensorID{x, tg.input("y", ir.Int64, 3)}, out{ir.Float32, []int64{3}}),
		tg.node("Erf", nil, []ir.TensorID{tg.input("i", ir.Int32, 3)}, out{ir.Int32, []int64{3}}),
		tg.node("Relu", nil, []ir.TensorID{x}, out{ir.Float32, []int64{4}}),
		tg.node("Add", nil, []ir.TensorID{x, tg.input("z", ir.Float32, 4)}, out{ir.Float32, []int64{4}}),
		tg.node("Slice", nil, []ir.TensorID{x, tg.input("s", ir.Int64, 1), tg.input("e", ir.Int64, 1)}, out{ir.Float32, []int64{1}}),
	}
	for _, n := range cases {
		_, _, err := Build(tg.g, n)
		if err == nil {
			t.Errorf("%s: Build succeeded", n.Op)
			continue
		}
		if !strings.Contains(err.Error(), n.Name) {
			t.Errorf("%s: error %q does not name the node", n.Op, err)
		}
	}
	n := &ir.Node{Name: "custom", Op: "Relu", Domain: "com.example", Inputs: []ir.TensorID{x}, Outputs: []ir.TensorID{x}}
	if _, _, err := Build(tg.g, n); err == nil {
		t.Errorf("Build accepted a foreign domain")
	}
}

// TestNonZero evaluates NonZero over masks (a byte an element, one axis
// and two) and over floats (where -0 is zero), the shape from ir.Infer,
// and checks the indices against those of a plain walk of the elements.
func TestNonZero(t *testing.T) {
	cases := []struct {
		name  string
		dtype ir.DType
		data  []byte
		shape []int64
	}{
		{"mask", ir.Bool, []byte{0, 1, 1, 0, 0, 1, 0}, []int64{7}},
		{"empty mask", ir.Bool, []byte{0, 0, 0}, []int64{3}},
		{"mask of two axes", ir.Bool, []byte{1, 0, 0, 1, 1, 1}, []int64{2, 3}},
		{"uint8", ir.Uint8, []byte{3, 0, 255, 0}, []int64{4}},
		{"floats", ir.Float32, f32Bytes([]float32{0, 1.5, float32(math.Copysign(0, -1)), -2}), []int64{4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := newTGraph(17)
			x := tg.constant("x", c.dtype, c.data, c.shape...)
			n := tg.node("NonZero", nil, []ir.TensorID{x}, out{ir.Int64, nil})
			types, err := ir.Infer(tg.g, n)
			if err != nil {
				t.Fatal(err)
			}
			y := tg.g.Tensor(n.Outputs[0])
			y.Shape = types[0].Shape
			if err := Evaluate(tg.g, n); err != nil {
				t.Fatal(err)
			}
			// The indices, axis by axis, of the elements not zero.
			size := c.dtype.Size()
			var nz []int
			for i := 0; i*size < len(c.data); i++ {
				e := c.data[i*size : (i+1)*size]
				if c.dtype == ir.Float32 && math.Float32frombits(binary.LittleEndian.Uint32(e)) == 0 {
					continue
				}
				if c.dtype != ir.Float32 && e[0] == 0 {
					continue
				}
				nz = append(nz, i)
			}
			want := make([]int64, len(c.shape)*len(nz))
			for j, i := range nz {
				for d := len(c.shape) - 1; d >= 0; d-- {
					want[d*len(nz)+j] = int64(i) % c.shape[d]
					i /= int(c.shape[d])
				}
			}
			if got := raw.I64(y.Data); !slices.Equal(got, want) || !slices.Equal([]int64(y.Shape), []int64{int64(len(c.shape)), int64(len(nz))}) {
				t.Errorf("NonZero %v = %v %v, want %v", c.data, y.Shape, got, want)
			}
		})
	}
}
