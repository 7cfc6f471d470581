package cuda

import (
	"math"
	"unsafe"

	"github.com/berth-ml/berth/backend/cuda/driver"
	"github.com/berth-ml/berth/dtype"
	"github.com/berth-ml/berth/ir"
)

// blasGemm tries to express g as one cublasSgemmStridedBatched call,
// preceded by a fill of C with the addend where g has one. It reports
// false, adding nothing, where the strides do not fit cuBLAS; the caller
// then uses the NVRTC kernel.
//
// cuBLAS is column-major and C is row-major, so the call computes
// Cᵀ = Bᵀ·Aᵀ: cuBLAS's A is our B and its B is our A, with M and N swapped.
func (c *buildContext) blasGemm(g gemmCall) bool {
	if g.k <= 0 || g.m <= 0 || g.n <= 0 {
		return false
	}
	shape, st := collapseBatch(g.batch)
	if len(shape) > 1 {
		return false
	}
	nb := int64(1)
	var sA, sB, sC, sD int64
	if len(shape) == 1 {
		nb = shape[0]
		sA, sB, sC, sD = st[0][0], st[1][0], st[2][0], st[3][0]
	}
	M, N, K := g.m, g.n, g.k
	bg := &blasGemm{m: N, n: M, k: K, ldc: N, strideA: sB, strideB: sA, strideC: sC, batch: nb, alpha: g.alpha}
	// cuBLAS's A is our B, K×N row-major, read as N×K column-major; its B
	// our A, M×K row-major, read as K×M column-major.
	var okA, okB bool
	bg.transA, bg.lda, okA = blasOperand(g.sbn, g.sbk, N, K)
	bg.transB, bg.ldb, okB = blasOperand(g.sak, g.sam, K, M)
	if !okA || !okB {
		return false
	}
	for _, v := range []int64{bg.m, bg.n, bg.k, bg.lda, bg.ldb, bg.ldc, nb} {
		if v > math.MaxInt32 {
			return false
		}
	}
	A, B := g.b, g.a // cuBLAS's operands
	if c.half != nil {
		if !c.halfable(g.b, g.bHalf) || !c.halfable(g.a, false) {
			return false
		}
		A, B = c.halfOperand(g.b, g.bHalf), c.halfOperand(g.a, false)
		bg.ab = driver.R16BF
		if c.half.prec == F16 {
			bg.ab = driver.R16F
		}
	} else if g.bHalf {
		return false
	}
	C := g.c
	if c.fz != nil && g.c.kind == argTensor && c.fz.out16[g.c.id] {
		// Only generated kernels read the output: write it in bfloat16.
		if bg.ab != driver.R16BF || g.d.kind != argWords {
			return false
		}
		bg.c = driver.R16BF
		C = arg{kind: argTensor, id: g.c.id, off: g.c.off / 2, half: true}
	}
	if g.d.kind != argWords {
		bg.beta = g.beta
		if M <= 65535 && nb <= 65535 {
			c.byRows(gemmModule, "fill_addend_rows", N, M, nb, g.d, g.c, i64(N), i64(g.sdm), i64(g.sdn), i64(sD), i64(sC))
		} else {
			c.elementwise(gemmModule, "fill_addend", nb*M*N, g.d, g.c, i64(M), i64(N), i64(g.sdm), i64(g.sdn), i64(sD), i64(sC), i64(nb))
		}
	}
	c.launches = append(c.launches, launch{node: c.node, blas: bg, args: []arg{A, B, C}})
	return true
}

// halfMode is the rounding kernels' target: 0 bfloat16, 1 IEEE half.
func halfMode(p Precision) int32 {
	if p == F16 {
		return 1
	}
	return 0
}

// halfOperand returns a float32 GEMM operand a as 16-bit values of the
// precision's type, with the same element offset, strides and leading
// dimension: a constant's shadow copy in the weight region (made once per
// constant and shared by every GEMM that reads it), or an activation
// rounded into the node's scratch by a kernel queued before the GEMM.
// already says a holds 16-bit values now. halfable must have said yes.
func (c *buildContext) halfOperand(a arg, already bool) arg {
	if already {
		return a
	}
	if c.half.stored[a.id] { // its producer wrote it in 16 bits
		return arg{kind: argTensor, id: a.id, off: a.off / 2, half: true}
	}
	t := c.g.Tensor(a.id)
	if t.IsConst() {
		idx, ok := c.half.shadow[a.id]
		if !ok {
			idx = c.constCopy(t, krscForm{})
			c.half.shadow[a.id] = idx
		}
		return arg{kind: argExtra, id: ir.TensorID(idx), off: a.off / 2}
	}
	n := t.Shape.Elements()
	h := c.reserve(n * 2)
	if n%2 == 0 { // slots are Alignment-aligned: pairs are 8-byte aligned
		c.elementwise(eltwise, "round_f32_h2", n/2, arg{kind: argTensor, id: a.id}, h, i64(n/2), i32(halfMode(c.half.prec)))
	} else {
		c.elementwise(eltwise, "round_f32_h", n, arg{kind: argTensor, id: a.id}, h, i64(n), i32(halfMode(c.half.prec)))
	}
	h.off += a.off / 2
	return h
}

// halfable reports whether halfOperand can place a: a float32 tensor at a
// whole-element offset, or an operand already in 16 bits.
func (c *buildContext) halfable(a arg, already bool) bool {
	if already {
		return true
	}
	return a.kind == argTensor && a.off%4 == 0 && c.g.Tensor(a.id).DType == ir.Float32
}

// shadowBytes converts float32 data (native byte order) to bfloat16 or
// IEEE half, rounding to nearest even.
func shadowBytes(data []byte, p Precision) []byte {
	n := len(data) / 4
	out := make([]byte, 2*n)
	if n == 0 {
		return out
	}
	src := unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), n)
	dst := unsafe.Slice((*uint16)(unsafe.Pointer(&out[0])), n)
	if p == F16 {
		dtype.F16sFromF32s(dst, src)
	} else {
		dtype.BF16sFromF32s(dst, src)
	}
	return out
}

// collapseBatch drops the size-1 axes of a batch space and merges axes
// that all four stride sets walk as one.
func collapseBatch(b geo) ([]int64, [4][]int64) {
	var shape []int64
	var st [4][]int64
	for d, s := range b.shape {
		if s == 1 {
			continue
		}
		stride := func(k int) int64 {
			if k < len(b.st) {
				return b.st[k][d]
			}
			return 0
		}
		if n := len(shape); n > 0 {
			merge := true
			for k := range 4 {
				if st[k][n-1] != stride(k)*s {
					merge = false
				}
			}
			if merge {
				shape[n-1] *= s
				for k := range 4 {
					st[k][n-1] = stride(k)
				}
				continue
			}
		}
		shape = append(shape, s)
		for k := range 4 {
			st[k] = append(st[k], stride(k))
		}
	}
	return shape, st
}

// blasOperand says how cuBLAS reads, as a column-major n1×n2 matrix, an
// operand whose elements are s1 apart along its n1 rows' dimension and s2
// along the other: as it is (OpN) with leading dimension s2 where s1 is 1,
// transposed (OpT) with s1 where s2 is 1; false where neither serves.
func blasOperand(s1, s2, n1, n2 int64) (op int, ld int64, ok bool) {
	switch {
	case s1 == 1 && s2 >= n1:
		return driver.OpN, s2, true
	case s2 == 1 && s1 >= n2:
		return driver.OpT, s1, true
	}
	return 0, 0, false
}
