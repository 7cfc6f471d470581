package berth_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/internal/demo"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// FuzzModel takes arbitrary bytes through the whole path: import, shape
// inference, folding, verification, compilation under a small memory
// limit, and one run on zero inputs. Anything may fail, nothing may panic.
func FuzzModel(f *testing.F) {
	f.Add(onnxtest.Valid())
	f.Add(demo.Model())
	f.Add(onnxtest.NestedIfModel(2))
	f.Add(onnxtest.LoopModel(3))
	f.Add(onnxtest.ScanModel(true))
	paths, _ := filepath.Glob("testdata/models/*/model.onnx")
	open, _ := filepath.Glob("testdata/open/*/model.onnx")
	for _, p := range append(paths, open...) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 200<<10 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A hang is a failure too: past the deadline the process dies and
		// the fuzzer keeps the input.
		watchdog := time.AfterFunc(20*time.Second, func() { panic("FuzzModel: one input ran for 20 s") })
		defer watchdog.Stop()
		m, err := berth.LoadBytes(b, "")
		if err != nil {
			return
		}
		defer m.Close()
		exe, s, ok := trySession(m, berth.Options{Threads: 1, MemoryLimit: 64 << 20})
		if !ok {
			return
		}
		defer exe.Close()
		defer s.Close()
		var inputs []berth.Tensor
		for _, in := range exe.Inputs() {
			if in.Sequence {
				continue // fed with no elements
			}
			// Open dimensions take a small size.
			shape := slices.Clone(in.Shape)
			n := int64(in.DType.Size())
			for i, d := range shape {
				if d < 0 {
					shape[i] = 3
				}
				n *= shape[i]
			}
			if n < 0 || n > 64<<20 {
				return
			}
			inputs = append(inputs, berth.Tensor{Name: in.Name, DType: in.DType, Shape: shape, Data: make([]byte, n)})
		}
		// A Loop may run for as long as its model says: the run is
		// cancelled well before the watchdog fires.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Run(ctx, inputs...)
	})
}

// FuzzOpenShapes runs the models of testdata/open at arbitrary input
// shapes and contents: sizes that break the model's own arithmetic,
// zero, and inputs that disagree on a symbol. Anything may fail, nothing
// may panic, and what runs returns outputs whose data fits their shapes.
func FuzzOpenShapes(f *testing.F) {
	paths, _ := filepath.Glob("testdata/open/*/model.onnx")
	if len(paths) == 0 {
		f.Fatal("no models under testdata/open")
	}
	f.Add(uint8(0), []byte{1, 5, 1, 5}, []byte{1, 2, 3})
	f.Add(uint8(1), []byte{2, 7, 2, 7}, []byte{})
	f.Add(uint8(2), []byte{1, 3, 17, 23}, []byte{255, 0, 9})
	f.Add(uint8(3), []byte{0, 0, 0, 0}, []byte{7})
	f.Add(uint8(4), []byte{9, 16, 3}, []byte{128, 64})
	models := make([]*berth.Model, len(paths))
	for i, p := range paths {
		m, err := berth.Load(p)
		if err != nil {
			f.Fatal(err)
		}
		models[i] = m
	}
	f.Fuzz(func(t *testing.T, which uint8, dims, fill []byte) {
		m := models[int(which)%len(models)]
		exe, s := newSession(t, m, berth.Options{Threads: 1, MemoryLimit: 64 << 20, Plans: 2})
		var inputs []berth.Tensor
		k := 0
		for _, in := range exe.Inputs() {
			shape := slices.Clone(in.Shape)
			n := int64(1)
			for i, d := range shape {
				if d < 0 {
					shape[i] = 1
					if k < len(dims) {
						shape[i] = int64(dims[k] % 40)
					}
					k++
				}
				n *= shape[i]
			}
			data := make([]byte, n*int64(in.DType.Size()))
			for i := range data {
				if len(fill) > 0 {
					data[i] = fill[i%len(fill)]
				}
			}
			if in.DType == berth.Int64 {
				// Token ids within the vocabulary or past it.
				for i := 0; i+8 <= len(data); i += 8 {
					data[i+1], data[i+2], data[i+3], data[i+4], data[i+5], data[i+6], data[i+7] = 0, 0, 0, 0, 0, 0, 0
				}
			}
			inputs = append(inputs, berth.Tensor{Name: in.Name, DType: in.DType, Shape: shape, Data: data})
		}
		outs, err := s.Run(context.Background(), inputs...)
		if err != nil {
			return
		}
		for _, o := range outs {
			if int64(len(o.Data)) != int64(o.DType.Size())*elements(o.Shape) {
				t.Errorf("output %q: %d bytes for %s%v", o.Name, len(o.Data), o.DType, o.Shape)
			}
		}
	})
}

func elements(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// openValueModels are small models whose shapes follow from symbols and
// from input values (FuzzOpenValues).
var openValueModels = []onnxtest.Graph{
	reshapeModel, expandModel, tileModel, cosModel, rangeModel, rangeF32Model, addModel, addNMModel,
	outerModel, nonzeroExpand, nonzeroOfShape, nonzeroComputed, reshapeComputed, seqConcat, seqAdd,
	topkModel, padModel, oneHotModel, splitModel, squeezeModel, unsqueezeModel, sliceModel, resizeModel,
	shapeScaled,
}

// Values a shape input may hold that break arithmetic: the byte b picks
// one of them when b ≥ 128, else the small value b%16 - 4.
var (
	hostileInts   = []int64{0, 1, -1, 1 << 20, 1 << 31, 1 << 32, 1<<40 - 1, 1 << 40, 1 << 41, 1 << 53, 1 << 62, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, -1 << 40}
	hostileFloats = []float64{0, -0.5, 1e-30, 1e30, math.Inf(1), math.Inf(-1), math.NaN(), 1 << 24, 1 << 41, -1 << 41, math.MaxFloat32, math.SmallestNonzeroFloat32}
)

// FuzzOpenValues runs small models with open shapes, whose shapes follow
// from symbols and from input values (Reshape, Expand, Tile,
// ConstantOfShape, Range, NonZero, TopK, Pad, OneHot, Split, Squeeze,
// Unsqueeze, Slice, Resize, a shape computed from another), on input
// sizes and values the fuzzer picks: sizes that disagree between inputs,
// zero, and values that overflow, are negative or pass any memory. Two
// runs share a session, some with a bound (MaxDims). Anything may fail;
// nothing may panic, allocate more than the memory limit allows or run
// past the watchdog, and what runs returns outputs whose data fits their
// shapes.
func FuzzOpenValues(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte{6, 2}, []byte{2, 7})
	f.Add(uint8(0), uint8(1), []byte{6, 3}, []byte{0x80 + 7, 0x80 + 7, 0x80 + 7})
	f.Add(uint8(2), uint8(2), []byte{4}, []byte{0x80 + 9})
	f.Add(uint8(3), uint8(0), []byte{2}, []byte{0x80 + 5, 0x80 + 5})
	f.Add(uint8(4), uint8(0), []byte{}, []byte{4, 0x80 + 11, 5})
	f.Add(uint8(5), uint8(0), []byte{}, []byte{0x80, 0x80 + 4, 0x80 + 2})
	f.Add(uint8(7), uint8(4), []byte{2, 3, 3, 2}, []byte{})
	f.Add(uint8(11), uint8(0), []byte{2, 3}, []byte{1, 0x80 + 3})
	f.Add(uint8(13), uint8(1), []byte{3, 2, 4}, []byte{1, 2, 3})
	f.Add(uint8(16), uint8(2), []byte{5}, []byte{0x80 + 10})
	f.Add(uint8(22), uint8(0), []byte{1}, []byte{5, 5, 0x80 + 6, 0x80 + 6})
	f.Add(uint8(23), uint8(3), []byte{4}, []byte{0x80 + 9})
	models := make([][]byte, len(openValueModels))
	for i, g := range openValueModels {
		models[i] = g.Bytes()
	}
	f.Fuzz(func(t *testing.T, which, flags uint8, dims, vals []byte) {
		watchdog := time.AfterFunc(20*time.Second, func() { panic("FuzzOpenValues: one input ran for 20 s") })
		defer watchdog.Stop()
		m := loadBytes(t, models[int(which)%len(models)])
		const limit = 64 << 20
		opts := berth.Options{Threads: 1, MemoryLimit: limit, Plans: int(flags>>4) - 2}
		next := func(b []byte, k *int) byte {
			if len(b) == 0 {
				return 1
			}
			v := b[*k%len(b)]
			*k++
			return v
		}
		// Each symbol takes a size from dims; with flags&1 every open
		// dimension takes its own, and inputs may disagree.
		sizes := map[string]int64{}
		kd, kv := 0, 0
		size := func(sym string) int64 {
			if s, ok := sizes[sym]; ok && flags&1 == 0 {
				return s
			}
			s := int64(next(dims, &kd) % 9)
			sizes[sym] = s
			return s
		}
		var inputs []berth.Tensor
		for _, in := range m.Inputs() {
			count := 1
			if in.Sequence {
				count = int(next(dims, &kd) % 4)
			}
			for e := range count {
				shape := slices.Clone(in.Shape)
				for i, d := range shape {
					if d < 0 {
						shape[i] = size(in.Symbols[i])
					}
				}
				n := elements(shape)
				data := make([]byte, n*int64(in.DType.Size()))
				for i := range n {
					b := next(vals, &kv)
					switch in.DType {
					case berth.Int64:
						v := int64(b%16) - 4
						if b >= 0x80 {
							v = hostileInts[int(b)%len(hostileInts)]
						}
						binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
					case berth.Float32:
						v := float64(int8(b)) / 4
						if b >= 0xc0 {
							v = hostileFloats[int(b)%len(hostileFloats)]
						}
						binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
					}
				}
				name := in.Name
				if in.Sequence {
					name = fmt.Sprintf("%s[%d]", in.Name, e)
				}
				inputs = append(inputs, berth.Tensor{Name: name, DType: in.DType, Shape: shape, Data: data})
			}
		}
		if flags&2 != 0 {
			// A bound a little above or below this run's sizes.
			opts.MaxDims = map[string]int64{}
			for sym, s := range sizes {
				opts.MaxDims[sym] = s + int64(flags>>2&3) - 1
			}
		}
		exe, s, ok := trySession(m, opts)
		if !ok {
			return
		}
		defer exe.Close()
		defer s.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for run := range 2 {
			if run == 1 && flags&8 != 0 {
				// Again with the values changed: another plan, or the same.
				for _, in := range inputs {
					for i := range in.Data {
						in.Data[i] ^= next(vals, &kv)
					}
				}
			}
			outs, err := s.Run(context.Background(), inputs...)
			if err != nil {
				continue
			}
			for _, o := range outs {
				if int64(len(o.Data)) != int64(o.DType.Size())*elements(o.Shape) {
					t.Errorf("output %q: %d bytes for %s%v", o.Name, len(o.Data), o.DType, o.Shape)
				}
			}
		}
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*limit {
			t.Errorf("two runs allocated %d MiB under a limit of %d MiB", grew>>20, limit>>20)
		}
	})
}

// FuzzOpenDims compiles small models with open shapes with Options.Dims
// and Options.MaxDims the fuzzer picks (negative, zero, past any memory,
// of symbols the model lacks) and runs them at sizes it picks: anything
// may fail, nothing may panic or allocate more than the memory limit
// allows, and a run that succeeds keeps every symbol at its fixed size
// and within its bound.
func FuzzOpenDims(f *testing.F) {
	f.Add(uint8(0), uint8(0), int64(3), int64(4), int64(3), int64(3))
	f.Add(uint8(1), uint8(1), int64(0), int64(0), int64(0), int64(0))
	f.Add(uint8(2), uint8(2), int64(-1), int64(1<<40), int64(5), int64(2))
	f.Add(uint8(3), uint8(3), int64(1<<40), int64(math.MaxInt64), int64(7), int64(7))
	f.Add(uint8(4), uint8(5), int64(2), int64(1<<20), int64(2), int64(9))
	models := []onnxtest.Graph{addModel, addNMModel, outerModel, reshapeModel, nonzeroComputed, seqAdd, shapeScaled}
	f.Fuzz(func(t *testing.T, which, flags uint8, dim, bound, a, b int64) {
		watchdog := time.AfterFunc(20*time.Second, func() { panic("FuzzOpenDims: one input ran for 20 s") })
		defer watchdog.Stop()
		m := loadBytes(t, models[int(which)%len(models)].Bytes())
		syms := append(m.Symbols(), "absent")
		const limit = 64 << 20
		opts := berth.Options{Threads: 1, MemoryLimit: limit}
		if flags&1 != 0 {
			opts.Dims = map[string]int64{syms[int(flags>>2)%len(syms)]: dim}
		}
		if flags&2 != 0 {
			opts.MaxDims = map[string]int64{syms[int(flags>>4)%len(syms)]: bound}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*limit {
				t.Errorf("allocated %d MiB under a limit of %d MiB", grew>>20, limit>>20)
			}
		}()
		exe, s, ok := trySession(m, opts)
		if !ok {
			return
		}
		defer exe.Close()
		defer s.Close()
		// The first symbol takes size a, every other b; an int64 input
		// holds small values.
		size := map[string]int64{}
		for i, sym := range m.Symbols() {
			size[sym] = b
			if i == 0 {
				size[sym] = a
			}
		}
		var inputs []berth.Tensor
		for _, in := range m.Inputs() {
			shape := slices.Clone(in.Shape)
			for i, d := range shape {
				if d < 0 {
					shape[i] = size[in.Symbols[i]]
				}
			}
			name := in.Name
			if in.Sequence {
				name += "[0]"
			}
			tn := zeros(name, in.DType, shape...)
			if in.DType == berth.Int64 {
				for i := 0; i+8 <= len(tn.Data); i += 8 {
					tn.Data[i] = byte(i/8%3 + 1)
				}
			}
			inputs = append(inputs, tn)
		}
		if _, err := s.Run(context.Background(), inputs...); err != nil {
			return
		}
		for sym, n := range opts.Dims {
			if v, ok := size[sym]; ok && v != n && symbolFed(m, sym) {
				t.Errorf("%s is fixed at %d, a run with %s = %d succeeded", sym, n, sym, v)
			}
		}
		for sym, n := range opts.MaxDims {
			if v, ok := size[sym]; ok && v > n && symbolFed(m, sym) {
				t.Errorf("%s is bound by %d, a run with %s = %d succeeded", sym, n, sym, v)
			}
		}
	})
}

// symbolFed reports whether a tensor input of m (not a sequence, whose
// elements' symbols bind nothing) has a dimension named sym.
func symbolFed(m *berth.Model, sym string) bool {
	for _, in := range m.Inputs() {
		if !in.Sequence && slices.Contains(in.Symbols, sym) {
			return true
		}
	}
	return false
}

// trySession compiles m with opts and opens a session of it, or reports
// false where either fails, as a fuzzed model may.
func trySession(m *berth.Model, opts berth.Options) (*berth.Executable, *berth.Session, bool) {
	exe, err := berth.Compile(m, berth.CPU, opts)
	if err != nil {
		return nil, nil, false
	}
	s, err := exe.NewSession()
	if err != nil {
		exe.Close()
		return nil, nil, false
	}
	return exe, s, true
}
