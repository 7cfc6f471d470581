package vmath

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// vmathPaths runs f once with each implementation of the vector math: the
// assembly (where the CPU has it) and the Go code.
func vmathPaths(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	saved, saved512 := Asm, Wide512
	defer func() { Asm, Wide512 = saved, saved512 }()
	for _, path := range []string{"avx512", "asm", "go"} {
		switch path {
		case "avx512":
			if !saved512 {
				continue
			}
			Asm, Wide512 = true, true
		case "asm":
			if !hasAsm {
				continue
			}
			Asm, Wide512 = true, false
		default:
			Asm, Wide512 = false, false
		}
		t.Run(path, f)
	}
}

// ordered maps a float32 to an integer that is monotonic in its value, so
// that the difference of two is their distance in ulps.
func ordered(x float32) int64 {
	b := int64(math.Float32bits(x))
	if b&0x80000000 != 0 {
		return -(b & 0x7fffffff)
	}
	return b
}

// ulps is the distance between got and want (want rounded to float32).
func ulps(got float32, want float64) int64 {
	d := ordered(got) - ordered(float32(want))
	if d < 0 {
		d = -d
	}
	return d
}

// sweepInputs returns float32 values of every magnitude: a stride through
// all finite bit patterns of both signs, plus edge cases.
func sweepInputs() []float32 {
	xs := []float32{
		0, float32(math.Copysign(0, -1)), math.Float32frombits(1), -math.Float32frombits(1),
		1e-40, -1e-40, 1e-38, -1e-38, 1e-30, -1e-30, 1e-7, -1e-7,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32,
		88.72283, 88.72284, 88.7229, 89, 89.5, 100, -87.33, -87.34, -100, -103.9, -103.98, -104, -110,
		0.625, -0.625, 0.62499994, 0.875, -0.875, 0.87499994, 3.92, 3.93, 3.94, 5, -5, 9, 10, 20, -20,
		0.5, -0.5, 1, -1, 2, -2, 44, -44, 45,
		// The exponential's lower clamp and its neighbours.
		cExpLo, math.Nextafter32(cExpLo, 0), math.Nextafter32(cExpLo, -200), -cExpLo,
	}
	for b := uint32(0); b < 0x7f800000; b += 997 {
		x := math.Float32frombits(b)
		xs = append(xs, x, -x)
	}
	// A dense uniform sweep where the functions are not trivially flat.
	for x := float32(-12); x <= 12; x += 1.0 / 4096 {
		xs = append(xs, x)
	}
	return xs
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// geluTanh64 is GELU's tanh form 0.5·x·(1 + tanh(u)), u = √(2/π)·(x +
// 0.044715·x³), evaluated where 1 + tanh(u) loses no precision in float64,
// and as the equal x·e^(2u)/(1 + e^(2u)) below.
func geluTanh64(x float64) float64 {
	u := math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x)
	if u > -2 {
		return 0.5 * x * (1 + math.Tanh(u))
	}
	e := math.Exp(2 * u)
	return x * e / (1 + e)
}

func gelu64(x float64) float64 {
	if x < 0 {
		return 0.5 * x * math.Erfc(-x/math.Sqrt2)
	}
	return 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
}

// TestVMathAccuracy checks the vector functions against float64 math over
// all magnitudes, including ±0, subnormals, ±Inf and NaN.
func TestVMathAccuracy(t *testing.T) {
	xs := sweepInputs()
	for _, tc := range []struct {
		name    string
		f       func(d, s []float32)
		ref     func(float64) float64
		maxUlps int64
		abs     func(x float64) float64 // extra absolute tolerance
	}{
		{"exp", Exps, math.Exp, 1, nil},
		{"sigmoid", Sigmoids, sigmoid64, 2, nil},
		{"tanh", Tanhs, math.Tanh, 2, nil},
		{"erf", Erfs, math.Erf, 2, nil},
		// For x < −1.24, GELU is x/2·erfc(|x|/√2) = x/2·e^(−x²/2)·R(t): the
		// rounding of t = 1/(1+a/2) (about 1 ulp) is amplified about
		// twofold by R's slope, and exp, R's polynomial and three products
		// add theirs: 6 ulp. Its erfc is taken as 0 beyond |x|/√2 > 9.3,
		// where the result is below the smallest normal float32.
		{"gelu", Gelus, gelu64, 6, func(float64) float64 { return 0x1p-126 }},
		// The tanh form's argument z = 2·√(2/π)·(x + 0.044715·x³) takes four
		// float32 roundings (two constants, two operations), which move
		// sigmoid(z) by up to |z|·2^-22 relative: an error of the formula
		// in float32, not of sigmoid. Subnormal results are bounded as if
		// they were the smallest normal.
		{"gelu_tanh", GeluTanhs, geluTanh64, 2, func(x float64) float64 {
			return (math.Abs(geluTanh64(x)) + 0x1p-126) * math.Abs(2*math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x)) * 0x1p-22
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmathPaths(t, func(t *testing.T) {
				got := make([]float32, len(xs))
				tc.f(got, xs)
				var worst int64
				var worstX float32
				bad := 0
				for i, x := range xs {
					want := tc.ref(float64(x))
					g := got[i]
					if math.IsNaN(want) || math.IsNaN(float64(g)) {
						if math.IsNaN(want) != math.IsNaN(float64(g)) {
							t.Errorf("%s(%g) = %g, want %g", tc.name, x, g, want)
						}
						continue
					}
					u := ulps(g, want)
					if u > worst && math.Abs(want) >= 0x1p-126 {
						worst, worstX = u, x // among normal results
					}
					if u <= tc.maxUlps {
						continue
					}
					if tc.abs != nil && math.Abs(float64(g)-want) <= tc.abs(float64(x))+float64(tc.maxUlps)*ulpOf(want) {
						continue
					}
					if bad++; bad <= 10 {
						t.Errorf("%s(%g) = %g, want %g (%d ulp)", tc.name, x, g, want, u)
					}
				}
				t.Logf("%s: %d inputs, worst %d ulp (normal results) at %g", tc.name, len(xs), worst, worstX)
			})
		})
	}
}

// ulpOf is the spacing of float32 values at |v|.
func ulpOf(v float64) float64 {
	f := float32(math.Abs(v))
	return float64(math.Nextafter32(f, float32(math.Inf(1))) - f)
}

// TestVMathTails runs every vector function on lengths 0..40, in place and
// out of place, and compares each element with the whole-slice result of
// the same inputs (so that tails agree with the vector body) and with the
// float64 reference.
func TestVMathTails(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	src := make([]float32, 64)
	for i := range src {
		src[i] = float32(rng.NormFloat64() * 4)
	}
	for _, tc := range []struct {
		name string
		f    func(d, s []float32)
		ref  func(float64) float64
	}{
		{"exp", Exps, math.Exp}, {"sigmoid", Sigmoids, sigmoid64}, {"tanh", Tanhs, math.Tanh},
		{"erf", Erfs, math.Erf}, {"gelu", Gelus, gelu64}, {"gelu_tanh", GeluTanhs, geluTanh64},
		{"silu", Silus, func(x float64) float64 { return x * sigmoid64(x) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmathPaths(t, func(t *testing.T) {
				full := make([]float32, len(src))
				tc.f(full, src)
				for n := 0; n <= 40; n++ {
					for _, inPlace := range []bool{false, true} {
						d := make([]float32, n+1)
						d[n] = 12345 // guard: must stay untouched
						s := append([]float32(nil), src[:n]...)
						if inPlace {
							copy(d, s)
							s = d[:n]
						}
						tc.f(d[:n], s)
						if d[n] != 12345 {
							t.Fatalf("n=%d: wrote past the end", n)
						}
						for i := 0; i < n; i++ {
							if d[i] != full[i] {
								t.Errorf("n=%d in place %v: [%d] = %g, whole-slice result %g", n, inPlace, i, d[i], full[i])
							}
							if u := ulps(d[i], tc.ref(float64(src[i]))); u > 2 && math.Abs(float64(d[i])-tc.ref(float64(src[i]))) > 1e-6*math.Abs(float64(src[i])) {
								t.Errorf("n=%d: %s(%g) = %g, want %g", n, tc.name, src[i], d[i], tc.ref(float64(src[i])))
							}
						}
					}
				}
			})
		})
	}
}

// TestVMath512SameBits wants the sixteen-lane kernels to give the bits of
// the eight-lane ones over the sweep: a fused epilogue and the operator's
// own kernel cut a tensor into different pieces, so every element must
// come out the same whichever kernel it meets.
func TestVMath512SameBits(t *testing.T) {
	if !Wide512 {
		t.Skip("no AVX-512 on this machine")
	}
	defer func() { Wide512 = true }()
	xs := sweepInputs()
	for _, tc := range []struct {
		name string
		f    func(d, s []float32)
	}{{"sigmoid", Sigmoids}, {"silu", Silus}, {"tanh", Tanhs}, {"erf", Erfs}} {
		a, b := make([]float32, len(xs)), make([]float32, len(xs))
		Wide512 = true
		tc.f(a, xs)
		Wide512 = false
		tc.f(b, xs)
		for i := range xs {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s(%g): %g with AVX-512, %g with AVX2", tc.name, xs[i], a[i], b[i])
			}
		}
	}
	// ExpSum on rows of every length to 80 of the sweep's finite
	// values, each less its row's largest (softmax's use): the same
	// exponentials and the same float64 sum.
	var fin []float32
	for _, x := range xs {
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
			fin = append(fin, x)
		}
	}
	// And attention-like rows: scores of a few units either way.
	rng := rand.New(rand.NewSource(11))
	for range 400 {
		fin = append(fin, float32(rng.NormFloat64()*3))
	}
	for n := 1; n <= 80; n++ {
		for off := 0; off+n <= len(fin); off += n + 13 {
			row := fin[off : off+n]
			m := Max(row)
			a, b := make([]float32, n), make([]float32, n)
			Wide512 = true
			sa := ExpSum(a, row, m)
			Wide512 = false
			sb := ExpSum(b, row, m)
			if math.Float64bits(sa) != math.Float64bits(sb) {
				t.Fatalf("ExpSum of %d values from %d: sum %g with AVX-512, %g with AVX2", n, off, sa, sb)
			}
			for i := range a {
				if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
					t.Fatalf("ExpSum of %d values from %d: [%d] %g with AVX-512, %g with AVX2", n, off, i, a[i], b[i])
				}
			}
		}
	}
}

// TestSiluIsSigmoidTimesX wants Silus to give, on every path, the bits of
// Sigmoid followed by Mul, the two steps an epilogue fuses into it.
func TestSiluIsSigmoidTimesX(t *testing.T) {
	xs := sweepInputs()
	vmathPaths(t, func(t *testing.T) {
		got, sig := make([]float32, len(xs)), make([]float32, len(xs))
		Silus(got, xs)
		Sigmoids(sig, xs)
		for i, x := range xs {
			want := x * sig[i]
			if math.Float32bits(got[i]) != math.Float32bits(want) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(want))) {
				t.Fatalf("silu(%g) = %g, x·sigmoid(x) = %g", x, got[i], want)
			}
		}
	})
}

// TestVMathPathsAgree compares the assembly with the Go code element by
// element over the sweep.
func TestVMathPathsAgree(t *testing.T) {
	if !hasAsm {
		t.Skip("no assembly kernels on this machine")
	}
	saved := Asm
	defer func() { Asm = saved }()
	xs := sweepInputs()
	// The GELUs are left out: where their error is amplified (the tanh
	// form's rounded argument, the erfc tail), the paths differ by the
	// FMAs of the assembly; TestVMathAccuracy bounds both against float64.
	for _, tc := range []struct {
		name string
		f    func(d, s []float32)
	}{{"exp", Exps}, {"sigmoid", Sigmoids}, {"tanh", Tanhs}, {"tanh", Tanhs}, {"erf", Erfs}} {
		a, g := make([]float32, len(xs)), make([]float32, len(xs))
		Asm = true
		tc.f(a, xs)
		Asm = false
		tc.f(g, xs)
		var worst int64
		for i := range xs {
			if math.IsNaN(float64(a[i])) && math.IsNaN(float64(g[i])) {
				continue
			}
			d := ordered(a[i]) - ordered(g[i])
			if d < 0 {
				d = -d
			}
			worst = max(worst, d)
		}
		t.Logf("%s: assembly and Go differ by at most %d ulp", tc.name, worst)
		if worst > 2 {
			t.Errorf("%s: assembly and Go differ by %d ulp", tc.name, worst)
		}
	}
}

// TestVMathReductions checks the reductions and the affine loops against
// naive float64 loops.
func TestVMathReductions(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	lengths := []int{1000, 1023}
	for n := 0; n <= 40; n++ {
		lengths = append(lengths, n)
	}
	vmathPaths(t, func(t *testing.T) {
		for _, n := range lengths {
			x := make([]float32, n)
			sc := make([]float32, n)
			bi := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64()*3 + 1)
				sc[i] = float32(rng.NormFloat64())
				bi[i] = float32(rng.NormFloat64())
			}
			name := fmt.Sprintf("n=%d", n)

			wantMax := math.Inf(-1)
			var sum, ssd float64
			m := float32(0.75)
			for _, v := range x {
				wantMax = math.Max(wantMax, float64(v))
				sum += float64(v)
				dv := float64(v) - float64(m)
				ssd += dv * dv
			}
			if got := Max(x); float64(got) != wantMax {
				t.Errorf("%s: Max = %g, want %g", name, got, wantMax)
			}
			if got := Sum(x); math.Abs(got-sum) > 1e-12*(1+math.Abs(sum))*float64(n) {
				t.Errorf("%s: Sum = %g, want %g", name, got, sum)
			}
			if got := SumSqDev(x, m); math.Abs(got-ssd) > 1e-6*ssd {
				t.Errorf("%s: SumSqDev = %g, want %g", name, got, ssd)
			}

			mx := Max(x)
			e := make([]float32, n)
			var esum float64
			for _, v := range x {
				esum += math.Exp(float64(v) - float64(mx))
			}
			if got := ExpSum(e, x, mx); math.Abs(got-esum) > 1e-6*esum {
				t.Errorf("%s: ExpSum = %g, want %g", name, got, esum)
			}
			for i, v := range x {
				if u := ulps(e[i], math.Exp(float64(v-mx))); u > 1 {
					t.Errorf("%s: ExpSum wrote e^(%g) = %g (%d ulp)", name, v-mx, e[i], u)
				}
			}

			y := make([]float32, n)
			Scale(y, x, 0.3)
			for i, v := range x {
				if y[i] != v*0.3 {
					t.Errorf("%s: Scale[%d] = %g, want %g", name, i, y[i], v*0.3)
				}
			}

			mean, inv := float32(0.9), float32(1.7)
			NormAffine(y, x, sc, bi, mean, inv)
			for i, v := range x {
				want := (float64(v)-float64(mean))*float64(inv)*float64(sc[i]) + float64(bi[i])
				tol := 4 * 0x1p-24 * (math.Abs((float64(v)-float64(mean))*float64(inv)*float64(sc[i])) + math.Abs(float64(bi[i])) + math.Abs(float64(v)*float64(inv*sc[i])))
				if math.Abs(float64(y[i])-want) > tol {
					t.Errorf("%s: NormAffine[%d] = %g, want %g", name, i, y[i], want)
				}
			}
		}
		// NaNs are ignored by Max, as by the scalar loop it replaces.
		nan := float32(math.NaN())
		x := []float32{nan, 1, 2, nan, 3, -1, nan, 0, nan, 7, nan}
		if got := Max(x); got != 7 {
			t.Errorf("Max with NaNs = %g, want 7", got)
		}
		if got := Max([]float32{nan, nan, nan, nan, nan, nan, nan, nan, nan}); !math.IsInf(float64(got), -1) {
			t.Errorf("Max of NaNs = %g, want -Inf", got)
		}
	})
}

// Benchmarks of the vector kernels on 64 Ki elements (elements/s is
// reported as MB/s/4 by SetBytes).

const vbenchN = 1 << 16

func benchVMath(b *testing.B, f func(d, s []float32)) {
	s := make([]float32, vbenchN)
	rng := rand.New(rand.NewSource(3))
	for i := range s {
		s[i] = float32(rng.NormFloat64() * 3)
	}
	d := make([]float32, vbenchN)
	b.SetBytes(4 * vbenchN)
	b.ResetTimer()
	for range b.N {
		f(d, s)
	}
	b.ReportMetric(float64(b.N)*vbenchN/b.Elapsed().Seconds()/1e6, "Melem/s")
}

func BenchmarkVExp(b *testing.B)      { benchVMath(b, Exps) }
func BenchmarkVSigmoid(b *testing.B)  { benchVMath(b, Sigmoids) }
func BenchmarkVSilu(b *testing.B)     { benchVMath(b, Silus) }
func BenchmarkVTanh(b *testing.B)     { benchVMath(b, Tanhs) }
func BenchmarkVErf(b *testing.B)      { benchVMath(b, Erfs) }
func BenchmarkVGelu(b *testing.B)     { benchVMath(b, Gelus) }
func BenchmarkVGeluTanh(b *testing.B) { benchVMath(b, GeluTanhs) }

// TestVMathDoesNotAllocate runs the vector functions on lengths with a
// tail, which goes through a buffer that must stay on the stack.
func TestVMathDoesNotAllocate(t *testing.T) {
	for _, asm := range []bool{false, hasAsm} {
		saved := Asm
		Asm = asm
		d, s := make([]float32, 13), make([]float32, 13)
		for name, f := range map[string]func(d, s []float32){"exp": Exps, "sigmoid": Sigmoids, "tanh": Tanhs, "erf": Erfs} {
			if n := testing.AllocsPerRun(10, func() { f(d, s) }); n != 0 {
				t.Errorf("%s (asm %v): %v allocations", name, asm, n)
			}
		}
		Asm = saved
	}
}
