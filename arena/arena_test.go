package arena

import (
	"fmt"
	"testing"

	"github.com/berth-ml/berth/device"
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

// sliceMemory is Memory in a byte slice, reached only by copies, as a
// device's is.
type sliceMemory []byte

func (m sliceMemory) Size() int64 { return int64(len(m)) }

func (m sliceMemory) CopyOut(dst []byte, off int64) error {
	copy(dst, m[off:])
	return nil
}

func (m sliceMemory) CopyIn(off int64, src []byte) error {
	copy(m[off:], src)
	return nil
}

// testArenas are one layout in host memory and in memory reached by
// copies: the contract must hold alike for both.
func testArenas(t *testing.T) map[string]Arena {
	t.Helper()
	l := &Layout{Slots: []Slot{{0, 16}, {64, 8}, {-1, -1}, {128, 64}}, Bytes: 192, Alignment: 64}
	h, err := NewHost(l)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRemote(l, make(sliceMemory, l.Bytes))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Arena{"host": h, "remote": r}
}

func TestTypedRoundTrip(t *testing.T) {
	for name, h := range testArenas(t) {
		t.Run(name, func(t *testing.T) { testTypedRoundTrip(t, h) })
	}
}

func testTypedRoundTrip(t *testing.T, h Arena) {
	v := []float32{1.5, -2.25, 3, 0.1}
	for _, tc := range []struct {
		dt   ir.DType
		want func(float32) float32
	}{
		{ir.Float32, func(x float32) float32 { return x }},
		{ir.Float16, func(x float32) float32 { return dtype.F32FromF16(dtype.F16FromF32(x)) }},
		{ir.BFloat16, func(x float32) float32 { return dtype.F32FromBF16(dtype.BF16FromF32(x)) }},
		{ir.Float64, func(x float32) float32 { return x }},
		{ir.Int32, func(x float32) float32 { return float32(int32(x)) }},
	} {
		if err := h.WriteF32(3, tc.dt, v); err != nil {
			t.Fatalf("%s: %v", tc.dt, err)
		}
		got, err := h.ReadF32(3, tc.dt, len(v))
		if err != nil {
			t.Fatalf("%s: %v", tc.dt, err)
		}
		for i := range v {
			if got[i] != tc.want(v[i]) {
				t.Errorf("%s: value %d read back as %v, want %v", tc.dt, i, got[i], tc.want(v[i]))
			}
		}
	}
}

func TestWritesClampToSlot(t *testing.T) {
	for name, h := range testArenas(t) {
		t.Run(name, func(t *testing.T) { testWritesClampToSlot(t, h) })
	}
}

func testWritesClampToSlot(t *testing.T, h Arena) {
	if err := h.WriteF32(1, ir.Float32, []float32{9, 9, 9, 9, 9}); err == nil {
		t.Error("oversized write reported no error")
	}
	all, err := h.ReadBytes(0, h.Size())
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range all {
		if (i < 64 || i >= 72) && b != 0 {
			t.Fatalf("byte %d = %d after a clamped write to [64,72)", i, b)
		}
	}
	if v, _ := h.ReadF32(1, ir.Float32, 2); v[0] != 9 || v[1] != 9 {
		t.Errorf("slot holds %v after the clamped write", v)
	}
	if _, err := h.ReadF32(1, ir.Float32, 3); err == nil {
		t.Error("read past the slot reported no error")
	}
	if err := h.WriteF32(2, ir.Float32, []float32{1}); err != ErrNoSlot {
		t.Errorf("write to a slotless tensor: %v", err)
	}
	if h.Has(2) || h.Has(7) || h.Offset(2) != -1 {
		t.Error("slotless tensors reported as present")
	}
}

func TestRawBounds(t *testing.T) {
	for name, h := range testArenas(t) {
		t.Run(name, func(t *testing.T) { testRawBounds(t, h) })
	}
}

func testRawBounds(t *testing.T, h Arena) {
	for _, tc := range []struct{ off, n int64 }{{-1, 1}, {190, 3}, {0, 193}, {5, -1}} {
		if _, err := h.ReadBytes(tc.off, tc.n); err == nil {
			t.Errorf("ReadBytes(%d, %d) succeeded", tc.off, tc.n)
		}
	}
	if err := h.WriteBytes(191, []byte{1, 2}); err == nil {
		t.Error("WriteBytes past the end succeeded")
	}
	if err := h.WriteBytes(10, []byte{1, 2}); err != nil {
		t.Fatal(err)
	}
	b, _ := h.ReadBytes(10, 2)
	if b[0] != 1 || b[1] != 2 {
		t.Errorf("read back %v", b)
	}
}

func TestNewArenaRejectsBadLayout(t *testing.T) {
	bad := &Layout{Slots: []Slot{{60, 8}}, Bytes: 64, Alignment: 64}
	if _, err := NewHost(bad); err == nil {
		t.Error("host: slot past the arena accepted")
	}
	if _, err := NewRemote(bad, make(sliceMemory, 64)); err == nil {
		t.Error("remote: slot past the arena accepted")
	}
	if _, err := NewRemote(&Layout{Bytes: 64, Alignment: 64}, make(sliceMemory, 32)); err == nil {
		t.Error("remote: memory smaller than the plan accepted")
	}
}

func ExampleHost() {
	layout := &Layout{Slots: []Slot{{Offset: 0, Size: 8}}, Bytes: 64, Alignment: 64}
	a, _ := NewHost(layout)
	_ = a.WriteF32(0, ir.Float16, []float32{1, 0.1, 3, 4})
	v, _ := a.ReadF32(0, ir.Float16, 4)
	fmt.Println(v)
	// Output: [1 0.099975586 3 4]
}

// TestHostClosed checks that an arena whose buffer is freed, its own
// (Close) or a shared one (its owner's Free), small (Go's memory) or
// large (a mapping), fails every read and write instead of touching the
// freed bytes, and that Close is idempotent.
func TestHostClosed(t *testing.T) {
	for _, bytes := range []int64{192, 4 << 20} {
		l := &Layout{Slots: []Slot{{0, 16}, {64, 8}, {-1, -1}, {bytes - 64, 64}}, Bytes: bytes, Alignment: 64}
		own, err := NewHost(l)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := device.NewHostBuffer(bytes, 64)
		if err != nil {
			t.Fatal(err)
		}
		shared, err := NewHostIn(l, buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := shared.Close(); err != nil || buf.Size() != bytes {
			t.Fatalf("closing an arena laid out in a shared buffer: %v, the buffer holds %d", err, buf.Size())
		}
		for name, tc := range map[string]struct {
			h    *Host
			free func() error
		}{"own": {own, own.Close}, "shared": {shared, buf.Free}} {
			h := tc.h
			if err := h.WriteF32(3, ir.Float32, []float32{1}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := tc.free(); err != nil {
					t.Errorf("%s, %d bytes: %v", name, bytes, err)
				}
			}
			if h.Size() != 0 || h.Bytes() != nil || h.Slot(3) != nil || h.Slot(0) != nil {
				t.Errorf("%s, %d bytes: a freed arena has %d bytes", name, bytes, h.Size())
			}
			if _, err := h.ReadF32(3, ir.Float32, 1); err == nil {
				t.Errorf("%s, %d bytes: ReadF32 of a freed arena succeeded", name, bytes)
			}
			if err := h.WriteF32(3, ir.Float32, []float32{1}); err == nil {
				t.Errorf("%s, %d bytes: WriteF32 to a freed arena succeeded", name, bytes)
			}
			if _, err := h.ReadBytes(0, 1); err == nil {
				t.Errorf("%s, %d bytes: ReadBytes of a freed arena succeeded", name, bytes)
			}
			if err := h.WriteBytes(0, []byte{1}); err == nil {
				t.Errorf("%s, %d bytes: WriteBytes to a freed arena succeeded", name, bytes)
			}
		}
	}
}
