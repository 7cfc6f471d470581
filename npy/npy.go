package npy

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/berth-ml/berth/ir"
)

// Array is the content of a .npy file: element type, shape and the raw
// little-endian bytes.
type Array struct {
	DType ir.DType
	Shape ir.Shape
	Data  []byte
}

const magic = "\x93NUMPY"

// maxHeader bounds the header dictionary; NumPy's own writer stays far below.
const maxHeader = 1 << 16

var descrs = map[string]ir.DType{
	"<f4": ir.Float32, "<f2": ir.Float16, "<f8": ir.Float64,
	"|i1": ir.Int8, "<i2": ir.Int16, "<i4": ir.Int32, "<i8": ir.Int64,
	"|u1": ir.Uint8, "<u2": ir.Uint16, "<u4": ir.Uint32, "<u8": ir.Uint64,
	"|b1": ir.Bool, "<i1": ir.Int8, "<u1": ir.Uint8, "<b1": ir.Bool,
}

func descrOf(dt ir.DType) (string, error) {
	switch dt {
	case ir.Float32:
		return "<f4", nil
	case ir.Float16:
		return "<f2", nil
	case ir.Float64:
		return "<f8", nil
	case ir.Int8:
		return "|i1", nil
	case ir.Int16:
		return "<i2", nil
	case ir.Int32:
		return "<i4", nil
	case ir.Int64:
		return "<i8", nil
	case ir.Uint8:
		return "|u1", nil
	case ir.Uint16:
		return "<u2", nil
	case ir.Uint32:
		return "<u4", nil
	case ir.Uint64:
		return "<u8", nil
	case ir.Bool:
		return "|b1", nil
	case ir.BFloat16:
		// NumPy has no bfloat16; the common convention stores the bits as
		// unsigned 16-bit integers.
		return "<u2", nil
	}
	return "", fmt.Errorf("npy: no NumPy type for %s", dt)
}

// ReadFile reads a .npy file.
func ReadFile(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	a, err := Read(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Read reads one array from r, which holds at most size bytes (size < 0:
// unknown). The data is allocated only after the header's shape has been
// checked against size.
func Read(r io.Reader, size int64) (*Array, error) {
	br := bufio.NewReader(r)
	var pre [8]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return nil, errors.New("npy: not a .npy file (too short)")
	}
	if string(pre[:6]) != magic {
		return nil, errors.New("npy: not a .npy file (bad magic)")
	}
	var hlen int
	switch pre[6] {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, errors.New("npy: truncated header")
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return nil, errors.New("npy: truncated header")
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeader {
			return nil, fmt.Errorf("npy: header of %d bytes is too large", n)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", pre[6], pre[7])
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, errors.New("npy: truncated header")
	}
	a, err := parseHeader(string(hdr))
	if err != nil {
		return nil, err
	}
	n := a.Shape.Bytes(a.DType)
	prefix := int64(len(pre)) + int64(hlen) + 2
	if pre[6] != 1 {
		prefix += 2
	}
	if size >= 0 && size-prefix < n {
		return nil, fmt.Errorf("npy: shape %v of %s needs %d bytes, the file holds %d", a.Shape, a.DType, n, max(size-prefix, 0))
	}
	if size < 0 && n > 1<<32 {
		return nil, fmt.Errorf("npy: shape %v is too large to read from a stream", a.Shape)
	}
	a.Data = make([]byte, n)
	if _, err := io.ReadFull(br, a.Data); err != nil {
		return nil, fmt.Errorf("npy: data truncated: want %d bytes", n)
	}
	return a, nil
}

// parseHeader reads the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
func parseHeader(h string) (*Array, error) {
	h = strings.TrimSpace(h)
	if !strings.HasPrefix(h, "{") || !strings.HasSuffix(h, "}") {
		return nil, errors.New("npy: malformed header")
	}
	fields := map[string]string{}
	body := h[1 : len(h)-1]
	for len(strings.TrimSpace(body)) > 0 {
		body = strings.TrimSpace(body)
		if len(body) == 0 || (body[0] != '\'' && body[0] != '"') {
			return nil, errors.New("npy: malformed header key")
		}
		q := body[0]
		end := strings.IndexByte(body[1:], q)
		if end < 0 {
			return nil, errors.New("npy: malformed header key")
		}
		key := body[1 : 1+end]
		body = strings.TrimSpace(body[2+end:])
		if !strings.HasPrefix(body, ":") {
			return nil, errors.New("npy: malformed header")
		}
		body = strings.TrimSpace(body[1:])
		var val string
		switch {
		case strings.HasPrefix(body, "("):
			end := strings.IndexByte(body, ')')
			if end < 0 {
				return nil, errors.New("npy: malformed shape")
			}
			val, body = body[:end+1], body[end+1:]
		case len(body) > 0 && (body[0] == '\'' || body[0] == '"'):
			end := strings.IndexByte(body[1:], body[0])
			if end < 0 {
				return nil, errors.New("npy: malformed header value")
			}
			val, body = body[1:1+end], body[2+end:]
		default:
			end := strings.IndexByte(body, ',')
			if end < 0 {
				end = len(body)
			}
			val, body = strings.TrimSpace(body[:end]), body[end:]
		}
		fields[key] = val
		body = strings.TrimSpace(body)
		body = strings.TrimPrefix(body, ",")
	}
	descr, ok := fields["descr"]
	if !ok {
		return nil, errors.New("npy: header has no descr")
	}
	dt, ok := descrs[descr]
	if !ok {
		return nil, fmt.Errorf("npy: unsupported element type %q", descr)
	}
	if fields["fortran_order"] != "False" {
		return nil, errors.New("npy: only C-ordered arrays are supported (fortran_order must be False)")
	}
	shapeText, ok := fields["shape"]
	if !ok {
		return nil, errors.New("npy: header has no shape")
	}
	shape := ir.Shape{}
	for _, p := range strings.Split(strings.Trim(shapeText, "()"), ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		d, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("npy: bad dimension %q", p)
		}
		shape = append(shape, d)
	}
	if err := shape.Validate(); err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	return &Array{DType: dt, Shape: shape}, nil
}

// Write writes a as a version 1.0 .npy file.
func Write(w io.Writer, a *Array) error {
	descr, err := descrOf(a.DType)
	if err != nil {
		return err
	}
	if int64(len(a.Data)) != a.Shape.Bytes(a.DType) {
		return fmt.Errorf("npy: %d data bytes for shape %v of %s", len(a.Data), a.Shape, a.DType)
	}
	var dims []string
	for _, d := range a.Shape {
		dims = append(dims, strconv.FormatInt(d, 10))
	}
	shape := "(" + strings.Join(dims, ", ")
	if len(dims) == 1 {
		shape += ","
	}
	shape += ")"
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	// Pad so the data starts on a 64-byte boundary, ending with a newline.
	total := len(magic) + 4 + len(hdr) + 1
	hdr += strings.Repeat(" ", (64-total%64)%64) + "\n"
	if len(hdr) > 0xffff {
		return errors.New("npy: header too long")
	}
	var buf bytes.Buffer
	buf.WriteString(magic)
	buf.Write([]byte{1, 0})
	binary.Write(&buf, binary.LittleEndian, uint16(len(hdr)))
	buf.WriteString(hdr)
	if _, err := w.Write(buf.Bytes()); err != nil {
		return err
	}
	_, err = w.Write(a.Data)
	return err
}

// WriteFile writes a to path.
func WriteFile(path string, a *Array) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, a); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
