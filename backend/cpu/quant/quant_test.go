package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/weights/ggml"
)

// types are the weight types the tests cover: every one MatMul takes.
var types = []ggml.Type{ggml.Q8_0, ggml.Q4_0, ggml.Q4_1, ggml.Q5_0, ggml.Q5_1, ggml.Q4_K, ggml.Q5_K, ggml.Q6_K, ggml.F16, ggml.BF16, ggml.F32}

func TestSupports(t *testing.T) {
	for typ := range ggml.TypeCount + 1 {
		want := slices.Contains(types, typ)
		if Supports(typ) != want {
			t.Errorf("Supports(%s) = %v", typ, !want)
		}
		p := Paths(typ)
		if want != (len(p) > 0) || want && p[len(p)-1] != "go" {
			t.Errorf("Paths(%s) = %v, want the Go kernel last", typ, p)
		}
		if want != (ScratchBytes(typ, 1, 256) > 0) && typ != ggml.F16 && typ != ggml.BF16 && typ != ggml.F32 {
			t.Errorf("ScratchBytes(%s, 1, 256) = %d", typ, ScratchBytes(typ, 1, 256))
		}
	}
}

// randomWeights returns n rows of k values of type t: uniformly random
// bytes, but for the scales, which are normal f16 values of random sign
// (and for F16 and BF16 weights, whose values are normal numbers, some
// of them f16 subnormals).
func randomWeights(r *rand.Rand, t ggml.Type, n, k int) []byte {
	size, _ := t.RowSize(int64(k))
	w := make([]byte, int(size)*n)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	f16 := func(b []byte, v float32) { binary.LittleEndian.PutUint16(b, dtype.F16FromF32(v)) }
	sc := func() float32 { return float32(r.NormFloat64()) * 0.01 }
	for o := 0; o < len(w); o += int(t.TypeSize()) {
		b := w[o : o+int(t.TypeSize())]
		switch t {
		case ggml.Q8_0, ggml.Q4_0, ggml.Q5_0:
			f16(b, sc())
		case ggml.Q4_1, ggml.Q5_1, ggml.Q4_K, ggml.Q5_K:
			f16(b, sc())
			f16(b[2:], sc())
		case ggml.Q6_K:
			f16(b[208:], sc()/8)
		case ggml.F16:
			v := float32(r.NormFloat64())
			if r.IntN(50) == 0 {
				v *= 1e-6 // an f16 subnormal
			}
			f16(b, v)
		case ggml.BF16:
			binary.LittleEndian.PutUint16(b, dtype.BF16FromF32(float32(r.NormFloat64())))
		case ggml.F32:
			binary.LittleEndian.PutUint32(b, math.Float32bits(float32(r.NormFloat64())))
		}
	}
	return w
}

// randomX returns m rows of k activations: normal values, each row at
// its own scale, in some rows a block of zeros, and in each an outlier.
func randomX(r *rand.Rand, m, k int) []float32 {
	x := make([]float32, m*k)
	for i := range m {
		s := float32(math.Pow(10, float64(r.IntN(5)-2)))
		for j := range k {
			x[i*k+j] = float32(r.NormFloat64()) * s
		}
		if k >= 64 && r.IntN(2) == 0 {
			clear(x[i*k+32 : i*k+64])
		}
		x[i*k+r.IntN(k)] *= 20
	}
	return x
}

// implOf is type t's kernel of the given path.
func implOf(t ggml.Type, path string) impl {
	for _, im := range asmImpls(t) {
		if im.path == path {
			return im
		}
	}
	return goImpls[t]
}

// run computes the product with the kernel of the given path.
func run(t *testing.T, typ ggml.Type, path string, x []float32, m, k int, w []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, m*n)
	im := implOf(typ, path)
	scratch := make([]byte, 64+m*actStride(im.kind, k))
	p, err := prepare(y, x, m, k, w, n, typ, scratch, im, true)
	if err != nil {
		t.Fatal(err)
	}
	p.Run(0, n)
	return y
}

// dequantizedX is what the kernels multiply for activation rows x: the
// values of their quantisation, as float64 (x itself for F16 and BF16).
func dequantizedX(typ ggml.Type, x []float32, m, k int) []float64 {
	xd := make([]float64, m*k)
	kind := goImpls[typ].kind
	if kind == kindFloat {
		for i, v := range x[:m*k] {
			xd[i] = float64(v)
		}
		return xd
	}
	a := make([]byte, actStride(kind, k))
	for i := range m {
		row := x[i*k : (i+1)*k]
		if kind == kindQ8_0 {
			quantizeQ8_0(a, row, false)
			q, d, _ := q8Row(a, k)
			for e := range k {
				xd[i*k+e] = float64(int8(q[e])) * float64(d[e/32])
			}
		} else {
			quantizeQ8_K(a, row)
			q, d, _ := qkRow(a, k)
			for e := range k {
				xd[i*k+e] = float64(int8(q[e])) * float64(d[e/256])
			}
		}
	}
	return xd
}

// reference returns the float64 product of the dequantised weights by
// xd, and the sums of the magnitudes of its terms.
func reference(t *testing.T, typ ggml.Type, xd []float64, m, k int, w []byte, n int) (y, mag []float64) {
	t.Helper()
	wd := make([]float32, n*k)
	if err := ggml.Dequantize(typ, wd, w); err != nil {
		t.Fatal(err)
	}
	y, mag = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			var s, a float64
			for e := range k {
				p := float64(wd[j*k+e]) * xd[i*k+e]
				s += p
				a += math.Abs(p)
			}
			y[i*n+j], mag[i*n+j] = s, a
		}
	}
	return y, mag
}

// shapes are the products the accuracy tests take: decode (m = 1) and a
// few rows, k of one block to 4096, n odd and even.
func shapes(typ ggml.Type) (s [][3]int) {
	for _, m := range []int{1, 7} {
		for _, k := range []int{32, 256, 4096} {
			if int64(k)%typ.BlockSize() != 0 {
				continue
			}
			for _, n := range []int{5, 16} {
				s = append(s, [3]int{m, k, n})
			}
		}
	}
	if typ == ggml.F16 || typ == ggml.BF16 {
		s = append(s, [3]int{1, 1, 3}, [3]int{7, 45, 6}, [3]int{2, 1000, 5})
	}
	return s
}

// The kernels compute exactly the product of the dequantised weights by
// the quantised activations, but for float32 rounding: within 1e-5 of
// the sum of the terms' magnitudes, for every kernel.
func TestMatMulMatchesDequantized(t *testing.T) {
	const tol = 1e-5
	for _, typ := range types {
		worst := 0.0
		for _, sh := range shapes(typ) {
			m, k, n := sh[0], sh[1], sh[2]
			r := rand.New(rand.NewPCG(uint64(typ), uint64(m*k*n)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, m, k)
			want, mag := reference(t, typ, dequantizedX(typ, x, m, k), m, k, w, n)
			for _, path := range Paths(typ) {
				y := run(t, typ, path, x, m, k, w, n)
				for i := range y {
					e := math.Abs(float64(y[i])-want[i]) / max(mag[i], math.SmallestNonzeroFloat64)
					worst = max(worst, e)
					if e > tol {
						t.Errorf("%s %s m=%d k=%d n=%d: y[%d] = %g, want %g (error %.2g of the magnitude)", typ, path, m, k, n, i, y[i], want[i], e)
						break
					}
				}
			}
		}
		t.Logf("%-5s largest error %.2g of the terms' magnitude", typ, worst)
	}
}

// Against the product with the activations as they are, the error is
// that of 8-bit activations: a fraction of the terms' magnitude that
// stays below tolerance (0 for F16 and BF16, which take x as it is, but
// for float32 rounding).
func TestMatMulMatchesFloatActivations(t *testing.T) {
	for _, typ := range types {
		tol := 1e-2
		if goImpls[typ].kind == kindFloat {
			tol = 1e-5
		}
		var worst, sumSq, refSq float64
		m, k, n := 7, 4096, 16
		r := rand.New(rand.NewPCG(uint64(typ), 99))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		xd := make([]float64, len(x))
		for i, v := range x {
			xd[i] = float64(v)
		}
		want, mag := reference(t, typ, xd, m, k, w, n)
		y := run(t, typ, Paths(typ)[0], x, m, k, w, n)
		for i := range y {
			d := float64(y[i]) - want[i]
			worst = max(worst, math.Abs(d)/mag[i])
			sumSq += d * d
			refSq += want[i] * want[i]
		}
		if worst > tol {
			t.Errorf("%s: error %.2g of the terms' magnitude, want at most %g", typ, worst, tol)
		}
		t.Logf("%-5s largest error %.2g of the terms' magnitude; ‖y−ref‖/‖ref‖ = %.2g", typ, worst, math.Sqrt(sumSq/refSq))
	}
}

// Every assembly kernel returns the Go kernel's bits.
func TestPathsAgree(t *testing.T) {
	for _, typ := range types {
		paths := Paths(typ)
		if len(paths) == 1 {
			t.Logf("%s: only the Go kernel here", typ)
			continue
		}
		ss := shapes(typ)
		ss = append(ss, [3]int{3, 512, 33}, [3]int{1, 2048, 7})
		if typ.BlockSize() == 32 {
			ss = append(ss, [3]int{2, 96, 3}, [3]int{2, 224, 4})
		}
		for _, sh := range ss {
			m, k, n := sh[0], sh[1], sh[2]
			r := rand.New(rand.NewPCG(uint64(typ), uint64(m*k*n+1)))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, m, k)
			want := run(t, typ, "go", x, m, k, w, n)
			for _, path := range paths[:len(paths)-1] {
				y := run(t, typ, path, x, m, k, w, n)
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(want[i]) {
						t.Errorf("%s %s m=%d k=%d n=%d: y[%d] = %g, the Go kernel %g", typ, path, m, k, n, i, y[i], want[i])
						break
					}
				}
			}
		}
	}
}

// extremeWeights is n rows of k values of typ, every byte fill but the
// scales (and Q4_K's minimums), drawn by randomWeights from the seed, and
// the high bytes of F16 and BF16 values, masked: all stay finite (0x7f7f
// and 0xffff are NaN as f16).
func extremeWeights(typ ggml.Type, n, k int, fill byte, seed uint64) []byte {
	size, _ := typ.RowSize(int64(k))
	w := make([]byte, n*int(size))
	for i := range w {
		w[i] = fill
	}
	ws := randomWeights(rand.New(rand.NewPCG(uint64(fill), seed)), typ, n, k)
	for o := 0; o < len(w); o += int(typ.TypeSize()) {
		switch typ {
		case ggml.Q6_K:
			copy(w[o+208:o+210], ws[o+208:])
		case ggml.F16, ggml.BF16:
			w[o+1] &= 0x3b
		default:
			copy(w[o:o+4], ws[o:o+4])
		}
	}
	return w
}

// Extreme blocks: every weight byte at its largest or smallest value,
// activations at the limits of their range, all zero, or one large value
// in a block of tiny ones.
func TestPathsAgreeOnExtremes(t *testing.T) {
	const m, k, n = 3, 512, 4
	x := make([]float32, m*k)
	for e := range k {
		x[e] = 1e3 * float32(1-2*(e&1)) // ±127 after quantisation
		x[2*k+e] = 1e-30
	}
	x[2*k+5] = 1e30
	for _, typ := range types {
		for _, fill := range []byte{0x00, 0xff, 0x80, 0x7f} {
			w := extremeWeights(typ, n, k, fill, 5)
			want := run(t, typ, "go", x, m, k, w, n)
			for _, path := range Paths(typ) {
				y := run(t, typ, path, x, m, k, w, n)
				if !slices.EqualFunc(y, want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%s %s, bytes %#x: %v, the Go kernel %v", typ, path, fill, y, want)
				}
			}
		}
	}
}

// Weights quantised by ggml itself (the fixtures of weights/ggml: four
// rows of 256) give the product of their dequantised values.
func TestGGMLQuantizedWeights(t *testing.T) {
	for _, typ := range types {
		w, err := os.ReadFile(fmt.Sprintf("../../../testdata/ggml/%s_quantised.bin", typ))
		if err != nil {
			t.Fatal(err)
		}
		const m, k, n = 3, 256, 4
		r := rand.New(rand.NewPCG(uint64(typ), 7))
		x := randomX(r, m, k)
		want, mag := reference(t, typ, dequantizedX(typ, x, m, k), m, k, w, n)
		for _, path := range Paths(typ) {
			y := run(t, typ, path, x, m, k, w, n)
			for i := range y {
				if e := math.Abs(float64(y[i])-want[i]) / mag[i]; e > 1e-5 {
					t.Errorf("%s %s: y[%d] = %g, want %g", typ, path, i, y[i], want[i])
				}
			}
		}
	}
}

func TestQuantizeQ8_0(t *testing.T) {
	x := make([]float32, 64)
	for i := range 32 {
		x[i] = float32(i-16) / 4 // max |x| = 4: d = 4/127
	}
	x[40] = -1e-3 // the second block: one value, all others 0
	a := make([]byte, actStride(kindQ8_0, 64))
	quantizeQ8_0(a, x, false)
	q, d, s := q8Row(a, 64)
	if want := half(dtype.F16FromF32(4.0 / 127)); d[0] != want {
		t.Errorf("d = %g, want %g", d[0], want)
	}
	sum := 0
	for i := range 32 {
		want := int8(math.RoundToEven(float64(x[i] * (127.0 / 4))))
		if int8(q[i]) != want {
			t.Errorf("q[%d] = %d, want %d", i, int8(q[i]), want)
		}
		sum += int(want)
	}
	if int8(q[0]) != -127 || s[0] != d[0]*float32(sum) {
		t.Errorf("q[0] = %d, s = %g (sum %d)", int8(q[0]), s[0], sum)
	}
	if int8(q[40]) != -127 || int8(q[41]) != 0 {
		t.Errorf("second block: %d %d", int8(q[40]), int8(q[41]))
	}
	// 0.5·(127/amax) is a tie: to even.
	clear(x)
	x[0], x[1], x[2] = 127, 0.5, 1.5
	quantizeQ8_0(a, x, false)
	if q[0] != 127 || q[1] != 0 || q[2] != 2 {
		t.Errorf("ties: %v", q[:3])
	}
}

func TestQuantizeQ8_K(t *testing.T) {
	x := make([]float32, 512)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 256 {
		x[i] = float32(r.NormFloat64())
	}
	x[100] = 5 // the largest magnitude, positive: it maps to −127, d < 0
	a := make([]byte, actStride(kindQ8_K, 512))
	quantizeQ8_K(a, x)
	q, d, sums := qkRow(a, 512)
	if int8(q[100]) != -127 || d[0] != 1/(-127/float32(5)) || d[0] >= 0 {
		t.Errorf("q[100] = %d, d = %g", int8(q[100]), d[0])
	}
	for g := range 16 {
		s := 0
		for _, v := range q[32*g : 32*g+32] {
			s += int(int8(v))
		}
		if int(sums[g]) != s {
			t.Errorf("sum %d = %d, want %d", g, sums[g], s)
		}
	}
	for i := 256; i < 512; i++ {
		if q[i] != 0 {
			t.Fatalf("a block of zeros has q[%d] = %d", i, q[i])
		}
	}
	if d[1] != 0 {
		t.Errorf("a block of zeros has d = %g", d[1])
	}
	for i := range 256 {
		if e := math.Abs(float64(d[0])*float64(int8(q[i])) - float64(x[i])); e > math.Abs(float64(d[0]))/2*1.0001 {
			t.Errorf("x[%d] = %g comes back as %g", i, x[i], float64(d[0])*float64(int8(q[i])))
		}
	}
}

// Workers running ranges of Split at once fill y as one Run does.
func TestSplitWorkers(t *testing.T) {
	for _, typ := range []ggml.Type{ggml.Q4_0, ggml.Q6_K, ggml.F16} {
		const m, k, n = 3, 512, 101
		r := rand.New(rand.NewPCG(2, 3))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		want := make([]float32, m*n)
		scratch := make([]byte, ScratchBytes(typ, m, k))
		if err := MatMul(want, x, m, k, w, n, typ, scratch); err != nil {
			t.Fatal(err)
		}
		for _, parts := range []int{1, 2, 3, 4, 7, 16} {
			y := make([]float32, m*n)
			p, err := Prepare(y, x, m, k, w, n, typ, scratch)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			next := 0
			for i := range parts {
				lo, hi := Split(n, parts, i)
				if lo != next || hi < lo || (hi != n && hi%16 != 0) {
					t.Fatalf("Split(%d, %d, %d) = %d, %d after %d", n, parts, i, lo, hi, next)
				}
				next = hi
				wg.Go(func() { p.Run(lo, hi) })
			}
			wg.Wait()
			if next != n {
				t.Fatalf("Split(%d, %d, ·) ends at %d", n, parts, next)
			}
			if !slices.Equal(y, want) {
				t.Errorf("%s with %d workers differs", typ, parts)
			}
		}
	}
	if lo, hi := Split(10, 4, 4); lo != 0 || hi != 0 {
		t.Errorf("Split past the last part = %d, %d", lo, hi)
	}
}

// Nothing allocates, one output at a time (m = 2) or in tiles (m = 9).
func TestMatMulAllocatesNothing(t *testing.T) {
	for _, typ := range types {
		for _, m := range []int{2, 9} {
			const k, n = 256, 8
			r := rand.New(rand.NewPCG(4, 4))
			w := randomWeights(r, typ, n, k)
			x := randomX(r, m, k)
			y := make([]float32, m*n)
			scratch := make([]byte, ScratchBytes(typ, m, k))
			allocs := testing.AllocsPerRun(10, func() {
				if err := MatMul(y, x, m, k, w, n, typ, scratch); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s m=%d: %v allocations a call", typ, m, allocs)
			}
		}
	}
}

// Any alignment of scratch serves; the rows start 64-byte aligned.
func TestScratchAlignment(t *testing.T) {
	const m, k, n = 2, 256, 4
	r := rand.New(rand.NewPCG(5, 5))
	w := randomWeights(r, ggml.Q4_K, n, k)
	x := randomX(r, m, k)
	buf := make([]byte, ScratchBytes(ggml.Q4_K, m, k)+64)
	var want []float32
	for off := range 64 {
		y := make([]float32, m*n)
		if err := MatMul(y, x, m, k, w, n, ggml.Q4_K, buf[off:off+ScratchBytes(ggml.Q4_K, m, k)]); err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = y
		} else if !slices.Equal(y, want) {
			t.Fatalf("offset %d: %v, want %v", off, y, want)
		}
	}
}

func TestMatMulErrors(t *testing.T) {
	y, x := make([]float32, 8), make([]float32, 512)
	w := make([]byte, 4*144)
	s := make([]byte, ScratchBytes(ggml.Q4_K, 2, 256))
	tests := []struct {
		name    string
		m, k, n int
		t       ggml.Type
		y, x    []float32
		w, s    []byte
		err     string
	}{
		{"type", 2, 256, 4, ggml.Q2_K, y, x, w, s, "no product with q2_K"},
		{"k", 2, 100, 4, ggml.Q4_K, y, x, w, s, "not whole blocks"},
		{"negative", -1, 256, 4, ggml.Q4_K, y, x, w, s, "negative"},
		{"y", 2, 256, 4, ggml.Q4_K, y[:7], x, w, s, "y holds 7"},
		{"x", 2, 256, 4, ggml.Q4_K, y, x[:511], w, s, "x holds 511"},
		{"w", 2, 256, 4, ggml.Q4_K, y, x, w[:575], s, "w holds 575"},
		{"scratch", 2, 256, 4, ggml.Q4_K, y, x, w, s[:len(s)-1], "scratch holds"},
	}
	for _, tt := range tests {
		err := MatMul(tt.y, tt.x, tt.m, tt.k, tt.w, tt.n, tt.t, tt.s)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error with %q", tt.name, err, tt.err)
		}
	}
	// Empty products are fine: k = 0 gives zeros.
	y[0] = 1
	if err := MatMul(y, nil, 2, 0, nil, 4, ggml.Q4_K, nil); err != nil || y[0] != 0 {
		t.Errorf("k = 0: %v, y[0] = %g", err, y[0])
	}
	if err := MatMul(nil, nil, 0, 256, w, 4, ggml.Q4_K, nil); err != nil {
		t.Errorf("m = 0: %v", err)
	}
}

// GODEBUG=cpu.avx512f=off (or avx2=off) must take those kernels away.
func TestGODEBUG(t *testing.T) {
	godebug := os.Getenv("GODEBUG")
	for _, typ := range types {
		p := Paths(typ)
		if strings.Contains(godebug, "cpu.avx512f=off") && slices.Contains(p, "avx512") {
			t.Errorf("%s: %v with AVX-512F switched off", typ, p)
		}
		if strings.Contains(godebug, "cpu.avx2=off") && slices.Contains(p, "avx2") {
			t.Errorf("%s: %v with AVX2 switched off", typ, p)
		}
		if p[0] != impls[typ].path {
			t.Errorf("%s: MatMul runs %s, Paths says %v", typ, impls[typ].path, p)
		}
		off := strings.Contains(godebug, "cpu.avx512f=off") || strings.Contains(godebug, "cpu.avx2=off")
		if off && (AMX(typ) || WorkBytes(typ, 64, 256) != 0) {
			t.Errorf("%s: the AMX tiles with AVX-512 switched off", typ)
		}
	}
	t.Logf("kernels: %v, AMX %v", Paths(ggml.Q4_0), AMX(ggml.Q4_0))
}

// TestPrepared: a product taken with Prepared over activations an earlier
// Prepare quantised, its weight rows computed in two shares, gives what
// MatMul gives, bit for bit.
func TestPrepared(t *testing.T) {
	for _, typ := range types {
		sh := shapes(typ)[len(shapes(typ))-1]
		m, k, n := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(uint64(typ), 9))
		w := randomWeights(r, typ, n, k)
		x := randomX(r, m, k)
		scratch := make([]byte, ScratchBytes(typ, m, k))
		want := make([]float32, m*n)
		if err := MatMul(want, x, m, k, w, n, typ, scratch); err != nil {
			t.Fatal(err)
		}
		clear(scratch)
		got := make([]float32, m*n)
		if _, err := Prepare(got, x, m, k, w, n, typ, scratch); err != nil {
			t.Fatal(err)
		}
		for _, part := range [][2]int{{0, n / 2}, {n / 2, n}} {
			p, err := Prepared(got, x, m, k, w, n, typ, scratch)
			if err != nil {
				t.Fatal(err)
			}
			p.Run(part[0], part[1])
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s m=%d k=%d n=%d: y[%d] = %g, want %g", typ, m, k, n, i, got[i], want[i])
			}
		}
	}
}
