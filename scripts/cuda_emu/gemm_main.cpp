// gemm_main.cpp: the tiled SGEMM (gemm128, gemm64 and gemm_reduce in
// backend/cuda/source.go) against float64 products, block by block on the
// CPU (see run.sh): operands along either axis (or neither), alpha, an
// addend D with its own strides, and K split in parts.
#include "prelude.h"
#include "gemm.cu"
struct Case { int m, n, k; bool aCols, bCols; int tile, parts; float alpha, beta; int dKind; bool gaps = false; };
int main() {
	// dKind: 0 no addend, 1 a full matrix, 2 a row broadcast over m.
	Case cases[] = {
		{70, 45, 37, false, false, 64, 1, 1.f, 0.f, 0},
		{130, 131, 20, true, true, 128, 1, 0.5f, 2.f, 1},
		{200, 129, 33, false, true, 128, 1, 1.f, 1.f, 2},
		{33, 70, 1100, false, false, 64, 3, 1.f, 1.f, 2},
		{140, 9, 600, true, false, 128, 4, 0.25f, -1.f, 1},
		{64, 64, 16, true, true, 64, 2, 1.f, 0.f, 0},
		{72, 40, 300, false, false, 128, 2, 1.f, 0.f, 0, true},
		{130, 131, 20, true, true, 64, 1, 0.5f, 2.f, 1},
		{33, 70, 1100, false, true, 64, 3, 1.f, 1.f, 2},
		{72, 40, 300, true, false, 64, 2, 1.f, 0.f, 0, true},
	};
	std::mt19937 rng(9);
	std::normal_distribution<float> nd;
	int bad = 0;
	for (auto& c : cases) {
		std::vector<float> a((size_t)c.m * c.k * (c.gaps ? 2 : 1)), b((size_t)c.k * c.n), d((size_t)c.m * c.n), y((size_t)c.m * c.n, NAN);
		for (auto& v : a) v = nd(rng);
		for (auto& v : b) v = nd(rng);
		for (auto& v : d) v = nd(rng);
		// A is m×k: rows along k (sak 1) or columns along m (sam 1); B is
		// k×n likewise.
		i64 sam = c.aCols ? 1 : c.k, sak = c.aCols ? c.m : 1;
		if (c.gaps) sam = 2 * c.k, sak = 2; // every other value: no contiguous axis
		i64 sbk = c.bCols ? 1 : c.n, sbn = c.bCols ? c.k : 1;
		i64 sdm = c.dKind == 2 ? 0 : c.n, sdn = 1;
		const float* dp = c.dKind ? d.data() : nullptr;
		Geo g{};
		std::vector<float> w((size_t)c.parts * c.m * c.n, NAN);
		Dim3 grid{(unsigned)((c.n + c.tile - 1) / c.tile), (unsigned)((c.m + c.tile - 1) / c.tile), (unsigned)c.parts}, block{256, 1, 1};
		if (c.tile == 64) block = Dim3{128, 1, 1};
		launch(grid, block, [&] {
			if (c.tile == 128) gemm128(a.data(), b.data(), y.data(), dp, c.m, c.n, c.k, sam, sak, sbk, sbn, sdm, sdn, c.alpha, c.beta, g, c.parts, w.data());
			else gemm64(a.data(), b.data(), y.data(), dp, c.m, c.n, c.k, sam, sak, sbk, sbn, sdm, sdn, c.alpha, c.beta, g, c.parts, w.data());
		});
		if (c.parts > 1) {
			launch(Dim3{4, 1, 1}, Dim3{64, 1, 1}, [&] { gemm_reduce(w.data(), y.data(), dp, c.m, c.n, sdm, sdn, c.beta, g, c.parts); });
		}
		double num = 0, den = 0;
		for (int i = 0; i < c.m; i++) for (int j = 0; j < c.n; j++) {
			double s = 0;
			for (int k = 0; k < c.k; k++) s += (double)a[i * sam + k * sak] * b[k * sbk + j * sbn];
			s *= c.alpha;
			if (dp) s += (double)c.beta * d[i * sdm + j * sdn];
			double e = y[(size_t)i * c.n + j] - s;
			num += e * e;
			den += s * s;
		}
		double rel = std::sqrt(num / den);
		bool ok = rel <= 1e-6;
		printf("gemm%-3d m %4d n %4d k %5d a %s b %s parts %d addend %d: rel L2 %.2e %s\n", c.tile, c.m, c.n, c.k, c.gaps ? "gaps" : c.aCols ? "cols" : "rows", c.bCols ? "cols" : "rows",
		       c.parts, c.dKind, rel, ok ? "ok" : "FAIL");
		bad += !ok;
	}
	return bad != 0;
}
