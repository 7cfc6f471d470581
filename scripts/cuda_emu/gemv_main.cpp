// gemv_main.cpp: the decoding products (backend/cuda/gemv.go) on the CPU,
// each form (plain, adding a vector, RMSNorm folded, gated unit) for f16,
// q8_0 and q4_0 weights, against float64 sums of the same operands: for
// the quantised formats, x quantised as the kernels and the CPU do (a
// block's int8 values and its f16 scale), so the sums are the same but
// for their order. The quantised forms run twice: x prepared by each
// block, and once by gemv_prepare (the _prep kernels).
#include "prelude.h"
#include <cstdlib>
inline uint4 __ldg(const uint4* p) { return *p; }
inline int __dp4a(int a, int b, int c) {
	for (int i = 0; i < 4; i++) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
	return c;
}
inline u32 __funnelshift_r(u32 lo, u32 hi, u32 sh) { return (u32)((((u64)hi << 32) | lo) >> (sh & 31)); }
inline void __syncwarp() { bar->arrive_and_wait(); }
struct int4 { int x, y, z, w; };
#include "gemv.cu"

static std::mt19937 rng(7);
static float normal() { return std::normal_distribution<float>(0.f, 1.f)(rng); }
static u16 f16(float v) { _Float16 h = (_Float16)v; u16 b; memcpy(&b, &h, 2); return b; }
static double unf16(u16 b) { _Float16 h; memcpy(&h, &b, 2); return (double)(float)h; }

// A weight of n rows of k values in format f (1 f16, 8 q8_0, 2 q4_0): its
// bytes (16-byte aligned rows of rb bytes) and its values as the format
// decodes them.
struct Weight {
	std::vector<uint4> words;
	std::vector<double> v;
	i64 rb;
};
static Weight make(int f, i64 n, i64 k) {
	Weight w;
	w.rb = f == 1 ? 2 * k : f == 8 ? k / 32 * 34 : k / 32 * 18;
	w.words.assign((n * w.rb + 15) / 16 + 1, uint4{});
	u8* b = (u8*)w.words.data();
	w.v.resize(n * k);
	for (i64 r = 0; r < n; r++) {
		u8* row = b + r * w.rb;
		if (f == 1) {
			for (i64 j = 0; j < k; j++) {
				u16 h = f16(normal() * 0.1f);
				memcpy(row + 2 * j, &h, 2);
				w.v[r * k + j] = unf16(h);
			}
			continue;
		}
		for (i64 bl = 0; bl < k / 32; bl++) {
			u8* p = row + bl * (f == 8 ? 34 : 18);
			u16 d = f16(0.01f + 0.02f * std::fabs(normal()));
			memcpy(p, &d, 2);
			for (int j = 0; j < 32; j++) {
				int q;
				if (f == 8) {
					q = (int)(rng() % 255) - 127;
					p[2 + j] = (u8)(signed char)q;
				} else {
					q = (int)(rng() % 16);
					u8& c = p[2 + (j % 16)];
					c = j < 16 ? (c & 0xf0) | q : (c & 0x0f) | (q << 4);
					q -= 8;
				}
				w.v[r * k + bl * 32 + j] = unf16(d) * q;
			}
		}
	}
	return w;
}

// xq is x as the quantised kernels take it: per block of 32, the int8
// values rounded to even and the f16 scale.
static std::vector<double> quantised(const std::vector<float>& x) {
	std::vector<double> out(x.size());
	for (size_t b = 0; b < x.size() / 32; b++) {
		float a = 0;
		for (int j = 0; j < 32; j++) a = std::max(a, std::fabs(x[b * 32 + j]));
		float id = a != 0 ? 127.f / a : 0.f;
		double d = (double)(float)(_Float16)(a / 127.f);
		for (int j = 0; j < 32; j++) out[b * 32 + j] = d * (double)(int)std::nearbyint(x[b * 32 + j] * id);
	}
	return out;
}

// operand is the x the products of format f see: x, or under norm its
// RMSNorm by g (in float, as the kernels compute it but for the order of
// the sum); for the quantised formats, quantised.
static std::vector<double> operand(const std::vector<float>& x, const std::vector<float>& g, float eps, bool norm, int f) {
	std::vector<float> xs(x);
	if (norm) {
		double ss = 0;
		for (float v : x) ss += (double)v * v;
		float inv = 1.f / std::sqrt((float)(ss / x.size()) + eps);
		for (size_t j = 0; j < x.size(); j++) xs[j] = x[j] * inv * g[j];
	}
	return f != 1 ? quantised(xs) : std::vector<double>(xs.begin(), xs.end());
}

static int check(const char* name, int f, bool norm, bool glu, bool add, i64 n, i64 k) {
	Weight w0 = make(f, n, k), w1 = make(f, n, k);
	std::vector<float> x(k), g(k), a(n), y(n, NAN);
	for (auto& v : x) v = 2.5f * normal(); // a mean square far from 1: a norm left out shows
	for (auto& v : g) v = 1.f + 0.1f * normal();
	for (auto& v : a) v = normal();
	const float eps = 1e-5f;
	std::vector<double> xv = operand(x, g, eps, norm, f);
	auto dot = [&](const Weight& w, i64 r) {
		double s = 0;
		for (i64 j = 0; j < k; j++) s += w.v[r * k + j] * xv[j];
		return s;
	};
	i64 rows = f == 1 ? GV_ROWS : GV_QROWS, per = GV_WARPS * (glu ? rows / 2 : rows);
	unsigned blocks = (unsigned)((n + per - 1) / per);
	const u8 *p0 = (const u8*)w0.words.data(), *p1 = glu ? (const u8*)w1.words.data() : nullptr;
	const float* ap = add ? a.data() : nullptr;
	i64 n1 = 0;
	launch({blocks}, {32 * GV_WARPS}, [&] {
#define ARGS x.data(), ap, p0, p1, nullptr, y.data(), nullptr, nullptr, n, n1, (i64)0, k, w0.rb, g.data(), eps
		if (f == 1 && !norm && !glu) gemv_f16(ARGS);
		if (f == 1 && norm && !glu) gemv_f16_norm(ARGS);
		if (f == 1 && norm && glu) gemv_f16_norm_glu(ARGS);
		if (f == 8 && !norm && !glu) gemv_q8_0(ARGS);
		if (f == 8 && norm && glu) gemv_q8_0_norm_glu(ARGS);
		if (f == 2 && !norm && !glu) gemv_q4_0(ARGS);
		if (f == 2 && norm && !glu) gemv_q4_0_norm(ARGS);
		if (f == 2 && !norm && glu) gemv_q4_0_glu(ARGS);
	});
	// The quantised forms again, x quantised once (gemv_prepare) and the
	// product reading it from there (the _prep kernels).
	std::vector<float> yp(n, NAN);
	if (f != 1) {
		std::vector<uint4> q((k + k / 32 * 8 + 15) / 16);
		u8* qp = (u8*)q.data();
		launch({1}, {32 * GV_WARPS}, [&] {
			if (norm) gemv_prepare_norm(x.data(), g.data(), k, eps, qp);
			else gemv_prepare(x.data(), g.data(), k, eps, qp);
		});
		launch({blocks}, {32 * GV_WARPS}, [&] {
#define PARGS (const float*)qp, ap, p0, p1, nullptr, yp.data(), nullptr, nullptr, n, n1, (i64)0, k, w0.rb, g.data(), eps
			if (f == 8 && !glu) gemv_q8_0_prep(PARGS);
			if (f == 8 && glu) gemv_q8_0_prep_glu(PARGS);
			if (f == 2 && !glu) gemv_q4_0_prep(PARGS);
			if (f == 2 && glu) gemv_q4_0_prep_glu(PARGS);
		});
	}
	double worst = 0;
	for (i64 r = 0; r < n; r++) {
		double want = dot(w0, r);
		if (glu) want = want / (1 + std::exp(-want)) * dot(w1, r);
		if (add) want += a[r];
		double err = std::fabs(y[r] - want) / (1 + std::fabs(want));
		if (!(err <= worst)) worst = err;
		if (f != 1) {
			err = std::fabs(yp[r] - want) / (1 + std::fabs(want));
			if (!(err <= worst)) worst = err;
		}
	}
	// The quantised forms under norm may round an x value the other way
	// (its float RMSNorm sums in another order): one int8 step of x.
	double tol = f != 1 && norm ? 2e-3 : 1e-5;
	bool ok = worst <= tol;
	printf("%-22s n %4lld k %5lld  worst %.2e (tolerance %.0e) %s\n", name, n, k, worst, tol, ok ? "ok" : "FAIL");
	return ok ? 0 : 1;
}

// checkRope runs the rope form (Products under rope) for format f (1
// f16, 2 q4_0) with the norm folded in, x prepared by every block or, for
// q4_0, once (prep): the query, key and value products of one row, the
// queries and keys turned by the rotary embedding at position pos, the
// keys and values written into row pos of their caches.
static int checkRope(const char* name, int f, bool prep) {
	const int heads = 4, kvh = 2, d = 16, half = d / 2;
	const i64 k = 1056, n0 = heads * d, n1 = kvh * d, n2 = kvh * d, crows = 5, pos = 3;
	Weight w0 = make(f, n0, k), w1 = make(f, n1, k), w2 = make(f, n2, k);
	std::vector<float> x(k), g(k), cs(half), sn(half), y0(n0, NAN), y1(n1, NAN), y2(n2, NAN), kc(crows * n1), vc(crows * n2);
	for (auto& v : x) v = 2.5f * normal();
	for (auto& v : g) v = 1.f + 0.1f * normal();
	for (int j = 0; j < half; j++) {
		float a = (float)pos / std::pow(10000.f, 2.f * j / d);
		cs[j] = std::cos(a), sn[j] = std::sin(a);
	}
	for (auto& v : kc) v = normal();
	for (auto& v : vc) v = normal();
	std::vector<float> kc0(kc), vc0(vc);
	const float eps = 1e-5f;
	i64 p = pos;
	// Rows of each weight a block, and the blocks: as the kernels pick.
	i64 rows = f == 1 ? GV_ROWS : GV_QROWS, per = GV_WARPS * rows;
	unsigned blocks = (unsigned)((n0 + per - 1) / per + (n1 + per - 1) / per + (n2 + per - 1) / per);
	const u8 *p0 = (const u8*)w0.words.data(), *p1 = (const u8*)w1.words.data(), *p2 = (const u8*)w2.words.data();
	std::vector<uint4> scratch((k + k / 32 * 8 + 15) / 16); // x quantised, under prep
	const float* xin = x.data();
	if (prep) {
		launch({1}, {32 * GV_WARPS}, [&] { gemv_prepare_norm(x.data(), g.data(), k, eps, (u8*)scratch.data()); });
		xin = (const float*)scratch.data();
	}
	launch({blocks}, {32 * GV_WARPS}, [&] {
#define RARGS xin, nullptr, p0, p1, p2, y0.data(), y1.data(), y2.data(), n0, n1, n2, k, w0.rb, g.data(), eps, cs.data(), sn.data(), kc.data(), vc.data(), &p, crows, (i64)half
		if (f == 1) gemv_f16_norm_rope(RARGS);
		if (f == 2 && !prep) gemv_q4_0_norm_rope(RARGS);
		if (f == 2 && prep) gemv_q4_0_prep_rope(RARGS);
	});
	// The reference: x normalised (and quantised), the three products in
	// float64, the queries and keys turned.
	std::vector<double> xv = operand(x, g, eps, true, f);
	auto prod = [&](const Weight& w, i64 n, bool turn) {
		std::vector<double> y(n);
		for (i64 r = 0; r < n; r++) {
			double a = 0;
			for (i64 j = 0; j < k; j++) a += w.v[r * k + j] * xv[j];
			y[r] = a;
		}
		if (turn) {
			for (i64 r = 0; r < n; r += 2) {
				i64 j = (r % d) / 2;
				double a = y[r], b = y[r + 1];
				y[r] = a * cs[j] - b * sn[j];
				y[r + 1] = a * sn[j] + b * cs[j];
			}
		}
		return y;
	};
	auto q = prod(w0, n0, true), kk = prod(w1, n1, true), v = prod(w2, n2, false);
	double worst = 0;
	auto cmp = [&](float got, double want) {
		double e = std::fabs(got - want) / (1 + std::fabs(want));
		if (!(e <= worst)) worst = e;
	};
	for (i64 r = 0; r < n0; r++) cmp(y0[r], q[r]);
	for (i64 r = 0; r < n1; r++) cmp(y1[r], kk[r]), cmp(kc[pos * n1 + r], kk[r]);
	for (i64 r = 0; r < n2; r++) cmp(y2[r], v[r]), cmp(vc[pos * n2 + r], v[r]);
	bool same = true; // every other row of the caches as it was
	for (i64 i = 0; i < crows * n1; i++) same = same && (i / n1 == pos || kc[i] == kc0[i]);
	for (i64 i = 0; i < crows * n2; i++) same = same && (i / n2 == pos || vc[i] == vc0[i]);
	double tol = f != 1 ? 2e-3 : 1e-5;
	bool ok = worst <= tol && same;
	printf("%-22s n %4lld k %5lld  worst %.2e (tolerance %.0e), caches %s %s\n", name, n0 + n1 + n2, k, worst, tol, same ? "as written" : "WRONG", ok ? "ok" : "FAIL");
	return ok ? 0 : 1;
}

int main() {
	int bad = 0;
	// k = 1056: one batch of loads a lane and a tail for f16; 33 blocks
	// of 32 (a second, partial chunk) for the quantised formats.
	bad += check("f16", 1, false, false, false, 16, 1056);
	bad += check("f16 add", 1, false, false, true, 16, 1056);
	bad += check("f16 norm", 1, true, false, false, 16, 1056);
	bad += check("f16 norm glu", 1, true, true, false, 16, 1056);
	bad += check("q8_0", 8, false, false, false, 32, 1056);
	bad += check("q8_0 add", 8, false, false, true, 32, 1056);
	bad += check("q8_0 norm glu", 8, true, true, false, 32, 1056);
	bad += check("q4_0", 2, false, false, false, 32, 1056);
	bad += check("q4_0 norm", 2, true, false, false, 32, 1056);
	bad += check("q4_0 glu", 2, false, true, false, 32, 1056);
	// Longer x: for f16 under norm more than the threads hold (GV_HELD
	// values a thread at eight warps), read twice; for the quantised
	// forms under norm, blocks of 32 up to a thread each (k = 4160), and
	// more blocks than threads (k = 8224), read twice.
	bad += check("f16 norm", 1, true, false, false, 16, 4160);
	bad += check("f16 add", 1, false, false, true, 16, 4160); // the plain form's loads (ploads) over several rounds
	bad += check("q8_0", 8, false, false, false, 32, 4160);
	bad += check("q4_0 norm", 2, true, false, false, 32, 4160);
	bad += check("q4_0 norm", 2, true, false, false, 32, 8224);
	bad += checkRope("f16 norm rope", 1, false);
	bad += checkRope("q4_0 norm rope", 2, false);
	bad += checkRope("q4_0 rope, prepared", 2, true);
	return bad != 0;
}
