package device

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

// checkHugeAdvice checks that the memory mapping holding the size bytes
// at addr carries the huge-page advice ("hg" in its VmFlags).
func checkHugeAdvice(t *testing.T, addr uintptr, size int64) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			if !strings.Contains(line, " hg") {
				t.Errorf("mapping of the buffer at %#x (%d bytes) lacks the huge-page advice: %s", addr, size, line)
			}
			return
		}
	}
	t.Errorf("no mapping holds %#x", addr)
}
