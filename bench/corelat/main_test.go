package main

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
)

func TestPair(t *testing.T) {
	cases := []struct {
		in   string
		a, b int
		ok   bool
	}{
		{"0,1", 0, 1, true},
		{" 3 , 2 ", 3, 2, true},
		{"1", 0, 0, false},
		{"0,1,2", 0, 0, false},
		{"0,0", 0, 0, false},
		{"-1,2", 0, 0, false},
		{"0,x", 0, 0, false},
		{"0,99999", 0, 0, false},
	}
	for _, c := range cases {
		a, b, err := pair(c.in)
		if (err == nil) != c.ok || (c.ok && (a != c.a || b != c.b)) {
			t.Errorf("pair(%q) = %d, %d, %v; want %d, %d, ok %v", c.in, a, b, err, c.a, c.b, c.ok)
		}
	}
}

// testPair is two CPUs to measure between, or skips the test where
// there are none or pinning is not implemented.
func testPair(t *testing.T) (a, b int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("pinning is implemented for Linux only")
	}
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	if len(cpus) < 2 {
		t.Skip("one CPU only")
	}
	return cpus[0], cpus[1]
}

// checkPinned skips the test where the system refuses to pin threads and
// fails it on any other error.
func checkPinned(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
		t.Skipf("the system refuses to pin threads here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestRoundTrip(t *testing.T) {
	a, b := testPair(t)
	d, err := roundTrip(a, b, 1000)
	checkPinned(t, err)
	if d <= 0 {
		t.Fatalf("round trip %v, want > 0", d)
	}
}

func TestTransfer(t *testing.T) {
	a, b := testPair(t)
	remote, local, err := transfer(a, b, 1<<16, 3)
	checkPinned(t, err)
	if remote <= 0 || local <= 0 {
		t.Fatalf("reads took %v and %v, want > 0", remote, local)
	}
}
