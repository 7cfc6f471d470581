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
// one at a time.
type Lane struct {
	workers *Workers
	buf     *device.HostBuffer
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
	if err != nil {
		return nil, err
	}
	if f != nil && keep > 0 {
		if keep > f.Bytes() || keep > buf.Size() {
			return nil, fmt.Errorf("new lane: %d bytes to keep, the arenas hold %d and %d", keep, f.Bytes(), buf.Size())
		}
		copy(buf.Bytes()[:keep], f.buf.Bytes())
	}
	return &Lane{workers: NewWorkers(threads), buf: buf}, nil
}

// Bytes is the size of the lane's arena.
func (l *Lane) Bytes() int64 { return l.buf.Size() }

// Close stops the lane's workers. Its sessions are closed before.
func (l *Lane) Close() error {
	if !l.closed {
		l.closed = true
		l.workers.Close()
	}
	return nil
}

// Close releases nothing: the executable's memory is Go's, and the mapped
// file is its model's.
func (e *Executable) Close() error { return nil }

// Close releases nothing: the store's memory is Go's.
func (s *WeightStore) Close() error { return nil }

var _ backend.Executable = (*Executable)(nil)
