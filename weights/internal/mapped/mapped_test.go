package mapped

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestElements(t *testing.T) {
	tests := []struct {
		shape []int64
		want  int64
	}{
		{nil, 1},
		{[]int64{0}, 0},
		{[]int64{7}, 7},
		{[]int64{2, 3, 4}, 24},
		{[]int64{5, 0, 3}, 0},
	}
	for _, tt := range tests {
		if got := Elements(tt.shape); got != tt.want {
			t.Errorf("Elements(%v) = %d, want %d", tt.shape, got, tt.want)
		}
	}
}

// length is a parser that accepts files of four bytes or more.
func length(b []byte) (int, error) {
	if len(b) < 4 {
		return 0, errors.New("too short")
	}
	return len(b), nil
}

func TestOpenAndParse(t *testing.T) {
	dir := t.TempDir()
	good, short := filepath.Join(dir, "good"), filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("12"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		open func() (int, error)
		want int
		err  string // the error's start, empty for none
	}{
		{"open", func() (int, error) {
			n, m, err := Open("fmt", good, length)
			if err == nil {
				err = Close(&m)
			}
			return n, err
		}, 5, ""},
		{"open a short file", func() (int, error) {
			n, _, err := Open("fmt", short, length)
			return n, err
		}, 0, "fmt: " + short + ": too short"},
		{"open a missing file", func() (int, error) {
			n, _, err := Open("fmt", filepath.Join(dir, "missing"), length)
			return n, err
		}, 0, "fmt: "},
		{"parse", func() (int, error) { return Parse("fmt", []byte("1234"), length) }, 4, ""},
		{"parse a short file", func() (int, error) { return Parse("fmt", []byte("1"), length) }, 0, "fmt: too short"},
	}
	for _, tt := range tests {
		n, err := tt.open()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one starting %q", tt.name, err, tt.err)
		case n != tt.want:
			t.Errorf("%s: %d, want %d", tt.name, n, tt.want)
		}
	}
}

// Closing twice, or with no mapping, does nothing.
func TestCloseTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, m, err := Open("fmt", path, length)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := Close(&m); err != nil || m != nil {
			t.Fatalf("Close: %v, mapping %v", err, m)
		}
	}
}
