//go:build !linux

package main

import "errors"

const maxCPU = 1024

var errUnsupported = errors.New("pinning threads to CPUs is implemented for Linux only")

func pin(int) error { return errUnsupported }

func allowedCPUs() ([]int, error) { return nil, errUnsupported }
