//go:build !linux

package main

import "errors"

var errUnsupported = errors.New("pinning threads to CPUs is implemented for Linux only")

func pin(int) error { return errUnsupported }

func allowedCPUs() ([]int, error) { return nil, errUnsupported }
