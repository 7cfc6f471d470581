package cuda

import (
	"fmt"
	"math"
	"os"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// Berth's own operators (ir.BerthDomain) on the GPU: products and gathers
// of weights packed in ggml's block formats, read in place from the
// device copy of the file's bytes and decoded in the kernel, and the cache
// of keys and values of a decoder (CacheWrite, CachedAttention), whose
// position the kernels read from device memory, so that a captured graph
// serves every position.
//
// A product with one activation row (a decoder's step) runs gemv.go's
// kernels for the formats they take (f32, f16, bf16, q8_0, q4_0), and
// packedMV for the others: a warp takes four weight rows, which it
// streams through shared memory in 16-byte loads (rows of ggml blocks are
// only 2-byte aligned), decoding a unit of 32 values (16 for q6_K, 8 or 1
// for the float formats) a lane at a time and accumulating in float32. More rows (a prompt) run packedMM:
// 64×64 tiles of the output, the weights decoded into shared memory 32
// columns at a time.

// packedName is the kernels' name of each format the GPU decodes: every
// one ggml.Dequantize converts.
var packedName = map[ggml.Type]string{
	ggml.F32: "f32", ggml.F16: "f16", ggml.BF16: "bf16",
	ggml.Q4_0: "q4_0", ggml.Q4_1: "q4_1", ggml.Q5_0: "q5_0", ggml.Q5_1: "q5_1", ggml.Q8_0: "q8_0",
	ggml.Q4_K: "q4_K", ggml.Q5_K: "q5_K", ggml.Q6_K: "q6_K", ggml.Q8_K: "q8_K",
}

// packedUnit is the values a lane decodes at once: 32 (16 for q6_K, whose
// scales cover 16 values), and for the float formats 8, or 1 where rows
// of k values are not whole units of 8.
func packedUnit(t ggml.Type, k int64) (name string, unit int64, ok bool) {
	name, ok = packedName[t]
	if !ok {
		return "", 0, false
	}
	switch t {
	case ggml.F32, ggml.F16, ggml.BF16:
		if k%8 != 0 {
			return name + "_1", 1, true
		}
		return name, 8, true
	case ggml.Q6_K:
		return name, 16, true
	}
	return name, 32, true
}

// packedWarps is the warps of a block of packedMV, each of which takes
// packedWarpRows weight rows at once.
const (
	packedWarps    = 4
	packedWarpRows = 4
	packedRows     = packedWarps * packedWarpRows
)

// berthBuilders are the builders of ir.BerthDomain's operators (this
// file) and of the nodes Compile makes for itself (cudaDomain, step.go, attend.go and round.go).
var berthBuilders = map[string]buildFunc{
	"PackedMatMul": buildPackedMatMul, "PackedGather": buildPackedGather,
	"CacheWrite": buildCacheWrite, "CachedAttention": buildCachedAttention,
	"RMSNorm": buildRMSNorm, "Rotary": buildRotary,
	"Products": buildProducts, "Rotaries": buildRotaries, "Attend": buildAttend, "Round16": buildRound,
	"MatMulAdd": buildMatMulAdd, "NormRound": buildNormRound, "ConvAct": buildConvAct,
}

func buildPackedMatMul(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	x, w, y := c.in(0), c.in(1), c.out(0)
	if x.DType != ir.Float32 || x.Shape.Rank() == 0 {
		return c.unsupported(x.DType)
	}
	k := x.Shape[x.Shape.Rank()-1]
	p, err := ir.PackedWeights(c.n, w, k)
	if err != nil {
		return c.errorf("%v", err)
	}
	name, _, ok := packedUnit(p.Format, k)
	if !ok {
		return c.errorf("no product with %s weights on the GPU", p.Format)
	}
	if k%p.Format.BlockSize() != 0 {
		return c.errorf("rows of %d values are not whole %s blocks", k, p.Format)
	}
	m := x.Shape.Elements() / max(k, 1)
	if y.DType != ir.Float32 || y.Shape.Elements() != m*p.Rows {
		return c.errorf("output %s%v, want float32 of %d×%d", y.DType, y.Shape, m, p.Rows)
	}
	n := p.Rows
	if m == 0 || n == 0 {
		return nil
	}
	args := []arg{c.inArg(1), c.inArg(0), c.outArg(0), i64(m), i64(n), i64(k), i64(p.RowBytes)}
	if m == 1 {
		if gemvFits(x, k) && gemvLaunch(c, p.Format, k, p.RowBytes, gemvForm{}, c.inArg(0), null(), null(), []int{1}, []arg{c.outArg(0)}, []int64{n}) {
			return nil
		}
		c.launches = append(c.launches, launch{node: c.node, module: packedModule, kernel: "pmv_" + name,
			grid: [3]uint32{uint32((n + packedRows - 1) / packedRows), 1, 1}, block: [3]uint32{32 * packedWarps, 1, 1}, args: args})
		return nil
	}
	if (m+63)/64 > 65535 {
		return c.errorf("%d activation rows are more than the product's grid takes", m)
	}
	c.launches = append(c.launches, launch{node: c.node, module: packedModule, kernel: "pmm_" + name,
		grid: [3]uint32{uint32((n + 63) / 64), uint32((m + 63) / 64), 1}, block: [3]uint32{256, 1, 1}, args: args})
	return nil
}

func buildPackedGather(c *buildContext) error {
	if err := c.need(2); err != nil {
		return err
	}
	w, ids, y := c.in(0), c.in(1), c.out(0)
	p, err := ir.PackedWeights(c.n, w, c.n.Attrs.Int("cols", -1))
	if err != nil {
		return c.errorf("%v", err)
	}
	if ids.DType != ir.Int64 && ids.DType != ir.Int32 {
		return c.unsupported(ids.DType)
	}
	name, unit, ok := packedUnit(p.Format, p.Cols)
	if !ok {
		return c.errorf("no gather of %s rows on the GPU", p.Format)
	}
	n := ids.Shape.Elements()
	if y.DType != ir.Float32 || y.Shape.Elements() != n*p.Cols {
		return c.errorf("output %s%v, want float32 of %d×%d", y.DType, y.Shape, n, p.Cols)
	}
	units := p.Cols / unit
	kernel := "pgather_" + name + "_i64"
	if ids.DType == ir.Int32 {
		kernel = "pgather_" + name + "_i32"
	}
	c.elementwise(packedModule, kernel, n*units, c.inArg(0), c.inArg(1), c.outArg(0), i64(n*units), i64(units), i64(p.Rows), i64(p.Cols), i64(p.RowBytes))
	return nil
}

// buildCacheWrite writes the rows x over the cache at the position the
// kernel reads; the output is the cache's own bytes (an update in place).
// A position whose rows do not fit the cache writes nothing (the caller,
// berth.Generator, checks positions before it runs).
func buildCacheWrite(c *buildContext) error {
	t, rows, w, err := ir.CacheWriteShape(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	c.elementwise(packedModule, "cache_write", t*w, c.inArg(1), c.outArg(0), c.inArg(2), i64(t), i64(rows), i64(w))
	return nil
}

// attentionThreads is the block of cached_attention: one block a query
// and head, a warp a row of the cache at a time, each lane holding
// attentionLaneValues of the head's values: it takes heads of at most
// 32·attentionLaneValues values.
const (
	attentionThreads    = 512
	attentionLaneValues = 8
)

func buildCachedAttention(c *buildContext) error {
	t, rows, heads, kvHeads, d, err := ir.CacheShape(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	if d > 32*attentionLaneValues {
		return c.errorf("heads of %d values are more than the GPU's attention takes (%d)", d, 32*attentionLaneValues)
	}
	if heads > 65535*16 || t > 65535 {
		return c.errorf("%d queries of %d heads are more than the attention's grid takes", t, heads)
	}
	scale := c.n.Attrs.Float("scale", float32(1/math.Sqrt(float64(d))))
	if t == 0 {
		return nil
	}
	if splits := attentionSplits(t, heads, rows, c.sms); splits > 1 {
		ps := c.reserve(4 * heads * splits * (d + 2))
		// Room for the output quantised, which quantiseInAttention may
		// have the part and the merge write (on) for the product after.
		k, yq := heads*d, null()
		if d%32 == 0 {
			yq = c.reserve(heads*d + heads*d/32*8)
		}
		c.launches = append(c.launches, launch{node: c.node, module: packedModule, kernel: "cached_attention_part",
			grid: [3]uint32{uint32(heads), uint32(splits), 1}, block: [3]uint32{attentionThreads, 1, 1},
			args: []arg{c.inArg(0), c.inArg(1), c.inArg(2), c.inArg(3), c.outArg(0), ps, i64(rows), i32(int32(heads)), i32(int32(heads / kvHeads)), i32(int32(d)), f32(scale), yq, i64(k), i32(0)}, early: earlyAttention},
			launch{node: c.node, module: packedModule, kernel: "cached_attention_merge",
				grid: [3]uint32{uint32(heads), 1, 1}, block: [3]uint32{uint32(min(d, attentionThreads)), 1, 1},
				args: []arg{ps, c.inArg(3), c.outArg(0), i64(rows), i32(int32(d)), i32(int32(splits)), yq, i64(k), i32(0)}, early: true})
		return nil
	}
	c.launches = append(c.launches, launch{node: c.node, module: packedModule, kernel: "cached_attention",
		grid: [3]uint32{uint32(heads), uint32(t), 1}, block: [3]uint32{attentionThreads, 1, 1},
		args: []arg{c.inArg(0), c.inArg(1), c.inArg(2), c.inArg(3), c.outArg(0), i64(t), i64(rows), i32(int32(heads)), i32(int32(heads / kvHeads)), i32(int32(d)), f32(scale)}, early: earlyAttention})
	return nil
}

// earlyAttention is whether a step's rotations with their cache writes
// (rotary2_cache) and its attention are launched early, as the products
// are: each waits for the kernel ahead (GRID_WAIT) before it reads
// anything, and lets the kernel after it start first
// (BERTH_CUDA_EARLYATT=0: launched after the kernel ahead ends).
var earlyAttention = os.Getenv("BERTH_CUDA_EARLYATT") != "0"

// attentionSplitOn is whether one query's attention over a long cache
// is split over several blocks a head (BERTH_CUDA_ATTSPLIT=0: never).
var attentionSplitOn = os.Getenv("BERTH_CUDA_ATTSPLIT") != "0"

// attentionSplitRows is the fewest rows of the cache a block of a split
// attention takes: a step at a position below it runs in one block a
// head, and a cache of fewer than twice as many rows is not split.
const attentionSplitRows = 64

// attentionSplits is the blocks a head of one query's attention over a
// cache of rows rows may take (each step takes as many as its position
// needs, see split_live): about two a multiprocessor (sms of them) over
// heads heads, at most one for each attentionSplitRows rows; 1 (not
// split) for more queries than one.
func attentionSplits(t, heads, rows int64, sms int) int64 {
	if t != 1 || !attentionSplitOn || heads <= 0 {
		return 1
	}
	return max(1, min(2*int64(max(sms, 1))/heads, rows/attentionSplitRows, 65535))
}

// buildRMSNorm is a block a row: the mean of the squares, then the row
// scaled by its reciprocal root and by the weights.
func buildRMSNorm(c *buildContext) error {
	rows, d, err := ir.RMSNormShape(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	if d == 0 {
		return nil
	}
	c.rowwise(packedModule, "rms_norm", rows, c.inArg(0), c.inArg(1), c.outArg(0), i64(rows), i64(d), f32(c.n.Attrs.Float("epsilon", 1e-5)))
	return nil
}

// buildRotary is a thread a pair of values.
func buildRotary(c *buildContext) error {
	t, heads, d, err := ir.RotaryShape(c.g, c.n)
	if err != nil {
		return c.errorf("%v", err)
	}
	half := d / 2
	c.elementwise(packedModule, "rotary", t*heads*half, c.inArg(0), c.inArg(1), c.inArg(2), c.outArg(0), i64(t*heads*half), i64(heads), i64(half), i32(int32(c.n.Attrs.Int("halves", 0))))
	return nil
}

var packedModule = &source{"packed.cu", packedSource}

// packedDefines is the shape of packedSource's kernels.
var packedDefines = fmt.Sprintf("#define PMV_WARPS %d\n#define PMV_ROWS %d\n#define ATT_THREADS %d\n#define ATT_LANE_VALUES %d\n#define ATT_SPLIT_ROWS %d\n",
	packedWarps, packedWarpRows, attentionThreads, attentionLaneValues, attentionSplitRows)

// packedSource: each format is a Fmt<F, U> (F its ggml type id, U the
// values of a unit) with QK values in BB bytes a block, UPB units a block,
// and unit(), which decodes one unit of a block as v·scale + bias (bias
// only where BIAS): the kernels fold the scale and bias into the dot
// product, or apply them where they write values out. The 4- and 8-bit
// values become floats exactly through the exponent of 2²³ (a byte
// permute and a subtraction) instead of the slower integer conversion.
var packedSource = common + halfCommon + packedDefines + `
#define PMV_CHUNK 1024
__device__ __forceinline__ u32 ld16(const u8* p) { return *(const u16*)p; }
// ld32 reads 4 bytes at a 2-aligned address.
__device__ __forceinline__ u32 ld32(const u8* p) { return ld16(p) | (ld16(p + 2) << 16); }
__device__ __forceinline__ float h2f(u32 h) {
	float r;
	asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((u16)h));
	return r;
}
// byte t of w plus 2^23, as a float (exact).
__device__ __forceinline__ float mag(u32 w, int t) { return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540 + t)); }
#define M23 8388608.f

template <int F, int U> struct Fmt;
template <int U> struct Fmt<0, U> { // f32
	enum { QK = U, BB = 4 * U, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		#pragma unroll
		for (int j = 0; j < U; j++) v[j] = __uint_as_float(*(const u32*)(b + 4 * j));
		sc = 1.f; bi = 0.f;
	}
};
template <int U> struct Fmt<1, U> { // f16
	enum { QK = U, BB = 2 * U, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		#pragma unroll
		for (int j = 0; j < U; j++) v[j] = h2f(ld16(b + 2 * j));
		sc = 1.f; bi = 0.f;
	}
};
template <int U> struct Fmt<30, U> { // bf16
	enum { QK = U, BB = 2 * U, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		#pragma unroll
		for (int j = 0; j < U; j++) v[j] = __uint_as_float(ld16(b + 2 * j) << 16);
		sc = 1.f; bi = 0.f;
	}
};
template <> struct Fmt<2, 32> { // q4_0: d, 16 bytes of nibbles (low: 0-15, high: 16-31)
	enum { QK = 32, BB = 18, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		sc = h2f(ld16(b)); bi = 0.f;
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			u32 w = ld32(b + 2 + 4 * j), lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
			#pragma unroll
			for (int t = 0; t < 4; t++) {
				v[4 * j + t] = mag(lo, t) - (M23 + 8.f);
				v[16 + 4 * j + t] = mag(hi, t) - (M23 + 8.f);
			}
		}
	}
};
template <> struct Fmt<3, 32> { // q4_1: d, m, nibbles; q·d + m
	enum { QK = 32, BB = 20, UPB = 1, BIAS = 1 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		sc = h2f(ld16(b)); bi = h2f(ld16(b + 2));
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			u32 w = ld32(b + 4 + 4 * j), lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
			#pragma unroll
			for (int t = 0; t < 4; t++) {
				v[4 * j + t] = mag(lo, t) - M23;
				v[16 + 4 * j + t] = mag(hi, t) - M23;
			}
		}
	}
};
// fifth bits: element j takes bit j of qh (as 0x10).
__device__ __forceinline__ u32 fifth(u32 qh, int j) {
	// bits j..j+3 of qh spread to bit 4 of each byte
	u32 b = (qh >> j) & 0xFu;
	return ((b & 1u) << 4) | ((b & 2u) << 11) | ((b & 4u) << 18) | ((b & 8u) << 25);
}
template <> struct Fmt<6, 32> { // q5_0: d, 32 high bits, nibbles; q - 16
	enum { QK = 32, BB = 22, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		sc = h2f(ld16(b)); bi = 0.f;
		u32 qh = ld32(b + 2);
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			u32 w = ld32(b + 6 + 4 * j);
			u32 lo = (w & 0x0F0F0F0Fu) | fifth(qh, 4 * j), hi = ((w >> 4) & 0x0F0F0F0Fu) | fifth(qh, 16 + 4 * j);
			#pragma unroll
			for (int t = 0; t < 4; t++) {
				v[4 * j + t] = mag(lo, t) - (M23 + 16.f);
				v[16 + 4 * j + t] = mag(hi, t) - (M23 + 16.f);
			}
		}
	}
};
template <> struct Fmt<7, 32> { // q5_1: d, m, 32 high bits, nibbles; q·d + m
	enum { QK = 32, BB = 24, UPB = 1, BIAS = 1 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		sc = h2f(ld16(b)); bi = h2f(ld16(b + 2));
		u32 qh = ld32(b + 4);
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			u32 w = ld32(b + 8 + 4 * j);
			u32 lo = (w & 0x0F0F0F0Fu) | fifth(qh, 4 * j), hi = ((w >> 4) & 0x0F0F0F0Fu) | fifth(qh, 16 + 4 * j);
			#pragma unroll
			for (int t = 0; t < 4; t++) {
				v[4 * j + t] = mag(lo, t) - M23;
				v[16 + 4 * j + t] = mag(hi, t) - M23;
			}
		}
	}
};
template <> struct Fmt<8, 32> { // q8_0: d, 32 signed bytes
	enum { QK = 32, BB = 34, UPB = 1, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int, float* v, float& sc, float& bi) {
		sc = h2f(ld16(b)); bi = 0.f;
		#pragma unroll
		for (int j = 0; j < 8; j++) {
			u32 w = ld32(b + 2 + 4 * j) ^ 0x80808080u; // two's complement to offset 128
			#pragma unroll
			for (int t = 0; t < 4; t++) v[4 * j + t] = mag(w, t) - (M23 + 128.f);
		}
	}
};
// scale_min is get_scale_min_k4: the j-th 6-bit scale and minimum.
__device__ __forceinline__ void scale_min(int j, const u8* s, float& sc, float& m) {
	if (j < 4) {
		sc = (float)(s[j] & 63); m = (float)(s[j + 4] & 63);
	} else {
		sc = (float)((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
		m = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
	}
}
template <> struct Fmt<12, 32> { // q4_K: d, dmin, 12 scale bytes, 128 bytes of nibbles
	enum { QK = 256, BB = 144, UPB = 8, BIAS = 1 };
	static __device__ __forceinline__ void unit(const u8* b, int j, float* v, float& sc, float& bi) {
		float d = h2f(ld16(b)), dmin = h2f(ld16(b + 2)), s, m;
		scale_min(j, b + 4, s, m);
		sc = d * s; bi = -(dmin * m);
		const u8* q = b + 16 + 32 * (j >> 1);
		int sh = 4 * (j & 1);
		#pragma unroll
		for (int i = 0; i < 8; i++) {
			u32 w = (ld32(q + 4 * i) >> sh) & 0x0F0F0F0Fu;
			#pragma unroll
			for (int t = 0; t < 4; t++) v[4 * i + t] = mag(w, t) - M23;
		}
	}
};
template <> struct Fmt<13, 32> { // q5_K: as q4_K with 32 bytes of fifth bits first
	enum { QK = 256, BB = 176, UPB = 8, BIAS = 1 };
	static __device__ __forceinline__ void unit(const u8* b, int j, float* v, float& sc, float& bi) {
		float d = h2f(ld16(b)), dmin = h2f(ld16(b + 2)), s, m;
		scale_min(j, b + 4, s, m);
		sc = d * s; bi = -(dmin * m);
		const u8* qh = b + 16;
		const u8* q = b + 48 + 32 * (j >> 1);
		int sh = 4 * (j & 1);
		#pragma unroll
		for (int i = 0; i < 8; i++) {
			u32 w = (ld32(q + 4 * i) >> sh) & 0x0F0F0F0Fu;
			u32 h = (ld32(qh + 4 * i) >> j) & 0x01010101u;
			w |= h << 4;
			#pragma unroll
			for (int t = 0; t < 4; t++) v[4 * i + t] = mag(w, t) - M23;
		}
	}
};
template <> struct Fmt<14, 16> { // q6_K: 128 bytes of low nibbles, 64 of high pairs, 16 scales, d
	enum { QK = 256, BB = 210, UPB = 16, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int u, float* v, float& sc, float& bi) {
		// unit u: half n = u/8, quarter qq = (u/2)%4, l from 16·(u%2)
		int n = u >> 3, qq = (u >> 1) & 3, l0 = 16 * (u & 1);
		const u8* ql = b + 64 * n + l0 + 32 * (qq & 1);
		const u8* qh = b + 128 + 32 * n + l0;
		float d = h2f(ld16(b + 208));
		sc = d * (float)(signed char)b[192 + 8 * n + (l0 >> 4) + 2 * qq]; bi = 0.f;
		int lsh = 4 * (qq >> 1), hsh = 2 * qq;
		#pragma unroll
		for (int i = 0; i < 4; i++) {
			u32 w = ((ld32(ql + 4 * i) >> lsh) & 0x0F0F0F0Fu) | (((ld32(qh + 4 * i) >> hsh) & 0x03030303u) << 4);
			#pragma unroll
			for (int t = 0; t < 4; t++) v[4 * i + t] = mag(w, t) - (M23 + 32.f);
		}
	}
};
template <> struct Fmt<15, 32> { // q8_K: d (f32), 256 signed bytes, sums
	enum { QK = 256, BB = 292, UPB = 8, BIAS = 0 };
	static __device__ __forceinline__ void unit(const u8* b, int j, float* v, float& sc, float& bi) {
		sc = __uint_as_float(ld32(b)); bi = 0.f;
		#pragma unroll
		for (int i = 0; i < 8; i++) {
			u32 w = ld32(b + 4 + 32 * j + 4 * i) ^ 0x80808080u;
			#pragma unroll
			for (int t = 0; t < 4; t++) v[4 * i + t] = mag(w, t) - (M23 + 128.f);
		}
	}
};

// pmv: y[r] = Σ_k x[k]·W[r][k] for one activation row. A warp takes
// PMV_ROWS rows at once, so that each unit of x, loaded once into
// registers, serves them all; each row's chunk of whole blocks
// (≤ PMV_CHUNK bytes) comes into the warp's shared buffer in aligned
// 16-byte loads, issued while the chunk before is decoded.
template <int F, int U> __device__ __forceinline__ void pmv(const u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, i64 n, i64 k, i64 rb, i64 block, const float* __restrict__ add) {
	typedef Fmt<F, U> T;
	enum { CB = PMV_CHUNK / T::BB > 0 ? PMV_CHUNK / T::BB : 1, WORDS = (CB * T::BB + 30) / 16 + 1, PER = (WORDS + 31) / 32 };
	__shared__ uint4 stage[PMV_WARPS][PMV_ROWS][PER * 32];
	int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
	i64 r0 = (block * PMV_WARPS + wp) * PMV_ROWS;
	if (r0 >= n) return;
	const i64 nb = k / T::QK;
	float acc[PMV_ROWS];
	#pragma unroll
	for (int rr = 0; rr < PMV_ROWS; rr++) acc[rr] = 0.f;
	uint4 v[PMV_ROWS][PER];
	int delta[PMV_ROWS], cur[PMV_ROWS];
	// load issues the loads of the chunk from block b0 of each row.
	auto load = [&](i64 b0) {
		int cnt = (int)min((i64)CB, nb - b0);
		#pragma unroll
		for (int rr = 0; rr < PMV_ROWS; rr++) {
			// rows past n read the last row again: their sums are dropped
			const u8* src = w + min(r0 + rr, n - 1) * rb + b0 * T::BB;
			const uint4* a = (const uint4*)((u64)src & ~(u64)15);
			delta[rr] = (int)(src - (const u8*)a);
			int words = (delta[rr] + cnt * T::BB + 15) >> 4;
			#pragma unroll
			for (int i = 0; i < PER; i++) if (lane + 32 * i < words) v[rr][i] = __ldg(a + lane + 32 * i);
		}
	};
	load(0);
	for (i64 b0 = 0; b0 < nb; b0 += CB) {
		int cnt = (int)min((i64)CB, nb - b0);
		#pragma unroll
		for (int rr = 0; rr < PMV_ROWS; rr++) {
			cur[rr] = delta[rr];
			#pragma unroll
			for (int i = 0; i < PER; i++) stage[wp][rr][lane + 32 * i] = v[rr][i];
		}
		__syncwarp();
		// The next chunk's loads fly while this one is decoded.
		if (b0 + CB < nb) load(b0 + CB);
		const float* xb = x + b0 * T::QK;
		for (int u = lane; u < cnt * T::UPB; u += 32) {
			int bl = u / T::UPB, sub = u % T::UPB;
			const float* xu = xb + bl * T::QK + sub * U;
			float xv[U], sx = 0.f;
			if (U % 4 == 0) {
				#pragma unroll
				for (int j = 0; j < U / 4; j++) {
					float4 t = __ldg((const float4*)xu + j);
					xv[4 * j] = t.x; xv[4 * j + 1] = t.y; xv[4 * j + 2] = t.z; xv[4 * j + 3] = t.w;
				}
			} else {
				#pragma unroll
				for (int j = 0; j < U; j++) xv[j] = __ldg(xu + j);
			}
			if (T::BIAS) {
				#pragma unroll
				for (int j = 0; j < U; j++) sx += xv[j];
			}
			#pragma unroll
			for (int rr = 0; rr < PMV_ROWS; rr++) {
				float q[U], sc, bi, s = 0.f;
				T::unit((const u8*)stage[wp][rr] + cur[rr] + bl * T::BB, sub, q, sc, bi);
				#pragma unroll
				for (int j = 0; j < U; j++) s = fmaf(q[j], xv[j], s);
				acc[rr] = fmaf(sc, s, acc[rr]);
				if (T::BIAS) acc[rr] = fmaf(bi, sx, acc[rr]);
			}
		}
		__syncwarp();
	}
	#pragma unroll
	for (int rr = 0; rr < PMV_ROWS; rr++) {
		float a = acc[rr];
		#pragma unroll
		for (int o = 16; o > 0; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
		if (lane == 0 && r0 + rr < n) y[r0 + rr] = add ? a + add[r0 + rr] : a;
	}
}

// pmm: y[m][n] = x[m][k]·Wᵀ in 64×64 tiles of 256 threads, 4×4 outputs a
// thread; each step decodes 32 columns of 64 weight rows into shared
// memory.
template <int F, int U> __device__ __forceinline__ void pmm(const u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, i64 m, i64 n, i64 k, i64 rb) {
	typedef Fmt<F, U> T;
	__shared__ float ws[32][65];
	__shared__ float xs[32][65];
	int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
	i64 n0 = (i64)blockIdx.x * 64, m0 = (i64)blockIdx.y * 64;
	float acc[4][4];
	#pragma unroll
	for (int i = 0; i < 4; i++)
		#pragma unroll
		for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
	enum { UPR = 32 / U };
	for (i64 k0 = 0; k0 < k; k0 += 32) {
		for (int i = tid; i < 64 * UPR; i += 256) {
			int rr = i / UPR, uu = i % UPR;
			i64 row = n0 + rr, e0 = k0 + uu * U;
			float q[U], sc = 0.f, bi = 0.f;
			if (row < n && e0 < k) {
				T::unit(w + row * rb + (e0 / T::QK) * T::BB, (int)((e0 % T::QK) / U), q, sc, bi);
			} else {
				#pragma unroll
				for (int j = 0; j < U; j++) q[j] = 0.f;
			}
			#pragma unroll
			for (int j = 0; j < U; j++) ws[uu * U + j][rr] = fmaf(q[j], sc, bi);
		}
		for (int i = tid; i < 64 * 32; i += 256) {
			int rr = i >> 5, kk = i & 31;
			i64 row = m0 + rr, e = k0 + kk;
			xs[kk][rr] = row < m && e < k ? x[row * k + e] : 0.f;
		}
		__syncthreads();
		#pragma unroll 8
		for (int kk = 0; kk < 32; kk++) {
			float a[4], b[4];
			#pragma unroll
			for (int i = 0; i < 4; i++) { a[i] = xs[kk][ty + 16 * i]; b[i] = ws[kk][tx + 16 * i]; }
			#pragma unroll
			for (int i = 0; i < 4; i++)
				#pragma unroll
				for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		__syncthreads();
	}
	#pragma unroll
	for (int i = 0; i < 4; i++) {
		i64 row = m0 + ty + 16 * i;
		if (row >= m) continue;
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			i64 col = n0 + tx + 16 * j;
			if (col < n) y[row * n + col] = acc[i][j];
		}
	}
}

// pgather: unit u of the row ids[i] of a table, for each i·units + u < total;
// an id out of the table (counted from the end where negative) gives zeros.
template <int F, int U, typename I> __device__ __forceinline__ void pgather(const u8* __restrict__ w, const I* __restrict__ ids, float* __restrict__ y, i64 total, i64 units, i64 rows, i64 k, i64 rb) {
	typedef Fmt<F, U> T;
	LOOP(i, total) {
		i64 r = i / units, u = i % units;
		i64 id = (i64)ids[r];
		if (id < 0) id += rows;
		float* out = y + r * k + u * U;
		float q[U], sc = 0.f, bi = 0.f;
		if (id >= 0 && id < rows) {
			i64 e0 = u * U;
			T::unit(w + id * rb + (e0 / T::QK) * T::BB, (int)((e0 % T::QK) / U), q, sc, bi);
		} else {
			#pragma unroll
			for (int j = 0; j < U; j++) q[j] = 0.f;
		}
		#pragma unroll
		for (int j = 0; j < U; j++) out[j] = fmaf(q[j], sc, bi);
	}
}

#define PACKED(name, F, U) \
extern "C" __global__ void __launch_bounds__(32 * PMV_WARPS) pmv_##name(const u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, i64 m, i64 n, i64 k, i64 rb) { pmv<F, U>(w, x, y, n, k, rb, blockIdx.x, nullptr); } \
extern "C" __global__ void __launch_bounds__(32 * PMV_WARPS) pmvs_##name(const float* __restrict__ x, const float* __restrict__ add, const u8* __restrict__ w0, const u8* __restrict__ w1, const u8* __restrict__ w2, float* __restrict__ y0, float* __restrict__ y1, float* __restrict__ y2, i64 n0, i64 n1, i64 n2, i64 k, i64 rb) { \
	i64 b = blockIdx.x, b0 = (n0 + PMV_WARPS * PMV_ROWS - 1) / (PMV_WARPS * PMV_ROWS), b1 = (n1 + PMV_WARPS * PMV_ROWS - 1) / (PMV_WARPS * PMV_ROWS); \
	if (b < b0) pmv<F, U>(w0, x, y0, n0, k, rb, b, add); \
	else if (b < b0 + b1) pmv<F, U>(w1, x, y1, n1, k, rb, b - b0, nullptr); \
	else pmv<F, U>(w2, x, y2, n2, k, rb, b - b0 - b1, nullptr); \
} \
extern "C" __global__ void __launch_bounds__(256) pmm_##name(const u8* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, i64 m, i64 n, i64 k, i64 rb) { pmm<F, U>(w, x, y, m, n, k, rb); } \
extern "C" __global__ void pgather_##name##_i64(const u8* __restrict__ w, const i64* __restrict__ ids, float* __restrict__ y, i64 total, i64 units, i64 rows, i64 k, i64 rb) { pgather<F, U, i64>(w, ids, y, total, units, rows, k, rb); } \
extern "C" __global__ void pgather_##name##_i32(const u8* __restrict__ w, const int* __restrict__ ids, float* __restrict__ y, i64 total, i64 units, i64 rows, i64 k, i64 rb) { pgather<F, U, int>(w, ids, y, total, units, rows, k, rb); }
PACKED(f32, 0, 8)
PACKED(f32_1, 0, 1)
PACKED(f16, 1, 8)
PACKED(f16_1, 1, 1)
PACKED(bf16, 30, 8)
PACKED(bf16_1, 30, 1)
PACKED(q4_0, 2, 32)
PACKED(q4_1, 3, 32)
PACKED(q5_0, 6, 32)
PACKED(q5_1, 7, 32)
PACKED(q8_0, 8, 32)
PACKED(q4_K, 12, 32)
PACKED(q5_K, 13, 32)
PACKED(q6_K, 14, 16)
PACKED(q8_K, 15, 32)

// rms_norm: y = x / sqrt(mean(x²) + eps) · w, a block (256 threads) a row.
extern "C" __global__ void rms_norm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, i64 rows, i64 d, float eps) {
	__shared__ float red[8];
	GRID_DEPENDENTS(); // a product after it may start loading its weights
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xr = x + r * d;
		float s = 0.f;
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) s = fmaf(xr[j], xr[j], s);
		#pragma unroll
		for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
		if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
		__syncthreads();
		float t = 0.f;
		for (int i = 0; i < (int)(blockDim.x >> 5); i++) t += red[i];
		float inv = 1.f / sqrtf(t / (float)d + eps);
		for (i64 j = threadIdx.x; j < d; j += blockDim.x) y[r * d + j] = xr[j] * inv * w[j];
		__syncthreads();
	}
}

// rotary: pair j of head h of token i, (x0, x1) adjacent or halves, turned
// by the angle whose cosine and sine are cs[i][j] and sn[i][j].
__device__ __forceinline__ void rotary_at(const float* __restrict__ x, const float* __restrict__ cs, const float* __restrict__ sn, float* __restrict__ y, i64 i, i64 heads, i64 half, int halves) {
	i64 j = i % half, th = i / half, tok = th / heads;
	const float* xr = x + th * 2 * half;
	float* yr = y + th * 2 * half;
	float c = cs[tok * half + j], s = sn[tok * half + j];
	i64 a = halves ? j : 2 * j, b = halves ? j + half : 2 * j + 1;
	float x0 = xr[a], x1 = xr[b];
	yr[a] = x0 * c - x1 * s;
	yr[b] = x0 * s + x1 * c;
}
extern "C" __global__ void rotary(const float* __restrict__ x, const float* __restrict__ cs, const float* __restrict__ sn, float* __restrict__ y, i64 n, i64 heads, i64 half, int halves) {
	LOOP(i, n) rotary_at(x, cs, sn, y, i, heads, half, halves);
}
// rotary2 is rotary over two tensors turned by the same angles (a step's
// queries and keys): n0 pairs of x0, then n1 of x1.
extern "C" __global__ void rotary2(const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ cs, const float* __restrict__ sn, float* __restrict__ y0, float* __restrict__ y1, i64 n0, i64 n1, i64 heads0, i64 heads1, i64 half, int halves) {
	LOOP(i, n0 + n1) {
		if (i < n0) rotary_at(x0, cs, sn, y0, i, heads0, half, halves);
		else rotary_at(x1, cs, sn, y1, i - n0, heads1, half, halves);
	}
}

// rotary2_cache is rotary2 that also writes the turned x1 (t1 rows of w1)
// over rows pos… of the cache k[c1][w1], then copies v[t2][w2] over rows
// pos… of the cache vc[c2][w2], as two cache_writes would.
extern "C" __global__ void rotary2_cache(const float* __restrict__ x0, const float* __restrict__ x1, const float* __restrict__ cs, const float* __restrict__ sn, float* __restrict__ y0, float* __restrict__ y1, i64 n0, i64 n1, i64 heads0, i64 heads1, i64 half, int halves,
		float* __restrict__ k, float* __restrict__ vc, const float* __restrict__ v, const i64* __restrict__ posp, i64 t1, i64 c1, i64 w1, i64 t2, i64 c2, i64 w2) {
	GRID_DEPENDENTS(); // the attention may start, and wait for this
	GRID_WAIT();
	i64 pos = *posp;
	bool keys = pos >= 0 && pos <= c1 - t1, values = pos >= 0 && pos <= c2 - t2;
	LOOP(i, n0 + n1 + t2 * w2) {
		if (i < n0) rotary_at(x0, cs, sn, y0, i, heads0, half, halves);
		else if (i < n0 + n1) {
			rotary_at(x1, cs, sn, y1, i - n0, heads1, half, halves);
			if (keys) rotary_at(x1, cs, sn, k + pos * w1, i - n0, heads1, half, halves);
		} else if (values) {
			i64 e = i - n0 - n1;
			vc[pos * w2 + e] = v[e];
		}
	}
}

// cache_write copies x[t][w] over rows pos… of cache[c][w], pos read from
// device memory; rows that would not fit write nothing.
extern "C" __global__ void cache_write(const float* __restrict__ x, float* __restrict__ cache, const i64* __restrict__ posp, i64 t, i64 c, i64 w) {
	i64 pos = *posp;
	if (pos < 0 || pos > c - t) return;
	float* dst = cache + pos * w;
	LOOP(i, t * w) dst[i] = x[i];
}

// reduce over the block (ATT_THREADS threads): the max or the sum of v.
__device__ __forceinline__ float block_reduce(float v, float* red, bool isMax) {
	#pragma unroll
	for (int o = 16; o > 0; o >>= 1) {
		float u = __shfl_xor_sync(0xffffffffu, v, o);
		v = isMax ? fmaxf(v, u) : v + u;
	}
	__syncthreads();
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
	__syncthreads();
	float r = red[0];
	#pragma unroll
	for (int i = 1; i < ATT_THREADS / 32; i++) r = isMax ? fmaxf(r, red[i]) : r + red[i];
	return r;
}

#define ATT_CHUNK 512
#define ATT_WARPS (ATT_THREADS / 32)
#define ATT_ROWS 4
// attend_cached: head h = blockIdx.x of one query, whose values are at
// qh, over rows [lo, hi) of cache head h/group, a chunk of rows at a
// time. Each warp takes ATT_ROWS rows at a time, every ATT_WARPS-th of
// the chunk, its lanes across the head's values (value lane+32k in
// register k), all their loads in flight before the first is used: the
// scores into shared memory, their softmax folded into the running
// maximum and sum (online softmax), then the values weighted by them into
// the warp's partial output; the warps' outputs are summed at the end,
// into out divided by the sum of weights, or where ps is not null into
// ps as they are, with the maximum and the sum of weights after them
// (d+2 values; a part of no rows has sum 0).
__device__ __forceinline__ void attend_cached(const float* __restrict__ qh, const float* __restrict__ kc, const float* __restrict__ vc, i64 lo, i64 hi, float* __restrict__ out, float* __restrict__ ps, int heads, int group, int d, float scale) {
	__shared__ float sc[ATT_CHUNK];
	__shared__ float red[ATT_WARPS];
	__shared__ float part[ATT_WARPS][32 * ATT_LANE_VALUES];
	int h = blockIdx.x, tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
	i64 kvw = (i64)(heads / group) * d;
	float qv[ATT_LANE_VALUES], o[ATT_LANE_VALUES];
	#pragma unroll
	for (int k = 0; k < ATT_LANE_VALUES; k++) {
		int e = lane + 32 * k;
		qv[k] = e < d ? qh[e] * scale : 0.f;
		o[k] = 0.f;
	}
	const float* kb = kc + (i64)(h / group) * d;
	const float* vb = vc + (i64)(h / group) * d;
	float mx = NEG_INF, l = 0.f;
	for (i64 j0 = lo; j0 < hi; j0 += ATT_CHUNK) {
		int cnt = (int)min((i64)ATT_CHUNK, hi - j0);
		float lmax = NEG_INF;
		for (int jb = w; jb < cnt; jb += ATT_WARPS * ATT_ROWS) {
			float x[ATT_ROWS][ATT_LANE_VALUES];
			#pragma unroll
			for (int r = 0; r < ATT_ROWS; r++) {
				int jj = jb + r * ATT_WARPS;
				const float* kr = kb + (j0 + jj) * kvw;
				#pragma unroll
				for (int k = 0; k < ATT_LANE_VALUES; k++) {
					int e = lane + 32 * k;
					x[r][k] = jj < cnt && e < d ? kr[e] : 0.f;
				}
			}
			float s[ATT_ROWS];
			#pragma unroll
			for (int r = 0; r < ATT_ROWS; r++) {
				s[r] = 0.f;
				#pragma unroll
				for (int k = 0; k < ATT_LANE_VALUES; k++) s[r] = fmaf(qv[k], x[r][k], s[r]);
			}
			#pragma unroll
			for (int off = 16; off > 0; off >>= 1) {
				#pragma unroll
				for (int r = 0; r < ATT_ROWS; r++) s[r] += __shfl_xor_sync(0xffffffffu, s[r], off);
			}
			#pragma unroll
			for (int r = 0; r < ATT_ROWS; r++) {
				int jj = jb + r * ATT_WARPS;
				if (jj < cnt) {
					if (lane == 0) sc[jj] = s[r];
					lmax = fmaxf(lmax, s[r]);
				}
			}
		}
		// block_reduce waits for the block, so every score is in sc.
		float mn = fmaxf(mx, block_reduce(lmax, red, true));
		float alpha = expf(mx - mn);
		float lsum = 0.f;
		for (int jj = tid; jj < cnt; jj += ATT_THREADS) {
			float p = expf(sc[jj] - mn);
			sc[jj] = p;
			lsum += p;
		}
		l = l * alpha + block_reduce(lsum, red, false);
		#pragma unroll
		for (int k = 0; k < ATT_LANE_VALUES; k++) o[k] *= alpha;
		for (int jb = w; jb < cnt; jb += ATT_WARPS * ATT_ROWS) {
			float x[ATT_ROWS][ATT_LANE_VALUES], p[ATT_ROWS];
			#pragma unroll
			for (int r = 0; r < ATT_ROWS; r++) {
				int jj = jb + r * ATT_WARPS;
				const float* vr = vb + (j0 + jj) * kvw;
				p[r] = jj < cnt ? sc[jj] : 0.f;
				#pragma unroll
				for (int k = 0; k < ATT_LANE_VALUES; k++) {
					int e = lane + 32 * k;
					x[r][k] = jj < cnt && e < d ? vr[e] : 0.f;
				}
			}
			#pragma unroll
			for (int r = 0; r < ATT_ROWS; r++) {
				#pragma unroll
				for (int k = 0; k < ATT_LANE_VALUES; k++) o[k] = fmaf(p[r], x[r][k], o[k]);
			}
		}
		mx = mn;
		__syncthreads();
	}
	#pragma unroll
	for (int k = 0; k < ATT_LANE_VALUES; k++) part[w][lane + 32 * k] = o[k];
	__syncthreads();
	float inv = ps ? 1.f : 1.f / l;
	float* dst = ps ? ps : out;
	for (int e = tid; e < d; e += ATT_THREADS) {
		float a = 0.f;
		#pragma unroll
		for (int v = 0; v < ATT_WARPS; v++) a += part[v][e];
		dst[e] = a * inv;
	}
	if (ps && tid == 0) {
		ps[d] = mx;
		ps[d + 1] = l;
	}
}

// cached_attention: query i = blockIdx.y (at position pos+i) of head h =
// blockIdx.x over rows 0…pos+i, one block.
extern "C" __global__ void __launch_bounds__(ATT_THREADS) cached_attention(const float* __restrict__ q, const float* __restrict__ kc, const float* __restrict__ vc, const i64* __restrict__ posp, float* __restrict__ y, i64 t, i64 c, int heads, int group, int d, float scale) {
	GRID_DEPENDENTS(); // the output projection's weights may start on their way
	GRID_WAIT();
	i64 i = blockIdx.y, pos = *posp;
	if (pos < 0 || pos > c - t) return;
	i64 off = i * heads * d + (i64)blockIdx.x * d;
	attend_cached(q + off, kc, vc, 0, pos + i + 1, y + off, nullptr, heads, group, d, scale);
}

// The attention of one query split over the rows (a step at a long
// position), S = gridDim.y blocks a head at most. Of the n = pos+1 rows,
// the first split_live(n, S) blocks of a head take ⌈n/live⌉ each, at
// least ATT_SPLIT_ROWS (the last fewer, or none), and write their parts
// into ps (d+2 values a block, (h·S + s)·(d+2) on); cached_attention_merge
// then weighs the parts of a head by their maxima into its output. Where
// one block takes every row (live 1) it writes the output itself and the
// merge does nothing: a short cache costs what cached_attention does.
__device__ __forceinline__ i64 split_live(i64 n, i64 splits) {
	return min(splits, (n + ATT_SPLIT_ROWS - 1) / ATT_SPLIT_ROWS);
}
// att_quantise writes head h's output y (d values, whole blocks of 32)
// into yq as gemv_prepare quantises x for the product after it (k values
// in all: their int8 values, then a scale and a sum a block of 32), a
// warp a block. Every thread of the block calls it, after y is written.
__device__ __forceinline__ void att_quantise(const float* __restrict__ y, int d, i64 h, u8* __restrict__ yq, i64 k) {
	__syncthreads();
	int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
	if (w >= d / 32) return;
	float v = y[w * 32 + lane], a = fabsf(v);
	for (int o = 16; o > 0; o >>= 1) a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o));
	float id = a != 0.f ? __fdiv_rn(127.f, a) : 0.f;
	int qv = __float2int_rn(__fmul_rn(v, id)), sum = qv;
	for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
	i64 b = h * (d / 32) + w;
	yq[b * 32 + lane] = (u8)qv;
	if (lane == 0) {
		((float*)(yq + k))[b] = widen_h(round_h(__fdiv_rn(a, 127.f), 1), 1);
		((int*)(yq + k + k / 32 * 4))[b] = sum;
	}
}
// Where on, the head's output is also written into yq quantised
// (att_quantise): by the part where one block takes every row, else by
// the merge.
extern "C" __global__ void __launch_bounds__(ATT_THREADS) cached_attention_part(const float* __restrict__ q, const float* __restrict__ kc, const float* __restrict__ vc, const i64* __restrict__ posp, float* __restrict__ y, float* __restrict__ ps, i64 c, int heads, int group, int d, float scale, u8* __restrict__ yq, i64 k, int on) {
	GRID_DEPENDENTS(); // the merge may start, and wait for this
	GRID_WAIT();
	i64 pos = *posp;
	if (pos < 0 || pos > c - 1) return;
	i64 n = pos + 1, live = split_live(n, gridDim.y), s = blockIdx.y, h = blockIdx.x;
	if (s >= live) return;
	if (live == 1) {
		attend_cached(q + h * d, kc, vc, 0, n, y + h * d, nullptr, heads, group, d, scale);
		if (on) att_quantise(y + h * d, d, h, yq, k);
		return;
	}
	i64 m = (n + live - 1) / live, lo = min(s * m, n);
	attend_cached(q + h * d, kc, vc, lo, min(lo + m, n), nullptr, ps + (h * gridDim.y + s) * (d + 2), heads, group, d, scale);
}
// cached_attention_merge: head h = blockIdx.x's output from its parts in
// ps (splits a head), a thread a value. It is launched early: it waits
// for the parts before anything else, so that it ends after them.
extern "C" __global__ void cached_attention_merge(const float* __restrict__ ps, const i64* __restrict__ posp, float* __restrict__ y, i64 c, int d, int splits, u8* __restrict__ yq, i64 k, int on) {
	GRID_WAIT();
	GRID_DEPENDENTS(); // the output projection's weights may start on their way
	i64 pos = *posp;
	if (pos < 0 || pos > c - 1) return;
	i64 live = split_live(pos + 1, splits);
	if (live == 1) return;
	const float* p = ps + (i64)blockIdx.x * splits * (d + 2);
	float m = NEG_INF;
	for (int s = 0; s < live; s++) m = fmaxf(m, p[s * (d + 2) + d]);
	for (int e = threadIdx.x; e < d; e += blockDim.x) {
		float o = 0.f, l = 0.f;
		for (int s = 0; s < live; s++) {
			const float* q = p + s * (d + 2);
			if (q[d + 1] == 0.f) continue; // no rows
			float wgt = expf(q[d] - m);
			o = fmaf(q[e], wgt, o);
			l = fmaf(q[d + 1], wgt, l);
		}
		y[(i64)blockIdx.x * d + e] = o / l;
	}
	if (on) att_quantise(y + (i64)blockIdx.x * d, d, blockIdx.x, yq, k);
}
`
