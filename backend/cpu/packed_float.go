package cpu

import (
	"fmt"
	"github.com/berth-ml/berth/backend/cpu/vmath"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// floatProduct is PackedMatMul of float weights (F16, BF16, F32) over many
// activation rows: the weights are widened to float32 a chunk of rows at
// a time into the scratch, and the chunk's product is the float GEMM's
// (Gemm with transB), whose output columns are then copied into y. Each
// weight row is widened once for all the activation rows, so the product
// runs at the GEMM's speed. The sums take the GEMM's order: the results
// agree with the row-by-row products to rounding, not bit for bit.
type floatProduct struct {
	format     ggml.Type
	m, k, n    int
	rowBytes   int
	gemm       Kernel
	gemmBytes  int // the GEMM's own scratch, first
	bAt, cAt   int // offsets of the widened chunk [floatChunk, k] and its product [m, floatChunk]
	totalBytes int
	// ios hand each run the operand lists it passes on, made once, so
	// that a run allocates nothing; sessions running at once take one
	// each (a fifth waits).
	ios chan *floatIO
}

// floatIO is the operand lists of one run of a floatProduct.
type floatIO struct {
	gin, gout, win, wout [][]byte
}

// floatChunk is how many weight rows floatProduct widens at a time, and
// floatMinRows the activation rows from which it is used.
const (
	floatChunk   = 256
	floatMinRows = 32
)

// newFloatProduct returns the float path of a PackedMatMul of m×k by
// n×k weights of format t, or nil where it does not apply.
func newFloatProduct(c *buildContext, t ggml.Type, m, k, n int, rowBytes int64) (*floatProduct, error) {
	if (t != ggml.F16 && t != ggml.BF16 && t != ggml.F32) || m < floatMinRows || n < floatChunk/4 {
		return nil, nil
	}
	g := &ir.Graph{Name: "packed float product", Opsets: map[string]int64{"": ir.LatestOpset}}
	a := g.NewTensor("x", ir.Float32, ir.Shape{int64(m), int64(k)}, nil)
	b := g.NewTensor("w", ir.Float32, ir.Shape{floatChunk, int64(k)}, nil)
	y := g.NewTensor("y", ir.Float32, ir.Shape{int64(m), floatChunk}, nil)
	g.Inputs = []ir.TensorID{a, b}
	g.Outputs = []ir.TensorID{y}
	g.Nodes = []ir.Node{{Name: "chunk", Op: "Gemm", Inputs: []ir.TensorID{a, b}, Outputs: []ir.TensorID{y},
		Attrs: ir.Attrs{"transB": {Kind: ir.AttrInt, Int: 1}}}}
	g.Tensor(y).Producer = 0
	kern, scratch, err := BuildWith(g, &g.Nodes[0], BuildOptions{Threads: c.threads})
	if err != nil {
		return nil, fmt.Errorf("the float product's GEMM: %w", err)
	}
	fp := &floatProduct{format: t, m: m, k: k, n: n, rowBytes: int(rowBytes), gemm: kern, gemmBytes: roundUp(int(scratch), 64)}
	fp.bAt = fp.gemmBytes
	fp.cAt = fp.bAt + roundUp(4*floatChunk*k, 64)
	fp.totalBytes = fp.cAt + roundUp(4*m*floatChunk, 64)
	fp.ios = make(chan *floatIO, 4)
	for range cap(fp.ios) {
		fp.ios <- &floatIO{gin: make([][]byte, 2), gout: make([][]byte, 1), win: make([][]byte, 1), wout: make([][]byte, 1)}
	}
	return fp, nil
}

// Run computes y = x·Wᵀ a chunk of weight rows at a time.
func (fp *floatProduct) Run(w *Workers, in, out [][]byte, scratch []byte) {
	x, y := in[0], f32s(out[0])
	gemmScratch := scratch[:fp.gemmBytes:fp.gemmBytes]
	bBytes := scratch[fp.bAt : fp.bAt+4*floatChunk*fp.k]
	cBytes := scratch[fp.cAt : fp.cAt+4*fp.m*floatChunk]
	b, c := f32s(bBytes), f32s(cBytes)
	io := <-fp.ios
	defer func() { fp.ios <- io }()
	io.gin[0], io.gin[1], io.gout[0], io.wout[0] = x, bBytes, cBytes, bBytes
	for j0 := 0; j0 < fp.n; j0 += floatChunk {
		rows := min(floatChunk, fp.n-j0)
		io.win[0] = in[1][j0*fp.rowBytes : (j0+rows)*fp.rowBytes]
		w.forArgs(rows, w.parts(rows*fp.k), fp, args{}, io.win, io.wout, nil)
		clear(b[rows*fp.k:])
		fp.gemm.Run(w, io.gin, io.gout, gemmScratch)
		for i := range fp.m {
			copy(y[i*fp.n+j0:i*fp.n+j0+rows], c[i*floatChunk:i*floatChunk+rows])
		}
	}
}

// rangeArgs widens rows [lo, hi) of the chunk in in[0] into out[0].
func (fp *floatProduct) rangeArgs(in, out [][]byte, _ []byte, _ args, lo, hi int) {
	dst := f32s(out[0])[lo*fp.k : hi*fp.k]
	src := in[0][lo*fp.rowBytes : hi*fp.rowBytes]
	if n := len(dst) &^ 7; fp.format == ggml.F16 && vmath.Asm && n > 0 {
		// F16C's conversion: the bits ggml.Dequantize gives.
		widenF16AVX2(&dst[0], &view[uint16](src)[0], n)
		dst, src = dst[n:], src[2*n:]
		if len(dst) == 0 {
			return
		}
	}
	if err := ggml.Dequantize(fp.format, dst, src); err != nil {
		// Building checked every size: this is a bug, not bad input.
		panic(fmt.Sprintf("PackedMatMul: %v", err))
	}
}
