// prelude.h: enough of CUDA's device side, on the CPU, to run one of
// berth's generated kernels block by block (scripts/cuda_emu/run.sh): a
// block's threads are threads, __syncthreads a barrier, shared memory a
// function's statics; a warp's shuffles exchange their operands through
// the warp's barrier (its 32 threads must reach them together, as
// __shfl_xor_sync(FULL, …) asks), ballots and mma.sync through the
// block's (every thread of the block must reach them together, as in
// the kernels checked here).
#include <cstdint>
#include <cstring>
#include <thread>
#include <barrier>
#include <vector>
#include <memory>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
using std::min; using std::max;
struct Dim3 { unsigned x = 1, y = 1, z = 1; };
thread_local Dim3 threadIdx, blockIdx;
Dim3 blockDim, gridDim;
std::barrier<>* bar;
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(x)
inline void __syncthreads() { bar->arrive_and_wait(); }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
inline unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
inline int __popc(unsigned v) { return __builtin_popcount(v); }
static int ballot_buf[1024];
inline unsigned __ballot_sync(unsigned, bool p) {
	ballot_buf[threadIdx.x] = p;
	bar->arrive_and_wait();
	unsigned m = 0;
	int w = threadIdx.x / 32 * 32;
	for (int i = 0; i < 32; i++) if (ballot_buf[w + i]) m |= 1u << i;
	bar->arrive_and_wait();
	return m;
}
// wbar is the running block's warps' barriers: a warp's shuffles wait
// for its 32 threads only.
std::vector<std::barrier<>*> wbar;
inline std::barrier<>& warpBarrier() { return *wbar[threadIdx.x / 32]; }
// launch runs f over the grid g of blocks of b threads, one block at a
// time (reversed: the x blocks of a row last to first).
template <typename F> void launch(Dim3 g, Dim3 b, F f, bool reversed = false) {
	gridDim = g; blockDim = b;
	for (unsigned bz = 0; bz < g.z; bz++) for (unsigned by = 0; by < g.y; by++) for (unsigned i = 0; i < g.x; i++) {
		unsigned bx = reversed ? g.x - 1 - i : i;
		std::barrier<> br(b.x);
		bar = &br;
		std::vector<std::unique_ptr<std::barrier<>>> warps;
		wbar.clear();
		for (unsigned w = 0; w < (b.x + 31) / 32; w++) {
			warps.push_back(std::make_unique<std::barrier<>>(std::min(32u, b.x - 32 * w)));
			wbar.push_back(warps.back().get());
		}
		std::vector<std::thread> ts;
		for (unsigned t = 0; t < b.x; t++) ts.emplace_back([&, t, bx, by, bz] { threadIdx = {t, 0, 0}; blockIdx = {bx, by, bz}; f(); });
		for (auto& t : ts) t.join();
	}
}
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct uint2 { unsigned x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
inline void __trap() { abort(); }
#define asm(...)
#define __align__(x) __attribute__((aligned(x)))
#include "common.cu"
// halfCommon, emulated: bf16 (mode 0) or IEEE half (mode 1), round to nearest even.
inline float widen_h(unsigned short v, int mode) {
	if (mode) { _Float16 h; memcpy(&h, &v, 2); return (float)h; }
	return __uint_as_float((unsigned)v << 16);
}
inline unsigned short round_h(float v, int mode) {
	if (mode) { _Float16 h = (_Float16)v; unsigned short r; memcpy(&r, &h, 2); return r; }
	unsigned u = __float_as_uint(v);
	u += 0x7fff + ((u >> 16) & 1);
	return (unsigned short)(u >> 16);
}
inline u32 pack_h(float lo, float hi, int mode) { return (u32)round_h(lo, mode) | ((u32)round_h(hi, mode) << 16); }
// mma.m16n8k16 emulated across the warp through a staging area.
static u32 stA[256][4], stB[256][2];
inline void mma16816(float* c, const u32* a, u32 b0, u32 b1, int mode) {
	const int t = threadIdx.x;
	for (int i = 0; i < 4; i++) stA[t][i] = a[i];
	stB[t][0] = b0; stB[t][1] = b1;
	bar->arrive_and_wait();
	const int w = t / 32 * 32, lane = t & 31, g = lane >> 2, tq = lane & 3;
	float A[16][16], B[16][8];
	for (int l = 0; l < 32; l++) {
		int lg = l >> 2, lt = l & 3;
		auto put = [&](int r, int col, u32 v) { A[r][col] = widen_h(v & 0xffff, mode); A[r][col + 1] = widen_h(v >> 16, mode); };
		put(lg, 2 * lt, stA[w + l][0]); put(lg + 8, 2 * lt, stA[w + l][1]); put(lg, 2 * lt + 8, stA[w + l][2]); put(lg + 8, 2 * lt + 8, stA[w + l][3]);
		B[2 * lt][lg] = widen_h(stB[w + l][0] & 0xffff, mode); B[2 * lt + 1][lg] = widen_h(stB[w + l][0] >> 16, mode);
		B[2 * lt + 8][lg] = widen_h(stB[w + l][1] & 0xffff, mode); B[2 * lt + 9][lg] = widen_h(stB[w + l][1] >> 16, mode);
	}
	bar->arrive_and_wait();
	int rows[4] = {g, g, g + 8, g + 8}, cols[4] = {2 * tq, 2 * tq + 1, 2 * tq, 2 * tq + 1};
	for (int i = 0; i < 4; i++) {
		float s = 0;
		for (int k = 0; k < 16; k++) s += A[rows[i]][k] * B[k][cols[i]];
		c[i] += s;
	}
}
inline float exp2f(float x) { return std::exp2(x); }
inline float fmaxf(float a, float b) { return std::fmax(a, b); }
static float shf[1024];
inline float __shfl_xor_sync(unsigned, float v, int m) {
	shf[threadIdx.x] = v;
	warpBarrier().arrive_and_wait();
	float r = shf[(threadIdx.x & ~31u) | ((threadIdx.x & 31) ^ m)];
	warpBarrier().arrive_and_wait();
	return r;
}
static int shi[1024];
inline int __shfl_xor_sync(unsigned, int v, int m) {
	shi[threadIdx.x] = v;
	warpBarrier().arrive_and_wait();
	int r = shi[(threadIdx.x & ~31u) | ((threadIdx.x & 31) ^ m)];
	warpBarrier().arrive_and_wait();
	return r;
}
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline int __float2int_rn(float v) { return (int)std::nearbyint(v); }
