package device

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// checkHugeAdvice checks that the memory mapping holding the size bytes
// at addr carries the huge-page advice ("hg" in its VmFlags).
func checkHugeAdvice(t *testing.T, addr uintptr, size int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(line, " hg") {
				t.Errorf("mapping of the buffer at %#x (%d bytes) lacks the huge-page advice: %s", addr, size, line)
			}
			return
		}
	}
	t.Errorf("no mapping holds %#x", addr)
}

// TestBackWithHugePagesGivesBackSlack checks that the pages of an
// allocation outside its buffer leave resident memory, as do the
// buffer's whole huge pages (to fault in whole), after the allocator
// touched them all zeroing them, and that the buffer still reads zero.
func TestBackWithHugePagesGivesBackSlack(t *testing.T) {
	page := int64(unix.Getpagesize())
	size := 2*int64(HugePageBytes) + 3*page + 100
	words := make([]uint64, (size+2*HugePageBytes)/8)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*8)
	for i := range raw {
		raw[i] = 0 // as the allocator zeroes reused memory
	}
	base := int64(uintptr(unsafe.Pointer(&raw[0])))
	skip := (HugePageBytes - base%HugePageBytes) % HugePageBytes
	backWithHugePages(raw, skip, size)
	resident := func(lo, hi int64) (n int) { // whole pages of raw[lo:hi]
		lo = (base+lo+page-1)/page*page - base
		hi = (base+hi)/page*page - base
		if lo >= hi {
			return 0
		}
		vec := make([]byte, (hi-lo)/page)
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&raw[lo])), uintptr(hi-lo), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			t.Skip("mincore:", errno)
		}
		for _, v := range vec {
			n += int(v & 1)
		}
		return n
	}
	if n := resident(0, skip); n > 0 {
		t.Errorf("%d pages before the buffer still resident", n)
	}
	if n := resident(skip+size, int64(len(raw))); n > 0 {
		t.Errorf("%d pages after the buffer still resident", n)
	}
	if n := resident(skip, skip+2*HugePageBytes); n > 0 {
		t.Errorf("%d pages of the buffer's huge pages still resident", n)
	}
	for i, v := range raw[skip : skip+size] {
		if v != 0 {
			t.Fatalf("byte %d of the buffer is %d after the advice, not zero", i, v)
		}
	}
	runtime.KeepAlive(words)
}
