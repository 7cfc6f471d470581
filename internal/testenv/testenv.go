package testenv

import (
	"os"
	"testing"
)

// Require skips t, or fails it under BERTH_REQUIRE_TESTDATA=1, when path
// does not exist. how says how to get the data.
func Require(t testing.TB, path, how string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv("BERTH_REQUIRE_TESTDATA") == "1" {
		t.Fatalf("missing test data %s: %s", path, how)
	}
	t.Skipf("missing test data %s: %s", path, how)
}

// ConformanceDir is where Debian's libonnx-testdata installs ONNX's
// conformance suites.
const ConformanceDir = "/usr/share/libonnx-testdata/data"

// InstallConformance says how to get ConformanceDir.
const InstallConformance = "install it with `apt-get install libonnx-testdata`"
