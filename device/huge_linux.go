package device

import (
	"bytes"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// backWithHugePages asks the kernel to back the size bytes at raw[skip:],
// which start on a huge page boundary, with huge pages: MADV_HUGEPAGE,
// then MADV_DONTNEED to drop any small pages the allocator already
// touched (it zeroes reused memory), so that every page faults in whole
// when first written and reads as zero until then. Only whole huge pages
// are advised, so the buffer's tail keeps small pages and no huge page
// holds bytes outside it. The slack of raw before and after the buffer,
// whole small pages of it, is given back with MADV_DONTNEED too (nothing
// reads it). Every call is advice: where one fails the buffer keeps the
// pages it has, still zero.
func backWithHugePages(raw []byte, skip, size int64) {
	if b := raw[skip : skip+size]; adviseHugePages(b) {
		_ = unix.Madvise(b[:len(b)/HugePageBytes*HugePageBytes], unix.MADV_DONTNEED)
	}
	page := int64(unix.Getpagesize())
	base := int64(uintptr(unsafe.Pointer(&raw[0])))
	giveBack := func(lo, hi int64) { // offsets in raw
		lo = (base+lo+page-1)/page*page - base
		hi = (base+hi)/page*page - base
		if lo < hi {
			_ = unix.Madvise(raw[lo:hi], unix.MADV_DONTNEED)
		}
	}
	giveBack(0, skip)
	giveBack(skip+size, int64(len(raw)))
}

// adviseHugePages asks the kernel to back the whole huge pages of b,
// which starts on a huge page boundary, with huge pages as they are
// first touched (MADV_HUGEPAGE), and reports whether it took the advice.
// The tail of b short of a huge page keeps small pages.
func adviseHugePages(b []byte) bool {
	whole := len(b) / HugePageBytes * HugePageBytes
	return whole > 0 && unix.Madvise(b[:whole], unix.MADV_HUGEPAGE) == nil
}

// hugePagesOffered reports whether the kernel backs advised memory with
// huge pages of HugePageBytes: transparent huge pages not set to
// "never", on 4 KiB base pages (with larger ones the huge pages are
// larger too).
var hugePagesOffered = sync.OnceValue(func() bool {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && !bytes.Contains(mode, []byte("[never]")) && unix.Getpagesize() == 4096
})
