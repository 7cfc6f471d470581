package berth_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berth-ml/berth"
	"github.com/berth-ml/berth/npy"
	"github.com/berth-ml/berth/onnx/onnxtest"
)

// runHostile takes one hostile case through the whole API and returns the
// first error. A panic is reported as an error that says so.
func runHostile(c onnxtest.Case) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	m, err := berth.Load(c.Model)
	if err != nil {
		return err
	}
	defer m.Close()
	exe, err := berth.Compile(m, berth.CPU, berth.Options{})
	if err != nil {
		return err
	}
	var inputs []berth.Tensor
	for _, path := range c.Inputs {
		a, err := npy.ReadFile(path)
		if err != nil {
			return err
		}
		inputs = append(inputs, berth.Tensor{DType: a.DType, Shape: a.Shape, Data: a.Data})
	}
	s, err := exe.NewSession()
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Run(context.Background(), inputs...)
	return err
}

// TestHostileInputs feeds every hostile case through Load, Compile,
// NewSession and Run: each must end in an error, never a panic, within
// seconds and without a large allocation.
func TestHostileInputs(t *testing.T) {
	cases, err := onnxtest.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("only %d hostile cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			err := runHostile(c)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			switch {
			case err == nil:
				t.Fatal("accepted")
			case strings.HasPrefix(err.Error(), "PANIC"):
				t.Fatal(err)
			case !strings.Contains(err.Error(), c.Want):
				t.Errorf("error %q lacks %q", err, c.Want)
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %v", elapsed)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("allocated %d MiB", grew>>20)
			}
			t.Logf("%v", err)
		})
	}
}

// TestTruncatedModelFile truncates the model file after compiling: the
// weights read in place from the mapping are gone, and Run must say so
// with an error instead of crashing the process with SIGBUS.
func TestTruncatedModelFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, onnxtest.MappedWeightModel(), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, s := newSession(t, loadModel(t, path), berth.Options{})
	if exe.PackedWeightBytes() != 0 {
		t.Fatal("the table was copied; the test needs it read from the mapping")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	ids, _ := berth.NewTensor("ids", []int64{4}, []int64{0, 1000, 2000, 4095})
	_, err := s.Run(context.Background(), ids)
	if !errors.Is(err, berth.ErrKernel) {
		t.Fatalf("Run on a truncated file: %v, want ErrKernel", err)
	}
	t.Log(err)
}
