package cpu

import (
	"github.com/berth-ml/berth/ir"
)

// convTransposeKernel is ConvTranspose (1 to 3 spatial dimensions, held as
// 3). Per image and group it computes the column matrix
// col[(m, tap), i] = Σ_c W[c, m, tap]·X[c, i] with the GEMM, then scatters
// every column entry to output position i·stride − pad + tap·dilation
// (col2im), one output channel per parallel item.
type convTransposeKernel struct {
	nb, c, m, g int
	cg, mg      int
	in, out     [3]int
	kern        [3]int
	stride, dil [3]int
	pad         [3]int
	inSp, outSp int
	kvol        int
	rows        int // mg·kvol, rows of the column matrix
	hasBias     bool
	wPre        []float32 // packed Wᵀ per group, aSize floats each; nil when W is computed at run time
	aSize       int
	bSize       int // floats of one packed X block
	colOff      int // scratch float offset of the column matrix
	wOff        int // scratch float offset of run-time packed weights
}

func buildConvTranspose(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, wt, b, y := c.in(0), c.in(1), c.in(2), c.out(0)
	if err := c.allFloat32(x, wt, b, y); err != nil {
		return nil, 0, err
	}
	r := x.Shape.Rank() - 2
	if r < 1 || r > 3 || wt.Shape.Rank() != r+2 || y.Shape.Rank() != r+2 {
		return nil, 0, c.errorf("input %v, weight %v and output %v must have 1 to 3 spatial dimensions", x.Shape, wt.Shape, y.Shape)
	}
	at := c.attrs()
	k := &convTransposeKernel{nb: int(x.Shape[0]), c: int(x.Shape[1]), g: int(at.Int("group", 1))}
	if k.g <= 0 || k.c%k.g != 0 || int(wt.Shape[0]) != k.c {
		return nil, 0, c.errorf("weight %v does not fit %d input channels in %d groups", wt.Shape, k.c, k.g)
	}
	k.cg, k.mg = k.c/k.g, int(wt.Shape[1])
	k.m = k.mg * k.g
	if int(y.Shape[0]) != k.nb || int(y.Shape[1]) != k.m {
		return nil, 0, c.errorf("output %v, want [%d,%d,...]", y.Shape, k.nb, k.m)
	}
	if b != nil {
		if b.Shape.Elements() != int64(k.m) {
			return nil, 0, c.errorf("bias %v must have %d elements", b.Shape, k.m)
		}
		k.hasBias = true
	}
	win, err := ir.TransposeWindow(c.g, c.n)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	off := 3 - r
	for i := range 3 {
		k.in[i], k.out[i], k.kern[i], k.stride[i], k.dil[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < r; i++ {
		k.in[off+i], k.out[off+i], k.kern[off+i] = int(x.Shape[2+i]), int(y.Shape[2+i]), int(wt.Shape[2+i])
		k.stride[off+i], k.dil[off+i], k.pad[off+i] = int(win.Strides[i]), int(win.Dilations[i]), int(win.Pads[i])
	}
	k.inSp, k.outSp, k.kvol = prod(k.in[:]), prod(k.out[:]), prod(k.kern[:])
	k.rows = k.mg * k.kvol
	k.aSize = packedASize(k.rows, k.cg)
	k.bSize = packedBSize(k.cg, k.inSp)
	k.colOff = k.bSize
	floats := k.bSize + k.rows*k.inSp
	if wt.IsConst() {
		layout := [8]int{k.g, k.aSize, k.cg, k.rows}
		k.wPre = c.weights.packed(wt.Data, "conv-transpose weights", layout, k.g*k.aSize, func(wPre []float32) {
			k.packWeights(wPre, constSrc(wt))
		})
	} else {
		k.wOff = floats
		floats += k.g * k.aSize
	}
	return k, int64(floats) * 4, nil
}

// packWeights packs Wᵀ of every group: element (row = m·kvol + tap, c) is
// W[g·cg + c, m, tap].
func (k *convTransposeKernel) packWeights(dst []float32, w f32src) {
	for gi := 0; gi < k.g; gi++ {
		w.packA(dst[gi*k.aSize:], gi*k.cg*k.rows, k.rows, k.cg, 1, k.rows, 1)
	}
}

// Phases of a run beyond packing and tiles, in args[0].
const phaseCol2im = 3

func (k *convTransposeKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if k.wPre == nil {
		k.packWeights(f32s(scratch)[k.wOff:], f32src{f: f32s(in[1])})
	}
	pb := ceilDiv(k.inSp, gemmNR)
	mt, nt := gemmTiles(k.rows, k.inSp, w.Threads())
	g := gemm{m: k.rows, n: k.inSp, mt: mt, nt: nt}
	for n := 0; n < k.nb; n++ {
		for gi := 0; gi < k.g; gi++ {
			a := args{0, int64(n), int64(gi)}
			a[0] = phasePack
			w.forArgs(pb, w.parts(pb*gemmNR*k.cg), k, a, in, out, scratch)
			a[0] = phaseTiles
			a[3] = int64(mt)<<32 | int64(nt)
			w.forArgs(g.tiles(), w.parts(k.rows*k.inSp*k.cg/8), k, a, in, out, scratch)
			a[0] = phaseCol2im
			w.forArgs(k.mg, w.parts(k.rows*k.inSp), k, a, in, out, scratch)
		}
	}
}

func (k *convTransposeKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	n, gi := int(a[1]), int(a[2])
	s := f32s(scratch)
	switch a[0] {
	case phasePack:
		x := f32s(in[0])[(n*k.c+gi*k.cg)*k.inSp:]
		packB(s, x, k.cg, k.inSp, k.inSp, 1, lo, hi)
	case phaseTiles:
		wp := k.wPre
		if wp == nil {
			wp = s[k.wOff:]
		}
		g := gemm{m: k.rows, n: k.inSp, k: k.cg, a: wp[gi*k.aSize:], b: s, c: s[k.colOff:], ldc: k.inSp,
			mt: int(a[3] >> 32), nt: int(a[3] & (1<<32 - 1))}
		g.run(lo, hi)
	case phaseCol2im:
		y := f32s(out[0])
		var bias []float32
		if k.hasBias {
			bias = f32s(in[2])
		}
		for m := lo; m < hi; m++ {
			mo := gi*k.mg + m
			var bv float32
			if bias != nil {
				bv = bias[mo]
			}
			k.col2im(y[(n*k.m+mo)*k.outSp:][:k.outSp], s[k.colOff+m*k.kvol*k.inSp:][:k.kvol*k.inSp], bv)
		}
	}
}
