package cpu

import (
	"errors"
	"fmt"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
)

// Backend is the host CPU behind the backend contract, with the
// compiler's rewrites as Tuning sets them.
type Backend struct {
	Tuning Tuning
}

var _ backend.Device = Backend{}

// Name is "cpu".
func (Backend) Name() string { return "cpu" }

// Available is always nil: the CPU is always there.
func (Backend) Available() error { return nil }

// Caps: host memory, Alignment.
func (Backend) Caps() backend.Caps { return backend.Caps{Alignment: Alignment, Host: true} }

// NewWeights makes a store that remembers what kernels pack, for the
// plans of one model (WeightStore.Shared).
func (Backend) NewWeights(files [][]byte) backend.Weights { return &WeightStore{Shared: true} }

// Compile compiles g with the backend's tuning (see Compile).
func (b Backend) Compile(g *ir.Graph, o backend.Options) (backend.Executable, error) {
	opts := Options{Threads: o.Threads, FileOrder: o.FileOrder, NoInPlace: o.NoInPlace, Tuning: b.Tuning,
		Release: o.Release, Read: o.Read, Check: o.Check}
	var err error
	if opts.Weights, err = backend.Own[*WeightStore](o.Weights, "compile: weights"); err != nil {
		return nil, err
	}
	bound, err := backend.Own[*Executable](o.Bound, "compile: a bound")
	if err != nil {
		return nil, err
	}
	if bound != nil {
		opts.Bound = &Bound{Problem: bound.problem, Plan: bound.plan}
	}
	e, err := Compile(g, opts)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// NewLane makes a lane for the sessions of exes (see NewLane).
func (Backend) NewLane(exes []backend.Executable, from backend.Lane, keep int64) (backend.Lane, error) {
	return NewLane(exes, from, keep)
}

// A Lane is what sessions run on: workers and an arena buffer. Sessions of
// a model's plans for several shapes made on one lane share both and run
// one at a time. The lane owns the buffer: Close frees it.
type Lane struct {
	workers *Workers
	buf     *device.HostBuffer
	bytes   int64 // the arena's size, kept past Close
	closed  bool
}

// NewLane makes a lane for the sessions of every executable of exes (all
// compiled by this package): as many workers as the one with the most
// threads, an arena of the largest's size. Where from is not nil, the
// first keep bytes of its arena (the state, say) are copied into the new
// lane's.
func NewLane(exes []backend.Executable, from backend.Lane, keep int64) (*Lane, error) {
	if len(exes) == 0 {
		return nil, errors.New("new lane: no executables")
	}
	var threads int
	var bytes int64
	for _, x := range exes {
		e, err := backend.Own[*Executable](x, "new lane: an executable")
		if err != nil {
			return nil, err
		}
		threads, bytes = max(threads, e.threads), max(bytes, e.layout.Bytes)
	}
	buf, err := device.NewHostBuffer(bytes, Alignment)
	if err != nil {
		return nil, fmt.Errorf("new lane: %w", err)
	}
	f, err := backend.Own[*Lane](from, "new lane: a lane")
	if err == nil && f != nil && keep > 0 {
		switch {
		case f.closed:
			err = errors.New("new lane: the lane to keep bytes of is closed")
		case keep > f.Bytes() || keep > buf.Size():
			err = fmt.Errorf("new lane: %d bytes to keep, the arenas hold %d and %d", keep, f.Bytes(), buf.Size())
		default:
			copy(buf.Bytes()[:keep], f.buf.Bytes())
		}
	}
	if err != nil {
		buf.Free()
		return nil, err
	}
	return &Lane{workers: NewWorkers(threads), buf: buf, bytes: buf.Size()}, nil
}

// Bytes is the size of the lane's arena.
func (l *Lane) Bytes() int64 { return l.bytes }

// Close stops the lane's workers and frees its arena, whose bytes (the
// inputs and outputs of its sessions among them) must not be used
// afterwards. Its sessions are closed before: a session's Run fails
// once its lane is closed. Close may be called more than once.
func (l *Lane) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	l.workers.Close()
	return l.buf.Free()
}

// Close frees the executable's aligned copies of the weights (the packed
// region). Its sessions are closed before: a session's Run fails once
// its executable is closed. The kernels' packed weights are Go's memory,
// and the mapped file is its model's. Close may be called more than
// once.
func (e *Executable) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.packed.Free()
}

// Close releases nothing: the store's memory is Go's.
func (s *WeightStore) Close() error { return nil }

var _ backend.Executable = (*Executable)(nil)
