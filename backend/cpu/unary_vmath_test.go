package cpu

import (
	"math"
	"testing"

	"github.com/berth-ml/berth/backend/cpu/vmath"
	"github.com/berth-ml/berth/ir"
)

// TestKernelsWithGoVMath runs the kernel tests of the ops built on the
// vector math with its Go code instead of the assembly.
func TestKernelsWithGoVMath(t *testing.T) {
	if !vmath.Asm {
		t.Skip("the kernels use the Go code on this machine anyway")
	}
	vmath.Asm = false
	defer func() { vmath.Asm = true }()
	t.Run("unary", TestUnaryFloat)
	t.Run("LayerNorm", TestLayerNorm)
	t.Run("Softmax", TestSoftmax)
}

// TestVecOpWiring checks that the float32 unary loops of the vectorised
// ops reach the vector functions (Gelu with approximate=tanh is the
// internal op GeluTanh): the same bits.
func TestVecOpWiring(t *testing.T) {
	for _, tc := range []struct {
		op string
		fn func(d, s []float32)
	}{
		{"Exp", vmath.Exps}, {"Sigmoid", vmath.Sigmoids}, {"Tanh", vmath.Tanhs}, {"Erf", vmath.Erfs},
		{"Gelu", vmath.Gelus}, {"GeluTanh", vmath.GeluTanhs},
	} {
		fn, _, ok := unaryFor(tc.op, ir.Float32)
		if !ok {
			t.Fatalf("%s: no float32 loop", tc.op)
		}
		x := []float32{-3, -1.5, -0.5, 0, 0.25, 1, 2.5, 4, 7}
		d := make([]byte, 4*len(x))
		fn(d, f32Bytes(x), args{})
		want := make([]float32, len(x))
		tc.fn(want, x)
		for i, g := range view[float32](d) {
			if math.Float32bits(g) != math.Float32bits(want[i]) {
				t.Errorf("%s(%g) = %g, want the vector function's %g", tc.op, x[i], g, want[i])
			}
		}
	}
}
