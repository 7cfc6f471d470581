package device

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMapFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte{42}},
		{"text", []byte("hello, berth")},
		{"several pages", bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			m, err := MapFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if m.Bytes() == nil {
				t.Fatal("Bytes() is nil before Close")
			}
			if !bytes.Equal(m.Bytes(), tt.data) {
				t.Errorf("Bytes() differs from the file")
			}
			if m.Size() != int64(len(tt.data)) {
				t.Errorf("Size() = %d, want %d", m.Size(), len(tt.data))
			}
			if m.Path() != path {
				t.Errorf("Path() = %q, want %q", m.Path(), path)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if m.Bytes() != nil || m.Size() != 0 {
				t.Errorf("after Close: Bytes() has %d bytes, Size() = %d", len(m.Bytes()), m.Size())
			}
			if err := m.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestMapFileErrors(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing"), dir} {
		if m, err := MapFile(path); err == nil {
			m.Close()
			t.Errorf("MapFile(%q) succeeded, want an error", path)
		}
	}
}

func ExampleMapFile() {
	dir, err := os.MkdirTemp("", "berth")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "weights.bin")
	if err := os.WriteFile(path, []byte{1, 2, 3, 4}, 0o644); err != nil {
		panic(err)
	}

	m, err := MapFile(path)
	if err != nil {
		panic(err)
	}
	defer m.Close()
	fmt.Println(m.Size(), m.Bytes())
	// Output: 4 [1 2 3 4]
}

// TestMapFileReadInto checks that ReadInto copies windows of the mapping
// from the file, byte for byte, and refuses what lies outside it, a short
// destination, and a closed file.
func TestMapFileReadInto(t *testing.T) {
	data := make([]byte, 3*os.Getpagesize()+123)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := MapFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Bytes()
	for _, w := range [][2]int{{0, 1}, {5, 4096}, {4000, 200}, {len(data) - 10, 10}, {0, len(data)}} {
		dst := make([]byte, w[1])
		if !m.ReadInto(dst, b[w[0]:w[0]+w[1]]) || !bytes.Equal(dst, data[w[0]:w[0]+w[1]]) {
			t.Errorf("window %v: not read, or read wrong", w)
		}
	}
	other := make([]byte, 16)
	if m.ReadInto(make([]byte, 16), other) {
		t.Error("read a window outside the mapping")
	}
	if m.ReadInto(make([]byte, 3), b[:4]) {
		t.Error("read into a destination too short")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m.ReadInto(make([]byte, 4), data[:4]) {
		t.Error("read after Close")
	}
}
