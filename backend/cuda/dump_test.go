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
// kernels' own parts (the 16-bit and
// tensor-core helpers, which the emulation supplies, and the C linkage
// left out).
func TestDumpKernelSources(t *testing.T) {
	dir := os.Getenv("BERTH_CUDA_DUMP")
	if dir == "" {
		t.Skip("set BERTH_CUDA_DUMP to a folder to write the kernels' text to")
	}
	own := func(src string) string {
		return strings.ReplaceAll(strings.TrimPrefix(src, common+halfCommon+mmaCommon), `extern "C" `, "")
	}
	for name, text := range map[string]string{"common.cu": common, "attend.cu": own(attendSource), "iconv.cu": own(iconvSource),
		"nhwc.cu": strings.ReplaceAll(strings.TrimPrefix(nhwcSource, common+halfCommon), `extern "C" `, "")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
