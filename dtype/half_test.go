package dtype

import (
	"fmt"
	"math"
	"testing"
)

// Every 16-bit value must widen and narrow back to itself, and a float32
// lying between two neighbouring 16-bit values must round to the nearer one,
// to the one with an even mantissa on a tie. The neighbours are found by
// widening, so the check does not depend on the narrowing code.
func testRounding(t *testing.T, name string, widen func(uint16) float32, narrow func(float32) uint16) {
	isNaN := func(h uint16) bool { return math.IsNaN(float64(widen(h))) }
	for h := 0; h < 1<<16; h++ {
		x := uint16(h)
		if isNaN(x) {
			if !math.IsNaN(float64(widen(narrow(widen(x))))) {
				t.Fatalf("%s: NaN %#04x lost", name, x)
			}
			continue
		}
		if got := narrow(widen(x)); got != x && !(widen(x) == 0 && widen(got) == 0) {
			t.Fatalf("%s: %#04x → %v → %#04x", name, x, widen(x), got)
		}
		next := x + 1
		if x&0x7fff >= 0x7c00 && name == "f16" || x&0x7fff >= 0x7f80 && name == "bf16" || x == 0x7fff || x == 0xffff {
			continue
		}
		lo, hi := float64(widen(x)), float64(widen(next))
		if math.IsInf(hi, 0) || isNaN(next) {
			continue
		}
		mid := float32((lo + hi) / 2)
		even := x
		if x&1 == 1 {
			even = next
		}
		if got := narrow(mid); got != even {
			t.Fatalf("%s: tie %v between %#04x and %#04x gave %#04x", name, mid, x, next, got)
		}
		below := math.Nextafter32(mid, float32(lo))
		above := math.Nextafter32(mid, float32(hi))
		if got := narrow(below); got != x {
			t.Fatalf("%s: %v just below the tie gave %#04x, want %#04x", name, below, got, x)
		}
		if got := narrow(above); got != next {
			t.Fatalf("%s: %v just above the tie gave %#04x, want %#04x", name, above, got, next)
		}
	}
}

func TestF16Rounding(t *testing.T)  { testRounding(t, "f16", F32FromF16, F16FromF32) }
func TestBF16Rounding(t *testing.T) { testRounding(t, "bf16", F32FromBF16, BF16FromF32) }

func TestSpecialValues(t *testing.T) {
	for _, tc := range []struct {
		in       float32
		f16, b16 uint16
	}{
		{0, 0, 0},
		{float32(math.Copysign(0, -1)), 0x8000, 0x8000},
		{1, 0x3c00, 0x3f80},
		{-2, 0xc000, 0xc000},
		{65504, 0x7bff, 0x4780},
		{1e6, 0x7c00, 0x4974},
		{float32(math.Inf(1)), 0x7c00, 0x7f80},
		{float32(math.Inf(-1)), 0xfc00, 0xff80},
		{1e-8, 0, 0x322c},
	} {
		if got := F16FromF32(tc.in); got != tc.f16 {
			t.Errorf("F16FromF32(%v) = %#04x, want %#04x", tc.in, got, tc.f16)
		}
		if got := BF16FromF32(tc.in); got != tc.b16 {
			t.Errorf("BF16FromF32(%v) = %#04x, want %#04x", tc.in, got, tc.b16)
		}
	}
}

func ExampleF16FromF32() {
	h := F16FromF32(0.1)
	fmt.Printf("%#04x %v\n", h, F32FromF16(h))
	// Output: 0x2e66 0.099975586
}
