package berth_test

import (
	"context"
	"errors"
	"testing"

	"github.com/berth-ml/berth"
)

// filled is a float32 vector of n copies of v.
func filled(t *testing.T, name string, n int, v float32) berth.Tensor {
	t.Helper()
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	tn, err := berth.NewTensor(name, []int64{int64(n)}, x)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

// TestOpenSessionFeedsOutputsBack feeds a session of a model with open
// shapes, room for one plan, a part of its last outputs as the inputs of
// a run of another shape: the plan that computed them is let go for the
// new one, and its arena (large enough to be a mapping of its own) must
// not be freed before the run has read them.
func TestOpenSessionFeedsOutputsBack(t *testing.T) {
	m := loadBytes(t, addModel.Bytes())
	_, s := newSession(t, m, berth.Options{Threads: 1, Plans: 1})
	ctx := context.Background()
	n := 1 << 19 // 2 MiB a tensor
	outs, err := s.Run(ctx, filled(t, "a", n, 1), filled(t, "b", n, 1))
	if err != nil {
		t.Fatal(err)
	}
	want := float32(2)
	for range 4 {
		n /= 2
		y := outs[0]
		in := berth.Tensor{Name: "a", DType: y.DType, Shape: []int64{int64(n)}, Data: y.Data[:4*n]}
		in2 := in
		in2.Name = "b"
		if outs, err = s.Run(ctx, in, in2); err != nil {
			t.Fatal(err)
		}
		want *= 2
		v, err := outs[0].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(v) != n || v[0] != want || v[n-1] != want {
			t.Fatalf("%d values, first %v, last %v; want %d of %v", len(v), v[0], v[len(v)-1], n, want)
		}
	}
	if s.Plans() != 1 {
		t.Errorf("the session keeps %d plans", s.Plans())
	}
}

// TestClosedSessionFails checks that a closed session, whose arena Close
// frees, fails to run, has no input buffers, and that its arena fails to
// read, rather than touch freed memory.
func TestClosedSessionFails(t *testing.T) {
	m := loadBytes(t, addModel.Bytes())
	n := 1 << 19
	exe, err := berth.Compile(m, berth.CPU, berth.Options{Threads: 1, Dims: map[string]int64{"n": int64(n)}})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	s, err := exe.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Run(ctx, filled(t, "a", n, 1), filled(t, "b", n, 2)); err != nil {
		t.Fatal(err)
	}
	a := s.Arena()
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Run(ctx, filled(t, "a", n, 1), filled(t, "b", n, 2)); !errors.Is(err, berth.ErrClosed) {
		t.Errorf("Run of a closed session: %v", err)
	}
	if b := s.InputBuffers(); b != nil {
		t.Errorf("a closed session has %d input buffers", len(b))
	}
	if _, err := a.ReadBytes(0, 4); err == nil {
		t.Error("the arena of a closed session reads")
	}
}
