//go:build !unix

package cpu

// cpuSeconds reports that this platform's process CPU time is not read.
func cpuSeconds() float64 { return -1 }
