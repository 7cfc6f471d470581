package cuda

import (
	"math"

	"github.com/berth-ml/berth/backend/cuda/driver"
)

// blasGemm tries to express g as one cublasSgemmStridedBatched call,
// preceded by a fill of C with the addend where g has one. It reports
// false, adding nothing, where the strides do not fit cuBLAS; the caller
// then uses the NVRTC kernel.
//
// cuBLAS is column-major and C is row-major, so the call computes
// Cᵀ = Bᵀ·Aᵀ: cuBLAS's A is our B and its B is our A, with M and N swapped.
func (c *bctx) blasGemm(g gemmCall) bool {
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
	switch { // cuBLAS's A: our B, K×N row-major, read as N×K column-major
	case g.sbn == 1 && g.sbk >= N:
		bg.transA, bg.lda = driver.OpN, g.sbk
	case g.sbk == 1 && g.sbn >= K:
		bg.transA, bg.lda = driver.OpT, g.sbn
	default:
		return false
	}
	switch { // cuBLAS's B: our A, M×K row-major, read as K×M column-major
	case g.sak == 1 && g.sam >= K:
		bg.transB, bg.ldb = driver.OpN, g.sam
	case g.sam == 1 && g.sak >= M:
		bg.transB, bg.ldb = driver.OpT, g.sak
	default:
		return false
	}
	for _, v := range []int64{bg.m, bg.n, bg.k, bg.lda, bg.ldb, bg.ldc, nb} {
		if v > math.MaxInt32 {
			return false
		}
	}
	if g.d.kind != argWords {
		bg.beta = g.beta
		c.elementwise(gemmModule, "fill_addend", nb*M*N, g.d, g.c, i64(M), i64(N), i64(g.sdm), i64(g.sdn), i64(sD), i64(sC), i64(nb))
	}
	c.launches = append(c.launches, launch{node: c.node, blas: bg, args: []arg{g.b, g.a, g.c}})
	return true
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
