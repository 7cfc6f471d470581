package ir

import "fmt"

// ONNX TensorProto.DataType codes, the numbering that attributes such as
// Cast's "to" and LayerNormalization's "stash_type" use.
var onnxCodes = [...]int64{
	Float32:  1,
	Uint8:    2,
	Int8:     3,
	Uint16:   4,
	Int16:    5,
	Int32:    6,
	Int64:    7,
	Bool:     9,
	Float16:  10,
	Float64:  11,
	Uint32:   12,
	Uint64:   13,
	BFloat16: 16,
}

// ONNXCode returns the ONNX TensorProto.DataType code of d (0 for
// Undefined).
func (d DType) ONNXCode() int64 {
	if int(d) >= len(onnxCodes) {
		return 0
	}
	return onnxCodes[d]
}

// DTypeFromONNX maps an ONNX TensorProto.DataType code to a DType. Types
// berth does not handle (string, complex, 8-bit floats, …) are an error.
func DTypeFromONNX(code int64) (DType, error) {
	for d, c := range onnxCodes {
		if c == code && c != 0 {
			return DType(d), nil
		}
	}
	switch code {
	case 0:
		return Undefined, fmt.Errorf("element type is undefined")
	case 8:
		return Undefined, fmt.Errorf("unsupported element type string")
	case 14:
		return Undefined, fmt.Errorf("unsupported element type complex64")
	case 15:
		return Undefined, fmt.Errorf("unsupported element type complex128")
	}
	return Undefined, fmt.Errorf("unsupported element type (ONNX data type %d)", code)
}
