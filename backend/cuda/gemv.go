package cuda

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/berth-ml/berth/ir"
	"github.com/berth-ml/berth/weights/ggml"
)

// The decoding products: y = W·x for one activation row, the GEMV of a
// language model's step, for the formats it mostly comes in. Each is a
// kernel of gemvModule that takes up to three weights over the same x
// (a Products node, or one PackedMatMul), a block of rows of one weight a
// block, and adds a vector to the first weight's rows where asked.
//
//   - Float rows (f32, f16, bf16) of whole 16-byte words: each lane
//     streams 16-byte words of gemv.rows rows, gemv.loads of them a row in
//     flight before the first is used, and sums in float32.
//   - q8_0 and q4_0 rows: x is quantised as the CPU's kernels quantise
//     it (blocks of 32 int8 values, d = max|x|/127 rounded to f16, ties
//     to even), once, by a launch of one block before the product
//     (gemv_prepare, gemvPrep), into scratch that the product's blocks
//     read while their first weights are on their way (under
//     BERTH_CUDA_GEMV=prep=0 each block quantises x into shared memory
//     itself, a thread a block of 32); then its warps take their rows in
//     chunks of 32 blocks, staged through shared memory in aligned
//     16-byte loads (the blocks are only 2-byte aligned), each lane one
//     block, in 8-bit dot products (dp4a). The integer sums of a block
//     are the CPU's; only the float sums over blocks differ in order.
//
// Three variants fold the nodes around a step's products into them
// (fuseProducts makes them):
//
//   - norm: x is the RMSNorm of the kernel's input by a weight g, which
//     each block of the grid computes for itself for float rows (into
//     shared memory, before the products), and gemv_prepare_norm once,
//     before it quantises it, for q8_0 and q4_0 rows;
//   - glu: two weights of n rows each, the gate's and the up projection's,
//     and one output of n rows, silu(gate)·up: each warp takes the same
//     rows of both;
//   - rope: three weights, the queries', keys' and values' projections:
//     the warps turn the queries' and keys' rows by the rotary embedding
//     (adjacent rows, a warp's rows being pairs) as they write them, and
//     write the keys' and values' rows into their caches too (GvRope).
//
// Other formats, and rows too long for the shared x (gemvMaxK, or
// gemvNormK for float rows under norm), run packed.go's pmv.
//
// The kernels are launched early (launch.early): on a device with
// programmatic dependent launch a product starts while the kernel ahead
// of it still runs, requests its first weights, and only then waits for
// that kernel (GRID_WAIT) before it reads x or the vector it adds. The
// kernels that come before products let the next kernel start
// (GRID_DEPENDENTS): a product once its warps' sums are done, the
// attention and rms_norm as they start. (A product that let the next
// start as it started itself made the step slower: see
// bench/cuda_llm.md.)

// gemvShape is the shape of the gemv kernels: warps a block, rows a warp
// (of each weight under glu: half as many), for float rows the words of
// a row a lane loads before it uses the first (ploads of them in the
// plain products: neither norm, glu nor rope), rows a warp for q8_0 and
// q4_0, whether x is prepared once a product by a launch of its own
// before it (prep 1: gemvPrep), instead of by every block of it, and,
// where it is, the chunks of 32 blocks of each quantised row a warp of
// a product that is not gated has on their way at once (depth), or, under
// async 1, that a warp of any product copies straight into shared memory
// (cp.async) at once.
type gemvShape struct {
	warps, rows, loads, ploads, qrows, prep, depth, async int64
}

// gemv is the shape the kernels are compiled with, gemvModule their
// module: defaultGemv, or the shape BERTH_CUDA_GEMV names where it is
// valid (BenchmarkGemvShapes times others).
var (
	gemv       = gemvShapeFrom(os.Getenv("BERTH_CUDA_GEMV"))
	gemvModule = gemv.module()
)

var defaultGemv = gemvShape{warps: 8, rows: 2, loads: 4, ploads: 8, qrows: 2, prep: 1, depth: 2, async: 1}

// gemvShapeFrom is the shape spec names, "warps=4,rows=2,loads=4,qrows=4"
// or any of its terms (the others defaultGemv's); defaultGemv where spec
// is empty, not of that form or not valid.
func gemvShapeFrom(spec string) gemvShape {
	if spec == "" {
		return defaultGemv
	}
	s := defaultGemv
	for _, term := range strings.Split(spec, ",") {
		k, v, _ := strings.Cut(term, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return defaultGemv
		}
		switch k {
		case "warps":
			s.warps = n
		case "rows":
			s.rows = n
		case "loads":
			s.loads = n
		case "ploads":
			s.ploads = n
		case "qrows":
			s.qrows = n
		case "prep":
			s.prep = n
		case "depth":
			s.depth = n
		case "async":
			s.async = n
		default:
			return defaultGemv
		}
	}
	if !s.valid() {
		return defaultGemv
	}
	return s
}

// valid reports whether the kernels compile and run at shape s: an even
// number of rows a warp (a gated unit takes half of them from each
// weight), and the quantised kernels' shared memory within 48 KB.
func (s gemvShape) valid() bool {
	even := func(n int64) bool { return n >= 2 && n <= 8 && n%2 == 0 }
	return s.warps >= 1 && s.warps <= 16 && even(s.rows) && even(s.qrows) && s.loads >= 1 && s.loads <= 8 && s.ploads >= 1 && s.ploads <= 8 && (s.prep == 0 || s.prep == 1) && s.depth >= 1 && s.depth <= 6 && (s.async == 0 || s.async == 1) &&
		s.quantisedShared() <= 48<<10
}

// quantisedShared is the shared memory of a q8_0 kernel (the larger
// block) at shape s: each warp's staged chunks, and x quantised (int8
// values, a scale and a sum a block of 32).
func (s gemvShape) quantisedShared() int64 {
	per := int64(((32*34+15)/16 + 2 + 31) / 32) // GVQ_PER(34)
	return s.warps*s.qrows*per*32*16 + gemvMaxK + gemvMaxK/32*8
}

const (
	gemvMaxK  = 16384
	gemvNormK = 8192 // float rows under norm: x in shared memory
)

// gemvForm is what a gemv launch folds in: an RMSNorm of x before it, a
// gated unit after it.
type gemvForm struct {
	norm bool
	eps  float32
	glu  bool
	rope bool // the rope form: three weights, the first two turned, the last two cached
}

// gemvKernel is the kernel of gemvModule for format t, rows of k values
// and form f, with the rows of each weight a block takes; ok is false
// where gemv has none.
func gemvKernel(t ggml.Type, k int64, f gemvForm) (kernel string, rows int64, ok bool) {
	float := true
	switch t {
	case ggml.F32:
		kernel, rows, ok = "gemv_f32", gemv.rows, k%4 == 0
	case ggml.F16:
		kernel, rows, ok = "gemv_f16", gemv.rows, k%8 == 0
	case ggml.BF16:
		kernel, rows, ok = "gemv_bf16", gemv.rows, k%8 == 0
	case ggml.Q8_0:
		kernel, rows, ok, float = "gemv_q8_0", gemv.qrows, k%32 == 0 && k <= gemvMaxK, false
	case ggml.Q4_0:
		kernel, rows, ok, float = "gemv_q4_0", gemv.qrows, k%32 == 0 && k <= gemvMaxK, false
	default:
		return "", 0, false
	}
	switch {
	case !float && gemv.prep == 1:
		kernel += "_prep"
	case f.norm:
		kernel += "_norm"
		ok = ok && (!float || k <= gemvNormK)
	}
	if f.glu {
		kernel += "_glu"
		rows /= 2
	}
	if f.rope {
		kernel += "_rope"
		ok = ok && !f.glu
	}
	return kernel, gemv.warps * rows, ok
}

// gemvPrep is the launch that prepares x once for a gemv kernel of
// format t, k values and form f under prep, and the scratch it writes:
// for q8_0 and q4_0 rows x quantised (k int8 values, then a scale and a
// sum a block of 32; RMSNorm first under norm); none for float rows,
// whose blocks read x as it is (normalising it themselves under norm:
// one launch that normalised x for them made an F16 step slower).
func gemvPrep(t ggml.Type, k int64, f gemvForm) (kernel string, bytes int64) {
	if gemv.prep != 1 || t != ggml.Q8_0 && t != ggml.Q4_0 {
		return "", 0
	}
	if f.norm {
		return "gemv_prepare_norm", k + k/32*8
	}
	return "gemv_prepare", k + k/32*8
}

// attentionQuantises is whether quantiseInAttention folds
// (BERTH_CUDA_ATTQ=0 keeps the gemv_prepare launches).
var attentionQuantises = os.Getenv("BERTH_CUDA_ATTQ") != "0"

// quantiseInAttention drops each gemv_prepare (no norm) of what a split
// attention's merge writes, right after its part and merge launches and
// right before the product that reads what it writes, and has the part
// and the merge write the quantised output instead, into the room their
// node keeps for it (yq), which the product then reads: one launch and
// one wait less a layer. The room is the attention's scratch, so the
// product's outputs must not lie over it (they may: the attention's
// scratch is free once it ends); where they would, nothing is folded.
func quantiseInAttention(steps []step) []step {
	if !attentionQuantises {
		return steps
	}
	out := steps[:0:0]
	for i := 0; i < len(steps); i++ {
		if i+3 < len(steps) && steps[i].kernel == "cached_attention_part" && steps[i+1].kernel == "cached_attention_merge" && steps[i+2].kernel == "gemv_prepare" {
			// part: q, kc, vc, posp, y, ps, c, heads, group, d, scale, yq, k, on;
			// merge: ps, posp, y, c, d, splits, yq, k, on; prepare: x, g, k, eps, q;
			// product: x, add, w0, w1, w2, y0, y1, y2, ….
			part, merge, prep, prod := steps[i], steps[i+1], steps[i+2], steps[i+3]
			y, x, yq, k := merge.args[2], prep.args[0], part.args[11], merge.args[7].words[0]
			ok := yq.region == inArena && y.region == inArena && y.off == x.off && prep.args[2].words[0] == k && sameArg(prod.args[0], prep.args[4])
			for j, o := range prod.args[5:8] {
				ok = ok && !overlap(yq, int64(k+k/32*8), o, 4*int64(prod.args[8+j].words[0]))
			}
			if ok {
				part.args, merge.args, prod.args = slices.Clone(part.args), slices.Clone(merge.args), slices.Clone(prod.args)
				on := boundArg{region: inWords, words: []uint64{1}}
				part.args[13], merge.args[8], prod.args[0] = on, on, yq
				out = append(out, part, merge, prod)
				i += 3
				continue
			}
		}
		out = append(out, steps[i])
	}
	return out
}

// sameArg reports whether a and b are the same bound argument.
func sameArg(a, b boundArg) bool {
	return a.region == b.region && a.off == b.off && slices.Equal(a.words, b.words)
}

// overlap reports whether the an bytes at a and the bn bytes at b share
// any (pointers of one region).
func overlap(a boundArg, an int64, b boundArg, bn int64) bool {
	return a.region == b.region && a.region != inWords && a.off < b.off+bn && b.off < a.off+an
}

// gemvLaunch appends the launch of a gemv kernel over the weights ws
// (inputs of c's node, of ns rows each, in format t with rows of k values
// and rb bytes), x, add (or null) and, under norm, the RMSNorm's weight
// g, writing ys (one under glu). ok is false, and nothing appended, where
// gemv does not take them: a format or form it has no kernel for, or a
// weight that is not a constant (a constant is Alignment-aligned).
func gemvLaunch(c *buildContext, t ggml.Type, k, rb int64, f gemvForm, x, add, g arg, ws []int, ys []arg, ns []int64, rope ...arg) bool {
	kernel, per, ok := gemvKernel(t, k, f)
	if !ok || len(ws) > maxProducts || f.glu && (len(ws) != 2 || ns[0] != ns[1] || len(ys) != 1) || f.rope && (len(ws) != 3 || len(rope) != 7) {
		return false
	}
	wa, ya, na := []arg{null(), null(), null()}, []arg{null(), null(), null()}, []arg{i64(0), i64(0), i64(0)}
	var blocks int64
	for i, in := range ws {
		if !c.g.Tensor(c.n.Input(in)).IsConst() {
			return false
		}
		wa[i], na[i] = c.inArg(in), i64(ns[i])
		if i < len(ys) {
			ya[i] = ys[i]
		}
		if !f.glu || i == 0 {
			blocks += (ns[i] + per - 1) / per
		}
	}
	if blocks == 0 {
		return true
	}
	if pk, bytes := gemvPrep(t, k, f); pk != "" {
		prep := c.reserve(bytes)
		c.launches = append(c.launches, launch{node: c.node, module: gemvModule, kernel: pk,
			grid: [3]uint32{1, 1, 1}, block: [3]uint32{uint32(32 * gemv.warps), 1, 1},
			args: []arg{x, g, i64(k), f32(f.eps), prep}, early: true})
		x = prep
	}
	args := append([]arg{x, add}, wa...)
	args = append(append(append(args, ya...), na...), i64(k), i64(rb), g, f32(f.eps))
	if f.rope {
		args = append(args, rope...)
	}
	c.launches = append(c.launches, launch{node: c.node, module: gemvModule, kernel: kernel,
		grid: [3]uint32{uint32(blocks), 1, 1}, block: [3]uint32{uint32(32 * gemv.warps), 1, 1}, args: args, early: true})
	return true
}

// gemvFits reports whether one activation row x of a product can run
// gemv: float32, one row.
func gemvFits(x *ir.Tensor, k int64) bool {
	return x != nil && x.DType == ir.Float32 && x.Shape.Elements() == k
}

// module is the gemv kernels' module compiled with shape s.
func (s gemvShape) module() *source {
	return &source{"gemv.cu", common + fmt.Sprintf("#define GV_WARPS %d\n#define GV_ROWS %d\n#define GV_LOADS %d\n#define GV_PLOADS %d\n#define GV_QROWS %d\n#define GV_DEPTH %d\n#define GV_ASYNC %d\n#define GV_MAXK %d\n#define GV_NORMK %d\n",
		s.warps, s.rows, s.loads, s.ploads, s.qrows, s.depth, s.async, gemvMaxK, gemvNormK) + gemvSource}
}

// gemvSource is the gemv kernels, after the definitions of their shape.
const gemvSource = `
#define FULL 0xffffffffu
__device__ __forceinline__ float gv_h2f(u32 h) {
	float r;
	asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"((u16)h));
	return r;
}
// gv_f16r is v rounded to f16 and back, ties to even.
__device__ __forceinline__ float gv_f16r(float v) {
	u16 h;
	asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
	return gv_h2f(h);
}
// gv_cp16 copies the 16 bytes at src (global) to dst (shared) without
// passing through registers (cp.async, L2 only); gv_commit closes the
// group of the copies the thread issued since the last; gv_wait<N> waits
// until at most N of the thread's groups are still on their way.
__device__ __forceinline__ void gv_cp16(void* dst, const void* src) {
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((u32)__cvta_generic_to_shared(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void gv_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void gv_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// gv_x loads the V values of x at p (16-byte aligned where al), in
// global or in shared memory.
template <int V> __device__ __forceinline__ void gv_x(const float* __restrict__ p, bool al, float* v) {
	if (al) {
		#pragma unroll
		for (int j = 0; j < V / 4; j++) {
			float4 t = ((const float4*)p)[j];
			v[4 * j] = t.x; v[4 * j + 1] = t.y; v[4 * j + 2] = t.z; v[4 * j + 3] = t.w;
		}
	} else {
		#pragma unroll
		for (int j = 0; j < V; j++) v[j] = p[j];
	}
}

// gv_out sums each row's lanes and writes the rows of [r0, n), plus add;
// under glu (G) the first R/2 sums are the gate's, the others the up
// projection's, and the rows are silu(gate)·up, as the graph's Sigmoid
// and two Muls compute them.
//
// Under rope (RP) the rows are first turned, where rp.turn, by the
// rotary embedding at rp.cs and rp.sn (pairs of adjacent rows in heads
// of 2·rp.half), as the rotary kernel turns them, then written to y where
// it is not null and to row *rp.posp of rp.cache (rp.rows rows of n)
// where that is not null and the row is in it.
struct GvRope {
	const float* cs;
	const float* sn;
	float* cache;
	const i64* posp;
	i64 rows, half;
	int turn;
};
template <int R, int G, int RP = 0> __device__ __forceinline__ void gv_out(float* acc, float* __restrict__ y, const float* __restrict__ add, i64 r0, i64 n, int lane, GvRope rp = GvRope{}) {
	GRID_DEPENDENTS(); // the sums are done: the next kernel may start
	#pragma unroll
	for (int rr = 0; rr < R; rr++) {
		#pragma unroll
		for (int o = 16; o > 0; o >>= 1) acc[rr] += __shfl_xor_sync(FULL, acc[rr], o);
	}
	if (lane != 0) return;
	if (RP) {
		if (rp.turn) {
			#pragma unroll
			for (int rr = 0; rr + 1 < R; rr += 2) {
				i64 j = ((r0 + rr) % (2 * rp.half)) / 2;
				float c = rp.cs[j], s = rp.sn[j], x0 = acc[rr], x1 = acc[rr + 1];
				acc[rr] = x0 * c - x1 * s;
				acc[rr + 1] = x0 * s + x1 * c;
			}
		}
		i64 pos = *rp.posp;
		float* row = rp.cache && pos >= 0 && pos < rp.rows ? rp.cache + pos * n : nullptr;
		#pragma unroll
		for (int rr = 0; rr < R; rr++) {
			if (r0 + rr >= n) break;
			if (y) y[r0 + rr] = acc[rr];
			if (row) row[r0 + rr] = acc[rr];
		}
		return;
	}
	if (G) {
		#pragma unroll
		for (int rr = 0; rr < R / 2; rr++) {
			if (r0 + rr >= n) break;
			float gt = acc[rr];
			y[r0 + rr] = gt * (1.f / (1.f + expf(-gt))) * acc[R / 2 + rr];
		}
		return;
	}
	#pragma unroll
	for (int rr = 0; rr < R; rr++) if (r0 + rr < n) y[r0 + rr] = add ? acc[rr] + add[r0 + rr] : acc[rr];
}

// gv_rows points row[rr] at the warp's rows from r0 of w (and, under
// glu, the same rows of w1 after them); rows past n read the last row
// again: their sums are dropped.
template <int R, int G> __device__ __forceinline__ void gv_rows(const u8** row, const u8* w, const u8* w1, i64 r0, i64 n, i64 rb) {
	#pragma unroll
	for (int rr = 0; rr < R; rr++) {
		int i = G ? rr % (R / 2) : rr;
		row[rr] = (G && rr >= R / 2 ? w1 : w) + min(r0 + i, n - 1) * rb;
	}
}

// gv_sum is the sum of every thread's s over the block, for every
// thread of the block (once a kernel: its shared sums are not waited
// for again).
__device__ __forceinline__ float gv_sum(float s) {
	__shared__ float red[GV_WARPS];
	#pragma unroll
	for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(FULL, s, o);
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
	__syncthreads();
	float t = 0.f;
	#pragma unroll
	for (int i = 0; i < GV_WARPS; i++) t += red[i];
	return t;
}

// gv_rinv is the reciprocal root of the mean square of k values plus
// eps, as rms_norm computes it, from every thread's sum of squares s of
// its values, for every thread of the block.
__device__ __forceinline__ float gv_rinv(float s, i64 k, float eps) {
	return 1.f / sqrtf(gv_sum(s) / (float)k + eps);
}

// gv_inv is gv_rinv of x's k values, read in passes.
__device__ __forceinline__ float gv_inv(const float* __restrict__ x, i64 k, float eps) {
	float s = 0.f;
	for (i64 j = threadIdx.x; j < k; j += blockDim.x) s = fmaf(x[j], x[j], s);
	return gv_rinv(s, k, eps);
}

// GV_HELD is the values of x a thread holds in registers for a float
// row's norm (gv_normx): x of up to GV_HELD·32·GV_WARPS values is read
// once, all of it at once, with g; longer x is read in passes.
#define GV_HELD 8

// FW<F>: a 16-byte word of float rows (F: 0 f32, 1 f16, 30 bf16), V
// values, and its dot product with V values of x.
template <int F> struct FW;
template <> struct FW<0> {
	enum { V = 4 };
	static __device__ __forceinline__ float dot(uint4 w, const float* x) {
		float s = __uint_as_float(w.x) * x[0];
		s = fmaf(__uint_as_float(w.y), x[1], s);
		s = fmaf(__uint_as_float(w.z), x[2], s);
		return fmaf(__uint_as_float(w.w), x[3], s);
	}
};
template <> struct FW<1> {
	enum { V = 8 };
	static __device__ __forceinline__ float dot(uint4 w, const float* x) {
		u32 u[4] = {w.x, w.y, w.z, w.w};
		float s = 0.f;
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			s = fmaf(gv_h2f(u[j] & 0xffffu), x[2 * j], s);
			s = fmaf(gv_h2f(u[j] >> 16), x[2 * j + 1], s);
		}
		return s;
	}
};
template <> struct FW<30> {
	enum { V = 8 };
	static __device__ __forceinline__ float dot(uint4 w, const float* x) {
		u32 u[4] = {w.x, w.y, w.z, w.w};
		float s = 0.f;
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			s = fmaf(__uint_as_float(u[j] << 16), x[2 * j], s);
			s = fmaf(__uint_as_float(u[j] & 0xffff0000u), x[2 * j + 1], s);
		}
		return s;
	}
};

// gv_normx writes the RMSNorm of x by g (k values) into xf, every thread
// of the block calling it: x and g read at once into registers where
// they fit, each thread value threadIdx.x + i·blockDim.x.
__device__ __forceinline__ void gv_normx(const float* __restrict__ x, const float* __restrict__ g, i64 k, float eps, float* xf) {
	if (k <= GV_HELD * 32 * GV_WARPS) {
		float v[GV_HELD], gs[GV_HELD], s = 0.f;
		#pragma unroll
		for (int i = 0; i < GV_HELD; i++) {
			i64 j = threadIdx.x + i * 32 * GV_WARPS;
			v[i] = j < k ? x[j] : 0.f;
			gs[i] = j < k ? g[j] : 0.f;
		}
		#pragma unroll
		for (int i = 0; i < GV_HELD; i++) s = fmaf(v[i], v[i], s);
		float inv = gv_rinv(s, k, eps);
		#pragma unroll
		for (int i = 0; i < GV_HELD; i++) {
			i64 j = threadIdx.x + i * 32 * GV_WARPS;
			if (j < k) xf[j] = v[i] * inv * gs[i];
		}
	} else {
		float inv = gv_inv(x, k, eps);
		for (i64 j = threadIdx.x; j < k; j += blockDim.x) xf[j] = x[j] * inv * g[j];
	}
	__syncthreads();
}

// gvf: the warp's rows of block b (GV_ROWS of w, or under glu half as
// many of w and of w1) by x, or under norm (N) by the RMSNorm of x by g,
// which the block writes into xf. The warp's first words are on their way
// before it waits for the kernel ahead (GRID_WAIT) and before the norm.
template <int F, int G, int N, int RP = 0> __device__ __forceinline__ void gvf(const u8* __restrict__ w, const u8* __restrict__ w1, const float* __restrict__ x, const float* __restrict__ g, float eps, float* xf, float* __restrict__ y, i64 n, i64 k, i64 rb, i64 b, const float* __restrict__ add, GvRope rope = GvRope{}) {
	typedef FW<F> T;
	enum { R = GV_ROWS, L = N || G || RP ? GV_LOADS : GV_PLOADS };
	int lane = threadIdx.x & 31;
	i64 r0 = (b * GV_WARPS + (threadIdx.x >> 5)) * (R / (1 + G));
	const bool live = r0 < n;
	const u8* rp[R];
	gv_rows<R, G>(rp, w, w1, min(r0, n - 1), n, rb);
	const uint4* row[R];
	float acc[R];
	#pragma unroll
	for (int rr = 0; rr < R; rr++) {
		row[rr] = (const uint4*)rp[rr];
		acc[rr] = 0.f;
	}
	const i64 words = k / T::V;
	i64 i = lane;
	uint4 v[R][L];
	auto load = [&]() {
		#pragma unroll
		for (int l = 0; l < L; l++)
			#pragma unroll
			for (int rr = 0; rr < R; rr++) v[rr][l] = __ldg(row[rr] + i + 32 * l);
	};
	bool more = live && i + 32 * (L - 1) < words;
	if (more) load();
	GRID_WAIT();
	const float* xp = x;
	bool al = ((u64)x & 15) == 0;
	if (N) {
		gv_normx(x, g, k, eps, xf);
		xp = xf;
		al = true;
	}
	if (!live) return;
	while (more) {
		#pragma unroll
		for (int l = 0; l < L; l++) {
			float xv[T::V];
			gv_x<T::V>(xp + (i + 32 * l) * T::V, al, xv);
			#pragma unroll
			for (int rr = 0; rr < R; rr++) acc[rr] += T::dot(v[rr][l], xv);
		}
		i += 32 * L;
		more = i + 32 * (L - 1) < words;
		if (more) load();
	}
	for (; i < words; i += 32) {
		float xv[T::V];
		gv_x<T::V>(xp + i * T::V, al, xv);
		#pragma unroll
		for (int rr = 0; rr < R; rr++) acc[rr] += T::dot(__ldg(row[rr] + i), xv);
	}
	gv_out<R, G, RP>(acc, y, add, r0, n, lane, rope);
}

// gv_qpack writes block b of x, its 32 values in v, into shared memory
// as the CPU quantises activations for q8_0 and q4_0 weights: the int8
// values q = x·(127/max|x|) rounded to even, d = max|x|/127 rounded to
// f16, and the sum of the q.
__device__ __forceinline__ void gv_qpack(const float* v, i64 b, int* xq, float* xd, int* xs) {
	float a = 0.f;
	#pragma unroll
	for (int j = 0; j < 32; j++) a = fmaxf(a, fabsf(v[j]));
	float id = a != 0.f ? __fdiv_rn(127.f, a) : 0.f;
	int s = 0;
	#pragma unroll
	for (int j = 0; j < 8; j++) {
		u32 p = 0;
		#pragma unroll
		for (int t = 0; t < 4; t++) {
			int q = __float2int_rn(__fmul_rn(v[4 * j + t], id));
			s += q;
			p |= ((u32)q & 0xffu) << (8 * t);
		}
		xq[b * 8 + j] = (int)p;
	}
	xd[b] = gv_f16r(__fdiv_rn(a, 127.f));
	xs[b] = s;
}

// gv_quantise writes x (k values, whole blocks of 32; its RMSNorm by g
// under norm) into shared memory quantised (gv_qpack). Every thread of
// the block calls it; a thread takes a block of 32. Under norm, where
// every block of x has its thread, each thread reads its block of x and
// of g once, into registers, for the norm's sum and the quantisation.
template <int N> __device__ __forceinline__ void gv_quantise(const float* __restrict__ x, const float* __restrict__ g, i64 k, float eps, int* xq, float* xd, int* xs) {
	const bool al = (((u64)x | (u64)g) & 15) == 0;
	const i64 nb = k / 32;
	if (N && nb <= 32 * GV_WARPS) {
		const i64 b = threadIdx.x;
		float v[32], gs[32], s = 0.f;
		if (b < nb) {
			gv_x<32>(x + b * 32, al, v);
			gv_x<32>(g + b * 32, al, gs);
			#pragma unroll
			for (int j = 0; j < 32; j++) s = fmaf(v[j], v[j], s);
		}
		float inv = gv_rinv(s, k, eps);
		if (b < nb) {
			#pragma unroll
			for (int j = 0; j < 32; j++) v[j] = v[j] * inv * gs[j];
			gv_qpack(v, b, xq, xd, xs);
		}
		__syncthreads();
		return;
	}
	float inv = N ? gv_inv(x, k, eps) : 1.f;
	for (i64 b = threadIdx.x; b < nb; b += blockDim.x) {
		float v[32];
		gv_x<32>(x + b * 32, al, v);
		if (N) {
			float gs[32];
			gv_x<32>(g + b * 32, al, gs);
			#pragma unroll
			for (int j = 0; j < 32; j++) v[j] = v[j] * inv * gs[j];
		}
		gv_qpack(v, b, xq, xd, xs);
	}
	__syncthreads();
}

// gv_word is the 4 bytes at the 2-aligned shared address p.
__device__ __forceinline__ int gv_word(const u8* p) {
	const u32* a = (const u32*)((u64)p & ~(u64)3);
	return (int)__funnelshift_r(a[0], a[1], ((u32)(u64)p & 3) * 8);
}

// QW<F>: a block of 32 quantised values (F: 8 q8_0, 2 q4_0) of BB bytes,
// and its dot product with a block of quantised x (values q, scale d and
// the sum of the values s).
template <int F> struct QW;
template <> struct QW<8> {
	enum { BB = 34 };
	static __device__ __forceinline__ float dot(const u8* b, const int* xs, float d, int s) {
		int t = 0;
		#pragma unroll
		for (int j = 0; j < 8; j++) t = __dp4a(gv_word(b + 2 + 4 * j), xs[j], t);
		return gv_h2f(*(const u16*)b) * d * (float)t;
	}
};
template <> struct QW<2> {
	enum { BB = 18 };
	static __device__ __forceinline__ float dot(const u8* b, const int* xs, float d, int s) {
		int t = 0;
		#pragma unroll
		for (int j = 0; j < 4; j++) {
			int w = gv_word(b + 2 + 4 * j);
			t = __dp4a(w & 0x0f0f0f0f, xs[j], t);
			t = __dp4a((w >> 4) & 0x0f0f0f0f, xs[4 + j], t);
		}
		return gv_h2f(*(const u16*)b) * d * (float)(t - 8 * s);
	}
};

// GVQ_STAGE is the shared buffer of gvq<F>'s warps: R rows each of
// chunks of 32 blocks, as aligned 16-byte words.
#define GVQ_PER(BB) (((32 * BB + 15) / 16 + 2 + 31) / 32)

// gvq: the warp's rows of block b (GV_QROWS of w, or under glu half as
// many of w and of w1) by the quantised x, which gv_quantise writes
// after the first chunk of the rows is on its way. Each row comes in
// chunks of 32 blocks, loaded as aligned 16-byte words into registers
// while the chunk before is computed, then staged in the warp's shared
// buffer, a lane a block. Under P but not G, GV_DEPTH chunks of each row
// are on their way at once, all of them before the wait for the kernel
// ahead: a product of few blocks (one a multiprocessor) has more of its
// rows in flight where one chunk at a time left the memory idle. (The
// gated products, of many blocks, lose more to the registers this takes
// than they gain.) Under P and GV_ASYNC, every form copies its chunks
// straight into shared memory instead, GV_DEPTH of them on their way
// (fewer where they do not fit), without registers held for them.
template <int F, int N, int G, int P = 0, int RP = 0> __device__ __forceinline__ void gvq(const u8* __restrict__ w, const u8* __restrict__ w1, const float* __restrict__ x, const float* __restrict__ g, float eps, float* __restrict__ y, i64 n, i64 k, i64 rb, i64 b, const float* __restrict__ add, GvRope rope = GvRope{}) {
	typedef QW<F> T;
	enum { R = GV_QROWS, CB = 32, PER = GVQ_PER(T::BB), A = P != 0 && GV_ASYNC, D = P != 0 && !G ? GV_DEPTH : 1 };
	int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
	i64 r0 = (b * GV_WARPS + wp) * (R / (1 + G));
	const i64 nb = k / 32;
	const u8* row[R];
	gv_rows<R, G>(row, w, w1, min(r0, n - 1), n, rb);
	float acc[R];
	#pragma unroll
	for (int rr = 0; rr < R; rr++) acc[rr] = 0.f;
	// words is the aligned 16-byte words that hold the chunk of row rr
	// from block b0, from a, the first of them, delta bytes before it.
	auto span = [&](int rr, i64 b0, const uint4*& a, int& delta) {
		const u8* src = row[rr] + b0 * T::BB;
		a = (const uint4*)((u64)src & ~(u64)15);
		delta = (int)(src - (const u8*)a);
		return (delta + (int)min((i64)CB, nb - b0) * T::BB + 15) >> 4;
	};
	// dot adds the chunk from block b0, staged at st (R rows of PER·32
	// words, row rr's first block delta[rr] bytes in), to the sums.
	auto dot = [&](const uint4 (*st)[PER * 32], const int* delta, i64 b0, const int* xqp, const float* xdp, const int* xsp) {
		i64 bl = b0 + lane;
		if (bl < nb) {
			int4 q0 = *(const int4*)(xqp + bl * 8), q1 = *(const int4*)(xqp + bl * 8 + 4);
			int qs[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
			float d = xdp[bl];
			int sm = xsp[bl];
			#pragma unroll
			for (int rr = 0; rr < R; rr++) acc[rr] += T::dot((const u8*)st[rr] + delta[rr] + lane * T::BB, qs, d, sm);
		}
	};
	if constexpr (A) {
		// x prepared, the chunks copied straight into a ring of DA
		// stages of the warp's shared memory (cp.async), each stage a
		// group of copies: DA chunks of every row on their way with no
		// registers held for them. DA is GV_DEPTH where the ring fits
		// 48 KB, fewer where it does not.
		enum { STAGE = GV_WARPS * R * PER * 32 * 16, DA = GV_DEPTH * STAGE <= 48 * 1024 ? GV_DEPTH : 48 * 1024 / STAGE > 0 ? 48 * 1024 / STAGE : 1 };
		__shared__ uint4 ring[DA][GV_WARPS][R][PER * 32];
		int delta[DA][R];
		auto issue = [&](int s, i64 b0) {
			if (b0 < nb) {
				#pragma unroll
				for (int rr = 0; rr < R; rr++) {
					const uint4* a;
					int words = span(rr, b0, a, delta[s][rr]);
					#pragma unroll
					for (int i = 0; i < PER; i++) if (lane + 32 * i < words) gv_cp16(&ring[s][wp][rr][lane + 32 * i], a + lane + 32 * i);
				}
			}
			gv_commit();
		};
		if (r0 < n) {
			#pragma unroll
			for (int s = 0; s < DA; s++) issue(s, s * CB);
		}
		GRID_WAIT();
		if (r0 >= n) return;
		const int* xqp = (const int*)x;
		const float* xdp = (const float*)((const u8*)x + k);
		const int* xsp = (const int*)((const u8*)x + k + nb * 4);
		for (i64 c0 = 0; c0 < nb; c0 += DA * CB) {
			#pragma unroll
			for (int s = 0; s < DA; s++) {
				const i64 b0 = c0 + s * CB;
				if (b0 >= nb) break;
				gv_wait<DA - 1>();
				__syncwarp();
				dot(ring[s][wp], delta[s], b0, xqp, xdp, xsp);
				__syncwarp();
				issue(s, b0 + DA * CB);
			}
		}
	} else {
		__shared__ uint4 stage[GV_WARPS][R][PER * 32];
		uint4 v[D][R][PER];
		int delta[D][R];
		// load brings the chunk from block b0 into slot s.
		auto load = [&](int s, i64 b0) {
			#pragma unroll
			for (int rr = 0; rr < R; rr++) {
				const uint4* a;
				int words = span(rr, b0, a, delta[s][rr]);
				#pragma unroll
				for (int i = 0; i < PER; i++) if (lane + 32 * i < words) v[s][rr][i] = __ldg(a + lane + 32 * i);
			}
		};
		if (r0 < n) {
			#pragma unroll
			for (int s = 0; s < D; s++) if (s * CB < nb) load(s, s * CB);
		}
		GRID_WAIT();
		// Under P, x is quantised already (gemv_prepare), in global
		// memory, and the kernel has no shared x: more of its blocks fit
		// a multiprocessor.
		const int* xqp;
		const float* xdp;
		const int* xsp;
		if constexpr (P != 0) {
			xqp = (const int*)x;
			xdp = (const float*)((const u8*)x + k);
			xsp = (const int*)((const u8*)x + k + nb * 4);
		} else {
			__shared__ __align__(16) int xq[GV_MAXK / 4];
			__shared__ float xd[GV_MAXK / 32];
			__shared__ int xs[GV_MAXK / 32];
			gv_quantise<N>(x, g, k, eps, xq, xd, xs);
			xqp = xq;
			xdp = xd;
			xsp = xs;
		}
		if (r0 >= n) return;
		for (i64 c0 = 0; c0 < nb; c0 += D * CB) {
			#pragma unroll
			for (int s = 0; s < D; s++) {
				const i64 b0 = c0 + s * CB;
				if (b0 >= nb) break;
				int cur[R];
				#pragma unroll
				for (int rr = 0; rr < R; rr++) {
					cur[rr] = delta[s][rr];
					#pragma unroll
					for (int i = 0; i < PER; i++) stage[wp][rr][lane + 32 * i] = v[s][rr][i];
				}
				__syncwarp();
				if (b0 + D * CB < nb) load(s, b0 + D * CB);
				dot(stage[wp], cur, b0, xqp, xdp, xsp);
				__syncwarp();
			}
		}
	}
	gv_out<R, G, RP>(acc, y, add, r0, n, lane, rope);
}

// The kernels: up to three weights over one x (n1, n2 zero for one), a
// block of rows of one weight a block; add, where not null, is added to
// the first weight's rows. Under glu the blocks take rows of w0 and w1
// at once, and write y0. g and eps are the RMSNorm's, under norm.
#define GV_ARGS const float* __restrict__ x, const float* __restrict__ add, const u8* __restrict__ w0, const u8* __restrict__ w1, const u8* __restrict__ w2, float* __restrict__ y0, float* __restrict__ y1, float* __restrict__ y2, i64 n0, i64 n1, i64 n2, i64 k, i64 rb, const float* __restrict__ g, float eps
#define GV_PICK(rows, G, CALL) \
	i64 b = blockIdx.x, per = GV_WARPS * (rows / (1 + G)), b0 = (n0 + per - 1) / per, b1 = (n1 + per - 1) / per; \
	if (G || b < b0) CALL(w0, w1, y0, n0, b, add); \
	else if (b < b0 + b1) CALL(w1, nullptr, y1, n1, b - b0, nullptr); \
	else CALL(w2, nullptr, y2, n2, b - b0 - b1, nullptr);
// gvf_pick runs gvf<F, G, N> on the rows of the weight block b falls in.
template <int F, int G, int N> __device__ __forceinline__ void gvf_pick(GV_ARGS, float* xf) {
#define GVF_CALL(wa, wb, y, n, b, a) gvf<F, G, N>(wa, wb, x, g, eps, xf, y, n, k, rb, b, a)
	GV_PICK(GV_ROWS, G, GVF_CALL)
#undef GVF_CALL
}
#define GV_PASS x, add, w0, w1, w2, y0, y1, y2, n0, n1, n2, k, rb, g, eps
#define GVF(name, F, G, suffix) \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##suffix(GV_ARGS) { \
	gvf_pick<F, G, 0>(GV_PASS, nullptr); } \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_norm##suffix(GV_ARGS) { \
	__shared__ __align__(16) float xf[GV_NORMK]; \
	gvf_pick<F, G, 1>(GV_PASS, xf); }
GVF(f32, 0, 0, )
GVF(f32, 0, 1, _glu)
GVF(f16, 1, 0, )
GVF(f16, 1, 1, _glu)
GVF(bf16, 30, 0, )
GVF(bf16, 30, 1, _glu)
#define GVQ(name, F, N, G, suffix) \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##suffix(GV_ARGS) { \
	GV_PICK(GV_QROWS, G, GVQ_CALL_##F##_##N##_##G) }
#define GVQ_ALL(name, F) \
	GVQ(name, F, 0, 0, ) GVQ(name, F, 1, 0, _norm) GVQ(name, F, 0, 1, _glu) GVQ(name, F, 1, 1, _norm_glu) \
	GVQ(name, F, 2, 0, _prep) GVQ(name, F, 2, 1, _prep_glu)
#define GVQ_CALL_8_0_0(wa, wb, y, n, b, a) gvq<8, 0, 0>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_8_1_0(wa, wb, y, n, b, a) gvq<8, 1, 0>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_8_0_1(wa, wb, y, n, b, a) gvq<8, 0, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_8_1_1(wa, wb, y, n, b, a) gvq<8, 1, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_0_0(wa, wb, y, n, b, a) gvq<2, 0, 0>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_1_0(wa, wb, y, n, b, a) gvq<2, 1, 0>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_0_1(wa, wb, y, n, b, a) gvq<2, 0, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_1_1(wa, wb, y, n, b, a) gvq<2, 1, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_8_2_0(wa, wb, y, n, b, a) gvq<8, 0, 0, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_8_2_1(wa, wb, y, n, b, a) gvq<8, 0, 1, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_2_0(wa, wb, y, n, b, a) gvq<2, 0, 0, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
#define GVQ_CALL_2_2_1(wa, wb, y, n, b, a) gvq<2, 0, 1, 1>(wa, wb, x, g, eps, y, n, k, rb, b, a)
GVQ_ALL(q8_0, 8)
GVQ_ALL(q4_0, 2)

// The rope forms: the three products of a step's queries, keys and
// values (Products under rope), the queries and keys turned by the
// rotary embedding at cs and sn, the keys and values written into row
// *posp of their caches kc and vc (crows rows each).
#define GV_ROPE_ARGS GV_ARGS, const float* __restrict__ cs, const float* __restrict__ sn, float* __restrict__ kc, float* __restrict__ vc, const i64* __restrict__ posp, i64 crows, i64 half
#define GV_ROPE_PICK(rows, CALL) \
	i64 b = blockIdx.x, per = GV_WARPS * rows, b0 = (n0 + per - 1) / per, b1 = (n1 + per - 1) / per; \
	if (b < b0) CALL(w0, y0, n0, b, add, (GvRope{cs, sn, nullptr, posp, crows, half, 1})); \
	else if (b < b0 + b1) CALL(w1, y1, n1, b - b0, nullptr, (GvRope{cs, sn, kc, posp, crows, half, 1})); \
	else CALL(w2, y2, n2, b - b0 - b1, nullptr, (GvRope{cs, sn, vc, posp, crows, half, 0}));
#define GVF_ROPE(name, F) \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_rope(GV_ROPE_ARGS) { \
	GV_ROPE_PICK(GV_ROWS, GVF_ROPE_CALL_0_##F) } \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_norm_rope(GV_ROPE_ARGS) { \
	__shared__ __align__(16) float xf[GV_NORMK]; \
	GV_ROPE_PICK(GV_ROWS, GVF_ROPE_CALL_1_##F) }
#define GVF_ROPE_CALL_0_0(wa, y, n, b, a, r) gvf<0, 0, 0, 1>(wa, nullptr, x, g, eps, nullptr, y, n, k, rb, b, a, r)
#define GVF_ROPE_CALL_1_0(wa, y, n, b, a, r) gvf<0, 0, 1, 1>(wa, nullptr, x, g, eps, xf, y, n, k, rb, b, a, r)
#define GVF_ROPE_CALL_0_1(wa, y, n, b, a, r) gvf<1, 0, 0, 1>(wa, nullptr, x, g, eps, nullptr, y, n, k, rb, b, a, r)
#define GVF_ROPE_CALL_1_1(wa, y, n, b, a, r) gvf<1, 0, 1, 1>(wa, nullptr, x, g, eps, xf, y, n, k, rb, b, a, r)
#define GVF_ROPE_CALL_0_30(wa, y, n, b, a, r) gvf<30, 0, 0, 1>(wa, nullptr, x, g, eps, nullptr, y, n, k, rb, b, a, r)
#define GVF_ROPE_CALL_1_30(wa, y, n, b, a, r) gvf<30, 0, 1, 1>(wa, nullptr, x, g, eps, xf, y, n, k, rb, b, a, r)
GVF_ROPE(f32, 0)
GVF_ROPE(f16, 1)
GVF_ROPE(bf16, 30)
#define GVQ_ROPE(name, F) \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_norm_rope(GV_ROPE_ARGS) { \
	GV_ROPE_PICK(GV_QROWS, GVQ_ROPE_CALL_1_##F) } \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_prep_rope(GV_ROPE_ARGS) { \
	GV_ROPE_PICK(GV_QROWS, GVQ_ROPE_CALL_2_##F) } \
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_##name##_rope(GV_ROPE_ARGS) { \
	GV_ROPE_PICK(GV_QROWS, GVQ_ROPE_CALL_0_##F) }
#define GVQ_ROPE_CALL_0_8(wa, y, n, b, a, r) gvq<8, 0, 0, 0, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
#define GVQ_ROPE_CALL_0_2(wa, y, n, b, a, r) gvq<2, 0, 0, 0, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
#define GVQ_ROPE_CALL_1_8(wa, y, n, b, a, r) gvq<8, 1, 0, 0, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
#define GVQ_ROPE_CALL_2_8(wa, y, n, b, a, r) gvq<8, 0, 0, 1, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
#define GVQ_ROPE_CALL_1_2(wa, y, n, b, a, r) gvq<2, 1, 0, 0, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
#define GVQ_ROPE_CALL_2_2(wa, y, n, b, a, r) gvq<2, 0, 0, 1, 1>(wa, nullptr, x, g, eps, y, n, k, rb, b, a, r)
GVQ_ROPE(q8_0, 8)
GVQ_ROPE(q4_0, 2)

// gemv_prepare quantises x (its RMSNorm by g under norm) once for the
// product after it (gvq under P), into q: k int8 values, then a scale
// and a sum for each block of 32. It lets the product start at once, so
// that the product's first weights are on their way while it runs.
template <int N> __device__ __forceinline__ void gv_prepare(const float* __restrict__ x, const float* __restrict__ g, i64 k, float eps, u8* __restrict__ q) {
	GRID_DEPENDENTS();
	GRID_WAIT();
	gv_quantise<N>(x, g, k, eps, (int*)q, (float*)(q + k), (int*)(q + k + k / 32 * 4));
}
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_prepare(const float* __restrict__ x, const float* __restrict__ g, i64 k, float eps, u8* __restrict__ q) {
	gv_prepare<0>(x, g, k, eps, q);
}
extern "C" __global__ void __launch_bounds__(32 * GV_WARPS) gemv_prepare_norm(const float* __restrict__ x, const float* __restrict__ g, i64 k, float eps, u8* __restrict__ q) {
	gv_prepare<1>(x, g, k, eps, q);
}
`
