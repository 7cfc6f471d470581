package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/berth-ml/berth/backend/cuda/driver"
)

// source is one CUDA C module: compiled by NVRTC the first time a kernel of
// it is needed, then kept loaded for the life of the process.
type source struct {
	name string
	text string
}

// The kernel modules.
var (
	eltwise    = &source{"eltwise.cu", eltwiseSource}
	layout     = &source{"layout.cu", layoutSource}
	gemmModule = &source{"gemm.cu", gemmSource}
	convModule = &source{"conv.cu", convSource}
	norm       = &source{"norm.cu", normSource}
	pool       = &source{"pool.cu", poolSource}
	index      = &source{"index.cu", indexSource}
)

// nvrtcOptions are the options every module is compiled with.
var nvrtcOptions = []string{"--std=c++17", "-default-device"}

// shared is the process's device 0, opened on first use and kept.
var shared struct {
	once sync.Once
	dev  *driver.Device
	err  error
}

// Device returns the device the backend runs on (CUDA device 0), opening
// it on first use. The error wraps driver.ErrUnavailable where there is no
// CUDA.
func Device() (*driver.Device, error) {
	shared.once.Do(func() { shared.dev, shared.err = driver.Open(0) })
	return shared.dev, shared.err
}

// loaded holds the modules loaded into the shared device's context.
var loaded struct {
	sync.Mutex
	mods  map[*source]driver.Module
	funcs map[kernelKey]driver.Function
}

// kernelKey names a kernel of a module: by the module's source, not its
// name (gemvShape.module makes sources of one name and other texts).
type kernelKey struct {
	src    *source
	kernel string
}

// function returns the kernel of src, compiling and loading the module on
// first use. cacheDir ("" for none) keeps compiled cubins between runs.
func function(d *driver.Device, src *source, kernel, cacheDir string) (driver.Function, error) {
	loaded.Lock()
	defer loaded.Unlock()
	key := kernelKey{src, kernel}
	if f, ok := loaded.funcs[key]; ok {
		return f, nil
	}
	m, ok := loaded.mods[src]
	if !ok {
		cubin, err := compileSource(d, src, cacheDir)
		if err != nil {
			return 0, err
		}
		if err := d.Do(func() error {
			var err error
			m, err = driver.LoadModule(cubin)
			return err
		}); err != nil {
			return 0, fmt.Errorf("loading %s: %w", src.name, err)
		}
		if loaded.mods == nil {
			loaded.mods = make(map[*source]driver.Module)
			loaded.funcs = make(map[kernelKey]driver.Function)
		}
		loaded.mods[src] = m
	}
	var f driver.Function
	if err := d.Do(func() error {
		var err error
		f, err = m.Function(kernel)
		return err
	}); err != nil {
		return 0, fmt.Errorf("%s: %w", src.name, err)
	}
	loaded.funcs[key] = f
	return f, nil
}

// compileSource compiles src for d's architecture, through the disk cache
// when cacheDir is set: the cubin is stored under the SHA-256 of the
// source, the architecture and the compiler options.
func compileSource(d *driver.Device, src *source, cacheDir string) ([]byte, error) {
	var path string
	if cacheDir != "" {
		h := sha256.New()
		fmt.Fprintf(h, "%s\x00sm_%d%d\x00%q", src.text, d.Major, d.Minor, nvrtcOptions)
		path = filepath.Join(cacheDir, hex.EncodeToString(h.Sum(nil))+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b, nil
		}
	}
	cubin, err := driver.Compile(src.text, src.name, d.Major, d.Minor, nvrtcOptions...)
	if err != nil {
		return nil, err
	}
	if path != "" {
		// The cache is a convenience: failing to write it is not an error.
		if os.MkdirAll(cacheDir, 0o755) == nil {
			tmp, err := os.CreateTemp(cacheDir, "tmp-*")
			if err == nil {
				_, werr := tmp.Write(cubin)
				cerr := tmp.Close()
				if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
					os.Remove(tmp.Name())
				}
			}
		}
	}
	return cubin, nil
}

// defaultCacheDir is os.UserCacheDir()/berth/cuda, or "" when the user has
// no cache directory.
func defaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "berth", "cuda")
}
