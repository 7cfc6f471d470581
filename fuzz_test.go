package berth_test

import (
	"context"
	"os"
	"path/filepath"
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
		exe, err := berth.Compile(m, berth.CPU, berth.Options{Threads: 1, MemoryLimit: 64 << 20})
		if err != nil {
			return
		}
		s, err := exe.NewSession()
		if err != nil {
			return
		}
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
