//go:build !linux

package device

import "testing"

func checkHugeAdvice(t *testing.T, addr uintptr, size int64) {}
