package onnx

import (
	"fmt"
	"github.com/berth-ml/berth/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
	"github.com/berth-ml/berth/passes"
)

// conformanceDir holds ONNX's conformance data (Debian package
// libonnx-testdata): one model per folder with input and expected output
// tensors.
const conformanceDir = "/usr/share/libonnx-testdata/data"

// TestConformanceShapes imports every conformance model that berth
// supports, binds the test inputs as constants (so shape-driving inputs
// are known), prepares the graph, and compares every output's type and
// shape with the reference output. Models that use unsupported operators
// or features are skipped.
func TestConformanceShapes(t *testing.T) {
	testenv.Require(t, conformanceDir, testenv.InstallConformance)
	sets, _ := filepath.Glob(filepath.Join(conformanceDir, "*", "*", "test_data_set_0"))
	if len(sets) == 0 {
		t.Fatalf("no conformance cases under %s", conformanceDir)
	}
	compared := 0
	for _, set := range sets {
		dir := filepath.Dir(set)
		if strings.HasSuffix(dir, "test_cast_FLOAT_to_BFLOAT16") {
			continue // the reference stores the bfloat16 output as uint16
		}
		m, err := Import(filepath.Join(dir, "model.onnx"))
		if err != nil {
			continue
		}
		g := m.Graph
		bound := true
		for i, id := range g.Inputs {
			tp, err := readTensorProto(filepath.Join(set, fmt.Sprintf("input_%d.pb", i)))
			x := &g.Tensors[id]
			if err != nil || int64(len(tp.GetRawData())) != x.Bytes() {
				bound = false
				break
			}
			x.Data = tp.GetRawData()
		}
		if !bound || passes.Prepare(g, nil) != nil {
			m.Close()
			continue
		}
		for i, id := range g.Outputs {
			tp, err := readTensorProto(filepath.Join(set, fmt.Sprintf("output_%d.pb", i)))
			if err != nil {
				t.Errorf("%s: %v", dir, err)
				continue
			}
			dt, _ := ir.DTypeFromONNX(int64(tp.GetDataType()))
			if got := g.Tensor(id); got.DType != dt || !got.Shape.Equal(tp.GetDims()) {
				t.Errorf("%s: output %d is %s%v, the reference is %s%v", filepath.Base(dir), i, got.DType, got.Shape, dt, ir.Shape(tp.GetDims()))
			}
		}
		compared++
		m.Close()
	}
	t.Logf("compared the outputs of %d conformance models", compared)
	if compared < 100 {
		t.Errorf("only %d conformance models could be compared", compared)
	}
}

func readTensorProto(path string) (*onnxpb.TensorProto, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tp onnxpb.TensorProto
	if err := proto.Unmarshal(b, &tp); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &tp, nil
}
