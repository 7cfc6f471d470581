package cpu

import (
	"fmt"

	"github.com/berth-ml/berth/backend/cpu/quant"
	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// Berth's packed operators (ir.BerthDomain): products and gathers of
// weights in ggml's block formats, read in place from the bytes the file
// holds.

// packedMatMulKernel is y[m,n] = x[m,k]·Wᵀ with W packed (quant.MatMul):
// the workers share out the activation rows, which they quantise once
// into the scratch, then the weight rows, 16 at a time. Where the
// products take the AMX tiles, each worker has a work space of its own
// after the activations (quant.WorkBytes), and the shares are Split's.
type packedMatMulKernel struct {
	format  ggml.Type
	m, k, n int
	act     int           // bytes of the scratch the activations take
	work    int           // bytes of each worker's work space, 0 for none
	float   *floatProduct // float weights over many rows: widened, then the GEMM
}

func buildPackedMatMul(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	x, w, y := c.in(0), c.in(1), c.out(0)
	k := x.Shape[x.Shape.Rank()-1]
	p, err := ir.PackedWeights(c.n, w, k)
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if !quant.Supports(p.Format) {
		return nil, 0, c.errorf("no product with %s weights on the CPU", p.Format)
	}
	if k%p.Format.BlockSize() != 0 {
		return nil, 0, c.errorf("rows of %d values are not whole %s blocks", k, p.Format)
	}
	m := x.Shape.Elements() / max(k, 1)
	if y.DType != ir.Float32 || y.Shape.Elements() != m*p.Rows {
		return nil, 0, c.errorf("output %s%v, want float32 of %d×%d", y.DType, y.Shape, m, p.Rows)
	}
	kr := &packedMatMulKernel{format: p.Format, m: int(m), k: int(k), n: int(p.Rows)}
	if kr.float, err = newFloatProduct(c, p.Format, kr.m, kr.k, kr.n, p.RowBytes); err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if kr.float != nil {
		return kr, int64(kr.float.totalBytes), nil
	}
	kr.act = quant.ScratchBytes(p.Format, kr.m, kr.k)
	kr.work = quant.WorkBytes(p.Format, kr.m, kr.k)
	return kr, int64(kr.act + max(1, c.threads)*kr.work), nil
}

// The phases of a PackedMatMul, in args[0]; args[1] is the shares of
// phasePackedShares.
const (
	phasePackedQuantise = iota // items are activation rows
	phasePackedGroups          // items are groups of 16 weight rows
	phasePackedShares          // items are shares of the weight rows (Split), with a work space each
)

func (kr *packedMatMulKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	if kr.float != nil {
		kr.float.Run(w, in, out, scratch)
		return
	}
	w.forArgs(kr.m, w.parts(kr.m*kr.k/4), kr, args{phasePackedQuantise}, in, out, scratch)
	groups := (kr.n + 15) / 16
	parts := w.parts(kr.m * kr.k * kr.n / 8)
	if kr.work == 0 {
		w.forArgs(groups, parts, kr, args{phasePackedGroups}, in, out, scratch)
		return
	}
	// One item a share, so that share i knows its work space.
	parts = max(1, min(parts, groups, (len(scratch)-kr.act)/kr.work))
	w.forArgs(parts, parts, kr, args{phasePackedShares, int64(parts)}, in, out, scratch)
}

// rangeArgs quantises activation rows [lo, hi), or computes weight rows
// [16·lo, 16·hi) of every activation row, or those of shares [lo, hi),
// as a[0] says.
func (kr *packedMatMulKernel) rangeArgs(in, out [][]byte, scratch []byte, a args, lo, hi int) {
	p, err := quant.Prepared(f32s(out[0]), f32s(in[0]), kr.m, kr.k, in[1], kr.n, kr.format, scratch[:kr.act])
	if err != nil {
		// Building checked every size: this is a bug, not bad input.
		panic(fmt.Sprintf("PackedMatMul: %v", err))
	}
	switch a[0] {
	case phasePackedQuantise:
		p.Quantize(lo, hi)
	case phasePackedGroups:
		p.Run(16*lo, min(16*hi, kr.n))
	case phasePackedShares:
		for s := lo; s < hi; s++ {
			r0, r1 := quant.Split(kr.n, int(a[1]), s)
			o := kr.act + s*kr.work
			p.RunWith(r0, r1, scratch[o:o+kr.work])
		}
	}
}

// packedGatherKernel is y[i, :] = row ids[i] of a packed table,
// dequantised (ggml.Dequantize).
type packedGatherKernel struct {
	format   ggml.Type
	rows     int64
	cols     int
	rowBytes int
	ids      ir.DType
	n        int // ids
}

func buildPackedGather(c *buildContext) (Kernel, int64, error) {
	if err := c.need(2); err != nil {
		return nil, 0, err
	}
	w, ids, y := c.in(0), c.in(1), c.out(0)
	p, err := ir.PackedWeights(c.n, w, c.n.Attrs.Int("cols", -1))
	if err != nil {
		return nil, 0, c.errorf("%v", err)
	}
	if ids.DType != ir.Int64 && ids.DType != ir.Int32 {
		return nil, 0, c.unsupported(ids.DType)
	}
	n := ids.Shape.Elements()
	if y.DType != ir.Float32 || y.Shape.Elements() != n*p.Cols {
		return nil, 0, c.errorf("output %s%v, want float32 of %d×%d", y.DType, y.Shape, n, p.Cols)
	}
	return &packedGatherKernel{format: p.Format, rows: p.Rows, cols: int(p.Cols), rowBytes: int(p.RowBytes), ids: ids.DType, n: int(n)}, 0, nil
}

func (kr *packedGatherKernel) Run(w *Workers, in, out [][]byte, scratch []byte) {
	w.forArgs(kr.n, w.parts(kr.n*kr.cols), kr, args{}, in, out, scratch)
}

// rangeArgs dequantises the rows of ids [lo, hi); an id outside the table
// (counted from the end where negative, as Gather does) gives zeros.
func (kr *packedGatherKernel) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	y := f32s(out[0])
	for i := lo; i < hi; i++ {
		var id int64
		if kr.ids == ir.Int64 {
			id = view[int64](in[1])[i]
		} else {
			id = int64(view[int32](in[1])[i])
		}
		if id < 0 {
			id += kr.rows
		}
		dst := y[i*kr.cols : (i+1)*kr.cols]
		if id < 0 || id >= kr.rows {
			clear(dst)
			continue
		}
		src := in[0][int(id)*kr.rowBytes : (int(id)+1)*kr.rowBytes]
		if err := ggml.Dequantize(kr.format, dst, src); err != nil {
			panic(fmt.Sprintf("PackedGather: %v", err))
		}
	}
}

// ReadsBytes: the packed weights are read at any alignment, in place in
// the mapped file (ggml's blocks are 18, 34 or 144 bytes long, so rows do
// not keep the file's alignment anyway).
func (kr *packedMatMulKernel) ReadsBytes(i int) bool { return i == 1 }

// ReadsBytes: as packedMatMulKernel's.
func (kr *packedGatherKernel) ReadsBytes(i int) bool { return i == 0 }
