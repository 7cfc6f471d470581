// cached_main.cpp: the cached attention of a language model's step
// (backend/cuda/packed.go) on the CPU against float64 sums: the plain
// kernel over a cache (queries at positions pos…pos+t-1), and one query's
// attention split over blocks (its parts, then their merge), at
// positions where one block of a head takes every row and the others do
// nothing, and where several take parts. The output and the parts'
// scratch hold NaN before the kernels run: a value neither writes, or a
// part the merge reads that no block wrote, gives NaN.
#include "prelude.h"
#include <cstdlib>
#include <string>
inline float expf(float x) { return std::exp(x); }
#include "cached.cu"

static std::mt19937 rng(11);
static float normal() { return std::normal_distribution<float>(0.f, 1.f)(rng); }

// attend is the float64 attention of query row q (heads·d) over rows
// 0…last of the caches.
static std::vector<double> attend(const float* q, const std::vector<float>& kc, const std::vector<float>& vc, i64 last, int heads, int kvh, int d, float scale) {
	std::vector<double> out(heads * d);
	int group = heads / kvh;
	for (int h = 0; h < heads; h++) {
		int hk = h / group;
		std::vector<double> s(last + 1);
		double m = -1e300;
		for (i64 j = 0; j <= last; j++) {
			double a = 0;
			for (int e = 0; e < d; e++) a += (double)q[h * d + e] * scale * kc[j * kvh * d + hk * d + e];
			s[j] = a;
			m = std::max(m, a);
		}
		double z = 0;
		for (auto& v : s) z += (v = std::exp(v - m));
		for (int e = 0; e < d; e++) {
			double a = 0;
			for (i64 j = 0; j <= last; j++) a += s[j] * vc[j * kvh * d + hk * d + e];
			out[h * d + e] = a / z;
		}
	}
	return out;
}

static double worstOf(const std::vector<float>& y, const std::vector<double>& want) {
	double w = 0;
	for (size_t i = 0; i < want.size(); i++) {
		double e = std::fabs(y[i] - want[i]) / (1 + std::fabs(want[i]));
		if (!(e <= w)) w = e;
	}
	return w;
}

// quantisedAs reports whether yq holds y (k values) quantised as
// gemv_prepare quantises x: per block of 32 the int8 values x·127/max|x|
// rounded to even, then the f16-rounded scales max|x|/127, then the sums
// of the int8 values.
static bool quantisedAs(const std::vector<unsigned char>& yq, const std::vector<float>& y) {
	const size_t k = y.size(), nb = k / 32;
	std::vector<unsigned char> want(k + nb * 8);
	for (size_t b = 0; b < nb; b++) {
		float a = 0;
		for (int j = 0; j < 32; j++) a = std::max(a, std::fabs(y[b * 32 + j]));
		float id = a != 0 ? 127.f / a : 0.f, d = (float)(_Float16)(a / 127.f);
		int sum = 0;
		for (int j = 0; j < 32; j++) {
			int q = (int)std::nearbyint(y[b * 32 + j] * id);
			want[b * 32 + j] = (unsigned char)q;
			sum += q;
		}
		memcpy(&want[k + b * 4], &d, 4);
		memcpy(&want[k + nb * 4 + b * 4], &sum, 4);
	}
	return yq == want;
}

// run runs t queries at pos over the caches, in one block a head and
// query (S 0) or split over S blocks a head (t 1), and checks them; with
// quant, the split attention also writes its output quantised.
static int run(int heads, int kvh, int d, i64 c, i64 pos, i64 t, int S = 0, bool quant = false) {
	std::vector<float> q(t * heads * d), kc(c * kvh * d), vc(c * kvh * d), y(t * heads * d, NAN);
	for (auto& v : q) v = normal();
	for (auto& v : kc) v = normal();
	for (auto& v : vc) v = normal();
	float scale = 1.f / std::sqrt((float)d);
	i64 p = pos;
	const i64 k = (i64)heads * d;
	std::vector<unsigned char> yq(quant ? k + k / 32 * 8 : 0, 0xAB);
	u8* yqp = quant ? yq.data() : nullptr;
	if (S > 0) {
		std::vector<float> ps((size_t)heads * S * (d + 2), NAN);
		launch({(unsigned)heads, (unsigned)S}, {ATT_THREADS}, [&] {
			cached_attention_part(q.data(), kc.data(), vc.data(), &p, y.data(), ps.data(), c, heads, heads / kvh, d, scale, yqp, k, quant);
		}, true);
		launch({(unsigned)heads}, {(unsigned)std::min(d, ATT_THREADS)}, [&] { cached_attention_merge(ps.data(), &p, y.data(), c, d, S, yqp, k, quant); });
	} else {
		launch({(unsigned)heads, (unsigned)t}, {ATT_THREADS}, [&] { cached_attention(q.data(), kc.data(), vc.data(), &p, y.data(), t, c, heads, heads / kvh, d, scale); });
	}
	double worst = 0;
	for (i64 i = 0; i < t; i++) {
		auto want = attend(q.data() + i * heads * d, kc, vc, pos + i, heads, kvh, d, scale);
		std::vector<float> yi(y.begin() + i * heads * d, y.begin() + (i + 1) * heads * d);
		worst = std::max(worst, worstOf(yi, want));
	}
	bool same = !quant || quantisedAs(yq, y), ok = worst <= 1e-5 && same;
	printf("cached_attention%-8s heads %d/%d d %3d pos %4lld t %lld: worst %.2e%s %s\n", S > 0 ? (" split" + std::to_string(S)).c_str() : "", heads, kvh, d, pos, t, worst,
	       !quant ? "" : same ? ", quantised as gemv_prepare" : ", NOT quantised as gemv_prepare", ok ? "ok" : "FAIL");
	return ok ? 0 : 1;
}

int main() {
	int bad = 0;
	bad += run(4, 2, 64, 700, 600, 1);  // two chunks of 512 rows
	bad += run(4, 4, 32, 64, 10, 3);    // three queries
	bad += run(6, 2, 128, 40, 0, 1);    // the first row
	// Split: one block of a head takes every row (the rest idle, the
	// merge idle); two parts; more rows than the splits allow (parts of
	// more than ATT_SPLIT_ROWS); the last row of the cache; and so many
	// splits that the last parts are empty.
	bad += run(4, 2, 64, 1200, 5, 1, 8);
	bad += run(2, 2, 128, 300, ATT_SPLIT_ROWS, 1, 8);
	bad += run(4, 2, 64, 1200, 1100, 1, 8);
	bad += run(8, 4, 128, 600, 599, 1, 3);
	bad += run(1, 1, 32, 6500, 6400, 1, 100);
	// The output quantised for the product after it too: by the part
	// where one block of a head takes every row, by the merge else.
	bad += run(4, 2, 64, 1200, 5, 1, 8, true);
	bad += run(4, 2, 64, 1200, 1100, 1, 8, true);
	bad += run(8, 4, 128, 600, 599, 1, 3, true);
	bad += run(1, 1, 32, 6500, 6400, 1, 100, true);
	return bad != 0;
}
