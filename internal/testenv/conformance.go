package testenv

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

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

// CheckListed fails t where the outcome of case c disagrees with the
// expected failures read from list: c failed (reason says why) and is not
// listed, or c passed and is.
func CheckListed(t testing.TB, expected map[string]string, list, c, reason string) {
	t.Helper()
	_, listed := expected[c]
	switch {
	case reason != "" && !listed:
		t.Errorf("fails and is not listed in %s: %s", list, reason)
	case reason == "" && listed:
		t.Errorf("passes now: remove it from %s (or run the root package's TestConformance with -update-conformance)", list)
	}
}

// Outcomes tallies conformance cases run as parallel subtests: which ran
// and which failed, and why.
type Outcomes struct {
	mu     sync.Mutex
	ran    map[string]bool
	failed map[string]string
}

// Record notes that case c ran and why it failed ("" when it passed).
func (o *Outcomes) Record(c, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ran == nil {
		o.ran, o.failed = map[string]bool{}, map[string]string{}
	}
	o.ran[c] = true
	if reason != "" {
		o.failed[c] = reason
	}
}

// Failures returns the cases that failed, each with why.
func (o *Outcomes) Failures() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed
}

// LogSummary logs, suite by suite and then for all of them, how many of
// the cases that ran passed.
func (o *Outcomes) LogSummary(t testing.TB) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	line := func(name string, passed, total int) {
		t.Helper()
		t.Logf("%-18s %4d/%4d passed (%.1f%%)", name, passed, total, 100*float64(passed)/float64(max(total, 1)))
	}
	all, ok := 0, 0
	for _, suite := range ConformanceSuites {
		n, p := 0, 0
		for c := range o.ran {
			if strings.HasPrefix(c, suite+"/") {
				n++
				if _, failed := o.failed[c]; !failed {
					p++
				}
			}
		}
		all, ok = all+n, ok+p
		line(suite, p, n)
	}
	line("all", ok, all)
}
