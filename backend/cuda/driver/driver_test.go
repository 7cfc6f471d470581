package driver

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// openOrSkip opens device 0, or skips where there is no CUDA.
func openOrSkip(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if errors.Is(err, ErrUnavailable) {
		t.Skipf("no CUDA here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func TestLoadWithoutGPU(t *testing.T) {
	err := Load()
	if err != nil && !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Load: %v, want nil or ErrUnavailable", err)
	}
	t.Logf("Load: %v", err)
}

const addSource = `
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) c[i] = a[i] + b[i];
}
`

// TestVectorAdd compiles a kernel with NVRTC, runs it and checks every
// element against the sum computed here.
func TestVectorAdd(t *testing.T) {
	d := openOrSkip(t)
	v, _ := DriverVersion()
	t.Logf("%s, compute %d.%d, %d SMs, %d MiB, driver %d", d.Name, d.Major, d.Minor, d.SMs, d.TotalMem>>20, v)
	const n = 1<<20 + 3
	r := rand.New(rand.NewPCG(1, 2))
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = r.Float32(), r.Float32()
	}
	got := make([]float32, n)
	cubin, err := Compile(addSource, "add.cu", d.Major, d.Minor)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Do(func() error {
		m, err := LoadModule(cubin)
		if err != nil {
			return err
		}
		defer m.Unload()
		f, err := m.Function("add")
		if err != nil {
			return err
		}
		bytes := int64(4 * n)
		var pa, pb, pc Ptr
		for _, p := range []*Ptr{&pa, &pb, &pc} {
			if *p, err = Alloc(bytes); err != nil {
				return err
			}
			defer Free(*p)
		}
		if err := CopyToDevice(pa, unsafe.Slice((*byte)(unsafe.Pointer(&a[0])), bytes)); err != nil {
			return err
		}
		if err := CopyToDevice(pb, unsafe.Slice((*byte)(unsafe.Pointer(&b[0])), bytes)); err != nil {
			return err
		}
		count := int32(n)
		params := []unsafe.Pointer{unsafe.Pointer(&pa), unsafe.Pointer(&pb), unsafe.Pointer(&pc), unsafe.Pointer(&count)}
		if err := f.Launch([3]uint32{(n + 255) / 256, 1, 1}, [3]uint32{256, 1, 1}, 0, 0, params); err != nil {
			return err
		}
		if err := Synchronize(); err != nil {
			return err
		}
		return CopyFromDevice(unsafe.Slice((*byte)(unsafe.Pointer(&got[0])), bytes), pc)
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, got[i], a[i]+b[i])
		}
	}
}

func TestCompileErrorCarriesLog(t *testing.T) {
	d := openOrSkip(t)
	_, err := Compile("this is not CUDA", "bad.cu", d.Major, d.Minor)
	if err == nil {
		t.Fatal("bad source compiled")
	}
	t.Log(err)
}

func TestAllocTooMuchIsAnError(t *testing.T) {
	d := openOrSkip(t)
	err := d.Do(func() error {
		p, err := Alloc(math.MaxInt64 / 2)
		if err == nil {
			Free(p)
		}
		return err
	})
	if !errors.Is(err, ErrorOutOfMemory) {
		t.Fatalf("huge Alloc: %v, want out of memory", err)
	}
}
