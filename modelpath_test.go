package berth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModelPath: a folder stands for the model it holds.
func TestModelPath(t *testing.T) {
	cases := []struct {
		name  string
		files []string
		want  string // the file chosen, "." for the folder itself, or an error's text after "!"
	}{
		{"one onnx", []string{"model.onnx", "notes.txt"}, "model.onnx"},
		{"one gguf", []string{"tiny.gguf"}, "tiny.gguf"},
		{"gguf before onnx", []string{"tiny.gguf", "model.onnx"}, "tiny.gguf"},
		{"a checkpoint", []string{"model.safetensors", "config.json"}, "."},
		{"a sharded checkpoint", []string{"model.safetensors.index.json"}, "."},
		{"two gguf", []string{"a.gguf", "b.gguf"}, "!holds 2 .gguf files"},
		{"nothing", []string{"readme.md"}, "!holds no model"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range c.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := modelPath(dir)
			switch {
			case strings.HasPrefix(c.want, "!"):
				if err == nil || !strings.Contains(err.Error(), c.want[1:]) {
					t.Errorf("modelPath = %q, %v; want an error saying %q", got, err, c.want[1:])
				}
			case err != nil:
				t.Errorf("modelPath: %v", err)
			case c.want == "." && got != dir, c.want != "." && got != filepath.Join(dir, c.want):
				t.Errorf("modelPath = %q, want %s", got, c.want)
			}
		})
	}
	if got, err := modelPath("no/such/file.onnx"); got != "no/such/file.onnx" || err != nil {
		t.Errorf("a path that is no folder: %q, %v", got, err)
	}
}
