package llmtest

import (
	"os"
	"testing"
)

// Each runs check as a subtest on every model of format ("gguf",
// "safetensors") in the committed fixtures' manifest and, where the
// environment variable EnvLarge names a folder, in that folder's. A
// manifest without one such model fails t.
func Each(t *testing.T, format string, check func(t *testing.T, path string, m *Model)) {
	t.Helper()
	dirs := []string{Dir()}
	if d := os.Getenv(EnvLarge); d != "" {
		dirs = append(dirs, d)
	}
	n := 0
	for _, dir := range dirs {
		m, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, model := range m.Models {
			if model.Format != format {
				continue
			}
			n++
			t.Run(model.Name, func(t *testing.T) { check(t, m.Path(model), model) })
		}
	}
	if n == 0 {
		t.Fatalf("no %s models in the manifest", format)
	}
}
