package onnx

import (
	"slices"
	"strings"
	"testing"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// symbolicGraph is x["batch", 3] → Relu → y, with a weight w listed as an
// input too (as IR version 3 files do).
func symbolicGraph() *onnxpb.GraphProto {
	g := reluGraph(rawF32("w", []int64{1}, 1))
	x := g.Input[0].GetType().GetTensorType().GetShape()
	x.Dim[0] = &onnxpb.TensorShapeProto_Dimension{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}}
	g.Input = append(g.Input, valueInfo("w", onnxpb.TensorProto_FLOAT, 1))
	return g
}

func TestImportInputShapes(t *testing.T) {
	b := marshal(t, model(13, symbolicGraph()))
	if _, err := ImportBytes(b, ""); err == nil || !strings.Contains(err.Error(), "symbolic") {
		t.Fatalf("import without shapes: err = %v, want one naming the symbolic dimension", err)
	}
	m, err := ImportBytesWith(b, "", ImportOptions{InputShapes: map[string][]int64{"x": {5, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if x := m.Graph.Tensor(m.Graph.Inputs[0]); !x.Shape.Equal(ir.Shape{5, 3}) {
		t.Errorf("x has shape %v, want [5,3]", x.Shape)
	}
	for _, c := range []struct {
		shape []int64
		want  string
	}{
		{[]int64{5}, "rank"},
		{[]int64{5, 4}, "declared size 3"},
		{[]int64{-1, 3}, "bound shape"},
	} {
		_, err := ImportBytesWith(b, "", ImportOptions{InputShapes: map[string][]int64{"x": c.shape}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("shape %v: err = %v, want one containing %q", c.shape, err, c.want)
		}
	}
}

func TestInputNames(t *testing.T) {
	path := write(t, t.TempDir(), model(13, symbolicGraph()))
	names, err := InputNames(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"x"}) {
		t.Errorf("InputNames = %q, want [x] (the initializer w is not fed)", names)
	}
	if _, err := InputNames(path + ".missing"); err == nil {
		t.Error("InputNames of a missing file succeeded")
	}
}
