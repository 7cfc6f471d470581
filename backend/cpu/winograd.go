package cpu

import (
	"encoding/binary"
	"math"
)

// Winograd convolution F(2×2, 3×3) and F(4×4, 3×3).
//
// A 3×3 convolution with unit strides computes each 2×2 tile of outputs
// from the 4×4 patch of (padded) input under it as Aᵀ·[(G·g·Gᵀ) ⊙
// (Bᵀ·d·B)]·A, with
//
//	Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1]
//	G  = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1]
//	Aᵀ = [1 1 1 0; 0 1 −1 −1]
//
// Summed over the input channels, the element-wise products become 16
// matrix products, one per position ξ = 4v+u of the 4×4 transforms:
// M_ξ = U_ξ·V_ξ, with U_ξ (output channels × input channels) the
// transformed filters and V_ξ (input channels × tiles) the transformed
// input. That is 16 multiply-adds per tile and channel pair where the
// direct product takes 36: 2.25 times fewer.
//
// A run, image by image, has three parallel phases. The input transform
// (wgIn, sixteen tiles of a tile row at a time) writes every V_ξ; the
// sixteen products run on the GEMM kernels with V_ξ as their unpacked B
// operand; the output transform (wgOut) adds the bias, clamps, and writes
// the outputs. The results differ from the direct product's by rounding
// only; a run is still the same bit for bit whatever the threads, and the
// epilogue sees the same values fused or not.
//
// F(4×4, 3×3) computes each 4×4 tile of outputs from the 6×6 patch under
// it the same way, with
//
//	Bᵀ = [4 0 −5 0 1 0; 0 −4 −4 1 1 0; 0 4 −4 −1 1 0;
//	      0 −2 −1 2 1 0; 0 2 −1 −2 1 0; 0 4 0 −5 0 1]
//	G  = [¼ 0 0; −⅙ −⅙ −⅙; −⅙ ⅙ −⅙; 1/24 1/12 ⅙; 1/24 −1/12 ⅙; 0 0 1]
//	Aᵀ = [1 1 1 1 1 0; 0 1 −1 2 −2 0; 0 1 1 4 4 0; 0 1 −1 8 −8 1]
//
// (the interpolation points 0, ±1, ±2 and ∞): 36 products, one per
// position ξ = 6v+u, of 36 multiply-adds per 16 outputs where F(2×2, 3×3)
// takes 64 and the direct product 144. Its transformed filters take 36/9
// of the weights, its rounding errors are several times larger (G divides
// by 3; Aᵀ multiplies by up to 8), and its 4×4 tiles fit small planes
// worse, so it runs where the planes hold many tiles and the weights are
// small (wg4Fits): ResNet-50's 3×3 layers at 56².

// winogradOn lets convolutions take the Winograd path where they fit;
// tests clear it to compare with the direct product.
var winogradOn = true

// wgMinChannels is the fewest input and output channels a convolution
// needs for the Winograd path: below, the transforms outweigh the
// products they save.
const wgMinChannels = 32

// wgMaxChannels bounds the input plus output channels of a convolution
// on the Winograd path (ResNet-50's largest, 512 + 512): the transformed
// filters take 16/9 of the weights' memory.
const wgMaxChannels = 1024

// wgMinTiles is the fewest output tiles a convolution needs for the
// Winograd path: the tiles are the columns of its sixteen products, and
// fewer than one 12×32 micro-tile's run every product through the 12×16
// kernel while reading 16/9 of the weights. ResNet-50's 7² layers (16
// tiles, 512 channels) take the direct product instead.
const wgMinTiles = 2 * gemmNR

// wgBlockFloats bounds the transformed input and products of one block of
// tiles, in floats (4 MiB): a run goes through the tiles block by block,
// so that the scratch stays bounded whatever the image size. Each block
// is three or four parallel loops, each ending when its slowest worker
// does, so fewer, larger blocks run faster even where they spill out of
// the workers' L2 caches.
const wgBlockFloats = 1 << 20

// wgMaxTileRow bounds the tiles of a tile row (wider outputs take the
// direct product), which bounds the split input rows.
const wgMaxTileRow = 2048

// winograd4On lets convolutions take F(4×4, 3×3) where it fits; tests
// clear it to run F(2×2, 3×3) instead.
var winograd4On = true

// wg4MinTiles is the fewest 4×4 tiles a convolution needs for F(4×4,
// 3×3). Its products are as many times shorter as they are fewer, and a
// run reads 36/16 of F(2×2, 3×3)'s transformed filters, which in a model
// come from memory: ResNet-50's 28² layers (49 tiles) gain nothing by it
// there, its 56² ones (196 tiles) do.
const wg4MinTiles = 64

// wg4MaxChannels bounds the input plus output channels of a convolution
// on F(4×4, 3×3), whose transformed filters take four times the weights'
// memory: 256 + 256 keeps them within 9.4 MB a layer.
const wg4MaxChannels = 512

// winograd is the Winograd state of a convolution kernel.
type winograd struct {
	r      int       // output tile side: 2 or 4 (F(r×r, 3×3))
	xis    int       // (r+2)², the transforms' positions ξ
	u      []float32 // the xis transformed filters, packed as GEMM A operands (uSize floats each)
	uSize  int
	tw, th int // tiles per row, tile rows
	t      int // tiles
	tb     int // tiles of a full block, a multiple of 32
	p      int // floats of a half (even or odd columns; with r = 4, a quarter) of a split input row
	rows   int // split padded input rows of a block
	// Scratch, in floats: V (xis × c × tb), M (xis × m × tb), the packed B
	// tails (xis × tail), then each worker's split rows.
	vOff, mOff, tOff, sOff int
	tail                   int
	split                  splitGeom // of an input row into halves of p floats (2p with r = 4)

	// ut, on channel-blocked activations (winograd_blocked.go), is the
	// transformed filters transposed: for each ξ, m/32 panels of c
	// steps of 32 output channels, pointwiseBlocked12x32's B. u is then nil.
	ut []float32
}

// winogradFits reports whether k runs as Winograd F(2×2, 3×3) or F(4×4,
// 3×3) (wg4Fits): a 2-D 3×3 convolution with unit strides and dilations,
// one group, constant weights, enough channels and tiles, on a machine
// with the AVX-512 kernels.
func (k *convKernel) winogradFits(constW bool) bool {
	tw, th := k.wgTileGrid(2)
	return winogradOn && dw512 && useAVX512Kernel && constW && k.g == 1 && !k.depthwise &&
		k.in[0] == 1 && k.kern == [3]int{1, 3, 3} && k.stride == [3]int{1, 1, 1} && k.dil == [3]int{1, 1, 1} &&
		k.pad[1] >= 0 && k.pad[2] >= 0 && k.out[1] >= 2 && k.out[2] >= 2 && tw <= wgMaxTileRow &&
		k.c >= wgMinChannels && k.m >= wgMinChannels && k.c+k.m <= wgMaxChannels && k.pro == nil &&
		tw*th >= wgMinTiles
}

// wgTileGrid is the output's r×r tiles: tw to a tile row, th rows.
func (k *convKernel) wgTileGrid(r int) (tw, th int) {
	return ceilDiv(k.out[2], r), ceilDiv(k.out[1], r)
}

// wg4Fits reports whether a convolution on the Winograd path takes F(4×4,
// 3×3): many 4×4 tiles, and few enough channels for its transformed
// filters.
func (k *convKernel) wg4Fits() bool {
	tw, th := k.wgTileGrid(4)
	return winograd4On && tw*th >= wg4MinTiles && k.c+k.m <= wg4MaxChannels
}

// buildWinograd sets k.wg from the weights w and returns the scratch, in
// floats, that a run on threads workers takes.
func (k *convKernel) buildWinograd(w f32src, threads int) int {
	g := &winograd{r: 2}
	if k.wg4Fits() {
		g.r = 4
	}
	g.xis = (g.r + 2) * (g.r + 2)
	g.tw, g.th = k.wgTileGrid(g.r)
	g.t = g.tw * g.th
	// Equal blocks of whole pairs of vectors of tiles (the products'
	// widest micro-tiles), about as large as the bound allows.
	most := max(2*gemmNR, wgBlockFloats/(g.xis*(k.c+k.m))/(2*gemmNR)*(2*gemmNR))
	g.tb = roundUp(ceilDiv(g.t, ceilDiv(g.t, most)), 2*gemmNR)
	g.p = roundUp(g.tw+1, 16)
	// Halves of p floats, or for F(4×4) of 2p (each split in two again).
	g.split = splitRowGeom(k.pad[2], k.in[2], g.r/2*g.p)
	// A block spans at most tb/tw + 2 tile rows.
	g.rows = g.r*min(g.th, g.tb/g.tw+2) + 2
	g.uSize = packedASize(k.m, k.c)
	g.u = k.weights.packed(w.bytes(), "winograd U", [8]int{g.r, g.xis, g.uSize, k.m, k.c}, g.xis*g.uSize, func(u []float32) {
		// U_ξ = G·g·Gᵀ for every filter, one ξ at a time in tmp (m × c).
		tmp := make([]float32, k.m*k.c)
		for xi := 0; xi < g.xis; xi++ {
			for i := 0; i < k.m*k.c; i++ {
				tmp[i] = g.filter(w, i, xi)
			}
			packA(u[xi*g.uSize:], tmp, k.m, k.c, k.c, 1, 1, 0, ceilDiv(k.m, gemmMR))
		}
	})
	// The kernels read B's first whole pairs of 16 columns from V
	// itself; the packed tail holds the rest (two panels at most).
	g.tail = 2 * gemmNR * k.c
	g.vOff = 0
	// V and M hold whole tiles of twelve tiles for the blocked path.
	g.mOff = roundUp(g.xis*k.c*roundUp(g.tb, pointwiseBlockedMR), alignment/4)
	g.tOff = g.mOff + roundUp(g.xis*k.m*roundUp(g.tb, pointwiseBlockedMR), alignment/4)
	g.sOff = g.tOff + roundUp(g.xis*g.tail, alignment/4)
	k.wg = g
	return g.sOff + max(1, threads)*g.splitFloats()
}

// wgG4 is F(4×4, 3×3)'s G (see the top of this file).
var wgG4 = [6][3]float64{
	{1. / 4, 0, 0},
	{-1. / 6, -1. / 6, -1. / 6},
	{-1. / 6, 1. / 6, -1. / 6},
	{1. / 24, 1. / 12, 1. / 6},
	{1. / 24, -1. / 12, 1. / 6},
	{0, 0, 1},
}

// filter is value ξ of filter i's transform G·g·Gᵀ (g the 3×3 filter at
// float 9i of w): F(4×4, 3×3)'s computed in float64 and rounded once.
func (g *winograd) filter(w f32src, i, xi int) float32 {
	var f [9]float32
	for t := range f {
		f[t] = w.at(i*9 + t)
	}
	if g.r == 2 {
		var gg [4][3]float32 // G·g
		for r := 0; r < 3; r++ {
			gg[0][r], gg[1][r], gg[2][r], gg[3][r] = wgG(f[r], f[3+r], f[6+r])
		}
		var out [4]float32
		out[0], out[1], out[2], out[3] = wgG(gg[xi/4][0], gg[xi/4][1], gg[xi/4][2])
		return out[xi%4]
	}
	v, u := xi/6, xi%6
	var s float64
	for a := range 3 {
		for b := range 3 {
			s += wgG4[v][a] * float64(f[3*a+b]) * wgG4[u][b]
		}
	}
	return float32(s)
}

// wgG applies G to the column (a, b, c): a, (a+b+c)/2, (a−b+c)/2, c.
func wgG(a, b, c float32) (float32, float32, float32, float32) {
	return a, (a + b + c) * 0.5, (a - b + c) * 0.5, c
}

// at is value i of s.
func (s f32src) at(i int) float32 {
	if s.f != nil {
		return s.f[i]
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(s.b[4*i:]))
}

// splitFloats is the scratch, in floats, of one worker's split rows:
// with r = 4, the rows split four ways and, after them, the same rows
// split in two (wgSplit4).
func (g *winograd) splitFloats() int {
	n := g.rows * 2 * g.p
	if g.r == 4 {
		n = g.rows * 8 * g.p
	}
	// The blocked path's patches and transforms' rows (wgBlockedFloats).
	return roundUp(max(n, wgBlockedFloats), alignment/4)
}

// Phases of a Winograd run, in args[0]; args[1] is the image, args[2]
// the shares of the transforms, args[3] the block of tiles.
const (
	phaseWgIn   = 7 // input transform, items are shares of the input channels
	phaseWgPack = 8 // packed B tails, items are ξ
	phaseWgMul  = 9 // products, items are (ξ, GEMM tile)
	phaseWgOut  = 10
)

// runWinograd runs k on w image by image and block by block.
func (k *convKernel) runWinograd(w *Workers, in, out [][]byte, scratch []byte) {
	g := k.wg
	// The transforms go one share of channels per worker, so that each
	// knows its split rows and its epilogue registers.
	parts := max(1, min(w.Threads(), (len(scratch)/4-g.sOff)/g.splitFloats(), k.c, k.m))
	if k.fuse != nil {
		parts = min(parts, k.fuse.shares)
	}
	for n := 0; n < k.nb; n++ {
		for t0 := 0; t0 < g.t; t0 += g.tb {
			a := args{phaseWgIn, int64(n), int64(parts), int64(t0)}
			w.forArgs(parts, parts, k, a, in, out, scratch)
			shape := k.wgGemm(nil, 0, t0)
			if shape.n%(2*gemmNR) != 0 {
				a[0] = phaseWgPack
				w.forArgs(g.xis, w.Threads(), k, a, in, out, scratch)
			}
			a[0] = phaseWgMul
			w.forArgs(g.xis*shape.tiles(), w.Threads(), k, a, in, out, scratch)
			a[0] = phaseWgOut
			w.forArgs(parts, parts, k, a, in, out, scratch)
		}
	}
}

// wgGemm is product ξ of the block of tiles from t0 over the scratch sc
// (nil: only its shape).
func (k *convKernel) wgGemm(sc []float32, xi, t0 int) gemm {
	g := k.wg
	n := min(g.tb, g.t-t0)
	// Tiles span all of B's panels (raw B wants them to start at even
	// panels); the xis products give the workers enough of them.
	mt, _ := gemmTiles(k.m, n, 1)
	nt := ceilDiv(n, gemmNR)
	p := gemm{m: k.m, n: n, k: k.c, a: g.u[xi*g.uSize:][:g.uSize], ldb: g.tb, ldc: g.tb, mt: mt, nt: nt}
	if sc != nil {
		p.bRaw = sc[g.vOff+xi*k.c*g.tb:][:k.c*g.tb]
		p.c = sc[g.mOff+xi*k.m*g.tb:][:k.m*g.tb]
		// Panel q of B is read at q·c·16 of b: only the tail panels
		// (from rawPanels on) are, and they lie in ξ's tail area.
		tail := g.tOff + xi*g.tail
		p.b = sc[tail-p.rawPanels()*gemmNR*k.c:][:(p.rawPanels()+2)*gemmNR*k.c]
	}
	return p
}

// wgSplit writes padded rows [r0, r0+rows) of the input plane x into buf,
// split into their even and odd columns: padded row r0+i's even columns
// at buf[2i·p:], its odd ones p floats on (dwBandPlane's stride-2
// layout); for F(4×4, 3×3), into their columns of each residue mod 4.
func (k *convKernel) wgSplit(buf, x []float32, r0, rows int) {
	g := k.wg
	H, W := k.in[1], k.in[2]
	ph, P, sg := k.pad[1], g.p, g.split
	ld := g.r * P // floats of a split row
	// Rows [i0, i1) of the band are input rows r0 + i − ph.
	i0 := min(rows, max(0, ph-r0))
	i1 := max(i0, min(rows, H+ph-r0))
	clear(buf[:ld*i0])
	clear(buf[ld*i1 : ld*rows])
	if i1 == i0 {
		return
	}
	n, b := i1-i0, buf[ld*i0:]
	if g.r == 2 {
		dwSplitRows512(&b[0], &b[P], ld, &x[(r0+i0-ph)*W], W, n, P, sg.lo, sg.off, sg.pairs, sg.head, sg.tail)
		return
	}
	// F(4×4, 3×3): padded row r0+i's column 4t+j goes to buf[(4i+j)·P +
	// t]. The rows split in two into the area that follows them, then
	// each half in two again: columns 4t and 4t+2 from the even half,
	// 4t+1 and 4t+3 from the odd one.
	tmp := buf[ld*rows:][:ld*n]
	dwSplitRows512(&tmp[0], &tmp[2*P], ld, &x[(r0+i0-ph)*W], W, n, 2*P, sg.lo, sg.off, sg.pairs, sg.head, sg.tail)
	dwSplitRows512(&b[0], &b[2*P], ld, &tmp[0], ld, n, P, 0, 0, P, 0, -1)
	dwSplitRows512(&b[P], &b[3*P], ld, &tmp[2*P], ld, n, P, 0, 0, P, 0, -1)
}

// wgRows calls f for each tile row ty that tiles [t0, t1) meet, with
// the tiles [tx0, tx1) of it that they hold.
func (g *winograd) wgRows(t0, t1 int, f func(ty, tx0, tx1 int)) {
	for ty := t0 / g.tw; ty*g.tw < t1; ty++ {
		f(ty, max(0, t0-ty*g.tw), min(g.tw, t1-ty*g.tw))
	}
}

// wgRange runs items [lo, hi) of phase a[0] (see the phases).
func (k *convKernel) wgRange(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	g := k.wg
	sc := f32s(scratch)
	n, parts, t0 := int(a[1]), int(a[2]), int(a[3])
	t1 := min(g.t, t0+g.tb)
	ty0 := t0 / g.tw
	switch a[0] {
	case phaseWgIn:
		x := f32s(in[0])
		rows := g.r*((t1-1)/g.tw-ty0+1) + 2
		for share := lo; share < hi; share++ {
			buf := sc[g.sOff+share*g.splitFloats():][:g.splitFloats()]
			for c := share * k.c / parts; c < (share+1)*k.c/parts; c++ {
				plane, v := x[(n*k.c+c)*k.inSp:][:k.inSp], sc[g.vOff+c*g.tb:]
				k.wgSplit(buf, plane, g.r*ty0, rows)
				g.wgRows(t0, t1, func(ty, tx0, tx1 int) {
					// The tile row's first split row: padded row
					// r·(ty − ty0) of the band.
					e := &buf[g.r*(ty-ty0)*g.r*g.p+tx0]
					if g.r == 4 {
						wgIn4(&v[ty*g.tw+tx0-t0], k.c*g.tb, e, g.p, tx1-tx0)
						return
					}
					wgIn(&v[ty*g.tw+tx0-t0], k.c*g.tb, e, g.p, tx1-tx0)
				})
			}
		}
	case phaseWgPack:
		for xi := lo; xi < hi; xi++ {
			p := k.wgGemm(sc, xi, t0)
			r := p.rawPanels()
			packB(p.b, p.bRaw, k.c, p.n, g.tb, 1, r, ceilDiv(p.n, gemmNR))
		}
	case phaseWgMul:
		shape := k.wgGemm(nil, 0, t0)
		tiles := shape.tiles()
		for it := lo; it < hi; it++ {
			p := k.wgGemm(sc, it/tiles, t0)
			p.run(it%tiles, it%tiles+1)
		}
	case phaseWgOut:
		y := f32s(out[0])
		bias, lim := k.biasLim(in)
		OH, OW := k.out[1], k.out[2]
		for share := lo; share < hi; share++ {
			for m := share * k.m / parts; m < (share+1)*k.m/parts; m++ {
				var b float32
				if bias != nil {
					b = bias[m]
				}
				plane := y[(n*k.m+m)*k.outSp:][:k.outSp]
				mm := sc[g.mOff+m*g.tb:]
				g.wgRows(t0, t1, func(ty, tx0, tx1 int) {
					if g.r == 4 {
						wgOut4(&plane[4*ty*OW+4*tx0], OW, &mm[ty*g.tw+tx0-t0], k.m*g.tb, tx1-tx0, min(OW, 4*tx1)-4*tx0, min(4, OH-4*ty), lim, b)
						return
					}
					wgOut(&plane[2*ty*OW+2*tx0], OW, &mm[ty*g.tw+tx0-t0], k.m*g.tb, tx1-tx0, OW-2*tx0, min(2, OH-2*ty), lim, b)
				})
				if k.fuse != nil {
					// The output rows of the tile rows this block
					// completes: each once, when its last tile is done.
					j0, j1 := min(k.outSp, g.r*(t0/g.tw)*OW), min(k.outSp, g.r*(t1/g.tw)*OW)
					if t1 == g.t {
						j1 = k.outSp
					}
					if r := n*k.m + m; j1 > j0 {
						k.fuse.tile(f32s(out[1]), y, in, f32s(out[2]), share, r, r+1, j0, j1)
					}
				}
			}
		}
	}
}
