package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/plan"
)

// WeightStore holds on the device the constants that the executables of
// one model for several shapes have in common: those read from the model
// file (and their 16-bit shadows), uploaded by the first compile that
// needs them and shared by every later one. Constants made for one shape
// (folded ones, kernel parameters) stay with their executable. A store
// outlives the executables compiled with it; Close frees it after them.
type WeightStore struct {
	files [][]byte // the model file's bytes (or the windows of it that hold weights)

	mu     sync.Mutex
	blocks map[weightKey]driver.Ptr
	bytes  int64
	closed bool
}

// weightKey names one device copy of bytes of the file: where they lie and
// how they were converted (prec 0: as they are; form: laid out for a
// channels-last convolution).
type weightKey struct {
	src  *byte
	n    int
	prec Precision
	form krscForm
}

// NewWeightStore makes a store for the constants that lie in file, the
// model file's bytes (mapped read-only, unchanged while the store lives).
func NewWeightStore(file []byte) *WeightStore {
	return NewWeightStoreOf([][]byte{file})
}

// NewWeightStoreOf makes a store for the constants that lie in any of
// files: windows of mapped model files (a checkpoint of several files, or
// the weights of one), unchanged while the store lives.
func NewWeightStoreOf(files [][]byte) *WeightStore {
	return &WeightStore{files: files, blocks: map[weightKey]driver.Ptr{}}
}

// holds reports whether b lies in one of the store's files.
func (w *WeightStore) holds(b []byte) bool {
	if w == nil || len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for _, f := range w.files {
		if len(f) == 0 {
			continue
		}
		start := uintptr(unsafe.Pointer(unsafe.SliceData(f)))
		if p >= start && p+uintptr(len(b)) <= start+uintptr(len(f)) {
			return true
		}
	}
	return false
}

// placed returns the device copy of src converted as prec and form say
// where place has made it, without the device's thread.
func (w *WeightStore) placed(src []byte, prec Precision, form krscForm) (driver.Ptr, bool) {
	if w == nil {
		return 0, false
	}
	k := weightKey{src: unsafe.SliceData(src), n: len(src), prec: prec, form: form}
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.blocks[k]
	return p, ok && !w.closed
}

// place returns the device copy of src converted as prec and form say
// (FP32: as it is), made by make the first time. It runs on the owner
// thread.
func (w *WeightStore) place(src []byte, prec Precision, form krscForm, make func() []byte) (driver.Ptr, error) {
	k := weightKey{src: unsafe.SliceData(src), n: len(src), prec: prec, form: form}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errors.New("the weight store is closed")
	}
	if p, ok := w.blocks[k]; ok {
		return p, nil
	}
	b := make()
	p, err := driver.Alloc(int64(len(b)))
	if err != nil {
		return 0, fmt.Errorf("allocating %d bytes of weights: %w", len(b), err)
	}
	if err := driver.CopyToDevice(p, b); err != nil {
		driver.Free(p)
		return 0, fmt.Errorf("uploading weights: %w", err)
	}
	w.blocks[k] = p
	w.bytes += plan.AlignUp(int64(len(b)), Alignment)
	return p, nil
}

// Bytes is the device memory the store holds.
func (w *WeightStore) Bytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// Close frees the store's device memory. The executables compiled with it
// must be closed before.
func (w *WeightStore) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	blocks := w.blocks
	w.blocks, w.bytes = nil, 0
	// Not under the lock: place runs on the owner thread with it held.
	w.mu.Unlock()
	if len(blocks) == 0 {
		return nil
	}
	d, err := Device()
	if err != nil {
		return err
	}
	return d.Do(func() error {
		var errs []error
		for _, p := range blocks {
			errs = append(errs, driver.Free(p))
		}
		return errors.Join(errs...)
	})
}
