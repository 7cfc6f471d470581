package onnx

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// Producer names the tool that wrote the model, with its version
// ("pytorch 1.13.0"), or "" when the file does not say.
func (m *Model) Producer() string {
	return strings.TrimSpace(m.ProducerName + " " + m.ProducerVersion)
}

// ReadTensorFile reads a serialized ONNX TensorProto (the .pb files of
// ONNX's test data sets) into a constant tensor whose Data is a fresh
// copy. Tensors with external data are refused.
func ReadTensorFile(path string) (*ir.Tensor, error) { return readFile(path, ReadTensor) }

// readFile decodes the file at path with decode, its errors naming the
// path.
func readFile[T any](path string, decode func([]byte) (T, error)) (T, error) {
	var none T
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return none, fmt.Errorf("%s: no such file", path)
		}
		return none, err
	}
	v, err := decode(b)
	if err != nil {
		return none, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// ReadTensor decodes a serialized ONNX TensorProto into a constant tensor
// whose Data does not alias b.
func ReadTensor(b []byte) (*ir.Tensor, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("not an ONNX tensor: empty file")
	}
	var tp onnxpb.TensorProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, &tp); err != nil {
		return nil, fmt.Errorf("not an ONNX tensor: %v", err)
	}
	what := fmt.Sprintf("tensor %q", tp.GetName())
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil, fmt.Errorf("%s: external data is not supported in tensor files", what)
	}
	if tp.DataType == nil {
		return nil, fmt.Errorf("not an ONNX tensor: no data type")
	}
	// proto.Unmarshal copied raw_data, so Data never aliases b.
	im := &importer{}
	t, err := im.tensor(what, &tp, tensorData{})
	if err != nil {
		return nil, err
	}
	return &t, nil
}
