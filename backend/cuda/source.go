package cuda

// The CUDA C sources of the kernels, one module per family of operators.
// Every module starts with common, which defines Geo: the shape of an
// iteration space of rank ≤ maxRank and up to four sets of element strides
// into it (0 for a broadcast axis). Kernels walk their elements with
// grid-stride loops, so any grid size is correct.

// maxRank is the largest rank a Geo describes.
const maxRank = 6

const common = `
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;
// Programmatic dependent launch (sm_90 on): GRID_DEPENDENTS lets the
// kernel after this one on the stream start, where it was launched early,
// once every block of this one has passed it; GRID_WAIT, in a kernel
// launched early, waits for the kernel before it to finish and its writes
// to be seen. Elsewhere both are nothing.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GRID_DEPENDENTS() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#define GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#else
#define GRID_DEPENDENTS()
#define GRID_WAIT()
#endif
// BY_SIZE_AND_INDEX(M) instantiates M(T, S, I, IS) for the elements of 1,
// 2, 4 and 8 bytes (T, of S bytes) and the index types i64 and int (I,
// named IS).
#define BY_SIZE_AND_INDEX(M) \
	M(u8, 1, i64, i64) M(u16, 2, i64, i64) M(u32, 4, i64, i64) M(u64, 8, i64, i64) \
	M(u8, 1, int, i32) M(u16, 2, int, i32) M(u32, 4, int, i32) M(u64, 8, int, i32)
struct Geo { i64 rank, n; i64 shape[6]; i64 st[4][6]; };
// offsets computes the element offsets of linear index i for the first k
// stride sets.
// Where the space has fewer than 2³¹ elements the index arithmetic runs in
// 32 bits: a 64-bit division costs several times a 32-bit one.
template <int K> __device__ __forceinline__ void offsets(const Geo& g, i64 i, i64* o) {
	#pragma unroll
	for (int k = 0; k < K; k++) o[k] = 0;
	if (g.n <= 0x7fffffffLL) {
		u32 j = (u32)i;
		for (int d = (int)g.rank - 1; d >= 0; d--) {
			u32 s = (u32)g.shape[d];
			u32 q = j % s;
			j /= s;
			#pragma unroll
			for (int k = 0; k < K; k++) o[k] += (i64)q * g.st[k][d];
		}
		return;
	}
	for (int d = (int)g.rank - 1; d >= 0; d--) {
		i64 s = g.shape[d];
		i64 q = i % s;
		i /= s;
		#pragma unroll
		for (int k = 0; k < K; k++) o[k] += q * g.st[k][d];
	}
}
#define NEG_INF __int_as_float(0xff800000)
#define LOOP(i, n) for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)blockDim.x * gridDim.x)
`

// eltwiseSource holds unary, binary, Where, Cast and plain copies, and
// the rounding of GEMM operands to 16 bits.
const eltwiseSource = common + halfCommon + `
extern "C" __global__ void round_f32_h(const float* __restrict__ x, u16* __restrict__ y, i64 n, int mode) {
	LOOP(i, n) y[i] = round_h(x[i], mode);
}
// round_f32_h2 is round_f32_h two elements a thread (n2 pairs, 8-byte aligned).
extern "C" __global__ void round_f32_h2(const float2* __restrict__ x, u32* __restrict__ y, i64 n2, int mode) {
	LOOP(i, n2) {
		float2 v = x[i];
		y[i] = (u32)round_h(v.x, mode) | ((u32)round_h(v.y, mode) << 16);
	}
}
// widen_h_f32 is the float32 values of 16-bit ones (a 16-bit tensor for
// a kernel that reads float32).
extern "C" __global__ void widen_h_f32(const u16* __restrict__ x, float* __restrict__ y, i64 n, int mode) {
	LOOP(i, n) y[i] = widen_h(x[i], mode);
}
#define UNARY(name, expr) \
extern "C" __global__ void name(const float* __restrict__ x, float* __restrict__ y, i64 n, float a, float b) { \
	LOOP(i, n) { float v = x[i]; y[i] = (expr); } }
UNARY(u_relu, fmaxf(v, 0.f))
UNARY(u_leakyrelu, v >= 0.f ? v : a * v)
UNARY(u_sigmoid, 1.f / (1.f + expf(-v)))
UNARY(u_hardsigmoid, fminf(fmaxf(a * v + b, 0.f), 1.f))
UNARY(u_hardswish, v * fminf(fmaxf(v / 6.f + 0.5f, 0.f), 1.f))
UNARY(u_tanh, tanhf(v))
UNARY(u_erf, erff(v))
UNARY(u_exp, expf(v))
UNARY(u_log, logf(v))
UNARY(u_sqrt, sqrtf(v))
UNARY(u_neg, -v)
UNARY(u_abs, fabsf(v))
UNARY(u_reciprocal, 1.f / v)
UNARY(u_floor, floorf(v))
UNARY(u_ceil, ceilf(v))
UNARY(u_sin, sinf(v))
UNARY(u_cos, cosf(v))
UNARY(u_softplus, v > 20.f ? v : log1pf(expf(v)))
UNARY(u_elu, v >= 0.f ? v : a * (expf(v) - 1.f))

extern "C" __global__ void u_clip(const float* __restrict__ x, float* __restrict__ y, i64 n, float lo, float hi, const float* plo, const float* phi) {
	if (plo) lo = *plo;
	if (phi) hi = *phi;
	LOOP(i, n) { float v = x[i]; v = v < lo ? lo : v; y[i] = v > hi ? hi : v; }
}

template <typename T, typename O, int OP> __device__ __forceinline__ O binop(T a, T b) {
	if (OP == 0) return a + b;
	if (OP == 1) return a - b;
	if (OP == 2) return a * b;
	if (OP == 3) return a / b;
	if (OP == 4) return (O)powf((float)a, (float)b);
	if (OP == 5) return a > b ? a : b;
	if (OP == 6) return a < b ? a : b;
	if (OP == 7) return (O)(a == b);
	if (OP == 8) return (O)(a < b);
	if (OP == 9) return (O)(a > b);
	if (OP == 10) return (O)(a <= b);
	if (OP == 11) return (O)(a >= b);
	if (OP == 12) return (O)((a != 0) & (b != 0));
	if (OP == 13) return (O)((a != 0) | (b != 0));
	if (OP == 14) return (O)((a != 0) != (b != 0));
	return 0;
}
template <typename T, typename O, int OP> __device__ void binary(const T* __restrict__ a, const T* __restrict__ b, O* __restrict__ c, const Geo& g) {
	if (g.rank == 0) {
		LOOP(i, g.n) c[i] = binop<T, O, OP>(a[i], b[i]);
		return;
	}
	LOOP(i, g.n) {
		i64 o[2];
		offsets<2>(g, i, o);
		c[i] = binop<T, O, OP>(a[o[0]], b[o[1]]);
	}
}
#define BINARY(name, T, O, OP) \
extern "C" __global__ void name(const T* a, const T* b, O* c, Geo g) { binary<T, O, OP>(a, b, c, g); }
BINARY(b_add_f32, float, float, 0)
BINARY(b_sub_f32, float, float, 1)
BINARY(b_mul_f32, float, float, 2)
BINARY(b_div_f32, float, float, 3)
BINARY(b_pow_f32, float, float, 4)
BINARY(b_max_f32, float, float, 5)
BINARY(b_min_f32, float, float, 6)
BINARY(b_equal_f32, float, u8, 7)
BINARY(b_less_f32, float, u8, 8)
BINARY(b_greater_f32, float, u8, 9)
BINARY(b_lessorequal_f32, float, u8, 10)
BINARY(b_greaterorequal_f32, float, u8, 11)
BINARY(b_add_i64, i64, i64, 0)
BINARY(b_sub_i64, i64, i64, 1)
BINARY(b_mul_i64, i64, i64, 2)
BINARY(b_div_i64, i64, i64, 3)
BINARY(b_max_i64, i64, i64, 5)
BINARY(b_min_i64, i64, i64, 6)
BINARY(b_equal_i64, i64, u8, 7)
BINARY(b_less_i64, i64, u8, 8)
BINARY(b_greater_i64, i64, u8, 9)
BINARY(b_lessorequal_i64, i64, u8, 10)
BINARY(b_greaterorequal_i64, i64, u8, 11)
BINARY(b_add_i32, int, int, 0)
BINARY(b_sub_i32, int, int, 1)
BINARY(b_mul_i32, int, int, 2)
BINARY(b_div_i32, int, int, 3)
BINARY(b_max_i32, int, int, 5)
BINARY(b_min_i32, int, int, 6)
BINARY(b_equal_i32, int, u8, 7)
BINARY(b_less_i32, int, u8, 8)
BINARY(b_greater_i32, int, u8, 9)
BINARY(b_lessorequal_i32, int, u8, 10)
BINARY(b_greaterorequal_i32, int, u8, 11)
BINARY(b_equal_bool, u8, u8, 7)
BINARY(b_and_bool, u8, u8, 12)
BINARY(b_or_bool, u8, u8, 13)
BINARY(b_xor_bool, u8, u8, 14)
extern "C" __global__ void u_not(const u8* __restrict__ x, u8* __restrict__ y, i64 n) { LOOP(i, n) y[i] = x[i] == 0; }

template <typename T> __device__ void where(const u8* __restrict__ c, const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, const Geo& g) {
	LOOP(i, g.n) {
		i64 o[3];
		offsets<3>(g, i, o);
		z[i] = c[o[0]] ? x[o[1]] : y[o[2]];
	}
}
extern "C" __global__ void where_4(const u8* c, const u32* x, const u32* y, u32* z, Geo g) { where<u32>(c, x, y, z, g); }
extern "C" __global__ void where_8(const u8* c, const u64* x, const u64* y, u64* z, Geo g) { where<u64>(c, x, y, z, g); }
extern "C" __global__ void where_1(const u8* c, const u8* x, const u8* y, u8* z, Geo g) { where<u8>(c, x, y, z, g); }

template <typename F, typename T> __device__ __forceinline__ T convert(F v) { return (T)v; }
#define CAST(name, F, T) \
extern "C" __global__ void name(const F* __restrict__ x, T* __restrict__ y, i64 n) { LOOP(i, n) y[i] = (T)x[i]; }
#define CASTBOOL(name, F) \
extern "C" __global__ void name(const F* __restrict__ x, u8* __restrict__ y, i64 n) { LOOP(i, n) y[i] = x[i] != (F)0; }
CAST(cast_f32_i64, float, i64)
CAST(cast_f32_i32, float, int)
CAST(cast_i64_f32, i64, float)
CAST(cast_i64_i32, i64, int)
CAST(cast_i32_f32, int, float)
CAST(cast_i32_i64, int, i64)
CAST(cast_bool_f32, u8, float)
CAST(cast_bool_i64, u8, i64)
CAST(cast_bool_i32, u8, int)
CASTBOOL(cast_f32_bool, float)
CASTBOOL(cast_i64_bool, i64)
CASTBOOL(cast_i32_bool, int)

// copy_bytes copies n bytes, a word at a time where both ends allow.
extern "C" __global__ void copy_bytes(const u8* __restrict__ x, u8* __restrict__ y, i64 n) {
	if ((((u64)x | (u64)y | (u64)n) & 3) == 0) {
		const u32* a = (const u32*)x;
		u32* b = (u32*)y;
		LOOP(i, n / 4) b[i] = a[i];
		return;
	}
	LOOP(i, n) y[i] = x[i];
}
`

// layoutSource holds the strided copies (Transpose, Slice, Expand, Concat,
// Split) and Gather.
const layoutSource = common + halfCommon + `
// strided_N copies the elements of a Geo from src (strides st[0]) to dst
// (strides st[1]).
template <typename T> __device__ void strided(const T* __restrict__ x, T* __restrict__ y, const Geo& g) {
	LOOP(i, g.n) {
		i64 o[2];
		offsets<2>(g, i, o);
		y[o[1]] = x[o[0]];
	}
}
extern "C" __global__ void strided_1(const u8* x, u8* y, Geo g) { strided<u8>(x, y, g); }
extern "C" __global__ void strided_2(const u16* x, u16* y, Geo g) { strided<u16>(x, y, g); }
extern "C" __global__ void strided_4(const u32* x, u32* y, Geo g) { strided<u32>(x, y, g); }
extern "C" __global__ void strided_8(const u64* x, u64* y, Geo g) { strided<u64>(x, y, g); }
// strided_f32_h is strided_4 from float32 to the 16-bit GEMM operand type
// (round_h): a Transpose whose only readers are 16-bit GEMMs.
extern "C" __global__ void strided_f32_h(const float* __restrict__ x, u16* __restrict__ y, Geo g, int mode) {
	LOOP(i, g.n) {
		i64 o[2];
		offsets<2>(g, i, o);
		y[o[1]] = round_h(x[o[0]], mode);
	}
}

// gather: y[o][j][k] = x[o][idx[j]][k], out-of-range indices clamped.
template <typename T, typename I> __device__ void gather(const T* __restrict__ x, const I* __restrict__ idx, T* __restrict__ y, i64 outer, i64 dim, i64 nidx, i64 inner) {
	i64 n = outer * nidx * inner;
	LOOP(i, n) {
		i64 k = i % inner;
		i64 j = (i / inner) % nidx;
		i64 o = i / (inner * nidx);
		i64 v = (i64)idx[j];
		if (v < 0) v += dim;
		v = v < 0 ? 0 : (v >= dim ? dim - 1 : v);
		y[i] = x[(o * dim + v) * inner + k];
	}
}
#define GATHER(T, S, I, IS) \
extern "C" __global__ void gather_##S##_##IS(const T* x, const I* idx, T* y, i64 outer, i64 dim, i64 nidx, i64 inner) { gather<T, I>(x, idx, y, outer, dim, nidx, inner); }
BY_SIZE_AND_INDEX(GATHER)
`

// gemmSource holds the tiled SGEMM used by MatMul, Gemm and Conv where
// cuBLAS is not (gemm128: 128×128 tiles, 256 threads of 8×8 outputs;
// gemm64: 64×64, 128 threads of 8×4; gemm_reduce), and the fills of a
// cuBLAS GEMM's addend.
//
// A product computes, for every batch z (decoded by the Geo with strides
// st[0] into A, st[1] into B, st[2] into C and st[3] into the addend),
// C[m,n] = alpha·Σk A[m·sam + k·sak]·B[k·sbk + n·sbn] + beta·D[m·sdm +
// n·sdn], C contiguous with row length N.
const gemmSource = common + `
// gemm_tiles is the tiled SGEMM: a BM×BN tile of C a block of
// (BM/TM)·(BN/TN) threads, each TM×TN outputs in 4×4 groups (TM/4 of
// them down, BM/(TM/4) rows apart, and TN/4 across), K in steps of BK
// through two shared buffers, the next step's operands loaded into
// registers while the current one is summed. Operands are read along
// their contiguous axis where they have one (sak or sam 1 for A, sbn or
// sbk 1 for B). Where S > 1 the K axis is split in S parts (blockIdx.z =
// z·S + part): each part writes its sums, times alpha, to W (S·M·N floats
// a matrix, part after part), and gemm_reduce adds the parts and beta·D
// into C.
template <int TBM, int TBN, int TBK, int TM, int TN> __device__ __forceinline__ void gemm_tiles(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, const float* __restrict__ D,
		i64 M, i64 N, i64 K, i64 sam, i64 sak, i64 sbk, i64 sbn, i64 sdm, i64 sdn, float alpha, float beta, const Geo& g, int S, float* __restrict__ W) {
	enum { THREADS = (TBM / TM) * (TBN / TN), VA = TBM * TBK / 4 / THREADS, VB = TBN * TBK / 4 / THREADS };
	static_assert(VA * 4 * THREADS == TBM * TBK && VB * 4 * THREADS == TBN * TBK, "the threads bring whole runs of 4 of each operand a step");
	__shared__ __align__(16) float As[2][TBK][TBM + 4];
	__shared__ __align__(16) float Bs[2][TBK][TBN + 4];
	const i64 zs = blockIdx.z, z = zs / S, part = zs % S;
	i64 o[4] = {0, 0, 0, 0};
	if (g.rank > 0) offsets<4>(g, z, o);
	A += o[0]; B += o[1]; C += o[2];
	if (D) D += o[3];
	const int t = threadIdx.x, tx = t % (TBN / TN), ty = t / (TBN / TN);
	const i64 m0 = (i64)blockIdx.y * TBM, n0 = (i64)blockIdx.x * TBN;
	// This part's span of K, whole steps of BK but the last.
	const i64 kper = ((K + S - 1) / S + TBK - 1) / TBK * TBK, kb = part * kper, ke = min(K, kb + kper);
	// Each thread brings runs of 4 values of each operand a step (VA of
	// A, VB of B): along the operand's contiguous axis where it has one
	// (one 16-byte load where they are aligned and in range), else along
	// m for A and along k for B. Run q of A starts at (am(q), akk(q)).
	const bool ak = sak == 1 && sam != 1, bn = sbn == 1;
	auto am = [&](int q) { return ak ? q / (TBK / 4) : (q % (TBM / 4)) * 4; };
	auto akk = [&](int q) { return ak ? (q % (TBK / 4)) * 4 : q / (TBM / 4); };
	auto bk = [&](int q) { return bn ? q / (TBN / 4) : (q % (TBK / 4)) * 4; };
	auto bnn = [&](int q) { return bn ? (q % (TBN / 4)) * 4 : q / (TBK / 4); };
	float ra[VA][4], rb[VB][4];
	auto load = [&](i64 k0) {
		#pragma unroll
		for (int v = 0; v < VA; v++) {
			const int q = t + THREADS * v;
			const i64 m = m0 + am(q), k = k0 + akk(q);
			const float* p = A + m * sam + k * sak;
			const bool full = ak ? m < M && k + 3 < ke : m + 3 < M && k < ke;
			if (full && (ak || sam == 1) && ((u64)p & 15) == 0) {
				const float4 x = *(const float4*)p;
				ra[v][0] = x.x; ra[v][1] = x.y; ra[v][2] = x.z; ra[v][3] = x.w;
			} else {
				#pragma unroll
				for (int i = 0; i < 4; i++) {
					const i64 mi = ak ? m : m + i, ki = ak ? k + i : k;
					ra[v][i] = mi < M && ki < ke ? A[mi * sam + ki * sak] : 0.f;
				}
			}
		}
		#pragma unroll
		for (int v = 0; v < VB; v++) {
			const int q = t + THREADS * v;
			const i64 k = k0 + bk(q), n = n0 + bnn(q);
			const float* p = B + k * sbk + n * sbn;
			const bool full = bn ? k < ke && n + 3 < N : k + 3 < ke && n < N;
			if (full && (bn || sbk == 1) && ((u64)p & 15) == 0) {
				const float4 x = *(const float4*)p;
				rb[v][0] = x.x; rb[v][1] = x.y; rb[v][2] = x.z; rb[v][3] = x.w;
			} else {
				#pragma unroll
				for (int i = 0; i < 4; i++) {
					const i64 ki = bn ? k : k + i, ni = bn ? n + i : n;
					rb[v][i] = ki < ke && ni < N ? B[ki * sbk + ni * sbn] : 0.f;
				}
			}
		}
	};
	auto store = [&](int buf) {
		#pragma unroll
		for (int v = 0; v < VA; v++) {
			const int q = t + THREADS * v;
			#pragma unroll
			for (int i = 0; i < 4; i++) {
				if (ak) As[buf][akk(q) + i][am(q)] = ra[v][i];
				else As[buf][akk(q)][am(q) + i] = ra[v][i];
			}
		}
		#pragma unroll
		for (int v = 0; v < VB; v++) {
			const int q = t + THREADS * v;
			#pragma unroll
			for (int i = 0; i < 4; i++) {
				if (bn) Bs[buf][bk(q)][bnn(q) + i] = rb[v][i];
				else Bs[buf][bk(q) + i][bnn(q)] = rb[v][i];
			}
		}
	};
	// A thread's outputs: TM rows in groups of 4, TBM/(TM/4) apart, by TN
	// columns likewise.
	enum { RG = TBM / (TM / 4), CG = TBN / (TN / 4) };
	float acc[TM][TN];
	#pragma unroll
	for (int i = 0; i < TM; i++)
		#pragma unroll
		for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
	int buf = 0;
	if (kb < ke) {
		load(kb);
		store(0);
	}
	__syncthreads();
	for (i64 k0 = kb; k0 < ke; k0 += TBK) {
		const bool more = k0 + TBK < ke;
		if (more) load(k0 + TBK);
		#pragma unroll
		for (int kk = 0; kk < TBK; kk++) {
			float a[TM], b[TN];
			#pragma unroll
			for (int i = 0; i < TM; i += 4) {
				const float4 v = *(const float4*)&As[buf][kk][(i / 4) * RG + ty * 4];
				a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
			}
			#pragma unroll
			for (int j = 0; j < TN; j += 4) {
				const float4 v = *(const float4*)&Bs[buf][kk][(j / 4) * CG + tx * 4];
				b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
			}
			#pragma unroll
			for (int i = 0; i < TM; i++)
				#pragma unroll
				for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
		}
		if (more) store(buf ^ 1);
		__syncthreads();
		buf ^= 1;
	}
	float* out = S > 1 ? W + zs * M * N : C;
	#pragma unroll
	for (int i = 0; i < TM; i++) {
		const i64 m = m0 + (i / 4) * RG + ty * 4 + i % 4;
		if (m >= M) continue;
		#pragma unroll
		for (int j = 0; j < TN; j++) {
			const i64 n = n0 + (j / 4) * CG + tx * 4 + j % 4;
			if (n >= N) continue;
			float v = alpha * acc[i][j];
			if (S == 1 && D) v += beta * D[m * sdm + n * sdn];
			out[m * N + n] = v;
		}
	}
}
#define GEMM_TILES_ARGS const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, const float* __restrict__ D, \
		i64 M, i64 N, i64 K, i64 sam, i64 sak, i64 sbk, i64 sbn, i64 sdm, i64 sdn, float alpha, float beta, Geo g, int S, float* __restrict__ W
#define GEMM_TILES_PASS A, B, C, D, M, N, K, sam, sak, sbk, sbn, sdm, sdn, alpha, beta, g, S, W
extern "C" __global__ void __launch_bounds__(256) gemm128(GEMM_TILES_ARGS) { gemm_tiles<128, 128, 8, 8, 8>(GEMM_TILES_PASS); }
extern "C" __global__ void __launch_bounds__(128) gemm64(GEMM_TILES_ARGS) { gemm_tiles<64, 64, 16, 8, 4>(GEMM_TILES_PASS); }
// gemm_reduce adds the S parts of a split product (gemm_tiles) and
// beta·D into C: matrix z is blockIdx.y.
extern "C" __global__ void gemm_reduce(const float* __restrict__ W, float* __restrict__ C, const float* __restrict__ D, i64 M, i64 N, i64 sdm, i64 sdn, float beta, Geo g, int S) {
	const i64 z = blockIdx.y, mn = M * N;
	i64 o[4] = {0, 0, 0, 0};
	if (g.rank > 0) offsets<4>(g, z, o);
	C += o[2];
	if (D) D += o[3];
	const float* w = W + z * S * mn;
	for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < mn; i += (i64)blockDim.x * gridDim.x) {
		float v = 0.f;
		for (int s = 0; s < S; s++) v += w[s * mn + i];
		if (D) v += beta * D[(i / N) * sdm + (i % N) * sdn];
		C[i] = v;
	}
}
// fill_addend_rows is fill_addend with one block row per matrix row
// (blockIdx.y) and matrix (blockIdx.z): no index division.
extern "C" __global__ void fill_addend_rows(const float* __restrict__ D, float* __restrict__ C, i64 N, i64 sdm, i64 sdn, i64 sD, i64 sC) {
	const float* d = D + (i64)blockIdx.z * sD + (i64)blockIdx.y * sdm;
	float* c = C + (i64)blockIdx.z * sC + (i64)blockIdx.y * N;
	for (i64 n = (i64)blockIdx.x * blockDim.x + threadIdx.x; n < N; n += (i64)blockDim.x * gridDim.x) c[n] = d[n * sdn];
}
// fill_addend writes the GEMM addend into C before a cuBLAS call adds
// alpha·A·B to beta·C: C[z][m, n] = D[z·sD + m·sdm + n·sdn] for nb
// matrices of M×N, C's sC elements apart.
extern "C" __global__ void fill_addend(const float* __restrict__ D, float* __restrict__ C, i64 M, i64 N, i64 sdm, i64 sdn, i64 sD, i64 sC, i64 nb) {
	i64 mn = M * N;
	LOOP(i, nb * mn) {
		i64 z = i / mn, r = i % mn;
		C[z * sC + r] = D[z * sD + (r / N) * sdm + (r % N) * sdn];
	}
}
`

// halfCommon rounds float32 to the 16-bit GEMM operand types, to nearest
// even: mode 0 bfloat16, 1 IEEE half.
const halfCommon = `
// widen_h is the float32 value of a 16-bit one.
__device__ __forceinline__ float widen_h(u16 v, int mode) {
	if (mode) {
		float r;
		asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(v));
		return r;
	}
	return __uint_as_float((u32)v << 16);
}
__device__ __forceinline__ u16 round_h(float v, int mode) {
	u16 r;
	if (mode) asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(v));
	else asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(v));
	return r;
}
`

// convSource holds im2col and the direct depthwise convolution, both for
// two spatial axes (one-axis convolutions run with H = 1).
const convSource = common + halfCommon + `
struct Conv { i64 N, C, H, W, OC, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, mult; };
// im2col writes, for every image, the (C·KH·KW) × (OH·OW) matrix of input
// patches (zeros in the padding); im2col_h writes 16-bit GEMM operands
// (see round_h), and im2col_hh reads an input already held in 16 bits
// (a tensor whose only readers are 16-bit GEMMs) and copies it as it is.
template <typename T> __device__ __forceinline__ T im2col_out(float v, int mode);
template <> __device__ __forceinline__ float im2col_out<float>(float v, int) { return v; }
template <> __device__ __forceinline__ u16 im2col_out<u16>(float v, int mode) { return round_h(v, mode); }
// im2col_at is the patch element x[at], or zero where it is padding.
template <typename S, typename T> __device__ __forceinline__ T im2col_at(const S* x, bool inside, i64 at, int mode) {
	if (sizeof(S) == sizeof(T) && sizeof(S) == 2) { // 16 bits in, 16 bits out: no rounding
		u16 v = 0;
		if (inside) v = (u16)x[at];
		return (T)v;
	}
	float v = 0.f;
	if (inside) v = (float)x[at];
	return im2col_out<T>(v, mode);
}
template <typename S, typename T> __device__ __forceinline__ void im2col_t(const S* __restrict__ x, T* __restrict__ col, const Conv& p, int mode) {
	i64 ohw = p.OH * p.OW, rows = p.C * p.KH * p.KW;
	i64 n = p.N * rows * ohw;
	LOOP(i, n) {
		i64 q = i % ohw, r = (i / ohw) % rows, b = i / (ohw * rows);
		i64 ow = q % p.OW, oh = q / p.OW;
		i64 kw = r % p.KW, kh = (r / p.KW) % p.KH, c = r / (p.KW * p.KH);
		i64 h = oh * p.SH - p.PH + kh * p.DH, w = ow * p.SW - p.PW + kw * p.DW;
		col[i] = im2col_at<S, T>(x, h >= 0 && h < p.H && w >= 0 && w < p.W, ((b * p.C + c) * p.H + h) * p.W + w, mode);
	}
}
extern "C" __global__ void im2col(const float* __restrict__ x, float* __restrict__ col, Conv p) { im2col_t<float, float>(x, col, p, 0); }
extern "C" __global__ void im2col_h(const float* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_t<float, u16>(x, col, p, mode); }
extern "C" __global__ void im2col_hh(const u16* __restrict__ x, u16* __restrict__ col, Conv p, int) { im2col_t<u16, u16>(x, col, p, 0); }
// im2col_rows is im2col with one block row per patch row r = (c, kh, kw)
// (blockIdx.y) and image (blockIdx.z), so that a thread divides once, in
// 32 bits, per element; im2col_rows_h writes 16-bit operands (round_h).
// V = 4: a thread writes four consecutive patch elements with one
// vector store (ohw a multiple of 4, so every row starts aligned).
template <typename T> __device__ __forceinline__ void store4(T* p, const T* v);
template <> __device__ __forceinline__ void store4<float>(float* p, const float* v) { *(float4*)p = make_float4(v[0], v[1], v[2], v[3]); }
template <> __device__ __forceinline__ void store4<u16>(u16* p, const u16* v) {
	*(uint2*)p = make_uint2((u32)v[0] | ((u32)v[1] << 16), (u32)v[2] | ((u32)v[3] << 16));
}
template <typename S, typename T> __device__ __forceinline__ T im2col_elem(const S* xp, int h, int w, int H, int W, int mode) {
	return im2col_at<S, T>(xp, h >= 0 && h < H && w >= 0 && w < W, h * W + w, mode);
}
template <int V, typename S, typename T> __device__ __forceinline__ void im2col_rows_t(const S* __restrict__ x, T* __restrict__ col, const Conv& p, int mode) {
	int ohw = (int)(p.OH * p.OW), rows = (int)(p.C * p.KH * p.KW);
	int r = blockIdx.y;
	i64 b = blockIdx.z;
	int kw = r % (int)p.KW, kh = (r / (int)p.KW) % (int)p.KH, c = r / (int)(p.KW * p.KH);
	const S* xp = x + (b * p.C + c) * p.H * p.W;
	T* cp = col + (b * rows + r) * (i64)ohw;
	int OW = (int)p.OW, H = (int)p.H, W = (int)p.W, SH = (int)p.SH, SW = (int)p.SW;
	int h0 = kh * (int)p.DH - (int)p.PH, w0 = kw * (int)p.DW - (int)p.PW;
	for (int q = (blockIdx.x * blockDim.x + threadIdx.x) * V; q < ohw; q += blockDim.x * gridDim.x * V) {
		int oh = q / OW, ow = q - oh * OW;
		T v[V];
		#pragma unroll
		for (int u = 0; u < V; u++) {
			v[u] = im2col_elem<S, T>(xp, oh * SH + h0, ow * SW + w0, H, W, mode);
			if (++ow == OW) { ow = 0; oh++; }
		}
		if (V == 4) store4<T>(cp + q, v);
		else cp[q] = v[0];
	}
}
extern "C" __global__ void im2col_rows(const float* __restrict__ x, float* __restrict__ col, Conv p) { im2col_rows_t<1, float, float>(x, col, p, 0); }
extern "C" __global__ void im2col_rows_h(const float* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_rows_t<1, float, u16>(x, col, p, mode); }
extern "C" __global__ void im2col_rows4(const float* __restrict__ x, float* __restrict__ col, Conv p) { im2col_rows_t<4, float, float>(x, col, p, 0); }
extern "C" __global__ void im2col_rows4_h(const float* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_rows_t<4, float, u16>(x, col, p, mode); }
extern "C" __global__ void im2col_rows4_hh(const u16* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_rows_t<4, u16, u16>(x, col, p, mode); }
// im2col_walk4_t writes 16-bit patches four consecutive elements a
// thread, with one vector store, walking from one patch row to the next
// inside the four, so that short rows (a 7×7 or 14×14 output) keep every
// thread of a block busy. The matrix it writes holds a multiple of four
// elements, fewer than 2³¹, so every store is aligned and the indices fit
// 32 bits. Its rows are the C·KH·KW patch rows and its columns the output
// positions of nb images, image after image within each row:
//   - im2col_flat4_h: one image, blockIdx.y, a matrix of its own (nb = 1);
//   - im2col_fold4_h: all N images in one matrix (nb = N), so that one
//     GEMM covers the whole batch where each image's output is too small
//     to fill the device.
// The _hh kernels read an input already held in 16 bits.
template <typename S> __device__ __forceinline__ void im2col_walk4_t(const S* __restrict__ x, u16* __restrict__ col, const Conv& p, int mode, int nb) {
	int OW = (int)p.OW, OH = (int)p.OH, KW = (int)p.KW, KH = (int)p.KH;
	int H = (int)p.H, W = (int)p.W, SH = (int)p.SH, SW = (int)p.SW, DH = (int)p.DH, DW = (int)p.DW, PH = (int)p.PH, PW = (int)p.PW;
	int ohw = OH * OW, row = nb * ohw, total = (int)(p.C * p.KH * p.KW) * row;
	i64 hw = (i64)H * W;
	for (int o = (blockIdx.x * blockDim.x + threadIdx.x) * 4; o < total; o += blockDim.x * gridDim.x * 4) {
		int r = o / row, rem = o - r * row;
		int b = rem / ohw, q = rem - b * ohw;
		int c = r / (KH * KW), k = r - c * (KH * KW), kh = k / KW, kw = k - kh * KW;
		int oh = q / OW, ow = q - oh * OW;
		const S* xp = x + ((i64)b * p.C + c) * hw;
		u16 v[4];
		#pragma unroll
		for (int u = 0; u < 4; u++) {
			v[u] = im2col_elem<S, u16>(xp, oh * SH - PH + kh * DH, ow * SW - PW + kw * DW, H, W, mode);
			if (++ow == OW) {
				ow = 0;
				if (++oh == OH) {
					oh = 0;
					if (++b == nb) { // the next patch row, from the first image
						b = 0;
						if (++kw == KW) {
							kw = 0;
							if (++kh == KH) {
								kh = 0;
								c++;
							}
						}
					}
					xp = x + ((i64)b * p.C + c) * hw;
				}
			}
		}
		store4<u16>(col + o, v);
	}
}
template <typename S> __device__ __forceinline__ void im2col_flat4_t(const S* __restrict__ x, u16* __restrict__ col, const Conv& p, int mode) {
	i64 b = blockIdx.y;
	im2col_walk4_t<S>(x + b * p.C * p.H * p.W, col + b * p.C * p.KH * p.KW * p.OH * p.OW, p, mode, 1);
}
extern "C" __global__ void im2col_flat4_h(const float* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_flat4_t<float>(x, col, p, mode); }
extern "C" __global__ void im2col_flat4_hh(const u16* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_flat4_t<u16>(x, col, p, mode); }
extern "C" __global__ void im2col_fold4_h(const float* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_walk4_t<float>(x, col, p, mode, (int)p.N); }
extern "C" __global__ void im2col_fold4_hh(const u16* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_walk4_t<u16>(x, col, p, mode, (int)p.N); }
// unfold turns the product of a folded batch, OC rows of N·OHW columns,
// into the N×OC×OHW output (fewer than 2³¹ elements); unfold_h writes it
// in 16 bits (round_h).
extern "C" __global__ void unfold(const float* __restrict__ t, float* __restrict__ y, int OC, int N, int ohw) {
	int n = OC * N * ohw;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
		int rest = i / ohw, q = i - rest * ohw, b = rest / OC, oc = rest - b * OC;
		y[i] = t[(oc * N + b) * ohw + q];
	}
}
extern "C" __global__ void unfold_h(const float* __restrict__ t, u16* __restrict__ y, int OC, int N, int ohw, int mode) {
	int n = OC * N * ohw;
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
		int rest = i / ohw, q = i - rest * ohw, b = rest / OC, oc = rest - b * OC;
		y[i] = round_h(t[(oc * N + b) * ohw + q], mode);
	}
}
// im2col_rows_hh reads an input already held in 16 bits.
extern "C" __global__ void im2col_rows_hh(const u16* __restrict__ x, u16* __restrict__ col, Conv p, int mode) { im2col_rows_t<1, u16, u16>(x, col, p, mode); }
// ConvT is the geometry of a ConvTranspose over up to three spatial axes
// (fewer run with leading sizes of 1).
struct ConvT { i64 N, OC, ID, IH, IW, OD, OH, OW, KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW; };
// col2im sums, for every output element of a ConvTranspose, the entries of
// the column matrix (per image and output channel, KD·KH·KW rows of the
// input's positions, the GEMM's product) that land on it: input position
// i reaches output i·stride − pad + tap·dilation. One thread an output,
// so no two threads add to one element.
extern "C" __global__ void col2im(const float* __restrict__ col, const float* __restrict__ bias, float* __restrict__ y, ConvT p) {
	i64 osp = p.OD * p.OH * p.OW, isp = p.ID * p.IH * p.IW, kvol = p.KD * p.KH * p.KW;
	LOOP(i, p.N * p.OC * osp) {
		i64 q = i % osp, t = i / osp, oc = t % p.OC;
		i64 ow = q % p.OW, oh = (q / p.OW) % p.OH, od = q / (p.OW * p.OH);
		const float* cp = col + t * kvol * isp;
		float acc = 0.f;
		for (i64 kd = 0; kd < p.KD; kd++) {
			i64 a = od + p.PD - kd * p.DD;
			if (a < 0) break;
			if (a % p.SD != 0 || a / p.SD >= p.ID) continue;
			i64 id = a / p.SD;
			for (i64 kh = 0; kh < p.KH; kh++) {
				i64 b = oh + p.PH - kh * p.DH;
				if (b < 0) break;
				if (b % p.SH != 0 || b / p.SH >= p.IH) continue;
				i64 ih = b / p.SH;
				for (i64 kw = 0; kw < p.KW; kw++) {
					i64 c = ow + p.PW - kw * p.DW;
					if (c < 0) break;
					if (c % p.SW != 0 || c / p.SW >= p.IW) continue;
					acc += cp[((kd * p.KH + kh) * p.KW + kw) * isp + (id * p.IH + ih) * p.IW + c / p.SW];
				}
			}
		}
		y[i] = bias ? acc + bias[oc] : acc;
	}
}
// depthwise: group == C, OC = C·mult, one thread per output.
extern "C" __global__ void depthwise(const float* __restrict__ x, const float* __restrict__ wt, const float* __restrict__ bias, float* __restrict__ y, Conv p) {
	i64 n = p.N * p.OC * p.OH * p.OW;
	LOOP(i, n) {
		i64 ow = i % p.OW, oh = (i / p.OW) % p.OH, oc = (i / (p.OW * p.OH)) % p.OC, b = i / (p.OW * p.OH * p.OC);
		i64 c = oc / p.mult;
		const float* xp = x + (b * p.C + c) * p.H * p.W;
		const float* wp = wt + oc * p.KH * p.KW;
		float acc = bias ? bias[oc] : 0.f;
		for (i64 kh = 0; kh < p.KH; kh++) {
			i64 h = oh * p.SH - p.PH + kh * p.DH;
			if (h < 0 || h >= p.H) continue;
			for (i64 kw = 0; kw < p.KW; kw++) {
				i64 w = ow * p.SW - p.PW + kw * p.DW;
				if (w < 0 || w >= p.W) continue;
				acc += xp[h * p.W + w] * wp[kh * p.KW + kw];
			}
		}
		y[i] = acc;
	}
}
`

// normSource holds row-wise reductions: Softmax, LayerNormalization,
// ReduceMean/ReduceSum (and GlobalAveragePool through them), and the
// per-channel affine map of BatchNormalization.
//
// A "row" is dim elements dim apart by inner: element j of row r = (o, k)
// is at (o·dim + j)·inner + k. One block of 256 threads per row.
const normSource = common + halfCommon + `
__device__ __forceinline__ float warp_sum(float v) {
	#pragma unroll
	for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffff, v, s);
	return v;
}
__device__ __forceinline__ float warp_max(float v) {
	#pragma unroll
	for (int s = 16; s > 0; s >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, s));
	return v;
}
// block_sum returns the sum of v over the block (256 threads) to every thread.
__device__ float block_sum(float v, float* sh) {
	v = warp_sum(v);
	int w = threadIdx.x / 32, l = threadIdx.x % 32;
	__syncthreads();
	if (l == 0) sh[w] = v;
	__syncthreads();
	v = l < (blockDim.x / 32) ? sh[l] : 0.f;
	return warp_sum(v);
}
__device__ float block_max(float v, float* sh) {
	v = warp_max(v);
	int w = threadIdx.x / 32, l = threadIdx.x % 32;
	__syncthreads();
	if (l == 0) sh[w] = v;
	__syncthreads();
	v = l < (blockDim.x / 32) ? sh[l] : NEG_INF;
	return warp_max(v);
}
extern "C" __global__ void softmax(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 dim, i64 inner, int logsm) {
	__shared__ float sh[32];
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		i64 base = (r / inner) * dim * inner + r % inner;
		const float* xp = x + base;
		float* yp = y + base;
		float m = NEG_INF;
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) m = fmaxf(m, xp[j * inner]);
		m = block_max(m, sh);
		float s = 0.f;
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) s += expf(xp[j * inner] - m);
		s = block_sum(s, sh);
		if (logsm) {
			float ls = logf(s);
			for (i64 j = threadIdx.x; j < dim; j += blockDim.x) yp[j * inner] = xp[j * inner] - m - ls;
		} else {
			float inv = 1.f / s;
			for (i64 j = threadIdx.x; j < dim; j += blockDim.x) yp[j * inner] = expf(xp[j * inner] - m) * inv;
		}
	}
}
// softmax_warp is softmax for contiguous rows (inner = 1) of at most
// 1024 elements: one warp per row, the row in registers, no barriers.
// softmax_warp_h writes 16-bit GEMM operands (round_h) instead.
template <typename T> __device__ __forceinline__ T softmax_out(float v, int mode);
template <> __device__ __forceinline__ float softmax_out<float>(float v, int) { return v; }
template <> __device__ __forceinline__ u16 softmax_out<u16>(float v, int mode) { return round_h(v, mode); }
template <typename T> __device__ __forceinline__ void softmax_warp_t(const float* __restrict__ x, T* __restrict__ y, i64 rows, int dim, int logsm, int mode) {
	int lane = threadIdx.x & 31;
	i64 wpb = blockDim.x >> 5;
	for (i64 r = (i64)blockIdx.x * wpb + (threadIdx.x >> 5); r < rows; r += (i64)gridDim.x * wpb) {
		const float* xp = x + r * dim;
		T* yp = y + r * dim;
		float v[32];
		float m = NEG_INF;
		#pragma unroll
		for (int k = 0; k < 32; k++) {
			int j = lane + 32 * k;
			v[k] = j < dim ? xp[j] : NEG_INF;
			m = fmaxf(m, v[k]);
		}
		m = warp_max(m);
		float s = 0.f;
		#pragma unroll
		for (int k = 0; k < 32; k++) {
			if (lane + 32 * k < dim) s += expf(v[k] - m);
		}
		s = warp_sum(s);
		float ls = logf(s), inv = 1.f / s;
		#pragma unroll
		for (int k = 0; k < 32; k++) {
			int j = lane + 32 * k;
			if (j < dim) yp[j] = softmax_out<T>(logsm ? v[k] - m - ls : expf(v[k] - m) * inv, mode);
		}
	}
}
extern "C" __global__ void softmax_warp(const float* __restrict__ x, float* __restrict__ y, i64 rows, int dim, int logsm) {
	softmax_warp_t<float>(x, y, rows, dim, logsm, 0);
}
extern "C" __global__ void softmax_warp_h(const float* __restrict__ x, u16* __restrict__ y, i64 rows, int dim, int logsm, int mode) {
	softmax_warp_t<u16>(x, y, rows, dim, logsm, mode);
}
// softmax_warp4_K is softmax_warp for rows whose length is a multiple of
// 4 and at most 128·K: 16-byte loads and stores, K float4 a lane.
// softmax_warp4_h_K writes 16-bit GEMM operands (round_h) instead.
template <typename T> __device__ __forceinline__ void put4(T* p, int j, float4 o, int mode);
template <> __device__ __forceinline__ void put4<float>(float* p, int j, float4 o, int) { ((float4*)p)[j] = o; }
template <> __device__ __forceinline__ void put4<u16>(u16* p, int j, float4 o, int mode) {
	((uint2*)p)[j] = make_uint2((u32)round_h(o.x, mode) | ((u32)round_h(o.y, mode) << 16), (u32)round_h(o.z, mode) | ((u32)round_h(o.w, mode) << 16));
}
template <int K, typename T> __device__ __forceinline__ void softmax_warp4_t(const float* __restrict__ x, T* __restrict__ y, i64 rows, int dim, int logsm, int mode) {
	int lane = threadIdx.x & 31, n4 = dim >> 2;
	i64 wpb = blockDim.x >> 5;
	for (i64 r = (i64)blockIdx.x * wpb + (threadIdx.x >> 5); r < rows; r += (i64)gridDim.x * wpb) {
		const float4* xp = (const float4*)(x + r * dim);
		float4 v[K];
		float m = NEG_INF;
		#pragma unroll
		for (int k = 0; k < K; k++) {
			int j = lane + 32 * k;
			v[k] = j < n4 ? xp[j] : make_float4(NEG_INF, NEG_INF, NEG_INF, NEG_INF);
			m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
		}
		m = warp_max(m);
		float s = 0.f;
		#pragma unroll
		for (int k = 0; k < K; k++) {
			if (lane + 32 * k < n4) s += expf(v[k].x - m) + expf(v[k].y - m) + expf(v[k].z - m) + expf(v[k].w - m);
		}
		s = warp_sum(s);
		float ls = logf(s), inv = 1.f / s;
		#pragma unroll
		for (int k = 0; k < K; k++) {
			int j = lane + 32 * k;
			if (j < n4) {
				float4 o = v[k];
				if (logsm) {
					o.x = o.x - m - ls; o.y = o.y - m - ls; o.z = o.z - m - ls; o.w = o.w - m - ls;
				} else {
					o.x = expf(o.x - m) * inv; o.y = expf(o.y - m) * inv; o.z = expf(o.z - m) * inv; o.w = expf(o.w - m) * inv;
				}
				put4<T>(y + r * dim, j, o, mode);
			}
		}
	}
}
// layernorm_warp4_K is layernorm for rows whose length is a multiple of 4
// and at most 128·K: a warp per row, the row read once into registers.
// layernorm_warp4_h_K writes 16-bit GEMM operands (round_h) instead;
// layernorm_warp4_2h_K writes both, the float32 row to y and its 16-bit
// copy to y2 (a NormRound node).
template <int K, typename T, bool DUAL = false> __device__ __forceinline__ void layernorm_warp4_t(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias, T* __restrict__ y,
		float* __restrict__ mean, float* __restrict__ inv, i64 rows, int dim, float eps, int mode, u16* __restrict__ y2 = nullptr) {
	int lane = threadIdx.x & 31, n4 = dim >> 2;
	i64 wpb = blockDim.x >> 5;
	const float4* sc = (const float4*)scale;
	const float4* bi = (const float4*)bias;
	for (i64 r = (i64)blockIdx.x * wpb + (threadIdx.x >> 5); r < rows; r += (i64)gridDim.x * wpb) {
		const float4* xp = (const float4*)(x + r * dim);
		float4 v[K];
		float s = 0.f;
		#pragma unroll
		for (int k = 0; k < K; k++) {
			int j = lane + 32 * k;
			v[k] = j < n4 ? xp[j] : make_float4(0.f, 0.f, 0.f, 0.f);
			s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
		}
		float mu = warp_sum(s) / (float)dim;
		float q = 0.f;
		#pragma unroll
		for (int k = 0; k < K; k++) {
			if (lane + 32 * k < n4) {
				float a = v[k].x - mu, b = v[k].y - mu, c = v[k].z - mu, d = v[k].w - mu;
				q += (a * a + b * b) + (c * c + d * d);
			}
		}
		float var = warp_sum(q) / (float)dim;
		float is = rsqrtf(var + eps);
		#pragma unroll
		for (int k = 0; k < K; k++) {
			int j = lane + 32 * k;
			if (j < n4) {
				float4 g = sc[j], o;
				o.x = (v[k].x - mu) * is * g.x; o.y = (v[k].y - mu) * is * g.y; o.z = (v[k].z - mu) * is * g.z; o.w = (v[k].w - mu) * is * g.w;
				if (bias) {
					float4 b = bi[j];
					o.x += b.x; o.y += b.y; o.z += b.z; o.w += b.w;
				}
				put4<T>(y + r * dim, j, o, mode);
				if (DUAL) put4<u16>(y2 + r * dim, j, o, mode);
			}
		}
		if (lane == 0) {
			if (mean) mean[r] = mu;
			if (inv) inv[r] = is;
		}
	}
}
#define WARP4(K) \
extern "C" __global__ void softmax_warp4_##K(const float* __restrict__ x, float* __restrict__ y, i64 rows, int dim, int logsm) { softmax_warp4_t<K, float>(x, y, rows, dim, logsm, 0); } \
extern "C" __global__ void softmax_warp4_h_##K(const float* __restrict__ x, u16* __restrict__ y, i64 rows, int dim, int logsm, int mode) { softmax_warp4_t<K, u16>(x, y, rows, dim, logsm, mode); } \
extern "C" __global__ void layernorm_warp4_##K(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias, float* __restrict__ y, \
		float* __restrict__ mean, float* __restrict__ inv, i64 rows, int dim, float eps) { layernorm_warp4_t<K, float>(x, scale, bias, y, mean, inv, rows, dim, eps, 0); } \
extern "C" __global__ void layernorm_warp4_h_##K(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias, u16* __restrict__ y, \
		float* __restrict__ mean, float* __restrict__ inv, i64 rows, int dim, float eps, int mode) { layernorm_warp4_t<K, u16>(x, scale, bias, y, mean, inv, rows, dim, eps, mode); } \
extern "C" __global__ void layernorm_warp4_2h_##K(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias, float* __restrict__ y, \
		u16* __restrict__ y2, i64 rows, int dim, float eps, int mode) { layernorm_warp4_t<K, float, true>(x, scale, bias, y, nullptr, nullptr, rows, dim, eps, mode, y2); }
WARP4(1)
WARP4(2)
WARP4(4)
WARP4(8)
// reduce: y[r] = scale · Σj x[row r, j] (scale = 1/dim for a mean).
// reduce_rows_small sums contiguous rows of a few elements (dim ≤ 64),
// one thread a row: a block per row would leave most threads idle.
extern "C" __global__ void reduce_rows_small(const float* __restrict__ x, float* __restrict__ y, i64 rows, int dim, float scale) {
	LOOP(r, rows) {
		const float* xp = x + r * dim;
		float s = 0.f;
		for (int j = 0; j < dim; j++) s += xp[j];
		y[r] = s * scale;
	}
}
extern "C" __global__ void reduce_sum(const float* __restrict__ x, float* __restrict__ y, i64 rows, i64 dim, i64 inner, float scale) {
	__shared__ float sh[32];
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xp = x + (r / inner) * dim * inner + r % inner;
		float s = 0.f;
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) s += xp[j * inner];
		s = block_sum(s, sh);
		if (threadIdx.x == 0) y[r] = s * scale;
	}
}
// layernorm over contiguous rows of dim elements; scale and bias have dim
// elements (bias may be null); mean and inv (per row) may be null.
extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ scale, const float* __restrict__ bias, float* __restrict__ y,
		float* __restrict__ mean, float* __restrict__ inv, i64 rows, i64 dim, float eps) {
	__shared__ float sh[32];
	for (i64 r = blockIdx.x; r < rows; r += gridDim.x) {
		const float* xp = x + r * dim;
		float* yp = y + r * dim;
		float s = 0.f;
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) s += xp[j];
		float mu = block_sum(s, sh) / (float)dim;
		float v = 0.f;
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) { float d = xp[j] - mu; v += d * d; }
		float var = block_sum(v, sh) / (float)dim;
		float is = rsqrtf(var + eps);
		for (i64 j = threadIdx.x; j < dim; j += blockDim.x) {
			float o = (xp[j] - mu) * is * scale[j];
			if (bias) o += bias[j];
			yp[j] = o;
		}
		if (threadIdx.x == 0) {
			if (mean) mean[r] = mu;
			if (inv) inv[r] = is;
		}
	}
}
// channel_affine: y = x·a[c] + b[c] for x of shape (N, C, inner).
extern "C" __global__ void channel_affine(const float* __restrict__ x, const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ y, i64 n, i64 C, i64 inner) {
	LOOP(i, n) {
		i64 c = (i / inner) % C;
		y[i] = x[i] * a[c] + b[c];
	}
}
`

// poolSource holds MaxPool and AveragePool over two spatial axes.
const poolSource = common + `
struct Pool { i64 NC, H, W, OH, OW, KH, KW, SH, SW, PH, PW, PH1, PW1, DH, DW, isMax, includePad; };
// pool2d_t is one output element i; I is the index type: pool2d32 takes
// 32-bit indices where the tensors allow (a 64-bit division costs tens of
// instructions a step), pool2d 64-bit ones.
template <typename I> __device__ __forceinline__ void pool2d_t(const float* __restrict__ x, float* __restrict__ y, const Pool& p, I i) {
	I OW = (I)p.OW, OH = (I)p.OH, H = (I)p.H, W = (I)p.W, KH = (I)p.KH, KW = (I)p.KW, SH = (I)p.SH, SW = (I)p.SW;
	I PH = (I)p.PH, PW = (I)p.PW, DH = (I)p.DH, DW = (I)p.DW;
	I ow = i % OW, oh = (i / OW) % OH, nc = i / (OW * OH);
	const float* xp = x + (i64)nc * H * W;
	float acc = p.isMax ? NEG_INF : 0.f;
	I cnt = 0;
	for (I kh = 0; kh < KH; kh++) {
		I h = oh * SH - PH + kh * DH;
		if (h < 0 || h >= H) continue;
		for (I kw = 0; kw < KW; kw++) {
			I w = ow * SW - PW + kw * DW;
			if (w < 0 || w >= W) continue;
			float v = xp[h * W + w];
			if (p.isMax) acc = fmaxf(acc, v); else acc += v;
			cnt++;
		}
	}
	if (!p.isMax) {
		if (p.includePad) {
			I h0 = oh * SH - PH, w0 = ow * SW - PW;
			I h1 = min(h0 + (KH - 1) * DH + 1, H + (I)p.PH1), w1 = min(w0 + (KW - 1) * DW + 1, W + (I)p.PW1);
			cnt = ((h1 - h0 + DH - 1) / DH) * ((w1 - w0 + DW - 1) / DW);
		}
		acc = cnt > 0 ? acc / (float)cnt : 0.f;
	}
	y[i] = acc;
}
extern "C" __global__ void pool2d(const float* __restrict__ x, float* __restrict__ y, Pool p) {
	i64 n = p.NC * p.OH * p.OW;
	LOOP(i, n) pool2d_t<i64>(x, y, p, i);
}
extern "C" __global__ void pool2d32(const float* __restrict__ x, float* __restrict__ y, Pool p) {
	int n = (int)(p.NC * p.OH * p.OW);
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) pool2d_t<int>(x, y, p, i);
}
`

// indexSource holds the gathers through index tables (Pad, Resize,
// GatherND) and TopK.
const indexSource = common + `
// IMap is an index-map gather (Pad, nearest Resize): output index q along
// axis d reads input index maps[off[d] + q], or its own where off[d] < 0;
// an entry of −1 gives the whole element the constant instead.
struct IMap { i64 rank, n; i64 dims[6]; i64 st[6]; i64 off[6]; };
template <typename T, typename I> __device__ __forceinline__ void imap_t(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ maps, T v, const IMap& p, I i) {
	I j = i;
	i64 src = 0;
	bool in = true;
	for (int d = (int)p.rank - 1; d >= 0; d--) {
		I s = (I)p.dims[d];
		I q = j % s;
		j /= s;
		i64 k = p.off[d] < 0 ? (i64)q : (i64)maps[p.off[d] + q];
		in = in && k >= 0;
		src += k * p.st[d];
	}
	y[i] = in ? x[src] : v;
}
// The constant is *pv where pv is set (Pad's constant_value input), else
// the low bytes of bits.
template <typename T> __device__ void imap(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ maps, const T* pv, u64 bits, const IMap& p) {
	T v = pv ? *pv : (T)bits;
	if (p.n <= 0x7fffffffLL) {
		for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < (u32)p.n; i += blockDim.x * gridDim.x) imap_t<T, u32>(x, y, maps, v, p, i);
		return;
	}
	LOOP(i, p.n) imap_t<T, i64>(x, y, maps, v, p, i);
}
#define IMAP(N, T) \
extern "C" __global__ void imap_##N(const T* x, T* y, const int* maps, const T* pv, u64 bits, IMap p) { imap<T>(x, y, maps, pv, bits, p); }
IMAP(1, u8)
IMAP(2, u16)
IMAP(4, u32)
IMAP(8, u64)

// resize_f32 interpolates (linear or cubic Resize): along axis d, output
// index q reads taps[d] inputs, idx[off[d] + q·taps[d] + t] with weight
// w[…] (its own input with weight 1 where off[d] < 0). As the CPU backend
// does, the last axis's taps are summed first, then weighted by the
// product of the other axes' weights and added up in the order of their
// taps. A first tap index of −1 marks an output outside the input
// (tf_crop_and_resize): it takes extra.
struct Resample { i64 rank, n; i64 dims[6]; i64 st[6]; i64 off[6]; i64 taps[6]; };
extern "C" __global__ void resize_f32(const float* __restrict__ x, float* __restrict__ y, const int* __restrict__ idx, const float* __restrict__ w, Resample p, float extra) {
	const int L = (int)p.rank - 1;
	LOOP(i, p.n) {
		i64 c[6], j = i;
		bool outside = false;
		for (int d = L; d >= 0; d--) {
			c[d] = j % p.dims[d];
			j /= p.dims[d];
			if (p.off[d] >= 0 && idx[p.off[d] + c[d] * p.taps[d]] < 0) outside = true;
		}
		if (outside) {
			y[i] = extra;
			continue;
		}
		int t[6] = {0, 0, 0, 0, 0, 0};
		float acc = 0.f;
		for (;;) {
			float wt = 1.f;
			i64 base = 0;
			for (int d = 0; d < L; d++) {
				if (p.off[d] < 0) {
					base += c[d] * p.st[d];
					continue;
				}
				i64 k = p.off[d] + c[d] * p.taps[d] + t[d];
				wt *= w[k];
				base += (i64)idx[k] * p.st[d];
			}
			if (wt != 0.f) {
				float s;
				if (p.off[L] < 0) {
					s = x[base + c[L] * p.st[L]];
				} else {
					i64 k = p.off[L] + c[L] * p.taps[L];
					const float* xb = x + base;
					i64 sl = p.st[L];
					if (p.taps[L] == 1) s = xb[(i64)idx[k] * sl];
					else if (p.taps[L] == 2) s = w[k] * xb[(i64)idx[k] * sl] + w[k + 1] * xb[(i64)idx[k + 1] * sl];
					else {
						s = 0.f;
						for (int u = 0; u < (int)p.taps[L]; u++) s += w[k + u] * xb[(i64)idx[k + u] * sl];
					}
				}
				acc += wt * s;
			}
			int d = L - 1;
			for (; d >= 0; d--) {
				if (++t[d] < (p.off[d] < 0 ? 1 : (int)p.taps[d])) break;
				t[d] = 0;
			}
			if (d < 0) break;
		}
		y[i] = acc;
	}
}

// gathernd: output row r (of slice elements) is the slice of data at
// batch r / tuples, indexed by the k values at idx[r·k…] (negative ones
// from the end, out-of-range ones clamped) along the axes of sizes dims
// and element strides st; per is the data's elements per batch.
struct GatherND { i64 n, slice, k, tuples, per; i64 dims[8]; i64 st[8]; };
template <typename T, typename I> __device__ void gathernd(const T* __restrict__ x, const I* __restrict__ idx, T* __restrict__ y, const GatherND& p) {
	LOOP(i, p.n) {
		i64 r = i / p.slice, s = i - r * p.slice;
		i64 off = (r / p.tuples) * p.per;
		const I* ix = idx + r * p.k;
		for (int j = 0; j < (int)p.k; j++) {
			i64 v = (i64)ix[j], d = p.dims[j];
			if (v < 0) v += d;
			v = v < 0 ? 0 : (v >= d ? d - 1 : v);
			off += v * p.st[j];
		}
		y[i] = x[off + s];
	}
}
#define GATHERND(T, S, I, IS) \
extern "C" __global__ void gathernd_##S##_##IS(const T* x, const I* idx, T* y, GatherND p) { gathernd<T, I>(x, idx, y, p); }
BY_SIZE_AND_INDEX(GATHERND)

// TopK over rows of n elements inner apart (row r = (o, j): element e at
// (o·n + e)·inner + j). Each value becomes an unsigned key that orders as
// the values do, reversed for the smallest (−0 as +0, so that they tie);
// an element comes before another with a larger key, or the same key and
// a smaller index, as the CPU backend's stable sort orders them.
template <typename T> struct KeyOf;
template <> struct KeyOf<float> {
	typedef u32 K;
	static __device__ __forceinline__ u32 key(float v, int largest) {
		if (v == 0.f) v = 0.f;
		u32 u = __float_as_uint(v);
		u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
		return largest ? u : ~u;
	}
};
template <> struct KeyOf<int> {
	typedef u32 K;
	static __device__ __forceinline__ u32 key(int v, int largest) { u32 u = (u32)v ^ 0x80000000u; return largest ? u : ~u; }
};
template <> struct KeyOf<i64> {
	typedef u64 K;
	static __device__ __forceinline__ u64 key(i64 v, int largest) { u64 u = (u64)v ^ 0x8000000000000000ull; return largest ? u : ~u; }
};
struct TopK { i64 rows, n, inner, k; int largest; };
// topk_rank places each of a row's candidates at its rank among them: the
// number that come before it, counted a tile of 256 at a time through
// shared memory. The candidates are the row itself (ck null) or the k
// keys and indices topk_select kept (ck, ci). A block row (blockIdx.y)
// per row, 256 candidates a block.
template <typename T> __device__ void topk_rank(const T* __restrict__ x, T* __restrict__ vals, i64* __restrict__ inds,
		const typename KeyOf<T>::K* __restrict__ ck, const int* __restrict__ ci, const TopK& p) {
	typedef typename KeyOf<T>::K K;
	__shared__ K sk[256];
	__shared__ int si[256];
	const i64 m = ck ? p.k : p.n; // candidates a row
	for (i64 r = blockIdx.y; r < p.rows; r += gridDim.y) {
		i64 o = r / p.inner, jn = r % p.inner;
		const T* xr = x + o * p.n * p.inner + jn;
		i64 c = (i64)blockIdx.x * blockDim.x + threadIdx.x;
		K mine = 0;
		i64 me = 0;
		if (c < m) {
			me = ck ? (i64)ci[r * p.k + c] : c;
			mine = ck ? ck[r * p.k + c] : KeyOf<T>::key(xr[c * p.inner], p.largest);
		}
		i64 rank = 0;
		for (i64 t0 = 0; t0 < m; t0 += blockDim.x) {
			i64 j = t0 + threadIdx.x;
			__syncthreads();
			if (j < m) {
				sk[threadIdx.x] = ck ? ck[r * p.k + j] : KeyOf<T>::key(xr[j * p.inner], p.largest);
				si[threadIdx.x] = ck ? ci[r * p.k + j] : (int)j;
			}
			__syncthreads();
			if (c < m) {
				int cnt = (int)min((i64)blockDim.x, m - t0);
				for (int q = 0; q < cnt; q++) {
					K kq = sk[q];
					rank += kq > mine || (kq == mine && (i64)si[q] < me);
				}
			}
		}
		if (c < m && rank < p.k) {
			i64 at = (o * p.k + rank) * p.inner + jn;
			vals[at] = xr[me * p.inner];
			if (inds) inds[at] = me;
		}
	}
}
// topk_select keeps the k first elements of each long row, in no order,
// as keys and indices at ck, ci + r·k: a radix select, eight bits a pass
// from the top, finds the k-th key, then every element before it is kept
// and, of those equal to it, the ones of the smallest indices. A block
// (1024 threads) per row.
template <typename T> __device__ void topk_select(const T* __restrict__ x, typename KeyOf<T>::K* __restrict__ ck, int* __restrict__ ci, const TopK& p) {
	typedef typename KeyOf<T>::K K;
	__shared__ u32 hist[256];
	__shared__ u32 wsum[32];
	__shared__ K prefix;
	__shared__ i64 want, eqBase;
	__shared__ u32 better;
	const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
	for (i64 r = blockIdx.x; r < p.rows; r += gridDim.x) {
		i64 o = r / p.inner, jn = r % p.inner;
		const T* xr = x + o * p.n * p.inner + jn;
		K* kr = ck + r * p.k;
		int* ir = ci + r * p.k;
		if (threadIdx.x == 0) {
			prefix = 0;
			want = p.k;
			eqBase = 0;
			better = 0;
		}
		K mask = 0;
		for (int shift = (int)sizeof(K) * 8 - 8; shift >= 0; shift -= 8) {
			for (int b = threadIdx.x; b < 256; b += blockDim.x) hist[b] = 0;
			__syncthreads();
			K pre = prefix;
			for (i64 e = threadIdx.x; e < p.n; e += blockDim.x) {
				K key = KeyOf<T>::key(xr[e * p.inner], p.largest);
				if ((key & mask) == pre) atomicAdd(&hist[(u32)(key >> shift) & 255u], 1u);
			}
			__syncthreads();
			if (threadIdx.x == 0) {
				i64 need = want;
				int b = 255;
				for (; b > 0 && (i64)hist[b] < need; b--) need -= hist[b];
				prefix = pre | ((K)b << shift);
				want = need;
			}
			mask |= (K)255 << shift;
			__syncthreads();
		}
		const K kth = prefix;
		const i64 take = want, above = p.k - want;
		for (i64 c0 = 0; c0 < p.n; c0 += blockDim.x) {
			i64 e = c0 + threadIdx.x;
			K key = e < p.n ? KeyOf<T>::key(xr[e * p.inner], p.largest) : 0;
			bool eq = e < p.n && key == kth;
			if (e < p.n && key > kth) {
				u32 s = atomicAdd(&better, 1u);
				kr[s] = key;
				ir[s] = (int)e;
			}
			u32 ball = __ballot_sync(0xffffffffu, eq);
			if (lane == 0) wsum[wid] = __popc(ball);
			__syncthreads();
			i64 before = 0, total = 0;
			for (int q = 0; q < nw; q++) {
				if (q < wid) before += wsum[q];
				total += wsum[q];
			}
			if (eq) {
				i64 pos = eqBase + before + __popc(ball & ((1u << lane) - 1u));
				if (pos < take) {
					kr[above + pos] = key;
					ir[above + pos] = (int)e;
				}
			}
			__syncthreads();
			if (threadIdx.x == 0) eqBase += total;
			__syncthreads();
		}
	}
}
#define TOPK(S, T) \
extern "C" __global__ void topk_rank_##S(const T* x, T* vals, i64* inds, const KeyOf<T>::K* ck, const int* ci, TopK p) { topk_rank<T>(x, vals, inds, ck, ci, p); } \
extern "C" __global__ void __launch_bounds__(1024) topk_select_##S(const T* x, KeyOf<T>::K* ck, int* ci, TopK p) { topk_select<T>(x, ck, ci, p); }
TOPK(f32, float)
TOPK(i32, int)
TOPK(i64, i64)
`
