package device

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestHostBufferAlignment(t *testing.T) {
	for _, tc := range []struct{ size, align int64 }{
		{0, 64}, {1, 64}, {63, 64}, {4096, 64}, {100, 256}, {7, 8},
		{MapThreshold - 1, 64}, {MapThreshold, 8}, {MapThreshold + 1, 64},
		{MapThreshold + 3, 4096}, {MapThreshold, HugePageBytes},
		{HugePageBytes + 5, 8}, {HugePageBytes, 4096}, {3*HugePageBytes + 100, HugePageBytes},
		{3 * HugePageBytes, 2 * HugePageBytes}, {5000, HugePageBytes},
	} {
		h, err := NewHostBuffer(tc.size, tc.align)
		if err != nil {
			t.Fatalf("NewHostBuffer(%d, %d): %v", tc.size, tc.align, err)
		}
		b := h.Bytes()
		if h.Size() != tc.size || int64(len(b)) != tc.size {
			t.Errorf("NewHostBuffer(%d, %d): size %d, len %d", tc.size, tc.align, h.Size(), len(b))
		}
		if b == nil {
			t.Errorf("NewHostBuffer(%d, %d): Bytes is nil", tc.size, tc.align)
		}
		if tc.size > 0 && uintptr(unsafe.Pointer(&b[0]))%uintptr(tc.align) != 0 {
			t.Errorf("buffer of %d bytes not aligned to %d", tc.size, tc.align)
		}
		if cap(b) != int(tc.size) {
			t.Errorf("cap %d lets writes run past the buffer", cap(b))
		}
		if want := canMap && tc.size >= MapThreshold; h.mapped() != want {
			t.Errorf("NewHostBuffer(%d, %d): mapped %v, want %v", tc.size, tc.align, h.mapped(), want)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("NewHostBuffer(%d, %d): byte %d is %d, not zero", tc.size, tc.align, i, b[i])
			}
			b[i] = byte(i)
		}
		if err := h.Free(); err != nil {
			t.Errorf("Free of %d bytes: %v", tc.size, err)
		}
		if h.Bytes() != nil || h.Size() != 0 {
			t.Errorf("after Free of %d bytes: Bytes has %d, Size %d", tc.size, len(h.Bytes()), h.Size())
		}
		if err := h.Free(); err != nil {
			t.Errorf("second Free of %d bytes: %v", tc.size, err)
		}
	}
}

func TestHeapBuffer(t *testing.T) {
	for _, size := range []int64{0, 100, MapThreshold, HugePageBytes + 3} {
		h, err := NewHeapBuffer(size, 64)
		if err != nil {
			t.Fatal(err)
		}
		b := h.Bytes()
		if h.mapped() || int64(len(b)) != size || cap(b) != len(b) || b == nil {
			t.Fatalf("NewHeapBuffer(%d): mapped %v, len %d, cap %d", size, h.mapped(), len(b), cap(b))
		}
		if size > 0 && uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
			t.Errorf("heap buffer of %d bytes not aligned", size)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("byte %d of %d is %d", i, size, b[i])
			}
		}
		if err := h.Free(); err != nil || h.Bytes() != nil {
			t.Errorf("Free of a heap buffer of %d bytes: %v, %d bytes left", size, err, len(h.Bytes()))
		}
	}
	if _, err := NewHeapBuffer(10, 12); err == nil {
		t.Error("NewHeapBuffer took alignment 12")
	}
}

func TestHostBufferFreeNil(t *testing.T) {
	var h *HostBuffer
	if err := h.Free(); err != nil {
		t.Errorf("Free of nil: %v", err)
	}
}

func TestHostBufferRejects(t *testing.T) {
	for _, tc := range []struct{ size, align int64 }{
		{-1, 64}, {10, 3}, {10, 4}, {MaxHostBytes + 1, 64}, {MapThreshold, 0},
	} {
		if _, err := NewHostBuffer(tc.size, tc.align); err == nil {
			t.Errorf("NewHostBuffer(%d, %d) succeeded", tc.size, tc.align)
		}
	}
}

func TestHostBufferHugePages(t *testing.T) {
	for _, size := range []int64{HugePageBytes - 1, HugePageBytes, 3*HugePageBytes + 100} {
		h, err := NewHostBuffer(size, 64)
		if err != nil {
			t.Fatal(err)
		}
		b := h.Bytes()
		if int64(len(b)) != size || int64(cap(b)) != size {
			t.Fatalf("len %d cap %d, want %d", len(b), cap(b), size)
		}
		for i := range b {
			if b[i] != 0 {
				t.Fatalf("byte %d of %d is %d, not zero", i, size, b[i])
			}
			b[i] = byte(i)
		}
		addr := uintptr(unsafe.Pointer(&b[0]))
		huge := size >= HugePageBytes && hugePagesOffered()
		if got := addr%HugePageBytes == 0; huge && !got {
			t.Errorf("buffer of %d bytes at %#x not on a huge page boundary", size, addr)
		}
		if huge {
			checkHugeAdvice(t, addr, size)
		}
		if err := h.Free(); err != nil {
			t.Fatal(err)
		}
	}
}

// vmRSS is the process's resident memory in bytes, from
// /proc/self/status; the test is skipped where that is absent.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS: %v", err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS in /proc/self/status")
	return 0
}

// TestHostBufferLargeCostsWhatItTouches allocates and frees a buffer of
// 4 GiB three times: each takes no time and no resident memory but the
// pages written, and Free gives those back at once. (On Go's heap the
// third took seconds and gigabytes.)
func TestHostBufferLargeCostsWhatItTouches(t *testing.T) {
	if !canMap {
		t.Skip("no anonymous mappings on this system")
	}
	const size, touched = 4 << 30, 64 << 20
	before := vmRSS(t)
	var mapped, written, freed int64 // the most resident memory rose by
	start := time.Now()
	for range 3 {
		h, err := NewHostBuffer(size, HugePageBytes)
		if err != nil {
			t.Skipf("no room to map 4 GiB: %v", err)
		}
		b := h.Bytes()
		if b[0] != 0 || b[size/2] != 0 || b[size-1] != 0 {
			t.Fatal("a mapped buffer does not read zero")
		}
		grew := vmRSS(t) - before
		if mapped = max(mapped, grew); grew > 32<<20 {
			t.Errorf("mapping 4 GiB and reading three bytes raised resident memory by %d bytes", grew)
		}
		for i := 0; i < touched; i += 4096 {
			b[i] = 1
		}
		grew = vmRSS(t) - before
		if written = max(written, grew); grew < touched/2 {
			t.Errorf("writing %d bytes raised resident memory by only %d", touched, grew)
		}
		if err := h.Free(); err != nil {
			t.Fatal(err)
		}
		grew = vmRSS(t) - before
		if freed = max(freed, grew); grew > 32<<20 {
			t.Errorf("after Free, resident memory is still %d bytes above where it started", grew)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("three buffers of 4 GiB took %v", d)
	}
	t.Logf("3 × 4 GiB mapped, %d MiB of each written, and freed in %v; resident memory rose by at most %d KiB mapped, %d KiB written, %d KiB freed",
		touched>>20, time.Since(start), mapped>>10, written>>10, freed>>10)
}

// TestHostBufferMapFails checks that a mapping the system refuses is an
// error, not a crash.
func TestHostBufferMapFails(t *testing.T) {
	if !canMap {
		t.Skip("no anonymous mappings on this system")
	}
	h, err := NewHostBuffer(MaxHostBytes, 64)
	if err == nil {
		h.Free()
		t.Skip("the system maps 1 TiB")
	}
	if !strings.Contains(err.Error(), "host buffer") || errors.Unwrap(err) == nil {
		t.Errorf("error %q", err)
	}
}
