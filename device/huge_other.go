//go:build !linux

package device

// backWithHugePages does nothing where huge pages are not offered this
// way; the buffer keeps small pages.
func backWithHugePages(raw []byte, skip, size int64) {}

// adviseHugePages does nothing either.
func adviseHugePages(b []byte) bool { return false }

// hugePagesOffered is false: NewHostBuffer keeps its plain alignment.
func hugePagesOffered() bool { return false }
