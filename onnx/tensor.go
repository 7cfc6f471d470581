package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/onnx/internal/onnxpb"
)

// dtypeOf maps an ONNX TensorProto.DataType to the ir element type.
func dtypeOf(t int32) (ir.DType, error) { return ir.DTypeFromONNX(int64(t)) }

// shapeOf checks the dims of a tensor and returns them as a shape.
func shapeOf(dims []int64) (ir.Shape, error) {
	s := make(ir.Shape, len(dims))
	copy(s, dims)
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// tensorData holds where the bytes of a TensorProto come from: its
// raw_data window in the model file, if the wire walk found one.
type tensorData struct {
	raw window
}

// tensor converts a TensorProto into an ir constant. what names the tensor
// in error messages (`initializer "w"`). Every size the file declares is
// checked against the bytes actually present before anything is allocated.
func (im *importer) tensor(what string, tp *onnxpb.TensorProto, src tensorData) (ir.Tensor, error) {
	dt, err := dtypeOf(tp.GetDataType())
	if err != nil {
		return ir.Tensor{}, fmt.Errorf("%s: %w", what, err)
	}
	shape, err := shapeOf(tp.GetDims())
	if err != nil {
		return ir.Tensor{}, fmt.Errorf("%s: %w", what, err)
	}
	if tp.Segment != nil {
		return ir.Tensor{}, fmt.Errorf("%s: segmented tensors are not supported", what)
	}
	size := shape.Bytes(dt)
	if uint64(size) > math.MaxInt {
		return ir.Tensor{}, fmt.Errorf("%s: %s%v needs %d bytes, more than this platform can address", what, dt, shape, size)
	}
	data, err := im.tensorBytes(what, tp, src, dt, shape, int(size))
	if err != nil {
		return ir.Tensor{}, err
	}
	return ir.Tensor{Name: tp.GetName(), DType: dt, Shape: shape, Data: data, Producer: -1}, nil
}

// tensorBytes returns the little-endian bytes of a tensor of the given type
// and shape, size bytes long.
func (im *importer) tensorBytes(what string, tp *onnxpb.TensorProto, src tensorData, dt ir.DType, shape ir.Shape, size int) ([]byte, error) {
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return im.external(what, tp, int64(size))
	}
	if len(tp.GetExternalData()) > 0 {
		return nil, fmt.Errorf("%s: has external_data entries but data_location is not EXTERNAL", what)
	}
	sizeErr := func(field string, got int) error {
		return fmt.Errorf("%s: %s holds %d bytes, but %s%v needs %d", what, field, got, dt, shape, size)
	}
	if src.raw.ok {
		if n := src.raw.end - src.raw.off; n != size {
			return nil, sizeErr("raw_data", n)
		}
		if size == 0 {
			return []byte{}, nil
		}
		return im.file[src.raw.off:src.raw.end:src.raw.end], nil
	}
	if tp.RawData != nil {
		if len(tp.RawData) != size {
			return nil, sizeErr("raw_data", len(tp.RawData))
		}
		return tp.RawData, nil
	}

	n := int(shape.Elements()) // size fits in an int, so does the count
	countErr := func(field string, got int) error {
		return fmt.Errorf("%s: %s holds %d values, but %s%v has %d elements", what, field, got, dt, shape, n)
	}
	var (
		field string
		count int
	)
	switch dt {
	case ir.Float32:
		field, count = "float_data", len(tp.FloatData)
	case ir.Float64:
		field, count = "double_data", len(tp.DoubleData)
	case ir.Int64:
		field, count = "int64_data", len(tp.Int64Data)
	case ir.Uint32, ir.Uint64:
		field, count = "uint64_data", len(tp.Uint64Data)
	default: // Int32, Int16, Int8, Uint16, Uint8, Bool, Float16, BFloat16
		field, count = "int32_data", len(tp.Int32Data)
	}
	if count == 0 && n > 0 {
		return nil, fmt.Errorf("%s: %s%v has no data (no raw_data and no %s)", what, dt, shape, field)
	}
	if count != n {
		return nil, countErr(field, count)
	}
	// Now the count is checked against values the file really holds, and
	// the allocation is at most 8 bytes per decoded value.
	out := make([]byte, size)
	le := binary.LittleEndian
	switch dt {
	case ir.Float32:
		for i, v := range tp.FloatData {
			le.PutUint32(out[4*i:], math.Float32bits(v))
		}
	case ir.Float64:
		for i, v := range tp.DoubleData {
			le.PutUint64(out[8*i:], math.Float64bits(v))
		}
	case ir.Int64:
		for i, v := range tp.Int64Data {
			le.PutUint64(out[8*i:], uint64(v))
		}
	case ir.Uint64:
		for i, v := range tp.Uint64Data {
			le.PutUint64(out[8*i:], v)
		}
	case ir.Uint32:
		for i, v := range tp.Uint64Data {
			le.PutUint32(out[4*i:], uint32(v))
		}
	case ir.Int32:
		for i, v := range tp.Int32Data {
			le.PutUint32(out[4*i:], uint32(v))
		}
	case ir.Int16, ir.Uint16, ir.Float16, ir.BFloat16:
		// float16 and bfloat16 values are stored as their bit patterns.
		for i, v := range tp.Int32Data {
			le.PutUint16(out[2*i:], uint16(v))
		}
	case ir.Int8, ir.Uint8:
		for i, v := range tp.Int32Data {
			out[i] = byte(v)
		}
	case ir.Bool:
		for i, v := range tp.Int32Data {
			if v != 0 {
				out[i] = 1
			}
		}
	}
	return out, nil
}
