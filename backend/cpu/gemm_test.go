package cpu

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
)

// gemmKernel names one of the micro-kernel paths of gemm.run.
type gemmKernel int

const (
	kernelGo     gemmKernel = iota // the portable 6×16 kernel
	kernelAVX2                     // the AVX2+FMA 6×16 kernel
	kernelAVX512                   // the AVX-512 12×32 kernel, 6×16 AVX2 at the edges
)

func (k gemmKernel) String() string {
	return [...]string{"go", "avx2", "avx512"}[k]
}

// The kernels the CPU has, read before any test forces one.
var hasAsmKernel, hasAVX512Kernel = useAsmKernel, useAVX512Kernel

// gemmKernels lists the micro-kernels this machine can run: the pure-Go
// one always, the assembly ones where the CPU has them.
func gemmKernels() []gemmKernel {
	ks := []gemmKernel{kernelGo}
	if hasAsmKernel {
		ks = append(ks, kernelAVX2)
	}
	if hasAVX512Kernel {
		ks = append(ks, kernelAVX512)
	}
	return ks
}

// forKernels runs f as one subtest per kernel, named after it, with the
// kernel forced; the subtests of kernels this CPU lacks are skipped.
func forKernels(t *testing.T, f func(t *testing.T)) {
	for _, k := range []gemmKernel{kernelGo, kernelAVX2, kernelAVX512} {
		t.Run(k.String(), func(t *testing.T) {
			if k == kernelAVX2 && !hasAsmKernel || k == kernelAVX512 && !hasAVX512Kernel {
				t.Skipf("no %s kernel on this CPU", k)
			}
			withKernel(k, func() { f(t) })
		})
	}
}

// withKernel runs f with kernel k forced.
func withKernel(k gemmKernel, f func()) {
	savedAsm, saved512 := useAsmKernel, useAVX512Kernel
	useAsmKernel, useAVX512Kernel = k >= kernelAVX2, k == kernelAVX512
	defer func() { useAsmKernel, useAVX512Kernel = savedAsm, saved512 }()
	f()
}

// gemmCase is one product C (m×n, row stride ldc) = alpha·A·B + biases,
// or C += alpha·A·B when acc.
type gemmCase struct {
	m, n, k        int
	transA, transB bool // A stored k×m (column-major), B stored n×k
	alpha          float32
	rowBias        bool
	colBias        bool
	acc            bool
	pad            int  // ldc = n + pad
	mt, nt         int  // tile size in panels; 0: gemmTiles(m, n, threads)
	threads        int  // for gemmTiles
	splits         int  // run(lo, hi) calls the tiles are cut into
	clamp          bool // clamp C to gemmLim after the last k step
	res            bool // add a residual of C's layout before the clamp
	wide           bool // B packed in quads (packBPanels' wide), tiles of whole quads
}

// gemmLim is the clamp of the cases with clamp set.
var gemmLim = [2]float32{-0.75, 0.5}

func (c gemmCase) String() string {
	return fmt.Sprintf("%dx%dx%d/tA=%v/tB=%v/alpha=%g/rb=%v/cb=%v/acc=%v/pad=%d/tiles=%d,%d/th=%d/splits=%d/clamp=%v/res=%v/wide=%v",
		c.m, c.n, c.k, c.transA, c.transB, c.alpha, c.rowBias, c.colBias, c.acc, c.pad, c.mt, c.nt, c.threads, c.splits, c.clamp, c.res, c.wide)
}

// gemmSentinel marks C's elements the product must not touch.
const gemmSentinel = float32(-12345.5)

// checkGemm packs random operands, runs the tiles of the product in
// c.splits pieces and compares C with a float64 triple loop. The tolerance
// is twice the worst-case rounding error of a float32 dot product of
// length k (plus the scaling and bias additions): (k+4)·2⁻²³ relative to
// the sum of the magnitudes of the terms.
func checkGemm(t *testing.T, c gemmCase) {
	t.Helper()
	m, n, k := c.m, c.n, c.k
	a, b := randF32(m*k), randF32(k*n)
	aRS, aCS := k, 1
	if c.transA {
		aRS, aCS = 1, m
	}
	bRS, bCS := n, 1
	if c.transB {
		bRS, bCS = 1, k
	}
	pm, pn := ceilDiv(m, gemmMR), ceilDiv(n, gemmNR)
	pa := make([]float32, packedASize(m, k))
	pb := make([]float32, packedBSize(k, n))
	// Pack in two calls each, to exercise panel ranges.
	packA(pa, a, m, k, aRS, aCS, c.alpha, 0, pm/2)
	packA(pa, a, m, k, aRS, aCS, c.alpha, pm/2, pm)
	packBPanels(pb, b, k, n, bRS, bCS, 0, pn/3, c.wide)
	packBPanels(pb, b, k, n, bRS, bCS, pn/3, pn, c.wide)

	var rb, cb []float32
	if c.rowBias {
		rb = randF32(m)
	}
	if c.colBias {
		cb = randF32(n)
	}
	ldc := n + c.pad
	cm := make([]float32, max(m*ldc, 1))
	for i := range cm {
		cm[i] = gemmSentinel
	}
	c0 := randF32(m * n)
	if c.acc {
		for i := 0; i < m; i++ {
			copy(cm[i*ldc:i*ldc+n], c0[i*n:(i+1)*n])
		}
	}

	mt, nt := c.mt, c.nt
	if mt == 0 {
		mt, nt = gemmTiles(m, n, c.threads)
	}
	if c.wide {
		nt = roundUp(nt, 4)
	}
	g := gemm{m: m, n: n, k: k, a: pa, b: pb, c: cm, ldc: ldc, rowBias: rb, colBias: cb, acc: c.acc, mt: mt, nt: nt, bWide: c.wide}
	if c.clamp {
		g.lim = &gemmLim
	}
	var resid []float32
	if c.res {
		resid = randF32(max(m*ldc, 1))
		g.res = resid
	}
	tiles := g.tiles()
	parts := max(c.splits, 1)
	for s := 0; s < parts; s++ {
		g.run(s*tiles/parts, (s+1)*tiles/parts)
	}

	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := cm[i*ldc+j]
			if j >= n {
				if got != gemmSentinel {
					t.Fatalf("C[%d][%d] (row padding) = %g, was %g", i, j, got, gemmSentinel)
				}
				continue
			}
			var want, mag float64
			for l := 0; l < k; l++ {
				p := float64(c.alpha) * float64(a[i*aRS+l*aCS]) * float64(b[l*bRS+j*bCS])
				want += p
				mag += math.Abs(p)
			}
			switch {
			case c.acc:
				want += float64(c0[i*n+j])
				mag += math.Abs(float64(c0[i*n+j]))
			default:
				if rb != nil {
					want += float64(rb[i])
					mag += math.Abs(float64(rb[i]))
				}
				if cb != nil {
					want += float64(cb[j])
					mag += math.Abs(float64(cb[j]))
				}
			}
			if c.res {
				want += float64(resid[i*ldc+j])
				mag += math.Abs(float64(resid[i*ldc+j]))
			}
			if c.clamp {
				want = min(max(want, float64(gemmLim[0])), float64(gemmLim[1]))
			}
			tol := float64(k+4) * 0x1p-23 * mag
			if math.Abs(float64(got)-want) > tol {
				t.Fatalf("C[%d][%d] = %g, want %g (tolerance %g)", i, j, got, want, tol)
			}
		}
	}
}

// TestSgemm6x16 checks the 6×16 micro-kernel entry point on its own (the
// assembly on amd64, its portable form elsewhere); see checkMicroKernel.
func TestSgemm6x16(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAsmKernel {
		t.Skip("CPU lacks AVX2 or FMA")
	}
	checkMicroKernel(t, 1, 1, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res *float32) {
		sgemm6x16(kb, &a[0][0], &b[0][0], &c[0], ldc, rb, cb, mode, lim, res)
	})
}

// TestSgemm12x32 checks the 12×32 micro-kernel entry point on its own (the
// AVX-512 assembly on amd64, its portable form elsewhere); see
// checkMicroKernel.
func TestSgemm12x32(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 2, 2, 0, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		sgemm12x32(kb, &a[0][0], &a[1][0], &b[0][0], &b[1][0], gemmNR, &c[0], ldc, rb, cb, mode, lim, res, pf0, pf1, pfn, nil, 128)
	})
}

// TestSgemm13x32 checks the 12×32 micro-kernel with a thirteenth row (its
// a2) on its own: rows 0-12 of three A panels, the rows after them left
// alone.
func TestSgemm13x32(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 3, 2, 2*gemmMR+1, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		sgemm12x32(kb, &a[0][0], &a[1][0], &b[0][0], &b[1][0], gemmNR, &c[0], ldc, rb, cb, mode, lim, res, pf0, pf1, pfn, &a[2][0], 128)
	})
}

// TestSgemm6x32 checks the 6×32 micro-kernel entry point on its own (the
// AVX-512 assembly on amd64, its portable form elsewhere); see
// checkMicroKernel.
func TestSgemm6x32(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 1, 2, 0, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		sgemm6x32(kb, &a[0][0], &b[0][0], &b[1][0], gemmNR, &c[0], ldc, rb, cb, mode, lim, res, pf0, pf1, pfn, nil)
	})
}

// TestSgemm8x32 checks the 6×32 micro-kernel with rows 6 and 7 (its a1)
// on its own: rows 0-7 of two A panels, the rows after them left alone.
func TestSgemm8x32(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 2, 2, gemmMR+2, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		sgemm6x32(kb, &a[0][0], &b[0][0], &b[1][0], gemmNR, &c[0], ldc, rb, cb, mode, lim, res, pf0, pf1, pfn, &a[1][0])
	})
}

// TestSgemm6x64 checks the 6×64 micro-kernel on its own: one A panel by
// four B panels, laid side by side as a quad (interleaveQuad).
func TestSgemm6x64(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 1, 4, 0, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		quad := interleaveQuad(b, kb)
		sgemm6x64(kb, &a[0][0], &quad[0], &c[0], ldc, rb, cb, mode, lim, res, pf0, pfn, 0)
	})
}

// TestSgemm6x64Rows checks the 6×64 micro-kernel reading A unpacked: the
// panel's six rows laid out lda floats apart.
func TestSgemm6x64Rows(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 1, 4, 0, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		quad := interleaveQuad(b, kb)
		lda := kb + 3
		rows := make([]float32, gemmMR*lda)
		for l := 0; l < kb; l++ {
			for i := range gemmMR {
				rows[i*lda+l] = a[0][l*gemmMR+i]
			}
		}
		sgemm6x64(kb, &rows[0], &quad[0], &c[0], ldc, rb, cb, mode, lim, res, pf0, pfn, lda)
	})
}

// interleaveQuad lays kb steps of four packed B panels side by side, 64
// floats a step, as a quad of the wide layout holds them.
func interleaveQuad(b [][]float32, kb int) []float32 {
	quad := make([]float32, max(kb, 1)*4*gemmNR)
	for l := 0; l < kb; l++ {
		for p := range 4 {
			copy(quad[(l*4+p)*gemmNR:][:gemmNR], b[p][l*gemmNR:])
		}
	}
	return quad
}

// checkMicroKernelPrefetch is checkMicroKernel for a kernel that takes
// lines to bring into the cache as it goes, run without them and with
// more than it has steps for: the hints must change nothing. rows, if not
// 0, is the rows of the tile (checkMicroKernelRows).
func checkMicroKernelPrefetch(t *testing.T, ap, bp, rows int, call func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int)) {
	if rows == 0 {
		rows = ap * gemmMR
	}
	for _, pf := range []bool{false, true} {
		t.Run(fmt.Sprintf("prefetch=%v", pf), func(t *testing.T) {
			checkMicroKernelRows(t, ap, bp, rows, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res *float32) {
				var pf0, pf1 *float32
				pfn := 0
				if pf {
					pf0, pf1, pfn = &b[len(b)-1][0], &a[0][0], kb/4+3
				}
				call(kb, a, b, c, ldc, rb, cb, mode, lim, res, pf0, pf1, pfn)
			})
		})
	}
}

// TestSgemm12x16 checks the 12×16 micro-kernel entry point on its own (the
// AVX-512 assembly on amd64, its portable form elsewhere); see
// checkMicroKernel.
func TestSgemm12x16(t *testing.T) {
	if runtime.GOARCH == "amd64" && !hasAVX512Kernel {
		t.Skip("CPU lacks AVX-512F")
	}
	checkMicroKernelPrefetch(t, 2, 1, 0, func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res, pf0, pf1 *float32, pfn int) {
		sgemm12x16(kb, &a[0][0], &a[1][0], &b[0][0], &c[0], ldc, rb, cb, mode, lim, res, pf0, pf1, pfn)
	})
}

// checkMicroKernel checks a micro-kernel over pa packed A panels and pb
// packed B panels (a (pa·MR)×(pb·NR) tile) against a float64 loop for
// every k remainder of the 4-step unrolling and every store mode, and
// that it writes nothing outside the tile.
func checkMicroKernel(t *testing.T, pa, pb int, kernel func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res *float32)) {
	t.Helper()
	checkMicroKernelRows(t, pa, pb, pa*gemmMR, kernel)
}

// checkMicroKernelRows is checkMicroKernel for a tile of the first mr rows
// of the pa A panels.
func checkMicroKernelRows(t *testing.T, pa, pb, mr int, kernel func(kb int, a, b [][]float32, c []float32, ldc int, rb, cb *float32, mode int, lim, res *float32)) {
	t.Helper()
	nr := pb * gemmNR
	ldc := nr + 5
	for _, kb := range []int{0, 1, 2, 3, 4, 5, 7, 8, 13, 64, 255} {
		for _, mode := range []string{"store", "rowbias", "colbias", "bothbias", "accumulate", "store+clamp", "bothbias+clamp", "accumulate+clamp",
			"store+res", "bothbias+res+clamp", "accumulate+res", "accumulate+res+clamp"} {
			t.Run(fmt.Sprintf("kb=%d/%s", kb, mode), func(t *testing.T) {
				var plim, pres *float32
				lim := [2]float32{-0.3, 0.4}
				if m, ok := strings.CutSuffix(mode, "+clamp"); ok {
					mode, plim = m, &lim[0]
				}
				// The residual has C's layout, rows ldc apart.
				resid := randF32(mr * ldc)
				if m, ok := strings.CutSuffix(mode, "+res"); ok {
					mode, pres = m, &resid[0]
				}
				a, b := make([][]float32, pa), make([][]float32, pb)
				for p := range a {
					a[p] = randF32(kb*gemmMR + 1)
				}
				for q := range b {
					b[q] = randF32(kb*gemmNR + 1)
				}
				// A(l, i) and B(l, j) as the kernel reads them.
				av := func(l, i int) float32 { return a[i/gemmMR][l*gemmMR+i%gemmMR] }
				bv := func(l, j int) float32 { return b[j/gemmNR][l*gemmNR+j%gemmNR] }
				rb, cb := randF32(mr), randF32(nr)
				c := make([]float32, (mr+1)*ldc)
				for i := range c {
					c[i] = gemmSentinel
				}
				c0 := randF32(mr * nr)
				var prb, pcb *float32
				flag := 0
				switch mode {
				case "rowbias":
					prb = &rb[0]
				case "colbias":
					pcb = &cb[0]
				case "bothbias":
					prb, pcb = &rb[0], &cb[0]
				case "accumulate":
					flag = 1
					// Biases are ignored when accumulating.
					prb, pcb = &rb[0], &cb[0]
					for i := 0; i < mr; i++ {
						copy(c[i*ldc:], c0[i*nr:(i+1)*nr])
					}
				}
				kernel(kb, a, b, c, ldc, prb, pcb, flag, plim, pres)
				for i := 0; i <= mr; i++ {
					for j := 0; j < ldc; j++ {
						got := c[i*ldc+j]
						if i == mr || j >= nr {
							if got != gemmSentinel {
								t.Fatalf("C[%d][%d] outside the tile = %g", i, j, got)
							}
							continue
						}
						var want, mag float64
						for l := 0; l < kb; l++ {
							p := float64(av(l, i)) * float64(bv(l, j))
							want += p
							mag += math.Abs(p)
						}
						var extra []float32
						switch {
						case flag == 1:
							extra = []float32{c0[i*nr+j]}
						default:
							if prb != nil {
								extra = append(extra, rb[i])
							}
							if pcb != nil {
								extra = append(extra, cb[j])
							}
						}
						if pres != nil {
							extra = append(extra, resid[i*ldc+j])
						}
						for _, e := range extra {
							want += float64(e)
							mag += math.Abs(float64(e))
						}
						if plim != nil {
							// Clamping moves no value further from another.
							want = min(max(want, float64(lim[0])), float64(lim[1]))
						}
						tol := float64(kb+4) * 0x1p-23 * mag
						if math.Abs(float64(got)-want) > tol {
							t.Fatalf("C[%d][%d] = %g, want %g (tolerance %g)", i, j, got, want, tol)
						}
					}
				}
			})
		}
	}
}

// cycledCases is a case for every shape of ms×ns×ks, cycling through the
// operand layouts, C terms, thread counts and splits rather than
// multiplying the shape table by all of them.
func cycledCases(ms, ns, ks []int) []gemmCase {
	var cases []gemmCase
	i := 0
	for _, m := range ms {
		for _, n := range ns {
			for _, k := range ks {
				cases = append(cases, gemmCase{
					m: m, n: n, k: k,
					transA: i%2 == 1, transB: i/2%2 == 1,
					alpha:   []float32{1, 0.5, -1.25}[i%3],
					rowBias: i%5 == 1 || i%5 == 3, colBias: i%5 == 2 || i%5 == 3,
					acc:     i%5 == 4,
					pad:     i % 3,
					threads: 1 + i%3, splits: 1 + i%4,
					clamp: i%7 == 3, res: i%4 == 2,
				})
				i++
			}
		}
	}
	return cases
}

// TestGemmShapes covers sizes around the micro-tile (MR, NR), the k slice
// (KC) and the tile (MT, NT) edges, with every operand layout.
func TestGemmShapes(t *testing.T) {
	ms := []int{1, gemmMR - 1, gemmMR, gemmMR + 1, 2 * gemmMR, 2*gemmMR + 1, 37, gemmMT*gemmMR + 1}
	ns := []int{1, gemmNR - 1, gemmNR, gemmNR + 1, 2 * gemmNR, 3*gemmNR + 5, 100}
	ks := []int{1, 2, 3, 4, 5, 9, gemmKC - 1, gemmKC, gemmKC + 1, 2*gemmKC + 3}
	cases := cycledCases(ms, ns, ks)
	// Large shapes: several tiles in both directions, unequal k slices.
	cases = append(cases,
		gemmCase{m: 300, n: 290, k: 300, alpha: 1, colBias: true, threads: 2, splits: 3},
		gemmCase{m: 257, n: 543, k: 129, alpha: 0.75, transA: true, rowBias: true, threads: 1, splits: 2},
		gemmCase{m: 150, n: 600, k: 70, alpha: 1, transB: true, acc: true, threads: 4, splits: 5},
	)
	forKernels(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.String(), func(t *testing.T) { checkGemm(t, c) })
		}
	})
}

// TestGemmQuads covers products whose B is packed in quads (the 6×64
// kernel, and the 12×32 and smaller ones on the panels past the quads):
// sizes around the quad (four B panels) and A panel edges, k slices, tiles
// of one and more quads, split runs, transposed operands and every C term.
func TestGemmQuads(t *testing.T) {
	if !hasAVX512Kernel {
		t.Skip("B is packed in quads for the AVX-512 kernels only")
	}
	// TestMatMul's large product takes them.
	if !wideB(520, 2020) || wideB(512, 2047) || wideB(2000, 100) {
		t.Errorf("wideB: 520×2020 %v, 512×2047 %v, 2000×100 %v; want true, false, false", wideB(520, 2020), wideB(512, 2047), wideB(2000, 100))
	}
	ms := []int{1, gemmMR - 1, gemmMR, gemmMR + 1, 37, gemmMT*gemmMR + 1}
	ns := []int{4 * gemmNR, 4*gemmNR + 1, 6*gemmNR + 4, 8 * gemmNR, 9*gemmNR + 3, 16*gemmNR + 1}
	ks := []int{1, 3, 4, 5, 9, gemmKC + 1, 2*gemmKC + 3}
	cases := cycledCases(ms, ns, ks)
	for i := range cases {
		// Tiles of gemmTiles (rounded up to whole quads), of one quad
		// and of two.
		cases[i].mt, cases[i].nt = []int{0, 1, 3, 2}[i%4], []int{0, 4, 8, 4}[i%4]
		cases[i].wide = true
	}
	withKernel(kernelAVX512, func() {
		for _, c := range cases {
			t.Run(c.String(), func(t *testing.T) { checkGemm(t, c) })
		}
	})
}

// TestPackBWide checks that packing B in quads over any two ranges of
// panels lays out what packB and interleaveQuads make together, rows or
// columns of B contiguous, with ragged last panels.
func TestPackBWide(t *testing.T) {
	for _, c := range []struct{ k, n int }{{1, 64}, {5, 70}, {17, 100}, {33, 128}, {16, 131}, {40, 300}} {
		b := randF32(c.k * c.n)
		pn := ceilDiv(c.n, gemmNR)
		for _, trans := range []bool{false, true} {
			rs, cs := c.n, 1
			if trans {
				rs, cs = 1, c.k
			}
			want := make([]float32, packedBSize(c.k, c.n))
			packB(want, b, c.k, c.n, rs, cs, 0, pn)
			interleaveQuads(want, c.k, c.n)
			for cut := 0; cut <= pn; cut++ {
				got := make([]float32, len(want))
				for i := range got {
					got[i] = gemmSentinel
				}
				packBPanels(got, b, c.k, c.n, rs, cs, 0, cut, true)
				packBPanels(got, b, c.k, c.n, rs, cs, cut, pn, true)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("k %d n %d transposed %v cut at panel %d: element %d is %g, want %g", c.k, c.n, trans, cut, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestGemmTerms crosses the C terms (row bias, column bias, accumulation)
// with tile sizes and tile splits on shapes with full and edge micro-tiles.
func TestGemmTerms(t *testing.T) {
	type tiling struct{ mt, nt, splits int }
	tilings := []tiling{{0, 0, 1}, {1, 1, 7}, {2, 3, 2}, {5, 1, 4}}
	var cases []gemmCase
	for _, shape := range [][3]int{{4 * gemmMR, 4 * gemmNR, 40}, {3*gemmMR + 2, 3*gemmNR + 7, 61}, {5 * gemmMR, 5 * gemmNR, 33}, {4*gemmMR + 5, 4*gemmNR + 9, 7}, {gemmMR, gemmNR, 0}, {9, 20, 0}, {0, 5, 3}, {7, 0, 3}} {
		for _, terms := range []struct{ rb, cb, acc bool }{{false, false, false}, {true, false, false}, {false, true, false}, {true, true, false}, {false, false, true}, {true, true, true}} {
			for _, tl := range tilings {
				cases = append(cases, gemmCase{
					m: shape[0], n: shape[1], k: shape[2], alpha: -0.5,
					rowBias: terms.rb, colBias: terms.cb, acc: terms.acc,
					pad: 3, mt: tl.mt, nt: tl.nt, threads: 2, splits: tl.splits,
					clamp: terms.acc, res: terms.rb,
				})
			}
		}
	}
	forKernels(t, func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.String(), func(t *testing.T) { checkGemm(t, c) })
		}
	})
}

// gemmRanger runs the tiles of one gemm as a parallel loop.
type gemmRanger struct{ g *gemm }

func (r gemmRanger) rangeArgs(_, _ [][]byte, _ []byte, _ args, lo, hi int) { r.g.run(lo, hi) }

// TestGemmWorkers runs the tiles on a pool, as MatMul does, and compares
// with a single-call run (tiles are independent, so the result must be
// bit-identical).
func TestGemmWorkers(t *testing.T) {
	const m, n, k = 131, 250, 300
	a, b := randF32(m*k), randF32(k*n)
	pa, pb := make([]float32, packedASize(m, k)), make([]float32, packedBSize(k, n))
	packA(pa, a, m, k, k, 1, 1, 0, ceilDiv(m, gemmMR))
	packB(pb, b, k, n, n, 1, 0, ceilDiv(n, gemmNR))
	forKernels(t, func(t *testing.T) {
		for _, th := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("threads=%d", th), func(t *testing.T) {
				mt, nt := gemmTiles(m, n, th)
				want := make([]float32, m*n)
				g := gemm{m: m, n: n, k: k, a: pa, b: pb, c: want, ldc: n, mt: mt, nt: nt}
				g.run(0, g.tiles())
				got := make([]float32, m*n)
				g.c = got
				w := NewWorkers(th)
				defer w.Close()
				w.forArgs(g.tiles(), th, gemmRanger{&g}, args{}, nil, nil, nil)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("C[%d] = %g on %d threads, %g in one call", i, got[i], th, want[i])
					}
				}
			})
		}
	})
}

// TestGemmTilesCover checks that the tiles of gemmTiles partition the
// panels: no tile is empty or larger than mt×nt, and each panel pair is
// in exactly one tile.
func TestGemmTilesCover(t *testing.T) {
	for _, m := range []int{1, 5, 6, 7, 64, 145, 1024} {
		for _, n := range []int{1, 15, 16, 17, 100, 513, 1024} {
			for _, th := range []int{1, 2, 3, 16} {
				mt, nt := gemmTiles(m, n, th)
				g := gemm{m: m, n: n, mt: mt, nt: nt}
				pm, pn := ceilDiv(m, gemmMR), ceilDiv(n, gemmNR)
				tm, tn := ceilDiv(pm, mt), ceilDiv(pn, nt)
				if g.tiles() != tm*tn {
					t.Fatalf("%dx%d: tiles() = %d, want %d", m, n, g.tiles(), tm*tn)
				}
				seen := make([]int, pm*pn)
				for ti := 0; ti < tm; ti++ {
					for tj := 0; tj < tn; tj++ {
						p0, p1 := ti*pm/tm, (ti+1)*pm/tm
						q0, q1 := tj*pn/tn, (tj+1)*pn/tn
						if p1-p0 < 1 || p1-p0 > mt || q1-q0 < 1 || q1-q0 > nt {
							t.Fatalf("%dx%d on %d: tile (%d,%d) is %dx%d panels, limit %dx%d", m, n, th, ti, tj, p1-p0, q1-q0, mt, nt)
						}
						for p := p0; p < p1; p++ {
							for q := q0; q < q1; q++ {
								seen[p*pn+q]++
							}
						}
					}
				}
				for i, s := range seen {
					if s != 1 {
						t.Fatalf("%dx%d on %d: panel pair %d covered %d times", m, n, th, i, s)
					}
				}
			}
		}
	}
}

// reportFlops reports the rate of a benchmark that did flops operations:
// GFLOP/s of wall time, and GFLOP per CPU-second of the process since
// cpu0 (cpuSeconds at the start). On a machine shared with other jobs the
// second is the steadier measure: it counts only the time the benchmark's
// threads were actually running, so divided by the threads it compares
// with the one-core FMAPeak figure.
func reportFlops(b *testing.B, flops, cpu0 float64) {
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	if cpu0 >= 0 {
		if cpu := cpuSeconds() - cpu0; cpu > 0 {
			b.ReportMetric(flops/cpu/1e9, "GFLOP/cpu-s")
		}
	}
}

// BenchmarkSGEMMPacked times the tiles of a square product on prepacked
// operands (no packing), run on a Workers pool as MatMul runs them. It
// isolates the micro-kernel and the cache blocking from packing; compare
// with BenchmarkFMAPeak (times the number of threads).
func BenchmarkSGEMMPacked(b *testing.B) {
	for _, size := range []int{256, 1024} {
		for _, kern := range gemmKernels() {
			if kern == kernelGo && size > 256 && hasAsmKernel {
				continue // the portable kernel is timed on the small size only
			}
			for _, th := range threadCounts() {
				b.Run(fmt.Sprintf("%d/%s/threads=%d", size, kern.String(), th), func(b *testing.B) {
					withKernel(kern, func() { benchPacked(b, size, th) })
				})
			}
		}
	}
}

func benchPacked(b *testing.B, size, th int) {
	w := NewWorkers(th)
	defer w.Close()
	product := packedProduct(size, th, w)
	product()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		product()
	}
	reportFlops(b, 2*float64(size*size*size)*float64(b.N), cpu0)
}

// packedProduct sets up BenchmarkSGEMMPacked's size³ product on th
// threads and returns a function that runs it on w. Its operands and C
// are host buffers as a session's large weights and arena are.
func packedProduct(size, th int, w *Workers) func() {
	m, n, k := size, size, size
	pa, pb := hostFloats(packedASize(m, k)), hostFloats(packedBSize(k, n))
	packA(pa, randF32(m*k), m, k, k, 1, 1, 0, ceilDiv(m, gemmMR))
	// B as a MatMul packs it (in quads where it is large enough).
	wide := wideB(m, n)
	packBPanels(pb, randF32(k*n), k, n, n, 1, 0, ceilDiv(n, gemmNR), wide)
	mt, nt := gemmTiles(m, n, th)
	if wide {
		nt = roundUp(nt, 4)
	}
	g := &gemm{m: m, n: n, k: k, a: pa, b: pb, c: hostFloats(m * n), ldc: n, mt: mt, nt: nt, kc: productDepth(m, n, k), bWide: wide}
	return func() { w.forArgs(g.tiles(), th, gemmRanger{g}, args{}, nil, nil, nil) }
}

// BenchmarkGemmPack times packing a row-major 1024×1024 A and B, the
// part of a run-time MatMul that is not the product.
func BenchmarkGemmPack(b *testing.B) {
	const size = 1024
	src := randF32(size * size)
	dst := make([]float32, max(packedASize(size, size), packedBSize(size, size)))
	for _, c := range []struct {
		name   string
		rs, cs int
	}{{"rowmajor", size, 1}, {"transposed", 1, size}} {
		b.Run("A/"+c.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * size * size)
			for i := 0; i < b.N; i++ {
				packA(dst, src, size, size, c.rs, c.cs, 1, 0, ceilDiv(size, gemmMR))
			}
		})
		b.Run("B/"+c.name, func(b *testing.B) {
			b.SetBytes(2 * 4 * size * size)
			for i := 0; i < b.N; i++ {
				packB(dst, src, size, size, c.rs, c.cs, 0, ceilDiv(size, gemmNR))
			}
		})
	}
}

// BenchmarkSGEMMRun is BenchmarkSGEMM/1024 (a MatMul node of two run-time
// 1024×1024 matrices, both packed on every run) reported also in GFLOP
// per CPU-second, the measure that stays comparable with BenchmarkFMAPeak
// on a machine shared with other jobs.
func BenchmarkSGEMMRun(b *testing.B) {
	const size = 1024
	for _, th := range threadCounts() {
		b.Run(fmt.Sprintf("%d/threads=%d", size, th), func(b *testing.B) {
			g, n := matmulNode(size, size, size, false)
			p := prepareFor(b, g, n, th)
			w := NewWorkers(th)
			defer w.Close()
			p.k.Run(w, p.in, p.out, p.scratch)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				p.k.Run(w, p.in, p.out, p.scratch)
			}
			reportFlops(b, 2*size*size*size*float64(b.N), cpu0)
		})
	}
}

// TestProductDepth checks which products take deep k slices and that the
// slices stay equal.
func TestProductDepth(t *testing.T) {
	for _, c := range []struct{ m, n, k, want int }{
		{1024, 1024, 1024, 1024},
		{1024, 1024, 1100, 550},
		{1024, 1024, 3072, 1024},
		{512, 2048, 3000, 1000},
		{1024, 1023, 2048, 256}, // C just short of 2²⁰ elements
		{511, 4096, 1024, 256},  // too few rows
		{128, 768, 3072, 256},   // BERT-base's fc2
		{4096, 4096, 300, 300},
		{1024, 1024, 0, 0},
	} {
		if got := productDepth(c.m, c.n, c.k); got != c.want {
			t.Errorf("productDepth(%d, %d, %d) = %d, want %d", c.m, c.n, c.k, got, c.want)
		}
	}
}
