package berth

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-ml/berth/internal/raw"
	"github.com/berth-ml/berth/npy"
)

// BenchmarkOpenDetector runs a detector exported with its
// NonMaxSuppression (scripts/gen_corpus.py's ssdlite320_open, as
// bench/parity_ort.sh exports it into BERTH_OPEN_CORPUS, default
// ~/.cache/berth/open-corpus) on the CPU: "seen" runs one image again and
// again, "new" an image perturbed anew each run (the boxes and so the plan
// after the suppression change), "first" the first run of a new session
// (the stage and its first plan compiled).
func BenchmarkOpenDetector(b *testing.B) {
	corpus := cacheDir("BERTH_OPEN_CORPUS", "open-corpus")
	path := filepath.Join(corpus, "ssdlite_open.onnx")
	a, err := npy.ReadFile(filepath.Join(corpus, "ssdlite_open", "set_0", "image.npy"))
	if _, serr := os.Stat(path); serr != nil || err != nil {
		b.Skipf("%s or its input set_0/image.npy not found", path)
	}
	m, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	exe, err := Compile(m, CPU, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Close()
	image := Tensor{Name: m.Inputs()[0].Name, DType: a.DType, Shape: a.Shape, Data: a.Data}
	ctx := context.Background()
	run := func(b *testing.B, s *Session, in Tensor) {
		if _, err := s.Run(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	session := func(b *testing.B) *Session {
		s, err := exe.NewSession()
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			s := session(b)
			run(b, s, image)
			b.StopTimer()
			s.Close()
			b.StartTimer()
		}
	})
	b.Run("seen", func(b *testing.B) {
		s := session(b)
		defer s.Close()
		run(b, s, image)
		for b.Loop() {
			run(b, s, image)
		}
	})
	b.Run("new", func(b *testing.B) {
		s := session(b)
		defer s.Close()
		run(b, s, image)
		base := raw.F32(a.Data)
		r := rand.New(rand.NewPCG(1, 2))
		v := make([]float32, len(base))
		in := image
		for b.Loop() {
			b.StopTimer()
			for j := range v {
				v[j] = base[j] + 0.05*float32(r.NormFloat64())
			}
			in.Data = raw.Bytes(v)
			b.StartTimer()
			run(b, s, in)
		}
	})
}

// cacheDir is the folder the environment variable env names, or
// ~/.cache/berth/name: where the open corpus and the npm models lie.
func cacheDir(env, name string) string {
	if dir := os.Getenv(env); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "berth", name)
}
