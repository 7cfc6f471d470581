//go:build !linux

package driver

import (
	"errors"
	"runtime"
)

// errNoLibraries is why nothing loads here: the backend opens NVIDIA's
// libraries the Linux way only.
var errNoLibraries = errors.New("loading shared libraries is not supported on " + runtime.GOOS)

func openLibrary(string) (uintptr, error) { return 0, errNoLibraries }

func symbol(uintptr, string) (uintptr, error) { return 0, errNoLibraries }

// cCall is never reached: nothing loads, so there is no function to
// call. It returns CUDA_ERROR_UNKNOWN, a failed status in every library
// here.
func cCall(uintptr, ...uintptr) uintptr { return 999 }

// cCallDouble is never reached either.
func cCallDouble(uintptr, uintptr, uintptr, uintptr, float64) uintptr { return 999 }
