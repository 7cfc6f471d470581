package cpu

import (
	"slices"
	"testing"

	numeric "github.com/berth-ml/berth/internal/compare"
)

// TestBlockLayouts compiles the resnet_blocked fixture (ResNet-50's stem,
// max pool and bottleneck blocks) and checks which activations blockLayouts holds in
// NCHW16c: those between the blocks whose convolutions take them, and
// none elsewhere; and that the results agree with the same model run in
// NCHW throughout to rounding.
func TestBlockLayouts(t *testing.T) {
	const dir = fixtures + "resnet_blocked/"
	g := loadFixture(t, dir+"model.onnx")
	e, err := Compile(g, Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Compile(g, Options{Threads: 2, Tuning: Tuning{NoBlocking: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !cpuBlocks() {
		if e.blocked != nil {
			for id, b := range e.blocked {
				if b {
					t.Errorf("tensor %q blocked without the AVX-512 kernels", e.g.Tensors[id].Name)
				}
			}
		}
		return
	}
	var names []string
	for id, b := range e.blocked {
		if b {
			names = append(names, e.g.Tensors[id].Name)
			if sh := e.g.Tensors[id].Shape; sh.Rank() != 4 || sh[1]%16 != 0 {
				t.Errorf("tensor %q of shape %v blocked", e.g.Tensors[id].Name, sh)
			}
		}
	}
	// The stem's and the max pool's outputs, every block's activations
	// up to the 4² planes (23 at this writing), none after.
	if len(names) < 20 {
		t.Errorf("%d activations blocked, want at least 20: %q", len(names), names)
	}
	for _, id := range e.g.Outputs {
		if e.blocked[id] {
			t.Errorf("graph output %q blocked", e.g.Tensors[id].Name)
		}
	}
	for _, id := range e.g.Inputs {
		if e.blocked[id] {
			t.Errorf("graph input %q blocked", e.g.Tensors[id].Name)
		}
	}
	in := fixtureInputs(t, dir)
	got, want := logits(t, e, in), logits(t, plain, in)
	if d := numeric.RelL2(got, want); !(d <= 1e-6) {
		t.Errorf("blocked and NCHW results differ by rel L2 %.3g", d)
	}
	// The same bits on any number of threads, in place or not.
	for _, threads := range []int{1, 3} {
		for _, noInPlace := range []bool{false, true} {
			other, err := Compile(g, Options{Threads: threads, NoInPlace: noInPlace})
			if err != nil {
				t.Fatal(err)
			}
			if o := logits(t, other, in); !slices.Equal(o, got) {
				t.Errorf("%d threads, NoInPlace %v: %v, want %v", threads, noInPlace, o, got)
			}
		}
	}
}

// logits runs e once on in and returns its first output.
func logits(t *testing.T, e *Executable, in [][]byte) []float32 {
	t.Helper()
	return asF32(runOnce(t, e, in)[0])
}

// cpuBlocks reports whether the CPU backend holds activations in NCHW16c
// on this machine.
func cpuBlocks() bool { return blockedLayouts() }
