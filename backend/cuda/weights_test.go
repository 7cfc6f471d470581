package cuda

import "testing"

// TestWeightStoreHolds: a store shares only bytes that lie within the
// model file it was made for.
func TestWeightStoreHolds(t *testing.T) {
	file := make([]byte, 100)
	other := make([]byte, 10)
	w := NewWeightStore(file)
	cases := []struct {
		name string
		w    *WeightStore
		b    []byte
		want bool
	}{
		{"the whole file", w, file, true},
		{"inside", w, file[10:20], true},
		{"the last byte", w, file[99:], true},
		{"empty", w, file[10:10], false},
		{"another buffer", w, other, false},
		{"no store", nil, file[10:20], false},
		{"a store of no file", NewWeightStore(nil), file[10:20], false},
	}
	for _, c := range cases {
		if got := c.w.holds(c.b); got != c.want {
			t.Errorf("%s: holds = %v, want %v", c.name, got, c.want)
		}
	}
}
