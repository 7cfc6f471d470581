package onnx

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the ONNX messages that the wire walk below looks into.
const (
	modelGraphField       = 7 // ModelProto.graph
	graphInitializerField = 5 // GraphProto.initializer
	tensorRawDataField    = 9 // TensorProto.raw_data
)

// window is a byte range [off, end) of the model file.
type window struct {
	off, end int
	ok       bool // the tensor had a raw_data field
}

// stripRawData walks the wire format of a serialized ModelProto and removes
// the raw_data field of every initializer of the top-level graph, rewriting
// the length prefixes of the enclosing messages. It returns the stripped
// bytes and, for each initializer in wire order (the order in which
// proto.Unmarshal appends them to GraphProto.initializer), the range of its
// raw_data bytes in b, so that those bytes can be used in place.
//
// b is not modified. When there is nothing to strip, b itself is returned.
func stripRawData(b []byte) ([]byte, []window, error) {
	var (
		out     []byte
		windows []window
		changed bool
	)
	err := walkFields(b, 0, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		if num != modelGraphField || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		graph, ws, stripped, err := stripGraph(value, valueOff)
		if err != nil {
			return fmt.Errorf("graph: %w", err)
		}
		windows = append(windows, ws...)
		changed = changed || stripped
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, graph)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if !changed {
		return b, windows, nil
	}
	return out, windows, nil
}

// stripGraph strips the raw_data of the initializers of one serialized
// GraphProto that starts at offset base of the model file.
func stripGraph(b []byte, base int) ([]byte, []window, bool, error) {
	var (
		out     []byte
		windows []window
		changed bool
	)
	err := walkFields(b, base, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		if num != graphInitializerField || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		i := len(windows)
		var w window
		var tensor []byte
		err := walkFields(value, valueOff, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
			if num == tensorRawDataField && typ == protowire.BytesType {
				// A repeated scalar field: the last occurrence wins.
				w = window{off: valueOff, end: valueOff + len(value), ok: true}
				changed = true
				return nil
			}
			tensor = append(tensor, field...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("initializer %d: %w", i, err)
		}
		windows = append(windows, w)
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, tensor)
		return nil
	})
	return out, windows, changed, err
}

// walkFields calls f for every field of the serialized message b, which
// starts at offset base of the file. field is the whole encoded field (tag
// included); for length-delimited fields value is its payload and valueOff
// the payload's offset in the file.
func walkFields(b []byte, base int, f func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error) error {
	for pos := 0; pos < len(b); {
		num, typ, n := protowire.ConsumeTag(b[pos:])
		if n < 0 {
			return fmt.Errorf("bad field tag at byte %d: %w", base+pos, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[pos+n:])
		if m < 0 {
			return fmt.Errorf("field %d at byte %d: %w", num, base+pos, protowire.ParseError(m))
		}
		field := b[pos : pos+n+m]
		var value []byte
		valueOff := 0
		if typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b[pos+n:])
			if k < 0 {
				return fmt.Errorf("field %d at byte %d: %w", num, base+pos, protowire.ParseError(k))
			}
			value = v
			valueOff = base + pos + n + (k - len(v))
		}
		if err := f(num, typ, field, valueOff, value); err != nil {
			return err
		}
		pos += n + m
	}
	return nil
}
