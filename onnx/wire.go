package onnx

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the ONNX messages that the wire walk below looks into.
const (
	modelGraphField       = 7 // ModelProto.graph
	graphNodeField        = 1 // GraphProto.node
	graphInitializerField = 5 // GraphProto.initializer
	nodeAttributeField    = 5 // NodeProto.attribute
	attributeTensorField  = 5 // AttributeProto.t
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
	out, windows, _, err := stripModel(b, false)
	return out, windows, err
}

// stripRawDataNodes is stripRawData that also strips the raw_data of the
// tensor attributes (Constant values) of the top-level graph's nodes, and
// returns their windows too: attrs[k][j] for attribute j of node k in wire
// order (ok is false for an attribute that is not a tensor with raw_data).
func stripRawDataNodes(b []byte) ([]byte, []window, [][]window, error) {
	return stripModel(b, true)
}

func stripModel(b []byte, nodes bool) ([]byte, []window, [][]window, error) {
	var (
		out     []byte
		windows []window
		attrs   [][]window
		changed bool
	)
	err := walkFields(b, 0, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		if num != modelGraphField || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		graph, ws, as, stripped, err := stripGraph(value, valueOff, nodes)
		if err != nil {
			return fmt.Errorf("graph: %w", err)
		}
		windows = append(windows, ws...)
		attrs = append(attrs, as...)
		changed = changed || stripped
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, graph)
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	if !changed {
		return b, windows, attrs, nil
	}
	return out, windows, attrs, nil
}

// stripGraph strips the raw_data of the initializers of one serialized
// GraphProto that starts at offset base of the model file and, with nodes,
// that of its nodes' tensor attributes.
func stripGraph(b []byte, base int, nodes bool) ([]byte, []window, [][]window, bool, error) {
	var (
		out     []byte
		windows []window
		attrs   [][]window
		changed bool
	)
	err := walkFields(b, base, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		switch {
		case num == graphInitializerField && typ == protowire.BytesType:
			i := len(windows)
			tensor, w, err := stripTensor(value, valueOff)
			if err != nil {
				return fmt.Errorf("initializer %d: %w", i, err)
			}
			changed = changed || w.ok
			windows = append(windows, w)
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, tensor)
		case nodes && num == graphNodeField && typ == protowire.BytesType:
			k := len(attrs)
			node, ws, err := stripNode(value, valueOff)
			if err != nil {
				return fmt.Errorf("node %d: %w", k, err)
			}
			for _, w := range ws {
				changed = changed || w.ok
			}
			attrs = append(attrs, ws)
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, node)
		default:
			out = append(out, field...)
		}
		return nil
	})
	return out, windows, attrs, changed, err
}

// stripNode strips the raw_data of the tensor attributes of one serialized
// NodeProto and returns a window for each of its attributes, in wire order.
func stripNode(b []byte, base int) ([]byte, []window, error) {
	var (
		out     []byte
		windows []window
	)
	err := walkFields(b, base, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		if num != nodeAttributeField || typ != protowire.BytesType {
			out = append(out, field...)
			return nil
		}
		var w window
		var attr []byte
		err := walkFields(value, valueOff, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
			if num != attributeTensorField || typ != protowire.BytesType {
				attr = append(attr, field...)
				return nil
			}
			tensor, tw, err := stripTensor(value, valueOff)
			if err != nil {
				return err
			}
			// A message field given more than once is merged by
			// proto.Unmarshal; of raw_data, the last occurrence wins.
			if tw.ok {
				w = tw
			}
			attr = protowire.AppendTag(attr, num, typ)
			attr = protowire.AppendBytes(attr, tensor)
			return nil
		})
		if err != nil {
			return fmt.Errorf("attribute %d: %w", len(windows), err)
		}
		windows = append(windows, w)
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, attr)
		return nil
	})
	return out, windows, err
}

// stripTensor removes the raw_data field of one serialized TensorProto and
// returns the window of its bytes in the file.
func stripTensor(b []byte, base int) ([]byte, window, error) {
	var (
		out []byte
		w   window
	)
	err := walkFields(b, base, func(num protowire.Number, typ protowire.Type, field []byte, valueOff int, value []byte) error {
		if num == tensorRawDataField && typ == protowire.BytesType {
			// A repeated scalar field: the last occurrence wins.
			w = window{off: valueOff, end: valueOff + len(value), ok: true}
			return nil
		}
		out = append(out, field...)
		return nil
	})
	return out, w, err
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
