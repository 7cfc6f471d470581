package cpu

import (
	"sync"
	"unsafe"

	"github.com/berth-ml/berth/device"
)

// A WeightStore holds the memory that kernels pack, transform or lay out
// constant weights into while one model's kernels are built
// (BuildOptions.Weights). Weights of a huge page (device.HugePageBytes)
// or more take a host buffer each; smaller ones are laid one after
// another into blocks of weightBlockBytes. Huge pages back both where the
// system offers them (device.NewHostBuffer), so a run that reads every
// weight of a model touches one TLB entry per 2 MiB of them instead of
// one per 4 KiB page. Small weights go into blocks for that too, at the
// cost of a little more peak RSS.
//
// A block's bytes that no weight takes are never touched, so they stay
// out of resident memory but for the rest of the last huge page written.
// Blocks live as long as a kernel holds weights in them. The zero value
// is ready to use, and a store may serve builds on several goroutines.
//
// A store also remembers what it packed: kernels built again for the same
// constant weights in the same layout (the plans of one model for other
// input shapes) share the packed copy instead of making another (packed).
type WeightStore struct {
	// Shared makes the store remember what it packs, for builds of the
	// same model's kernels for other shapes (see packed). Without it a
	// build lays weights out anew and may lay one layout over another
	// that no kernel reads any more (relayout).
	Shared bool

	mu      sync.Mutex
	free    []byte                // the untaken rest of the newest block
	layouts map[packKey][]float32 // what packed made, by source and layout
}

// packKey names one layout of one constant's bytes: where they lie (the
// mapped file or a folded constant), which packing made it and every
// parameter that packing read.
type packKey struct {
	src, aux       *byte // aux: a second constant laid out with src (a bias)
	srcLen, auxLen int
	layout         string
	p              [8]int
}

// packed returns the n floats that fill lays src out into, in the layout
// named by layout and p (every parameter fill reads besides src): the
// copy an earlier build made, or a new one that fill writes and later
// builds share. Without a store (s nil) every call packs anew.
func (s *WeightStore) packed(src []byte, layout string, p [8]int, n int, fill func([]float32)) []float32 {
	return s.packedWith(src, nil, layout, p, n, fill)
}

// packedWith is packed for a layout of two constants, src and aux.
func (s *WeightStore) packedWith(src, aux []byte, layout string, p [8]int, n int, fill func([]float32)) []float32 {
	if s == nil || !s.Shared || len(src) == 0 {
		w := s.floats(n)
		fill(w)
		return w
	}
	key := packKey{src: unsafe.SliceData(src), srcLen: len(src), aux: unsafe.SliceData(aux), auxLen: len(aux), layout: layout, p: p}
	s.mu.Lock()
	w, ok := s.layouts[key]
	s.mu.Unlock()
	if ok && len(w) == n {
		return w
	}
	w = s.floats(n)
	fill(w)
	s.mu.Lock()
	if s.layouts == nil {
		s.layouts = make(map[packKey][]float32)
	}
	s.layouts[key] = w
	s.mu.Unlock()
	return w
}

// weightBlockBytes is the size of a WeightStore's blocks of small weights.
const weightBlockBytes = 16 << 20

// floats returns n zeroed floats, 64-byte aligned, for a kernel's
// weights: from s, or, where s is nil, from a buffer of their own.
func (s *WeightStore) floats(n int) []float32 {
	b := roundUp(n*4, alignment)
	if s == nil || b >= device.HugePageBytes || n == 0 {
		return hostFloats(n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.free) < b {
		s.free = alignedBytes(weightBlockBytes)
	}
	w := s.free[:b:b]
	s.free = s.free[b:]
	return f32s(w)[:n:n]
}

// hostFloats returns n zeroed floats, 64-byte aligned, in a host buffer
// of their own (alignedBytes): huge pages back those of 2 MiB or more.
// Like make, it never returns nil: kernels tell packed weights from
// none by nil.
func hostFloats(n int) []float32 {
	if n == 0 {
		return []float32{}
	}
	return f32s(alignedBytes(int64(n) * 4))[:n:n]
}

// relayout returns the n floats that fill lays the constant src out into
// for a kernel's blocked path: with a Shared store, the layout remembered
// (see packed); otherwise in the memory of a or else b, earlier layouts
// of the same weights that no kernel reads any more, where they hold n
// floats, and in new memory where neither does.
func (s *WeightStore) relayout(a, b []float32, src []byte, layout string, p [8]int, n int, fill func([]float32)) []float32 {
	if s != nil && s.Shared {
		return s.packed(src, layout, p, n, fill)
	}
	var w []float32
	switch {
	case cap(a) >= n:
		w = a[:n]
	case cap(b) >= n:
		w = b[:n]
	default:
		w = s.floats(n)
	}
	fill(w)
	return w
}

// Aligned returns a copy of the constant src aligned to 64 bytes, for a
// constant that kernels read as it is but the file holds misaligned:
// with a Shared store the copy an earlier call made, else a new one.
func (s *WeightStore) Aligned(src []byte) []byte {
	n := (len(src) + 3) / 4
	w := s.packed(src, "aligned copy", [8]int{}, n, func(w []float32) {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 4*len(w)), src)
	})
	if len(w) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), len(src))[:len(src):len(src)]
}

// boolInt is 1 for true, for layout parameters.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
