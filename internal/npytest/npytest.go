package npytest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/npy"
)

// ReadSet reads dir/PREFIX_0.npy, dir/PREFIX_1.npy, … up to the first
// that is missing.
func ReadSet(t testing.TB, dir, prefix string) []*npy.Array {
	t.Helper()
	var out []*npy.Array
	for i := 0; ; i++ {
		a, err := npy.ReadFile(filepath.Join(dir, fmt.Sprintf("%s_%d.npy", prefix, i)))
		if errors.Is(err, os.ErrNotExist) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
}
