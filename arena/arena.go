package arena

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/ir"
)

// Slot is a tensor's place in the arena.
type Slot struct {
	Offset int64
	Size   int64 // true byte length; the slot may be padded past it
}

// Layout maps tensor IDs to slots. A negative Size marks a tensor that has
// no slot (a weight, or a tensor the plan left out).
type Layout struct {
	Slots     []Slot
	Bytes     int64
	Alignment int64
}

// Arena is the contract every device's arena implements.
type Arena interface {
	Offset(id ir.TensorID) int64
	Has(id ir.TensorID) bool
	Size() int64
	WriteF32(id ir.TensorID, dt ir.DType, v []float32) error
	ReadF32(id ir.TensorID, dt ir.DType, n int) ([]float32, error)
	ReadBytes(off, n int64) ([]byte, error)
	WriteBytes(off int64, b []byte) error
}

// Host is an arena in host memory. Once its buffer is freed (Close, or
// the owner of a shared buffer freeing it) the arena holds nothing: reads
// and writes fail and Slot and Bytes are nil.
type Host struct {
	layout *Layout
	buf    *device.HostBuffer
	own    bool // buf is the arena's own (NewHost), freed by Close
}

var _ Arena = (*Host)(nil)

// NewHost allocates an arena of l.Bytes bytes aligned to l.Alignment; Close
// frees it.
func NewHost(l *Layout) (*Host, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	buf, err := device.NewHostBuffer(l.Bytes, max(l.Alignment, 8))
	if err != nil {
		return nil, fmt.Errorf("arena: %w", err)
	}
	return &Host{layout: l, buf: buf, own: true}, nil
}

// NewHostIn lays l out in buf, which other arenas may share: an arena per
// plan of one session whose runs take turns, all in one buffer sized for
// the largest. buf must hold l.Bytes and be aligned as l asks. The
// buffer stays its owner's to free.
func NewHostIn(l *Layout, buf *device.HostBuffer) (*Host, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if buf.Size() < l.Bytes {
		return nil, fmt.Errorf("arena: the plan needs %d bytes, the buffer holds %d", l.Bytes, buf.Size())
	}
	return &Host{layout: l, buf: buf}, nil
}

// check refuses slots outside the arena.
func (l *Layout) check() error {
	for i, s := range l.Slots {
		if s.Size >= 0 && (s.Offset < 0 || s.Offset > l.Bytes-s.Size) {
			return fmt.Errorf("arena: slot of tensor %d [%d,+%d) outside the arena of %d bytes", i, s.Offset, s.Size, l.Bytes)
		}
	}
	return nil
}

// Close frees the arena's buffer where the arena made it (NewHost); the
// bytes of its slots must not be used afterwards. A buffer the arena was
// laid out in (NewHostIn) is left to its owner. Close may be called more
// than once.
func (h *Host) Close() error {
	if h.own {
		return h.buf.Free()
	}
	return nil
}

// Has reports whether the tensor has a slot.
func (h *Host) Has(id ir.TensorID) bool { return h.layout.has(id) }

// Offset is the tensor's byte offset, or -1 when it has no slot.
func (h *Host) Offset(id ir.TensorID) int64 { return h.layout.offset(id) }

// Size is the arena's length in bytes.
func (h *Host) Size() int64 { return h.buf.Size() }

// Bytes is the whole arena.
func (h *Host) Bytes() []byte { return h.buf.Bytes() }

// Slot returns the bytes of a tensor's slot (its true size), or nil when
// the tensor has no slot or the buffer is freed. The slice's capacity
// ends with the slot.
func (h *Host) Slot(id ir.TensorID) []byte {
	b := h.buf.Bytes()
	if !h.Has(id) || int64(len(b)) < h.layout.Bytes {
		return nil
	}
	s := h.layout.Slots[id]
	return b[s.Offset : s.Offset+s.Size : s.Offset+s.Size]
}

// ErrNoSlot is returned for a tensor that has no slot in the arena.
var ErrNoSlot = errors.New("arena: tensor has no slot")

// WriteF32 converts v to dt and writes it at the start of the tensor's slot.
// Values that do not fit the slot are dropped (the write is clamped) and
// reported as an error.
func (h *Host) WriteF32(id ir.TensorID, dt ir.DType, v []float32) error {
	return writeF32(h.layout, id, dt, v, h.WriteBytes)
}

// ReadF32 reads n values of type dt from the tensor's slot as float32. A
// read past the slot is clamped and reported as an error.
func (h *Host) ReadF32(id ir.TensorID, dt ir.DType, n int) ([]float32, error) {
	return readF32(h.layout, id, dt, n, func(dst []byte, off int64) error {
		if err := checkRange("read", off, int64(len(dst)), h.Size()); err != nil {
			return err
		}
		copy(dst, h.buf.Bytes()[off:])
		return nil
	})
}

// ReadBytes copies n bytes at off out of the arena.
func (h *Host) ReadBytes(off, n int64) ([]byte, error) {
	if err := checkRange("read", off, n, h.Size()); err != nil {
		return nil, err
	}
	return append([]byte(nil), h.buf.Bytes()[off:off+n]...), nil
}

// WriteBytes copies b into the arena at off.
func (h *Host) WriteBytes(off int64, b []byte) error {
	if err := checkRange("write", off, int64(len(b)), h.Size()); err != nil {
		return err
	}
	copy(h.buf.Bytes()[off:], b)
	return nil
}

// has reports whether the tensor has a slot.
func (l *Layout) has(id ir.TensorID) bool {
	return id >= 0 && int(id) < len(l.Slots) && l.Slots[id].Size >= 0
}

// offset is the tensor's byte offset, or -1 when it has no slot.
func (l *Layout) offset(id ir.TensorID) int64 {
	if !l.has(id) {
		return -1
	}
	return l.Slots[id].Offset
}

// checkRange refuses a read or write of n bytes at off outside an arena
// of size bytes.
func checkRange(what string, off, n, size int64) error {
	if off < 0 || n < 0 || off > size-n {
		return fmt.Errorf("arena: %s of %d bytes at %d outside the arena of %d", what, n, off, size)
	}
	return nil
}

// writeF32 converts v to dt and writes it with put at the start of the
// tensor's slot in l, clamped to the slot.
func writeF32(l *Layout, id ir.TensorID, dt ir.DType, v []float32, put func(off int64, b []byte) error) error {
	if !l.has(id) {
		return ErrNoSlot
	}
	size := dt.Size()
	if size == 0 {
		return fmt.Errorf("arena: cannot write type %s", dt)
	}
	s := l.Slots[id]
	n := min(len(v), int(s.Size)/size)
	b := make([]byte, n*size)
	if err := EncodeF32(b, dt, v[:n]); err != nil {
		return err
	}
	if err := put(s.Offset, b); err != nil {
		return err
	}
	if n < len(v) {
		return fmt.Errorf("arena: %d values do not fit the %d-byte slot of tensor %d; wrote %d", len(v), s.Size, id, n)
	}
	return nil
}

// readF32 reads n values of type dt with get from the tensor's slot in l
// as float32, clamped to the slot.
func readF32(l *Layout, id ir.TensorID, dt ir.DType, n int, get func(dst []byte, off int64) error) ([]float32, error) {
	if !l.has(id) {
		return nil, ErrNoSlot
	}
	size := dt.Size()
	if size == 0 {
		return nil, fmt.Errorf("arena: cannot read type %s", dt)
	}
	s := l.Slots[id]
	m := min(n, int(s.Size)/size)
	b := make([]byte, m*size)
	if err := get(b, s.Offset); err != nil {
		return nil, err
	}
	out := make([]float32, m)
	if err := DecodeF32(out, dt, b); err != nil {
		return nil, err
	}
	if m < n {
		return out, fmt.Errorf("arena: tensor %d holds %d values, not %d", id, m, n)
	}
	return out, nil
}

// EncodeF32 converts src into dst, which holds len(src) elements of dt.
func EncodeF32(dst []byte, dt ir.DType, src []float32) error {
	switch dt {
	case ir.Float32:
		copy(raw.F32(dst), src)
	case ir.Float16:
		dtype.F16sFromF32s(raw.U16(dst), src)
	case ir.BFloat16:
		dtype.BF16sFromF32s(raw.U16(dst), src)
	case ir.Float64:
		d := raw.F64(dst)
		for i, v := range src {
			d[i] = float64(v)
		}
	case ir.Int64:
		d := raw.I64(dst)
		for i, v := range src {
			d[i] = int64(v)
		}
	case ir.Int32:
		d := raw.I32(dst)
		for i, v := range src {
			d[i] = int32(v)
		}
	case ir.Int8:
		for i, v := range src {
			dst[i] = byte(int8(v))
		}
	case ir.Uint8:
		for i, v := range src {
			dst[i] = uint8(v)
		}
	case ir.Bool:
		for i, v := range src {
			dst[i] = 0
			if v != 0 {
				dst[i] = 1
			}
		}
	default:
		return fmt.Errorf("arena: no float32 conversion to %s", dt)
	}
	return nil
}

// DecodeF32 converts src, holding len(dst) elements of dt, into dst.
func DecodeF32(dst []float32, dt ir.DType, src []byte) error {
	switch dt {
	case ir.Float32:
		copy(dst, raw.F32(src))
	case ir.Float16:
		dtype.F32sFromF16s(dst, raw.U16(src))
	case ir.BFloat16:
		dtype.F32sFromBF16s(dst, raw.U16(src))
	case ir.Float64:
		for i, v := range raw.F64(src)[:len(dst)] {
			dst[i] = float32(v)
		}
	case ir.Int64:
		for i, v := range raw.I64(src)[:len(dst)] {
			dst[i] = float32(v)
		}
	case ir.Int32:
		for i, v := range raw.I32(src)[:len(dst)] {
			dst[i] = float32(v)
		}
	case ir.Int8:
		for i := range dst {
			dst[i] = float32(int8(src[i]))
		}
	case ir.Uint8, ir.Bool:
		for i := range dst {
			dst[i] = float32(src[i])
		}
	default:
		return fmt.Errorf("arena: no float32 conversion from %s", dt)
	}
	return nil
}
