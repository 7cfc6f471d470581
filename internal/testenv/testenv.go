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

// ConformanceDir is where Debian's libonnx-testdata installs ONNX's
// conformance suites.
const ConformanceDir = "/usr/share/libonnx-testdata/data"

// InstallConformance says how to get ConformanceDir.
const InstallConformance = "install it with `apt-get install libonnx-testdata`"

// ConformanceSuites are the suites of ConformanceDir that the conformance
// tests run.
var ConformanceSuites = []string{"node", "pytorch-converted", "pytorch-operator", "simple"}

// ConformanceCases lists the cases of ConformanceSuites, suite by suite,
// as "suite/case"; it skips or fails t as Require does when
// ConformanceDir is missing, and fails t when it holds no cases.
func ConformanceCases(t testing.TB) []string {
	t.Helper()
	Require(t, ConformanceDir, InstallConformance)
	var cases []string
	for _, suite := range ConformanceSuites {
		dirs, _ := filepath.Glob(filepath.Join(ConformanceDir, suite, "*", "model.onnx"))
		for _, d := range dirs {
			cases = append(cases, suite+"/"+filepath.Base(filepath.Dir(d)))
		}
	}
	if len(cases) == 0 {
		t.Fatalf("no conformance cases under %s", ConformanceDir)
	}
	return cases
}

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
