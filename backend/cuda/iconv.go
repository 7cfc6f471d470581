package cuda

import (
	"math"
	"os"
)

// An implicit-GEMM convolution under BF16 or F16 on sm_80 or later: the
// product W·patches of im2col and cuBLAS, without the patch matrix. Each
// block of iconv computes a 128×128 tile of the output (output channels
// by output positions of every image), 32 patch rows at a time: the
// weights' 16-bit copy and the patches, gathered from the input as they
// are needed (zeros in the padding), go through shared memory (two
// buffers: the next tile's loads are in flight while the tensor cores
// work on this one) into mma.sync.m16n8k16 with float32 sums; the bias
// is added as the sums are written, in float32 or 16 bits.
//
// It is not the default yet: BERTH_CUDA_CONV=implicit turns it on for
// measuring it against im2col and cuBLAS.

// implicitConv makes one-group convolutions with 16-bit operands run as
// iconv.
var implicitConv = os.Getenv("BERTH_CUDA_CONV") == "implicit"

// iconvTile is the output tile of one block: iconvTile output channels
// by iconvTile positions.
const iconvTile = 128

// iconvFits reports whether iconv's 32-bit indices hold the convolution
// (p as buildConv's Conv parameters).
func iconvFits(p []uint64) bool {
	N, C, H, W, OC, OH, OW, KH, KW := p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]
	lim := uint64(math.MaxInt32)
	return N*C*H*W <= lim && N*OC*OH*OW <= lim && OC*C*KH*KW <= lim && N*OH*OW+iconvTile <= lim && OC+iconvTile <= lim
}

// implicitConvLaunch adds the launch of iconv for the convolution of p
// (one group), reading x (in 16 bits where xHalf says) and writing the
// node's output (in 16 bits where only generated kernels read it).
func (c *buildContext) implicitConvLaunch(bias arg, xHalf bool, p []uint64) {
	N, OC, OH, OW := int64(p[0]), int64(p[4]), int64(p[5]), int64(p[6])
	x := c.inArg(0)
	kernel := "iconv_f"
	if xHalf {
		x.half = true
		kernel = "iconv_h"
	}
	w := c.halfOperand(c.inArg(1), false)
	y := c.outArg(0)
	if c.fz != nil && c.fz.out16[y.id] {
		y = arg{kind: argTensor, id: y.id, off: y.off / 2, half: true}
		kernel += "_h"
	} else {
		kernel += "_f"
	}
	np := N * OH * OW
	c.launches = append(c.launches, launch{node: c.node, module: iconvModule, kernel: kernel,
		grid: [3]uint32{uint32(ceilDiv(np, iconvTile)), uint32(ceilDiv(OC, iconvTile)), 1}, block: [3]uint32{256, 1, 1},
		args: []arg{x, w, bias, y, words(p), i32(halfMode(c.half.prec))}})
}

var iconvModule = &source{"iconv.cu", iconvSource}

// iconvSource is the implicit-GEMM convolution (see implicitConv).
const iconvSource = common + halfCommon + mmaCommon + `
struct IConv { i64 N, C, H, W, OC, OH, OW, KH, KW, SH, SW, PH, PW, DH, DW, mult; };
#define IC_BM 128
#define IC_BN 128
#define IC_BK 32
#define IC_LD (IC_BK + 8)
// iconv_x is input element at as a 16-bit operand.
__device__ __forceinline__ u16 iconv_x(const float* x, int at, int mode) { return round_h(x[at], mode); }
__device__ __forceinline__ u16 iconv_x(const u16* x, int at, int) { return x[at]; }
__device__ __forceinline__ void iconv_y(float* y, int at, float v, int) { y[at] = v; }
__device__ __forceinline__ void iconv_y(u16* y, int at, float v, int mode) { y[at] = round_h(v, mode); }
// The block's 256 threads: eight warps of 64 output channels by 32
// positions (two down, four across). Loading, thread t takes row t/2 of
// the weights' tile (16 of its 32 values) and column t%128 of the
// patches' (16 patch rows of one position, t/128 says which half).
template <typename X, typename Y>
__device__ void iconv_t(const X* __restrict__ x, const u16* __restrict__ w, const float* __restrict__ bias, Y* __restrict__ y,
		const IConv& q, int mode) {
	__shared__ __align__(16) u16 As[2][IC_BM][IC_LD];
	__shared__ __align__(16) u16 Bs[2][IC_BN][IC_LD];
	const int C = (int)q.C, H = (int)q.H, W = (int)q.W, OC = (int)q.OC, OW = (int)q.OW, KH = (int)q.KH, KW = (int)q.KW;
	const int SH = (int)q.SH, SW = (int)q.SW, PH = (int)q.PH, PW = (int)q.PW, DH = (int)q.DH, DW = (int)q.DW;
	const int OHW = (int)(q.OH * q.OW), KHW = KH * KW, K = C * KHW, NP = (int)q.N * OHW;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, tq = lane & 3;
	const int m0 = blockIdx.y * IC_BM, n0 = blockIdx.x * IC_BN;
	const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
	// This thread's rows to load: a weights' row, and a position.
	const int arow = tid >> 1, akp = (tid & 1) * 16;
	const int bcol = tid & 127, bkp = (tid >> 7) * 16;
	const int pos = n0 + bcol;
	const bool pin = pos < NP;
	int xb = 0, ih0 = 0, iw0 = 0;
	if (pin) {
		const int img = pos / OHW, rem = pos - img * OHW, oh = rem / OW, ow = rem - oh * OW;
		xb = img * C * H * W;
		ih0 = oh * SH - PH;
		iw0 = ow * SW - PW;
	}
	const bool avec = (K & 7) == 0 && ((u64)w & 15) == 0;
	const u16* wr = w + (i64)(m0 + arow) * K;
	const bool ain = m0 + arow < OC;
	uint4 ra[2];
	u32 rb[8];
	// load fetches tile kt of both operands into registers.
	auto load = [&](int kt) {
		const int ka = kt * IC_BK + akp;
		if (avec && ain && ka + 16 <= K) {
			ra[0] = *(const uint4*)(wr + ka);
			ra[1] = *(const uint4*)(wr + ka + 8);
		} else {
			u32 v[8];
			#pragma unroll
			for (int j = 0; j < 8; j++) {
				const int k0 = ka + 2 * j;
				const u32 lo = ain && k0 < K ? wr[k0] : 0u, hi = ain && k0 + 1 < K ? wr[k0 + 1] : 0u;
				v[j] = lo | (hi << 16);
			}
			ra[0] = make_uint4(v[0], v[1], v[2], v[3]);
			ra[1] = make_uint4(v[4], v[5], v[6], v[7]);
		}
		int k = kt * IC_BK + bkp;
		int c = k / KHW, r = k - c * KHW, kh = r / KW, kw = r - kh * KW;
		#pragma unroll
		for (int j = 0; j < 16; j++) {
			u16 v = 0;
			const int ih = ih0 + kh * DH, iw = iw0 + kw * DW;
			if (pin && k < K && ih >= 0 && ih < H && iw >= 0 && iw < W) v = iconv_x(x, xb + (c * H + ih) * W + iw, mode);
			if (j & 1) rb[j >> 1] |= (u32)v << 16;
			else rb[j >> 1] = v;
			k++;
			if (++kw == KW) {
				kw = 0;
				if (++kh == KH) {
					kh = 0;
					c++;
				}
			}
		}
	};
	// store puts the fetched tile into buffer b.
	auto store = [&](int b) {
		*(uint4*)&As[b][arow][akp] = ra[0];
		*(uint4*)&As[b][arow][akp + 8] = ra[1];
		*(uint4*)&Bs[b][bcol][bkp] = make_uint4(rb[0], rb[1], rb[2], rb[3]);
		*(uint4*)&Bs[b][bcol][bkp + 8] = make_uint4(rb[4], rb[5], rb[6], rb[7]);
	};
	float acc[4][4][4];
	#pragma unroll
	for (int i = 0; i < 4; i++)
		#pragma unroll
		for (int j = 0; j < 4; j++) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0.f;
	const int KT = (K + IC_BK - 1) / IC_BK;
	load(0);
	store(0);
	__syncthreads();
	for (int kt = 0; kt < KT; kt++) {
		const int cur = kt & 1;
		if (kt + 1 < KT) load(kt + 1);
		#pragma unroll
		for (int ks = 0; ks < IC_BK; ks += 16) {
			u32 a[4][4], b[4][2];
			#pragma unroll
			for (int mt = 0; mt < 4; mt++) {
				const int r0 = wm + mt * 16 + g;
				a[mt][0] = *(const u32*)&As[cur][r0][ks + 2 * tq];
				a[mt][1] = *(const u32*)&As[cur][r0 + 8][ks + 2 * tq];
				a[mt][2] = *(const u32*)&As[cur][r0][ks + 2 * tq + 8];
				a[mt][3] = *(const u32*)&As[cur][r0 + 8][ks + 2 * tq + 8];
			}
			#pragma unroll
			for (int nt = 0; nt < 4; nt++) {
				const int c0 = wn + nt * 8 + g;
				b[nt][0] = *(const u32*)&Bs[cur][c0][ks + 2 * tq];
				b[nt][1] = *(const u32*)&Bs[cur][c0][ks + 2 * tq + 8];
			}
			#pragma unroll
			for (int mt = 0; mt < 4; mt++)
				#pragma unroll
				for (int nt = 0; nt < 4; nt++) mma16816(acc[mt][nt], a[mt], b[nt][0], b[nt][1], mode);
		}
		if (kt + 1 < KT) store(cur ^ 1);
		__syncthreads();
	}
	// Sums to the output: rows are output channels, columns positions.
	#pragma unroll
	for (int mt = 0; mt < 4; mt++) {
		#pragma unroll
		for (int h = 0; h < 2; h++) {
			const int oc = m0 + wm + mt * 16 + g + 8 * h;
			if (oc >= OC) continue;
			const float bv = bias ? bias[oc] : 0.f;
			#pragma unroll
			for (int nt = 0; nt < 4; nt++) {
				#pragma unroll
				for (int e = 0; e < 2; e++) {
					const int p = n0 + wn + nt * 8 + 2 * tq + e;
					if (p >= NP) continue;
					const int img = p / OHW, rem = p - img * OHW;
					iconv_y(y, (img * OC + oc) * OHW + rem, acc[mt][nt][2 * h + e] + bv, mode);
				}
			}
		}
	}
}
extern "C" __global__ void __launch_bounds__(256) iconv_f_f(const float* x, const u16* w, const float* bias, float* y, IConv q, int mode) { iconv_t<float, float>(x, w, bias, y, q, mode); }
extern "C" __global__ void __launch_bounds__(256) iconv_f_h(const float* x, const u16* w, const float* bias, u16* y, IConv q, int mode) { iconv_t<float, u16>(x, w, bias, y, q, mode); }
extern "C" __global__ void __launch_bounds__(256) iconv_h_f(const u16* x, const u16* w, const float* bias, float* y, IConv q, int mode) { iconv_t<u16, float>(x, w, bias, y, q, mode); }
extern "C" __global__ void __launch_bounds__(256) iconv_h_h(const u16* x, const u16* w, const float* bias, u16* y, IConv q, int mode) { iconv_t<u16, u16>(x, w, bias, y, q, mode); }
`
