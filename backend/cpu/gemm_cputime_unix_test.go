//go:build unix

package cpu

import "syscall"

// cpuSeconds is the CPU time the process has used so far, user and system,
// or -1 where it cannot be read.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
