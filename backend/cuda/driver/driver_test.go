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

// kernelsOf compiles src with NVRTC, loads it (unloaded when t ends) and
// returns its kernels named in kernels.
func kernelsOf(t testing.TB, d *Device, src, name string, kernels ...string) []Function {
	t.Helper()
	cubin, err := Compile(src, name, d.Major, d.Minor)
	if err != nil {
		t.Fatal(err)
	}
	fs := make([]Function, len(kernels))
	var m Module
	err = d.Do(func() error {
		if m, err = LoadModule(cubin); err != nil {
			return err
		}
		for i, k := range kernels {
			if fs[i], err = m.Function(k); err != nil {
				return err
			}
		}
		return nil
	})
	if m != 0 {
		t.Cleanup(func() { d.Do(m.Unload) })
	}
	if err != nil {
		t.Fatal(err)
	}
	return fs
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
	f := kernelsOf(t, d, addSource, "add.cu", "add")[0]
	err := d.Do(func() error {
		bytes := int64(4 * n)
		var err error
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

const fillSource = `
extern "C" __global__ void fill(float* y, float v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = v;
}
extern "C" __global__ void fill_twice(float* y, float v, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) y[i] = 2 * v;
}
`

// kernelGraphOf loads fillSource and builds a KernelGraph of nodes
// launches of fill, launch i writing float(i) into the ith slice of y
// (n floats each), on the owner thread.
func kernelGraphOf(t testing.TB, d *Device, nodes, n int) (k *KernelGraph, fill, twice Function, y Ptr) {
	t.Helper()
	fs := kernelsOf(t, d, fillSource, "fill.cu", "fill", "fill_twice")
	fill, twice = fs[0], fs[1]
	err := d.Do(func() error {
		var err error
		if y, err = Alloc(int64(4 * nodes * n)); err != nil {
			return err
		}
		if k, err = NewKernelGraph(); err != nil {
			return err
		}
		for i := range nodes {
			p, v, count := y+Ptr(4*i*n), float32(i), int32(n)
			params := []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&count)}
			if err := k.Add(fill, [3]uint32{uint32((n + 255) / 256), 1, 1}, [3]uint32{256, 1, 1}, 0, params); err != nil {
				return err
			}
		}
		return k.Instantiate()
	})
	if errors.Is(err, ErrNoGraphs) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Do(func() error { k.Destroy(); return Free(y) }) })
	return k, fill, twice, y
}

// TestKernelGraphSetKernel builds a graph of launches, runs it, gives
// some of its launches new functions, grids and arguments, and runs it
// again: each slice holds what its launch last wrote.
func TestKernelGraphSetKernel(t *testing.T) {
	d := openOrSkip(t)
	const nodes, n = 6, 1000
	k, _, twice, y := kernelGraphOf(t, d, nodes, n)
	read := func() []float32 {
		out := make([]float32, nodes*n)
		if err := d.Do(func() error {
			if err := k.Launch(0); err != nil {
				return err
			}
			if err := Synchronize(); err != nil {
				return err
			}
			return CopyFromDevice(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*len(out)), y)
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := read()
	for i := range nodes {
		if got[i*n] != float32(i) || got[i*n+n-1] != float32(i) {
			t.Fatalf("slice %d holds %v … %v, want %d", i, got[i*n], got[i*n+n-1], i)
		}
	}
	// Launch 2 writes 2·7 into its first half only; launch 4 writes 2·9
	// into slice 5, which launch 5, after it, then writes 5 into: slice 4
	// is left as the memset left it.
	err := d.Do(func() error {
		p, v, count := y+Ptr(4*2*n), float32(7), int32(n/2)
		if err := k.SetKernel(2, twice, [3]uint32{uint32((n/2 + 127) / 128), 1, 1}, [3]uint32{128, 1, 1}, 0, []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&count)}); err != nil {
			return err
		}
		p, v, count = y+Ptr(4*5*n), 9, int32(n)
		return k.SetKernel(4, twice, [3]uint32{uint32((n + 255) / 256), 1, 1}, [3]uint32{256, 1, 1}, 0, []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&count)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Do(func() error { return Memset(y, 0, int64(4*nodes*n)) }); err != nil {
		t.Fatal(err)
	}
	got = read()
	for i := range nodes {
		for _, j := range []int{0, n/2 - 1, n / 2, n - 1} {
			w := float32(i)
			switch {
			case i == 2 && j < n/2:
				w = 14
			case i == 2 || i == 4:
				w = 0
			}
			if got[i*n+j] != w {
				t.Errorf("slice %d, value %d: %v, want %v", i, j, got[i*n+j], w)
			}
		}
	}
}

// BenchmarkKernelGraphSetKernel times a graph of 170 launches (a
// ResNet-50 run's count) replayed as it is, and replayed after every
// launch has been given new arguments: the difference is what setting
// a run's launches anew costs.
func BenchmarkKernelGraphSetKernel(b *testing.B) {
	d := openOrSkip(b)
	const nodes, n = 170, 256
	k, fill, _, y := kernelGraphOf(b, d, nodes, n)
	stream := Stream(0)
	for _, set := range []bool{false, true} {
		name := "replay"
		if set {
			name = "set-then-replay"
		}
		b.Run(name, func(b *testing.B) {
			v, count := float32(0), int32(n)
			p := y
			params := []unsafe.Pointer{unsafe.Pointer(&p), unsafe.Pointer(&v), unsafe.Pointer(&count)}
			err := d.Do(func() error {
				for it := range b.N {
					if set {
						for i := range nodes {
							p, v = y+Ptr(4*i*n), float32(it)
							if err := k.SetKernel(i, fill, [3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, params); err != nil {
								return err
							}
						}
					}
					if err := k.Launch(stream); err != nil {
						return err
					}
					if err := stream.Synchronize(); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
