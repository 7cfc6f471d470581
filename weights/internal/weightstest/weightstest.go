package weightstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// ReadFile returns the bytes of the file at path, or stops the test.
func ReadFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// ReadJSON decodes the JSON file at path into v, or stops the test.
func ReadJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	if err := json.Unmarshal(ReadFile(tb, path), v); err != nil {
		tb.Fatal(err)
	}
}

// Hostile is a file a parser must refuse, and a piece of the error it
// must give. A test's table is of its own type defined as Hostile.
type Hostile struct {
	Name string
	Data []byte
	Err  string
}

// HostileType is a test's own type of hostile files, defined as Hostile
// (so that its table's entries need not name their fields).
type HostileType interface {
	~struct {
		Name string
		Data []byte
		Err  string
	}
}

// Seed adds to the fuzz test's corpus the files of dir that names name,
// and the hostile files.
func Seed[H HostileType](f *testing.F, hostile []H, dir string, names ...string) {
	f.Helper()
	for _, name := range names {
		f.Add(ReadFile(f, filepath.Join(dir, name)))
	}
	for _, h := range hostile {
		f.Add(Hostile(h).Data)
	}
}

// Refused checks, in a subtest a file, that parse refuses each hostile
// file with an error that starts with prefix and says the file's Err.
func Refused[H HostileType](t *testing.T, hostile []H, prefix string, parse func([]byte) error) {
	t.Helper()
	for _, h := range hostile {
		h := Hostile(h)
		t.Run(h.Name, func(t *testing.T) {
			err := parse(h.Data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), h.Err) {
				t.Errorf("error %q\ndoes not say %q", err, h.Err)
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("error %q does not start with %q", err, prefix)
			}
		})
	}
}

// AllocateLittle checks that parse allocates at most limit bytes on each
// hostile file.
func AllocateLittle[H HostileType](t *testing.T, hostile []H, limit uint64, parse func([]byte) error) {
	t.Helper()
	for _, h := range hostile {
		h := Hostile(h)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		parse(h.Data)
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > limit {
			t.Errorf("%s: parsing allocated %d bytes", h.Name, n)
		}
	}
}
