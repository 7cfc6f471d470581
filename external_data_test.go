package berth

import (
	"testing"
	"unsafe"
)

// TestOpenExternalDataShared: an open model whose weights lie in an
// external data file reads them from one mapping at every shape, which
// the weights store of its plans (o.parsed.files) covers, so that what is
// made of them (a device copy, a packed layout) is made once.
func TestOpenExternalDataShared(t *testing.T) {
	m, err := Load("testdata/open/cnnext/model.onnx")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.Open() {
		t.Fatal("the model is not open")
	}
	o := m.open
	name := o.sig.Inputs[0].Name
	at := func(h, w int64) *Model {
		flat := []Tensor{{Name: name, DType: Float32, Shape: []int64{1, 3, h, w}}}
		sm, err := o.specialise(flat, []int{0}, make([]bool, 1), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sm.Close() })
		return sm
	}
	a, b := at(32, 32), at(29, 41)
	files := o.parsed.files(o.bytes)
	if len(files) != 2 {
		t.Fatalf("%d files hold constants, want the model and its data file", len(files))
	}
	within := func(d []byte) bool {
		for _, f := range files {
			lo := uintptr(unsafe.Pointer(unsafe.SliceData(f)))
			p := uintptr(unsafe.Pointer(unsafe.SliceData(d)))
			if p >= lo && p+uintptr(len(d)) <= lo+uintptr(len(f)) {
				return true
			}
		}
		return false
	}
	byName := map[string][]byte{}
	for _, t := range b.graph.Tensors {
		if t.IsConst() {
			byName[t.Name] = t.Data
		}
	}
	var shared int
	for _, ta := range a.graph.Tensors {
		if !ta.IsConst() || len(ta.Data) < 256 {
			continue
		}
		if !within(ta.Data) {
			continue // made by folding, not read from a file
		}
		shared++
		if db, ok := byName[ta.Name]; ok && unsafe.SliceData(db) != unsafe.SliceData(ta.Data) {
			t.Errorf("%s: the two shapes read it from different mappings", ta.Name)
		}
	}
	if shared == 0 {
		t.Fatal("no weight of the data file found in the specialised graph")
	}
}
