package cpu

import (
	"os"
	"strings"
	"testing"

	"github.com/berth-ml/berth/backend/cpu/vmath"
)

// GODEBUG=cpu.avx512f=off (one of CI's runs) must turn every AVX-512 path
// off, as on a CPU without it: the package reads its CPU features from
// golang.org/x/sys/cpu, which honours the setting.
func TestGODEBUGTurnsOffAVX512(t *testing.T) {
	off := false
	for _, f := range strings.Split(os.Getenv("GODEBUG"), ",") {
		off = off || f == "cpu.avx512f=off" || f == "cpu.all=off"
	}
	if !off {
		t.Skip("GODEBUG does not switch AVX-512F off")
	}
	for name, on := range map[string]bool{
		"useAVX512Kernel": useAVX512Kernel, "dw512": dw512, "arith512": arith512, "vmath.Wide512": vmath.Wide512,
		"blockedLayouts": blockedLayouts(),
	} {
		if on {
			t.Errorf("%s is set with AVX-512F switched off", name)
		}
	}
}
