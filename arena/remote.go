package arena

import (
	"fmt"

	"github.com/berth-ml/berth/ir"
)

// Memory is memory a host reaches only by copies (a GPU's).
type Memory interface {
	// Size is the memory's length in bytes.
	Size() int64
	// CopyOut copies len(dst) bytes at off into dst; CopyIn copies src
	// to off. Both are in range (the arena checks).
	CopyOut(dst []byte, off int64) error
	CopyIn(off int64, src []byte) error
}

// Remote is an arena in Memory: the contract's reads and writes go
// through copies of the bytes they touch.
type Remote struct {
	layout *Layout
	mem    Memory
}

var _ Arena = (*Remote)(nil)

// NewRemote lays l out in mem, which must hold l.Bytes.
func NewRemote(l *Layout, mem Memory) (*Remote, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	if mem.Size() < l.Bytes {
		return nil, fmt.Errorf("arena: the plan needs %d bytes, the memory holds %d", l.Bytes, mem.Size())
	}
	return &Remote{layout: l, mem: mem}, nil
}

// Has reports whether the tensor has a slot.
func (r *Remote) Has(id ir.TensorID) bool { return r.layout.has(id) }

// Offset is the tensor's byte offset, or -1 when it has no slot.
func (r *Remote) Offset(id ir.TensorID) int64 { return r.layout.offset(id) }

// Size is the arena's length in bytes.
func (r *Remote) Size() int64 { return r.mem.Size() }

// WriteF32 converts v to dt and writes it at the start of the tensor's
// slot, clamped to the slot (see Host.WriteF32).
func (r *Remote) WriteF32(id ir.TensorID, dt ir.DType, v []float32) error {
	return writeF32(r.layout, id, dt, v, r.mem.CopyIn)
}

// ReadF32 reads n values of type dt from the tensor's slot as float32,
// clamped to the slot (see Host.ReadF32).
func (r *Remote) ReadF32(id ir.TensorID, dt ir.DType, n int) ([]float32, error) {
	return readF32(r.layout, id, dt, n, r.mem.CopyOut)
}

// ReadBytes copies n bytes at off out of the arena.
func (r *Remote) ReadBytes(off, n int64) ([]byte, error) {
	if err := checkRange("read", off, n, r.Size()); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if err := r.mem.CopyOut(b, off); err != nil {
		return nil, err
	}
	return b, nil
}

// WriteBytes copies b into the arena at off.
func (r *Remote) WriteBytes(off int64, b []byte) error {
	if err := checkRange("write", off, int64(len(b)), r.Size()); err != nil {
		return err
	}
	return r.mem.CopyIn(off, b)
}
