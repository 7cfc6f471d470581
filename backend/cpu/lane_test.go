package cpu

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/berth-ml/berth/backend"
	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/ir"
)

// TestClosedLaneAndExecutable checks that a lane frees its arena and an
// executable its aligned copies of the weights at Close, both of them
// large enough to be mappings of their own, and that whatever would read
// them afterwards fails with an error instead of faulting: a session's
// Run, a new session, a lane keeping bytes of a closed one, the arena's
// reads and writes.
func TestClosedLaneAndExecutable(t *testing.T) {
	const n = device.MapThreshold / 4 * 2 // floats: 2 MiB an activation
	tg := newTGraph(17)
	x := tg.input("x", ir.Float32, n)
	cv := randF32(n)
	buf := make([]byte, 4*n+1)
	c := tg.constant("c", ir.Float32, buf[1:1+4*n], n) // misaligned: copied
	copy(buf[1:], f32Bytes(cv))
	tg.node("Add", nil, []ir.TensorID{x, c}, out{ir.Float32, []int64{n}})
	tg.g.Outputs = []ir.TensorID{tg.g.Nodes[0].Outputs[0]}
	e, err := Compile(tg.g, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if e.PackedWeightBytes() != 4*n || e.packed.Size() < device.MapThreshold {
		t.Fatalf("%d bytes of weights copied, want %d", e.PackedWeightBytes(), 4*n)
	}
	ctx := context.Background()
	run := func(s backend.Session) error {
		xv := randF32(n)
		copy(s.Inputs()[0], f32Bytes(xv))
		if err := s.Run(ctx, nil); err != nil {
			return err
		}
		y := asF32(s.Outputs()[0])
		for i := range y {
			if y[i] != xv[i]+cv[i] {
				t.Fatalf("y[%d] = %v, want %v", i, y[i], xv[i]+cv[i])
			}
		}
		return nil
	}

	// A session on a lane of its own frees it at Close.
	s, err := e.NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(s); err != nil {
		t.Fatal(err)
	}
	a := s.Arena()
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run of a closed session: %v", err)
	}
	if _, err := a.ReadBytes(0, 4); err == nil || a.Size() != 0 {
		t.Errorf("the arena of a closed session reads (%d bytes)", a.Size())
	}

	// Sessions sharing a lane: closing the lane frees it under them.
	lane, err := NewLane([]backend.Executable{e}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	bytes := lane.Bytes()
	s1, err := e.NewSession(lane)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := e.NewSession(lane)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(s1); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run(s1); err != nil {
		t.Fatalf("a session on a lane that another session closed on: %v", err)
	}
	kept, err := NewLane([]backend.Executable{e}, lane, bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kept.buf.Bytes(), lane.buf.Bytes()) {
		t.Error("a new lane did not keep the bytes of the old")
	}
	if err := kept.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := lane.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if lane.Bytes() != bytes {
		t.Errorf("a closed lane's Bytes is %d, was %d", lane.Bytes(), bytes)
	}
	if err := s1.Run(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run on a closed lane: %v", err)
	}
	if _, err := e.NewSession(lane); err == nil {
		t.Error("a new session on a closed lane")
	}
	if _, err := NewLane([]backend.Executable{e}, lane, 16); err == nil {
		t.Error("a new lane kept the bytes of a closed one")
	}
	s1.Close()

	// An executable's Close frees its aligned weights under its sessions.
	s3, err := e.NewSession(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	for range 2 {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if e.packed.Bytes() != nil {
		t.Error("Close left the executable's aligned weights")
	}
	if err := s3.Run(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Run of a closed executable: %v", err)
	}
	if _, err := e.NewSession(nil); err == nil {
		t.Error("a new session of a closed executable")
	}
}
