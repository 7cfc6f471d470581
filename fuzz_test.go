package berth_test

import (
	"context"
	"os"
	"path/filepath"
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
	for _, p := range paths {
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
			n := int64(in.DType.Size())
			for _, d := range in.Shape {
				n *= d
			}
			inputs = append(inputs, berth.Tensor{Name: in.Name, DType: in.DType, Shape: in.Shape, Data: make([]byte, n)})
		}
		// A Loop may run for as long as its model says: the run is
		// cancelled well before the watchdog fires.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Run(ctx, inputs...)
	})
}
