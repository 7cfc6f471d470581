package testenv

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
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

// Glob is the paths matching pattern, committed test data that must be
// there: none fails t, saying how makes them.
func Glob(t testing.TB, pattern, how string) []string {
	t.Helper()
	paths, _ := filepath.Glob(pattern)
	if len(paths) == 0 {
		t.Fatalf("nothing matches %s; %s", pattern, how)
	}
	return paths
}

// ConformanceDir is where Debian's libonnx-testdata installs ONNX's
// conformance suites.
const ConformanceDir = "/usr/share/libonnx-testdata/data"

// InstallConformance says how to get ConformanceDir.
const InstallConformance = "install it with `apt-get install libonnx-testdata`"

// ExpectedFailures reads a list of test cases expected to fail, one
// "case  reason" per line ("#" starts a comment line), into a map from
// case to reason.
func ExpectedFailures(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		m[name] = strings.TrimSpace(reason)
	}
	return m, sc.Err()
}
