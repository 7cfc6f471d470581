package cuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDumpKernelSources writes, where BERTH_CUDA_DUMP names a folder, the
// text of kernels that scripts/cuda_emu runs on the CPU: the common
// definitions, and the attention's, iconv's and the channels-last
// kernels' own parts, the gemv kernels' and the cached attention's
// (the 16-bit and tensor-core helpers, which the emulation supplies, and
// the C linkage left out).
func TestDumpKernelSources(t *testing.T) {
	dir := os.Getenv("BERTH_CUDA_DUMP")
	if dir == "" {
		t.Skip("set BERTH_CUDA_DUMP to a folder to write the kernels' text to")
	}
	own := func(src string) string {
		return strings.ReplaceAll(strings.TrimPrefix(src, common+halfCommon+mmaCommon), `extern "C" `, "")
	}
	for name, text := range map[string]string{"common.cu": common, "attend.cu": own(attendSource), "iconv.cu": own(iconvSource),
		"nhwc.cu": strings.ReplaceAll(strings.TrimPrefix(nhwcSource, common+halfCommon), `extern "C" `, ""), "gemv.cu": gemvEmulated(t), "cached.cu": cachedEmulated(t),
		"gemm.cu": strings.ReplaceAll(strings.TrimPrefix(gemmSource, common), `extern "C" `, "")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// gemvEmulated is gemvModule's own text for the emulation: its inline
// PTX (the f16 conversions, the copies to shared memory) gives way to
// the emulation's (gemv_half.h).
func gemvEmulated(t *testing.T) string {
	text := strings.TrimPrefix(gemvModule.text, common)
	i := strings.Index(text, "__device__ __forceinline__ float gv_h2f(")
	j := strings.Index(text, "// gv_x loads")
	if i < 0 || j < i {
		t.Fatal("gemv's f16 conversions are not where the emulation expects them")
	}
	return strings.ReplaceAll(text[:i]+"#include \"gemv_half.h\"\n"+text[j:], `extern "C" `, "")
}

// cachedEmulated is the cached attention's part of packedModule, after
// the definitions of its shape.
func cachedEmulated(t *testing.T) string {
	i := strings.Index(packedSource, "// reduce over the block (ATT_THREADS threads)")
	if i < 0 {
		t.Fatal("the cached attention is not where the emulation expects it")
	}
	return packedDefines + strings.ReplaceAll(packedSource[i:], `extern "C" `, "")
}
