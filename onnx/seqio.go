package onnx

import (
	"fmt"
	"os"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// SequenceElement names element i of the sequence-typed graph input or
// output name: a sequence graph input of length k (see
// ImportOptions.SequenceLengths) becomes the k tensor inputs
// SequenceElement(name, 0) … SequenceElement(name, k-1), a sequence graph
// output the tensor outputs named the same way, in order.
func SequenceElement(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }

// SequenceIO reports, for the graph inputs InputNames lists and for the
// graph outputs (in order), which are sequences.
func SequenceIO(path string) (inputs, outputs []bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	stripped, _, err := stripRawData(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, notONNX("%v", err))
	}
	var mp onnxpb.ModelProto
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(stripped, &mp); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, notONNX("%v", err))
	}
	inits := make(map[string]bool)
	for _, tp := range mp.GetGraph().GetInitializer() {
		inits[tp.GetName()] = true
	}
	for _, vi := range mp.GetGraph().GetInput() {
		if !inits[vi.GetName()] {
			inputs = append(inputs, vi.GetType().GetSequenceType() != nil)
		}
	}
	for _, vi := range mp.GetGraph().GetOutput() {
		outputs = append(outputs, vi.GetType().GetSequenceType() != nil)
	}
	return inputs, outputs, nil
}

// ReadSequenceFile reads a serialized ONNX SequenceProto of tensors (the
// .pb files of ONNX's test data sets for sequence values) into constant
// tensors, in order.
func ReadSequenceFile(path string) ([]*ir.Tensor, error) { return readFile(path, ReadSequence) }

// ReadSequence decodes a serialized ONNX SequenceProto whose elements are
// tensors.
func ReadSequence(b []byte) ([]*ir.Tensor, error) {
	const (
		fieldElemType     = 2
		fieldTensorValues = 3
		elemTensor        = 1
	)
	ts := []*ir.Tensor{}
	elem := int64(-1)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("not an ONNX sequence: %v", protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == fieldElemType && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("not an ONNX sequence: %v", protowire.ParseError(n))
			}
			elem, b = int64(v), b[n:]
		case num == fieldTensorValues && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, fmt.Errorf("not an ONNX sequence: %v", protowire.ParseError(n))
			}
			t, err := ReadTensor(v)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(ts), err)
			}
			ts, b = append(ts, t), b[n:]
		case num > fieldTensorValues && typ == protowire.BytesType:
			return nil, fmt.Errorf("sequences of sparse tensors, sequences, maps or optionals are not supported")
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return nil, fmt.Errorf("not an ONNX sequence: %v", protowire.ParseError(n))
			}
			b = b[n:]
		}
	}
	if elem != elemTensor && !(elem == -1 && len(ts) == 0) && elem != 0 {
		return nil, fmt.Errorf("sequence elements of type %d are not supported (want tensors)", elem)
	}
	return ts, nil
}
