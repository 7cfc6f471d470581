package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// pin keeps the calling thread on one CPU.
func pin(cpu int) error {
	var s unix.CPUSet
	s.Set(cpu)
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		return fmt.Errorf("cannot run on cpu %d: %w", cpu, err)
	}
	return nil
}

// allowedCPUs lists the CPUs this process may run on, lowest first.
func allowedCPUs() ([]int, error) {
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return nil, fmt.Errorf("reading this process's CPU affinity: %w", err)
	}
	var cpus []int
	for c := range maxCPU {
		if s.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
