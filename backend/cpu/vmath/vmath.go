package vmath

import "math"

// Vectorised float32 math for the elementwise, Softmax and LayerNorm
// kernels.
//
// Every function has two implementations that use the same algorithm and
// the same float32 constants: AVX2+FMA assembly that handles eight lanes at
// a time (vmath_amd64.s, chosen at start-up when the CPU has both
// features), and the scalar Go code in this file, used on other CPUs and
// for the last len%8 elements of the reductions and affine loops. The
// elementwise functions run the tail of a slice through the assembly too,
// as one more vector over a zero-padded copy on the stack, so that every
// element of a slice goes through the same code.
//
// Algorithms (float32 throughout):
//
//   - exp: x is clamped to at most 89 (beyond which the float32 result is
//     +Inf anyway), x < −150·ln2 gives 0 directly (an underflowing multiply
//     is slow), n = round(x/ln2), r = x − n·ln2 in two parts (Cody-Waite),
//     e^r by Cephes's degree-7 polynomial 1 + r + r²·P(r), and 2^n as two
//     exactly representable powers of two 2^(n>>1)·2^(n−n>>1) so that
//     results in the subnormal range are rounded once and +Inf comes out of
//     the multiplication. NaN passes through the clamps.
//   - sigmoid: e = exp(−|x|), then 1/(1+e) for x ≥ 0 and e/(1+e) for x < 0,
//     which never overflows and keeps full relative accuracy for large
//     negative x.
//   - tanh: on a = |x|, Cephes's odd polynomial a + a·z·P(z), z = a², for
//     a < 0.625, else 1 − 2/(exp(2a)+1); the sign of x is put back.
//   - erf: on a = |x|, a + a·P(a²) (degree 5 in a²) for a < 0.875, else
//     1 − erfc(a) with erfc(a) = exp(−a²)·R(t), t = 1/(1+a/2), R of degree
//     8, and erfc(a) = 0 beyond 9.3 (where exp(−a²) nears the subnormals);
//     a² is split into hi + lo so that exp(−a²) = exp(−hi)·(1−lo) keeps
//     the rounding of a² out of the result. Both polynomials are Chebyshev
//     fits made for this file with mpmath.chebyfit: of erf(√z)/√z − 1 on
//     z ∈ [0, 0.875²] (6 terms, absolute error 9e-9) and of erfc(a)·e^(a²)
//     as a function of t on a ∈ [0.875, 9.3] (9 terms, relative error 3e-8
//     before the coefficients are rounded to float32).
//   - gelu: x/2·(1 + erf(x/√2)), the exact (erf) form, computed as
//     x/2·erfc(|x|/√2) for negative x where 1 + erf would cancel, with
//     (x/√2)² = x²/2 split into hi + lo from x itself, so that the rounding
//     of x/√2 does not enter e^(−x²/2).
//   - gelu, tanh form: x·sigmoid(2·√(2/π)·(x + 0.044715·x³)), which equals
//     x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))) without its cancellation.
//
// Largest errors measured against float64 math over a sweep of all
// magnitudes (TestVMathAccuracy logs them), for normal results: exp 1 ulp,
// sigmoid 2, tanh 1, erf 2, gelu 6 (in the negative tail, where the
// rounding of t is amplified by R's slope; 1 + erf would cancel
// completely there), and the tanh form of gelu 2 ulp plus |z|·2^-22
// relative from the rounding of its argument z, inherent to evaluating
// the formula in float32.

// Asm reports whether the assembly kernels run; tests clear it to
// exercise the Go code on machines that have AVX2.
var Asm = hasAsm

// Constants shared by the Go code and the assembly (which reads them,
// broadcast to eight lanes, from vk; the order of this list is the order of
// the offsets in vmath_amd64.s).
const (
	kAbs    = iota // 0x7fffffff: clears the sign
	kSign          // 0x80000000: the sign bit
	kOne           // 1
	kHalf          // 0.5
	kTwo           // 2
	kExpHi         // largest argument exp clamps to (the result is +Inf)
	kExpLo         // −150·ln2: below it e^x rounds to 0
	kLog2e         // 1/ln2
	kLn2Hi         // ln2 = kLn2Hi − kLn2Lo… (Cody-Waite high part)
	kLn2Lo         // … low part
	kExpP0         // e^r ≈ 1 + r + r²·(P0·r⁵ + … + P5)
	kExpP1         //
	kExpP2         //
	kExpP3         //
	kExpP4         //
	kExpP5         //
	kBias          // 127, the exponent bias, as an integer
	kTanhT         // tanh uses the polynomial below this
	kTanhP0        // tanh(a) ≈ a + a·z·(P0·z⁴ + … + P4), z = a²
	kTanhP1        //
	kTanhP2        //
	kTanhP3        //
	kTanhP4        //
	kErfMax        // erfc(a) is taken as 0 beyond this (and erf(a) as 1)
	kErfT          // erf uses the polynomial in a² below this
	kErfA0         // erf(a) ≈ a + a·(A0·z⁵ + … + A5), z = a²
	kErfA1         //
	kErfA2         //
	kErfA3         //
	kErfA4         //
	kErfA5         //
	kErfB0         // erfc(a) ≈ e^(−a²)·(B0·t⁸ + … + B8), t = 1/(1+a/2)
	kErfB1         //
	kErfB2         //
	kErfB3         //
	kErfB4         //
	kErfB5         //
	kErfB6         //
	kErfB7         //
	kErfB8         //
	kRsqrt2        // 1/√2
	kNegInf        // −Inf
	kGeluT1        // GELU's tanh form: 2·√(2/π)
	kGeluT3        // 2·√(2/π)·0.044715
	kCount
)

// vkBits holds each constant's float32 bits (or integer value).
var vkBits = [kCount]uint32{
	kAbs:    0x7fffffff,
	kSign:   0x80000000,
	kOne:    math.Float32bits(1),
	kHalf:   math.Float32bits(0.5),
	kTwo:    math.Float32bits(2),
	kExpHi:  math.Float32bits(89),
	kExpLo:  math.Float32bits(-103.972077083991796), // −150·ln2
	kLog2e:  math.Float32bits(1.44269504088896341),
	kLn2Hi:  math.Float32bits(0.693359375),
	kLn2Lo:  math.Float32bits(-2.12194440e-4),
	kExpP0:  math.Float32bits(1.9875691500e-4),
	kExpP1:  math.Float32bits(1.3981999507e-3),
	kExpP2:  math.Float32bits(8.3334519073e-3),
	kExpP3:  math.Float32bits(4.1665795894e-2),
	kExpP4:  math.Float32bits(1.6666665459e-1),
	kExpP5:  math.Float32bits(5.0000001201e-1),
	kBias:   127,
	kTanhT:  math.Float32bits(0.625),
	kTanhP0: math.Float32bits(-5.70498872745e-3),
	kTanhP1: math.Float32bits(2.06390887954e-2),
	kTanhP2: math.Float32bits(-5.37397155531e-2),
	kTanhP3: math.Float32bits(1.33314422036e-1),
	kTanhP4: math.Float32bits(-3.33332819422e-1),
	kErfMax: math.Float32bits(9.3),
	kErfT:   math.Float32bits(0.875),
	kErfA0:  math.Float32bits(-0.000621458536197714),
	kErfA1:  math.Float32bits(0.0050343706632041),
	kErfA2:  math.Float32bits(-0.0267929477778373),
	kErfA3:  math.Float32bits(0.112824965995863),
	kErfA4:  math.Float32bits(-0.376125545065844),
	kErfA5:  math.Float32bits(0.128379158133213),
	kErfB0:  math.Float32bits(0.0606236382066623),
	kErfB1:  math.Float32bits(-0.117740240192689),
	kErfB2:  math.Float32bits(-0.0703198838266043),
	kErfB3:  math.Float32bits(0.180569236240134),
	kErfB4:  math.Float32bits(0.121986350051636),
	kErfB5:  math.Float32bits(0.263704706459366),
	kErfB6:  math.Float32bits(0.27905285768044),
	kErfB7:  math.Float32bits(0.2823930491058),
	kErfB8:  math.Float32bits(-1.23024396415226e-5),
	kRsqrt2: math.Float32bits(0.707106781186547524),
	kNegInf: 0xff800000,
	kGeluT1: math.Float32bits(1.5957691216057307),
	kGeluT3: math.Float32bits(0.071354816272600249),
}

// vk is vkBits broadcast to eight lanes, for the assembly.
var vk [kCount][8]uint32

func init() {
	for i, b := range vkBits {
		for j := range vk[i] {
			vk[i][j] = b
		}
	}
}

// kf returns constant i as a float32.
func kf(i int) float32 { return math.Float32frombits(vkBits[i]) }

// Scalar forms of the constants for the Go code.
var (
	cExpHi, cExpLo, cLog2e  = kf(kExpHi), kf(kExpLo), kf(kLog2e)
	cLn2Hi, cLn2Lo          = kf(kLn2Hi), kf(kLn2Lo)
	cExpP                   = [6]float32{kf(kExpP0), kf(kExpP1), kf(kExpP2), kf(kExpP3), kf(kExpP4), kf(kExpP5)}
	cTanhT                  = kf(kTanhT)
	cTanhP                  = [5]float32{kf(kTanhP0), kf(kTanhP1), kf(kTanhP2), kf(kTanhP3), kf(kTanhP4)}
	cErfMax, cErfT, cRsqrt2 = kf(kErfMax), kf(kErfT), kf(kRsqrt2)
	cErfA                   = [6]float32{kf(kErfA0), kf(kErfA1), kf(kErfA2), kf(kErfA3), kf(kErfA4), kf(kErfA5)}
	cErfB                   = [9]float32{kf(kErfB0), kf(kErfB1), kf(kErfB2), kf(kErfB3), kf(kErfB4), kf(kErfB5), kf(kErfB6), kf(kErfB7), kf(kErfB8)}
	cGeluT1, cGeluT3        = kf(kGeluT1), kf(kGeluT3)
)

// Exp is e^x in float32 by the algorithm described above.
func Exp(x float32) float32 {
	if x > cExpHi {
		x = cExpHi
	}
	if x < cExpLo {
		return 0
	}
	n := float32(math.RoundToEven(float64(x * cLog2e)))
	r := x - n*cLn2Hi
	r = r - n*cLn2Lo
	p := cExpP[0]
	for _, c := range cExpP[1:] {
		p = p*r + c
	}
	y := p*(r*r) + r
	y = y + 1
	ni := int32(n)
	n1 := ni >> 1
	n2 := ni - n1
	y = y * math.Float32frombits(uint32(n1+127)<<23)
	return y * math.Float32frombits(uint32(n2+127)<<23)
}

// withSign returns y with the sign bit of x set in it (y is ≥ 0 or NaN).
func withSign(y, x float32) float32 {
	return math.Float32frombits(math.Float32bits(y) | math.Float32bits(x)&0x80000000)
}

func absf(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0x80000000) }

// sigmoidf is 1/(1+e^−x).
func sigmoidf(x float32) float32 {
	e := Exp(-absf(x))
	num := float32(1)
	if math.Float32bits(x)&0x80000000 != 0 {
		num = e
	}
	return num / (1 + e)
}

// tanhf is the hyperbolic tangent.
func tanhf(x float32) float32 {
	a := absf(x)
	var y float32
	if a < cTanhT {
		z := a * a
		p := cTanhP[0]
		for _, c := range cTanhP[1:] {
			p = p*z + c
		}
		y = a*(p*z) + a
	} else {
		e := Exp(a + a)
		y = 1 - 2/(e+1)
	}
	return withSign(y, x)
}

// erfSmall is erf(a) for 0 ≤ a < cErfT, given z = a².
func erfSmall(a, z float32) float32 {
	p := cErfA[0]
	for _, c := range cErfA[1:] {
		p = p*z + c
	}
	return a*p + a
}

// erfcTail is erfc(a) for a ≥ cErfT (NaN for NaN), 0 beyond cErfMax, given
// a² = hi + lo.
func erfcTail(a, hi, lo float32) float32 {
	big := a > cErfMax
	a = min(a, cErfMax)
	t := 1 / (1 + a*0.5)
	r := cErfB[0]
	for _, c := range cErfB[1:] {
		r = r*t + c
	}
	e := Exp(-hi)
	e = e - e*lo
	if big {
		return 0
	}
	return e * r
}

// sqSplit returns hi = x² rounded and lo = x² − hi, which is exact.
func sqSplit(x float32) (hi, lo float32) {
	hi = x * x
	return hi, float32(float64(x)*float64(x) - float64(hi))
}

// erff is the error function.
func erff(x float32) float32 {
	a := absf(x)
	hi, lo := sqSplit(a)
	var y float32
	if a < cErfT {
		y = erfSmall(a, hi)
	} else {
		y = 1 - erfcTail(a, hi, lo)
	}
	return withSign(y, x)
}

// geluf is x/2·(1 + erf(x/√2)), as x/2·erfc(|x|/√2) where that avoids
// cancellation (x ≤ −0.875·√2).
func geluf(x float32) float32 {
	h := x * 0.5
	a := absf(x * cRsqrt2)
	hi, lo := sqSplit(x)
	hi, lo = hi*0.5, lo*0.5
	if a < cErfT {
		return h*withSign(erfSmall(a, hi), x) + h
	}
	e := erfcTail(a, hi, lo)
	if math.Float32bits(x)&0x80000000 != 0 {
		return h * e
	}
	return h*(1-e) + h
}

// geluTanhf is GELU's tanh form x/2·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
// computed as x·sigmoid(2·√(2/π)·(x + 0.044715·x³)), the same function
// without the cancellation of 1 + tanh.
func geluTanhf(x float32) float32 {
	return x * sigmoidf(x*(cGeluT3*(x*x)+cGeluT1))
}

// vUnary applies a vector kernel of whole eight-element blocks to d and s,
// the tail through a padded copy; d and s have equal length and may be the
// same memory.
func vUnary(op vop, d, s []float32) {
	s = s[:len(d)]
	n := len(d) &^ 7
	if n > 0 {
		op.run(d[:n], s[:n])
	}
	if n < len(d) {
		var buf [8]float32
		k := copy(buf[:], s[n:])
		op.run(buf[:], buf[:])
		copy(d[n:], buf[:k])
	}
}

// vop names an elementwise assembly kernel. Calling the kernels directly,
// not through a function value, lets the tail buffer of vUnary stay on the
// stack.
type vop uint8

const (
	vopExp vop = iota
	vopSigmoid
	vopTanh
	vopErf
	vopGelu
	vopGeluTanh
	vopSilu
)

func (op vop) run(d, s []float32) {
	switch op {
	case vopExp:
		expAVX2(d, s)
	case vopSigmoid:
		wide512(sigmoidAVX512, sigmoidAVX2, d, s)
	case vopSilu:
		wide512(siluAVX512, siluAVX2, d, s)
	case vopTanh:
		wide512(tanhAVX512, tanhAVX2, d, s)
	case vopErf:
		wide512(erfAVX512, erfAVX2, d, s)
	case vopGelu:
		geluAVX2(d, s)
	case vopGeluTanh:
		geluTanhAVX2(d, s)
	}
}

// wide512 runs the whole sixteen-element blocks of d, s through k512 when
// Wide512 is set, and the rest (or all) through k (eight-element blocks).
func wide512(k512, k func(d, s []float32), d, s []float32) {
	n := 0
	if Wide512 {
		n = len(d) &^ 15
		if n > 0 {
			k512(d[:n], s[:n])
		}
	}
	if n < len(d) {
		k(d[n:], s[n:])
	}
}

// Exps sets d[i] = e^s[i]; d and s have equal length and may be the same
// memory (as in all the v functions below).
func Exps(d, s []float32) {
	if Asm {
		vUnary(vopExp, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = Exp(x)
	}
}

// Sigmoids sets d[i] = 1/(1+e^−s[i]).
func Sigmoids(d, s []float32) {
	if Asm {
		vUnary(vopSigmoid, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = sigmoidf(x)
	}
}

// Silus sets d[i] = s[i]·sigmoid(s[i]): Sigmoid, then Mul, as two
// elementwise steps would compute it, in one pass.
func Silus(d, s []float32) {
	if Asm {
		vUnary(vopSilu, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = x * sigmoidf(x)
	}
}

// Tanhs sets d[i] = tanh(s[i]).
func Tanhs(d, s []float32) {
	if Asm {
		vUnary(vopTanh, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = tanhf(x)
	}
}

// Erfs sets d[i] = erf(s[i]).
func Erfs(d, s []float32) {
	if Asm {
		vUnary(vopErf, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = erff(x)
	}
}

// Gelus sets d[i] = s[i]/2·(1 + erf(s[i]/√2)).
func Gelus(d, s []float32) {
	if Asm {
		vUnary(vopGelu, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = geluf(x)
	}
}

// GeluTanhs sets d[i] to GELU's tanh approximation of s[i].
func GeluTanhs(d, s []float32) {
	if Asm {
		vUnary(vopGeluTanh, d, s)
		return
	}
	for i, x := range s[:len(d)] {
		d[i] = geluTanhf(x)
	}
}

// Max returns the largest element of x, ignoring NaNs, or −Inf when there
// is none.
func Max(x []float32) float32 {
	m := float32(math.Inf(-1))
	n := 0
	if Asm {
		n = len(x) &^ 7
		if n > 0 {
			m = maxAVX2(x[:n])
		}
	}
	for _, v := range x[n:] {
		if v > m {
			m = v
		}
	}
	return m
}

// ExpSum sets d[i] = e^(x[i]−m) and returns the sum of those values,
// accumulated in float64.
func ExpSum(d, x []float32, m float32) float64 {
	x = x[:len(d)]
	var sum float64
	if Asm {
		n := len(d) &^ 7
		switch {
		case n >= 16 && Wide512:
			sum = expSumAVX512(d[:n], x[:n], m)
		case n > 0:
			sum = expSumAVX2(d[:n], x[:n], m)
		}
		if n < len(d) {
			var buf [8]float32
			k := copy(buf[:], x[n:])
			expSumAVX2(buf[:], buf[:], m)
			for _, v := range buf[:k] {
				sum += float64(v)
			}
			copy(d[n:], buf[:k])
		}
		return sum
	}
	for i, v := range x {
		e := Exp(v - m)
		d[i] = e
		sum += float64(e)
	}
	return sum
}

// Sum returns the sum of x in float64.
func Sum(x []float32) float64 {
	var s float64
	n := 0
	if Asm {
		if Wide512 {
			n = len(x) &^ 31
			if n > 0 {
				s = sumAVX512(x[:n])
			}
		}
		if m := (len(x) - n) &^ 7; m > 0 {
			s += sumAVX2(x[n : n+m])
			n += m
		}
	}
	for _, v := range x[n:] {
		s += float64(v)
	}
	return s
}

// SumSqDev returns Σ(x[i]−m)² in float64 (the differences are float32).
func SumSqDev(x []float32, m float32) float64 {
	var s float64
	n := 0
	if Asm {
		n = len(x) &^ 7
		if n > 0 {
			s = sumSqDevAVX2(x[:n], m)
		}
	}
	for _, v := range x[n:] {
		dv := float64(v - m)
		s += dv * dv
	}
	return s
}

// Scale sets d[i] = s[i]·c.
func Scale(d, s []float32, c float32) {
	s = s[:len(d)]
	n := 0
	if Asm {
		n = len(d) &^ 7
		if n > 0 {
			scaleAVX2(d[:n], s[:n], c)
		}
	}
	for i := n; i < len(d); i++ {
		d[i] = s[i] * c
	}
}

// NormAffine sets y[i] = (x[i]−mean)·(inv·sc[i]) + bi[i]; all four have
// the length of y, and y may be x.
func NormAffine(y, x, sc, bi []float32, mean, inv float32) {
	x, sc, bi = x[:len(y)], sc[:len(y)], bi[:len(y)]
	n := 0
	if Asm {
		n = len(y) &^ 7
		if n > 0 {
			normAffineAVX2(y[:n], x[:n], sc[:n], bi[:n], mean, inv)
		}
	}
	for i := n; i < len(y); i++ {
		y[i] = (x[i]-mean)*(inv*sc[i]) + bi[i]
	}
}
