//go:build !noasm

package quant

// The AMX tile unit (Intel's Advanced Matrix Extensions), where the CPU
// has AMX-TILE and AMX-INT8, the operating system keeps the tile state
// (XCR0 bits 17 and 18) and grants it to this process (amxPermit). The
// kernels also use AVX-512, so GODEBUG=cpu.avx512f=off turns them off.
var amxCPU = hasAVX512 &&
	cpuid7EDX()&(1<<24|1<<25) == 1<<24|1<<25 &&
	cpuid1ECX()&(1<<27) != 0 && // OSXSAVE: XGETBV is there
	xgetbv0()&(3<<17) == 3<<17

// cpuid7EDX is EDX of CPUID leaf 7, subleaf 0.
func cpuid7EDX() uint32

// xgetbv0 is the low half of XCR0.
func xgetbv0() uint32

// The AMX kernels (amx_amd64.s).

//go:noescape
func amxPackQ4_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int)

//go:noescape
func amxPackQ8_0(panel *byte, halves *uint16, w *byte, wRow int, rows int, nb int)

//go:noescape
func amxHalves(ws *float32, halves *uint16, n int)

//go:noescape
func amxTiles(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte)

//go:noescape
func amxPackQ4_K(panel *byte, w *byte, wRow int, rows int, nsb int)

//go:noescape
func amxTilesMin(y *float32, ldy, mask, last int, panel *byte, ws *float32, xv *byte, xs *float32, xStride, xsStride, step, nb, tiles, add int, work *byte)

//go:noescape
func amxPackQ6_K(panel *byte, w *byte, wRow int, rows int, nsb int)
