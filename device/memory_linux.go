package device

import "golang.org/x/sys/unix"

// HostMemory is the machine's physical memory in bytes, or 0 when unknown.
func HostMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
