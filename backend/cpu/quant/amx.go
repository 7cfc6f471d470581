package quant

import (
	"encoding/binary"
	"sync"
	"unsafe"

	"github.com/berth-ml/berth/weights/ggml"
)

// The AMX path: products of Q4_0, Q8_0, Q4_K and Q6_K weights by many
// activation rows on the tile unit of Intel's Advanced Matrix
// Extensions, as llama.cpp takes them.
//
// TDPBSSD multiplies a tile of up to 16 rows of int8 values by a tile of
// int8 fours, summing into a tile of int32. Here the first operand is 16
// weight rows and the second 16 activation rows, one block of 32 values
// at a time: every block has its own scales, so each block's int32 sums
// (exact) are scaled by d_w·d_x and added into float32 accumulators with
// AVX-512, one zmm register per weight row. The order of these sums is
// not ref.go's, so the results are not its bits; see TestAMXMatchesReference
// for how close they are.
//
// A Q4_K block is eight such blocks (sub-blocks), value d·sc_j·q −
// dmin·m_j: the weight scale of sub-block j is d·sc_j, the activation
// scale that of its Q8_K block, and the minimums add a second term a
// sub-block, (−dmin·m_j)·(d_x·Σq_x), one more multiply-add in each
// weight row's accumulator (amxTilesMin). A Q6_K block is sixteen
// blocks of 16 (value d·sc_j·q, q from −32 to 31), each its own tile
// product of half the depth: the weight scale d·sc_j.
//
// Prepare lays the activation rows out once as the second operand wants
// them, as it quantises them (amxQuantize): for each tile of 16 rows and each block, 512 bytes,
// eight rows of the 16 rows' fours, and 16 float32 scales; rows past m
// are zeros. Each goroutine's RunWith unpacks 16 weight rows at a time,
// a slice of at most amxSliceBlocks blocks, into its own work space (a
// panel of 512 bytes a block, 16 rows of 32 int8 values, and the
// float32 scales) and runs the tile kernel over up to amxChunkTiles
// tiles of activation rows, which stay in L2 while every weight row of
// its range passes by them. The slices after the first add into y.

// amxMinRows is the fewest activation rows for which products take the
// AMX path: below it, the register tiles of the vector kernels are
// faster.
const amxMinRows = 8

// amxSliceBlocks is the most blocks of 32 of one slice of k: a slice of
// 16 unpacked weight rows is 32 KiB, in L1, and amxChunkTiles tiles of
// activation rows 1 MiB, in L2.
const amxSliceBlocks = 64

// amxChunkTiles is the most tiles of 16 activation rows one pass over
// the weight rows takes.
const amxChunkTiles = 32

// amxOff turns the AMX path off (for tests): products prepared after it
// is set take the vector kernels.
var amxOff bool

// amxGranted is whether the tile state is this process's: asked for
// once, on the first product that could use it.
var amxGranted = sync.OnceValue(amxPermit)

// amxFor reports whether products of m activation rows by weights of
// type t take the AMX path.
func amxFor(t ggml.Type, m int) bool {
	return (t == ggml.Q4_0 || t == ggml.Q8_0 || t == ggml.Q4_K || t == ggml.Q6_K) && m >= amxMinRows && !amxOff && amxCPU && amxGranted()
}

// amxBlock is the values of one tile product for weights of type t: the
// values that share a scale, 32, or 16 for Q6_K.
func amxBlock(t ggml.Type) int {
	if t == ggml.Q6_K {
		return 16
	}
	return 32
}

// amxScales is the float32 scales a block (amxBlock) takes on each side
// of the AMX kernel for weights of type t, 16 (one a row): the weights'
// and the activations'; 32 for Q4_K, with the terms of its minimums.
func amxScales(t ggml.Type) int {
	if t == ggml.Q4_K {
		return 32
	}
	return 16
}

// AMX reports whether long prompts' products with weights of type t take
// the AMX tiles on this CPU and build (see RunWith).
func AMX(t ggml.Type) bool { return amxFor(t, amxMinRows) }

// amxActBytes is the scratch of the activation rows laid out for AMX,
// against weights of type t: per tile of 16 rows, k bytes of values and
// k/amxBlock(t)·amxScales(t) float32 scales.
func amxActBytes(t ggml.Type, m, k int) int {
	return (m + 15) / 16 * (16*k + k/amxBlock(t)*amxScales(t)*4)
}

// amxWorkBytes is the work space of one goroutine's RunWith for rows of
// k values: the tile configuration, four int32 tiles, a float32 tile, and
// for a slice of blocks its weight panel, f16 and float32 scales; plus
// 64 bytes to align them.
func amxWorkBytes(k int) int {
	kc := min(k/32, amxSliceBlocks)
	return 64 + amxHeader + kc*(512+32+128)
}

// amxHeader is the bytes of the work space before the panel: the tile
// configuration (64), four int32 tiles and a float32 one (5 KiB).
const amxHeader = 64 + 5*1024

// WorkBytes is the work space each goroutine's RunWith needs for
// products of m activation rows of k values by weights of type t, 0
// where they take no AMX tiles (RunWith is then Run).
func WorkBytes(t ggml.Type, m, k int) int {
	if m <= 0 || k <= 0 || !amxFor(t, m) {
		return 0
	}
	return amxWorkBytes(k)
}

// amxQuantize quantises activation row i, x, into its prepared row a (as
// quantizeQ8_0 does) and into the AMX layout.
func (p *Product) amxQuantize(i int, a []byte, x []float32, bias bool) {
	nb := p.k / 32
	t, c := i/16, i%16
	xv := p.xv[t*16*p.k+4*c : (t+1)*16*p.k]
	xs := p.xs[t*16*nb+c : (t+1)*16*nb]
	if !quantizeQ8_0Asm(a, x, bias, xv, xs) {
		quantizeQ8_0Go(a, x, bias)
		amxRow(xv, xs, a, p.k, bias)
	}
}

// amxRow copies the prepared row a of k values into its place xv, xs of
// the AMX layout.
func amxRow(xv []byte, xs []float32, a []byte, k int, bias bool) {
	nb := k / 32
	od, _ := q8Offsets(k, bias)
	d := f32s(a[od:], nb)
	for b := range nb {
		for r := range 8 {
			binary.LittleEndian.PutUint32(xv[512*b+64*r:], binary.LittleEndian.Uint32(a[32*b+4*r:]))
		}
		xs[16*b] = d[b]
	}
}

// amxQuantizeK quantises activation row i, x, into its prepared Q8_K
// row a (quantizeQ8_K) and into the AMX layout: its values, and for each
// block (amxBlock) its Q8_K block's scale d (Q4_K: and d·Σq).
func (p *Product) amxQuantizeK(i int, a []byte, x []float32) {
	quantizeQ8_K(a, x)
	t, c := i/16, i%16
	xv := p.xv[t*16*p.k+4*c : (t+1)*16*p.k]
	q, d, sums := qkRow(a, p.k)
	for b := range p.k / 32 {
		for r := range 8 {
			binary.LittleEndian.PutUint32(xv[512*b+64*r:], binary.LittleEndian.Uint32(q[32*b+4*r:]))
		}
	}
	nb := p.k / amxBlock(p.wType)
	sw := amxScales(p.wType)
	xs := p.xs[t*sw*nb+c : (t+1)*sw*nb]
	for b := range nb {
		xs[sw*b] = d[b*amxBlock(p.wType)/256]
		if p.wType == ggml.Q4_K {
			xs[32*b+16] = d[b/8] * float32(sums[b])
		}
	}
}

// amxPad zeroes the rows of the last tile of the AMX layout past the
// last activation row.
func (p *Product) amxPad() {
	nb := p.k / amxBlock(p.wType)
	sw := amxScales(p.wType)
	for i := p.m; i%16 != 0; i++ {
		t, c := i/16, i%16
		for e := 0; e < p.k; e += 4 {
			binary.LittleEndian.PutUint32(p.xv[t*16*p.k+(e/32)*512+(e%32)/4*64+4*c:], 0)
		}
		for b := range nb {
			for s := 0; s < sw; s += 16 {
				p.xs[(t*nb+b)*sw+s+c] = 0
			}
		}
	}
}

// RunWith is Run with work, this goroutine's own work space of
// WorkBytes(t, m, k) bytes, which lets a long prompt's products take the
// AMX tiles where the CPU has them (their results are then within
// float32 rounding of Run's, not its bits; see doc.go). Goroutines
// sharing a product each need their own. It does not allocate.
func (p *Product) RunWith(lo, hi int, work []byte) {
	if p.xv == nil || len(work) < amxWorkBytes(p.k) || lo < 0 || hi > p.n || lo >= hi {
		p.Run(lo, hi)
		return
	}
	p.runAMX(lo, hi, work)
}

// runAMX computes outputs [lo, hi) of every row on the AMX tiles.
func (p *Product) runAMX(lo, hi int, work []byte) {
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(work))) & 63)
	work = work[off:]
	bv := amxBlock(p.wType)
	step := 16 * bv // bytes of a block on either side
	nb := p.k / bv
	kc := min(nb, amxSliceBlocks*32/bv)
	sw := amxScales(p.wType)
	cfg := work[:64]
	kc32 := kc * bv / 32 // the slice in blocks of 32
	panel := work[amxHeader : amxHeader+step*kc]
	halves := i16s(work[amxHeader+512*kc32:], 16*kc32)
	ws := f32s(work[amxHeader+544*kc32:], sw*kc)
	pack, kernel := amxPackQ4_0, amxTiles
	switch p.wType {
	case ggml.Q8_0:
		pack = amxPackQ8_0
	case ggml.Q4_K:
		kernel = amxTilesMin
	}
	tiles := (p.m + 15) / 16
	last := p.m - 16*(tiles-1)
	rows := -1 // the weight rows cfg names
	for t0 := 0; t0 < tiles; t0 += amxChunkTiles {
		t1 := min(tiles, t0+amxChunkTiles)
		lastRows := 16
		if t1 == tiles {
			lastRows = last
		}
		for b0 := 0; b0 < nb; b0 += kc {
			b1 := min(nb, b0+kc)
			add := 0
			if b0 > 0 {
				add = 1
			}
			for j := lo; j < hi; j += 16 {
				nr := min(16, hi-j)
				w := p.w[j*p.wRow+(b0*p.wRow)/nb : (j+nr-1)*p.wRow+(b1*p.wRow)/nb]
				switch p.wType {
				case ggml.Q4_K:
					amxPackQ4_K(&panel[0], &w[0], p.wRow, nr, (b1-b0)/8)
					amxScalesQ4_K(ws, w, p.wRow, nr, (b1-b0)/8)
				case ggml.Q6_K:
					amxPackQ6_K(&panel[0], &w[0], p.wRow, nr, (b1-b0)/16)
					amxScalesQ6_K(ws, w, p.wRow, nr, (b1-b0)/16)
				default:
					pack(&panel[0], (*uint16)(unsafe.Pointer(&halves[0])), &w[0], p.wRow, nr, b1-b0)
					if nr < 16 {
						for b := range b1 - b0 {
							clear(halves[16*b+nr : 16*b+16])
						}
					}
					amxHalves(&ws[0], (*uint16)(unsafe.Pointer(&halves[0])), b1-b0)
				}
				if nr != rows {
					amxConfig(cfg, nr, bv)
					rows = nr
				}
				y := p.y[16*t0*p.n+j : (16*(t1-1)+lastRows-1)*p.n+j+nr]
				xv := p.xv[t0*16*p.k+step*b0 : 16*p.k*t1]
				xs := p.xs[(t0*nb+b0)*sw : nb*sw*t1]
				kernel(&y[0], p.n, 1<<nr-1, lastRows, &panel[0], &ws[0], &xv[0], &xs[0], 16*p.k, 4*nb*sw, step, b1-b0, t1-t0, add, &work[0])
			}
		}
	}
}

// amxScalesQ4_K sets the scales of nsb Q4_K blocks of nr weight rows (w,
// wRow bytes apart) as amxTilesMin takes them: for sub-block b, 16 of
// d·sc (one a row), then 16 of −dmin·m; zeros for rows past nr.
func amxScalesQ4_K(ws []float32, w []byte, wRow, nr, nsb int) {
	ws = ws[:32*8*nsb]
	for r := range 16 {
		for s := range nsb {
			if r >= nr {
				for j := range 8 {
					ws[32*(8*s+j)+r], ws[32*(8*s+j)+16+r] = 0, 0
				}
				continue
			}
			blk := w[r*wRow+144*s : r*wRow+144*s+16]
			d, dmin := scale(blk), scale(blk[2:])
			sc, mn := scalesMins(blk[4:16])
			for j := range 8 {
				ws[32*(8*s+j)+r] = d * float32(sc[j])
				ws[32*(8*s+j)+16+r] = -(dmin * float32(mn[j]))
			}
		}
	}
}

// amxScalesQ6_K sets the scales of nsb Q6_K blocks of nr weight rows (w,
// wRow bytes apart) as amxTiles takes them: for block b of 16, d·sc of
// row r at ws[16·b + r]; zeros for rows past nr.
func amxScalesQ6_K(ws []float32, w []byte, wRow, nr, nsb int) {
	ws = ws[:16*16*nsb]
	for r := range 16 {
		for s := range nsb {
			if r >= nr {
				for g := range 16 {
					ws[16*(16*s+g)+r] = 0
				}
				continue
			}
			blk := w[r*wRow+210*s : r*wRow+210*s+210]
			d := scale(blk[208:])
			for g := range 16 {
				ws[16*(16*s+g)+r] = d * float32(int8(blk[192+g]))
			}
		}
	}
}

// amxPackQ6_KGo is amxPackQ6_K in Go, the definition of the assembly.
func amxPackQ6_KGo(panel []byte, w []byte, wRow, nr, nsb int) {
	panel = panel[:256*16*nsb]
	for r := range nr {
		for s := range nsb {
			blk := w[r*wRow+210*s : r*wRow+210*s+210]
			for h := range 2 {
				ql := blk[64*h : 64*h+64]
				qh := blk[128+32*h : 160+32*h]
				for l := range 32 {
					v := [4]byte{ql[l]&15 | qh[l]&3<<4, ql[l+32]&15 | qh[l]>>2&3<<4, ql[l]>>4 | qh[l]>>4&3<<4, ql[l+32]>>4 | qh[l]>>6&3<<4}
					for q, u := range v {
						e := 128*h + 32*q + l // the value's place in the block of 256
						panel[256*(16*s+e/16)+16*r+e%16] = u - 32
					}
				}
			}
		}
	}
}

// amxConfig writes the tile configuration of amxTiles for nr weight
// rows and blocks of bv values: palette 1; tiles 0 and 2 weights (nr
// rows of bv int8), 1 and 3 activations (bv/4 rows of 16 fours), 4 to 7
// their int32 products (nr rows of 16).
func amxConfig(cfg []byte, nr, bv int) {
	cfg = cfg[:64]
	clear(cfg)
	cfg[0] = 1
	a, b, c := struct{ rows, bytes int }{nr, bv}, struct{ rows, bytes int }{bv / 4, 64}, struct{ rows, bytes int }{nr, 64}
	for t, s := range [...]struct{ rows, bytes int }{a, b, a, b, c, c, c, c} {
		binary.LittleEndian.PutUint16(cfg[16+2*t:], uint16(s.bytes))
		cfg[48+t] = byte(s.rows)
	}
}
